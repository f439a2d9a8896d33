# SPDX-License-Identifier: BSD-2-Clause
"""Bad input at the system level: two ETH-X bridges (sim/ethx/pair.py) carrying random traffic
both ways while bad frames, bad records, requests from sources or to addresses outside the
access window, and AXI bursts the bridge cannot carry arrive. Each is counted where README §4/§5
say, refused requests are answered DECERR to their sender, memory outside the good traffic is
untouched, and the good traffic completes unharmed."""

import cocotb
import pytest
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiBurstType, AxiResp

from scaleup_ip.ethx import CompleterCount, DeframerCount, ParseCount, ReadCount, WriteCount
from scaleup_ip.model.ethx import bridge as model
from scaleup_ip.model.ethx.bridge import Read, ReadData, Resp, TxState, Write, WriteResp
from sim import harness
from sim.ethx.pair import NODES, WINDOW_LOG2, EthxPair
from sim.ethx.pair_env import PairEnv
from tb.ethx.test_bridge import CONFIGS

TIMEOUT_US = 20000
A, B = NODES["a"], NODES["b"]
#: A node in the address plan (below ``sources``) that neither window admits, and one beyond.
STRANGER, FOREIGN = 0, 5
#: Where forged writes aim: no good traffic writes there, so it must stay as it was.
FORGED_AT = 0x80000


def refcs(frame, fcs):
    """``frame`` (without FCS) with its FCS, if the bridges check it."""
    return frame + model.fcs_of(frame) if fcs else frame


class Forge:
    """Frames toward one node, well formed unless a test breaks them; ``fcs``: the bridges'."""

    def __init__(self, dst, fcs, mtu):
        self.dst, self.fcs, self.mtu = dst, fcs, mtu

    def frame(self, src, records, state=None):
        """A good frame's bytes without FCS."""
        return model.encode_frame(self.dst, src, 0, records, state or TxState(), fcs=False,
                                  mtu=self.mtu)

    def write(self, k):
        """A WRITE of node A's own (its source address, an extension, so that it would
        change B's compression state for A) at ``FORGED_AT``: harm if it got through."""
        return Write(id=k, addr=FORGED_AT + 64 * k, len=7, size=3, burst=1,
                     data=bytes([0xA5]) * 64)

    def frame_drops(self):
        """(bytes, ``user``, the deframer counter it must raise) for each frame-level fault."""
        good = self.frame(A, [self.write(0)])
        out = [
            (refcs(good[:40], self.fcs), 0, DeframerCount.RUNT),
            (refcs(good + bytes(self.mtu), self.fcs), 0, DeframerCount.OVERSIZED),
            (refcs(good, self.fcs), 1, DeframerCount.MAC_ERROR),
            (refcs(good[:12] + b"\x08\x00" + good[14:], self.fcs), 0, DeframerCount.ETHERTYPE),
            (refcs(model.mac(7) + good[6:], self.fcs), 0, DeframerCount.DESTINATION),
            (refcs(good[:6] + b"\xff" * 6 + good[12:], self.fcs), 0, DeframerCount.SOURCE),
            (refcs(good[:14] + b"\x02\x00" + good[16:], self.fcs), 0, DeframerCount.VERSION),
            (refcs(good + bytes(3), self.fcs), 0, DeframerCount.LENGTH),
        ]
        if self.fcs:
            whole = refcs(good, True)
            out += [(whole[:-1] + bytes([whole[-1] ^ 0x10]), 0, DeframerCount.BAD_FCS),
                    (whole[:len(whole) - 13], 0, DeframerCount.BAD_FCS)]    # cut short
        return out

    def record_drops(self):
        """(bytes, the parser counter it must raise) for each record-level fault, from the
        stranger (a frame from A would drop A's compression state for nothing)."""
        read = self.frame(STRANGER, [Read(id=0, addr=0x100, len=0, size=3)])
        unknown = read[:16] + (9).to_bytes(8, "little") + read[24:]
        write = self.frame(STRANGER, [Write(id=1, addr=0x200, len=15, size=3, burst=1,
                                            data=bytes(128))])
        truncated = write[:16 + 6 * model.WORD]         # header, extension, 4 of 16 data words
        malformed = self.frame(STRANGER, [Read(id=2, addr=0x300, len=0, size=3, burst=3)])
        return [(refcs(unknown, self.fcs), ParseCount.UNKNOWN_KIND),
                (refcs(truncated, self.fcs), ParseCount.TRUNCATED),
                (refcs(malformed, self.fcs), ParseCount.MALFORMED)]

    def refused(self):
        """Well-formed frames whose requests the serving side must answer DECERR without
        touching memory: (bytes, source, records, completer counter, parser counter)."""
        denied = [Read(id=4, addr=FORGED_AT, len=3, size=3),
                  Write(id=5, addr=FORGED_AT + 0x400, len=0, size=3, burst=1, data=bytes(8))]
        state = TxState()
        first = self.frame(STRANGER, denied, state)
        stale_state = TxState(key=state.key, gen=(state.gen + 3) % 8)
        stale = [Write(id=6, addr=FORGED_AT + 0x800, len=0, size=3, burst=1, data=bytes(8))]
        foreign = [Read(id=7, addr=0x100, len=0, size=3)]
        return [(refcs(first, self.fcs), STRANGER, denied, CompleterCount.DENIED, None),
                (refcs(self.frame(STRANGER, stale, stale_state), self.fcs), STRANGER, stale,
                 CompleterCount.STALE, ParseCount.STALE),
                (refcs(self.frame(FOREIGN, foreign), self.fcs), FOREIGN, foreign,
                 CompleterCount.STALE, ParseCount.FOREIGN)]


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def bridge_bad_frames(dut):
    """Every frame- and record-level fault and every refused request, injected toward B in
    random gaps of random good traffic both ways; then strays toward A."""
    tb = PairEnv(dut)
    cfg = tb.config
    await tb.reset()
    initial = tb.memories()
    traffic = cocotb.start_soon(tb.traffic(10))     # checks both memories whole at the end
    forge = Forge(B, cfg.fcs, cfg.mtu)
    frames, records, refused = forge.frame_drops(), forge.record_drops(), forge.refused()
    faults = ([(f, user) for f, user, _ in frames] + [(f, 0) for f, _ in records]
              + [(f, 0) for f, *_ in refused])
    tb.rng.shuffle(faults)
    for frame, user in faults:
        await ClockCycles(dut.clk, tb.rng.randrange(50, 400))
        tb.channel["a"].inject(frame, user=user)
    # Toward A: responses from the stranger (no read or write of A's is outstanding there).
    stray = Forge(A, cfg.fcs, cfg.mtu)
    tb.channel["b"].inject(refcs(stray.frame(STRANGER, [
        WriteResp(id=0, resp=Resp.OKAY),
        ReadData(id=0, resp=Resp.OKAY, last=True, count=0, size=3, burst=1, len=0, addr=0,
                 data=bytes(8))]), cfg.fcs))
    await traffic
    await ClockCycles(dut.clk, 4 * (cfg.timeout + tb.channel["a"].delay) + 500)

    want = {kind: sum(k == kind for *_, k in frames) for kind in DeframerCount
            if kind != DeframerCount.FRAMES}
    got = tb.counts(DeframerCount, "b_counts_deframer")
    assert {k: got[k] for k in want} == want
    parse = tb.counts(ParseCount, "b_counts_parse")
    for _, kind in records:
        assert parse[kind] == 1, (kind, parse)
    for *_, kind in refused:
        if kind is not None:
            assert parse[kind] == 1, (kind, parse)
    completer = tb.counts(CompleterCount, "b_counts_completer")
    for kind in (CompleterCount.DENIED, CompleterCount.STALE):
        wanted = sum(len(recs) for _, _, recs, k, _ in refused if k == kind)
        assert completer[kind] == wanted, (kind, completer)
    assert completer[CompleterCount.ILLEGAL] == completer[CompleterCount.MEMORY_ERRORS] == 0
    # Each refused request answered DECERR to its sender (frames B sent elsewhere, which A's
    # receiver dropped as not its own).
    foreign = tb.check_frames(elsewhere=True)
    assert {dst for _, dst in foreign} == {STRANGER, FOREIGN}, foreign
    for src in (STRANGER, FOREIGN):
        answers = [r for decoded in foreign[("b", src)] for r in decoded.records]
        asked = [r.id for _, s, recs, *_ in refused if s == src for r in recs]
        assert sorted(r.id for r in answers) == sorted(asked), answers
        assert all(r.resp == Resp.DECERR for r in answers), answers
    elsewhere = sum(model.node_of(f[:6]) != A for _, f in tb.channel["b"].frames)
    assert tb.counts(DeframerCount, "a_counts_deframer")[DeframerCount.DESTINATION] == elsewhere
    assert tb.counts(ReadCount, "a_counts_read")[ReadCount.UNEXPECTED] == 1
    assert tb.counts(WriteCount, "a_counts_write")[WriteCount.UNEXPECTED] == 1
    forged = slice(FORGED_AT, FORGED_AT + 0x1000)
    assert all(tb.memories()[e][forged] == initial[e][forged] for e in NODES), "forged write"
    assert all(c.idle() for c in tb.channel.values())


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def bridge_refused_axi(dut):
    """A's GPU: accesses outside B's window get DECERR from B (memory untouched; with write
    proxy the write is answered OKAY at once and the next release gets SLVERR), bursts the
    bridge cannot carry (WRAP of 3 beats, FIXED of 32) SLVERR from A itself; good accesses
    before and after are unharmed."""
    tb = PairEnv(dut)
    await tb.reset()
    gpu, user, beat = tb.gpu["a"], tb.user_bits(B), 8
    outside = 1 << WINDOW_LOG2
    before = tb.memories()["b"]
    proxy = tb.config.proxy
    cases = [
        (gpu.read(outside, 64, user=user), AxiResp.DECERR),
        (gpu.write(outside + 0x100, bytes(64), user=user),
         AxiResp.OKAY if proxy else AxiResp.DECERR),
        (gpu.read(0x40, 3 * beat, burst=AxiBurstType.WRAP, size=3, user=user), AxiResp.SLVERR),
        (gpu.write(0x40, bytes(3 * beat), burst=AxiBurstType.WRAP, size=3, user=user),
         AxiResp.SLVERR),
        (gpu.read(0x40, 32 * beat, burst=AxiBurstType.FIXED, size=3, user=user),
         AxiResp.SLVERR),
    ]
    for call, resp in cases:
        result = await call
        assert result.resp == resp, (result, resp)
        good = await gpu.read(0x1000, 128, user=user)
        assert good.resp == AxiResp.OKAY and good.data == before[0x1000:0x1080]
    if proxy:               # the refused write's error, on the next release
        assert dut.a_proxy_error.value == 1
        data = tb.rng.randbytes(8)
        flag = await gpu.write(0x2000, data, user=tb.user_bits(B, order=1))
        assert flag.resp == AxiResp.SLVERR and not dut.a_proxy_error.value
        assert tb.counts(WriteCount, "a_counts_write")[WriteCount.PROXY_ERRORS] == 1
        before = before[:0x2000] + data + before[0x2008:]
    assert tb.memories()["b"] == before
    completer = tb.counts(CompleterCount, "b_counts_completer")
    assert completer[CompleterCount.DENIED] == 2
    assert tb.counts(ReadCount, "a_counts_read")[ReadCount.LOCAL] == 2
    assert tb.counts(WriteCount, "a_counts_write")[WriteCount.LOCAL] == 1
    tb.check_frames()
    tb.check_no_errors()


@pytest.mark.parametrize("config", [config for config, _ in CONFIGS], ids=lambda c: c.slug())
def test_bridge_bad(config):
    harness.run(EthxPair(config), config, toplevel="ethx_pair",
                test_module=__name__)
