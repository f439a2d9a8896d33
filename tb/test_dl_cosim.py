"""The RTL DL end (``rtl/dl/dl.py``) against the golden models as its link partner: the far end
is ``rtl/model/dl_llr.py`` (replay, link states) with ``rtl/model/dl_flit.py`` (packing, CRC),
both written from the spec without reading the RTL.

One flit time is 10 clocks. Each flit time the model end sends one DL flit (its header and the
body its packer made, with the model's CRC) and takes the RTL's flits as they come; each way a
channel corrupts or drops flits at random and delays them. TL traffic both ways: the RTL's
``tl_out`` must be the model end's TL flits in order, and the model end's unpacked flits the
RTL's ``tl_in`` flits, once each. Where RTL and model read the spec differently, one of them
rejects the other's flits or asks for replays forever, and the test stalls and fails.
"""

import collections
import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from rtl.dl.dl import DlState, UalinkDl
from rtl.dl.layout import (
    BEAT_BITS,
    BEAT_BYTES,
    BEATS_PER_FLIT,
    FH_BYTES,
    FH_OFFSET,
    DlConfig,
    RxCount,
    TxCount,
    rx_counts,
    tx_counts,
)
from rtl.model import dl_flit, dl_llr
from rtl.tl.layout import HALF_BITS, flit_layout
from sim import harness
from sim.dl_link_env import start_end
from sim.streams import LayoutSink, LayoutSource, random_pauses

#: Flit times each way through the channel.
_DELAY = 3
_ACK_TIMEOUT = 400
_REPLAY_LIMIT = 40
#: The model's NOP body.
_NOP = dl_flit.DlPayload(data=bytes(dl_flit.PAYLOAD_BYTES), segment_headers=bytes(5),
                         starts=(), carry_in=0, carry_out=0)


class _ModelEnd:
    """The far end: the LLR model, its packer's bodies queued as TL payloads, an unpacker for
    what it delivers."""

    def __init__(self, tl):
        self.llr = dl_llr.DlEndpoint(depth=32, ack_timeout=_ACK_TIMEOUT,
                                     replay_limit=_REPLAY_LIMIT)
        packer, source = dl_flit.Packer(), dl_flit.ListSource(tl)
        while not source.empty or packer.carry:
            body = packer.pack(source)
            if not body.nop:
                self.llr.push(body)
        self.unpacker = dl_flit.Unpacker()
        self.received = []

    def send(self):
        """The flit of this flit time as 640 bytes, or ``None``."""
        flit = self.llr.send()
        if flit is None:
            return None
        return dl_flit.assemble(flit.payload or _NOP, flit.header)

    def receive(self, flit):
        header = int.from_bytes(flit[FH_OFFSET:FH_OFFSET + FH_BYTES], "little")
        ok = dl_flit.crc_ok(flit)
        delivered = self.llr.receive(dl_llr.Flit(header, flit if ok else None), crc_ok=ok)
        if delivered is not None:
            self.received.extend(self.unpacker.feed(delivered))


async def _link(dut, rng, model, errors, stats):
    """The channel both ways, the model end's flit times, the RTL's PHY ports."""
    to_rtl, to_model = collections.deque(), collections.deque()   # (due clock, item)
    beats, now, offered = [], 0, False
    dut.phy_out__ready.value = 1
    dut.phy_in__valid.value = 0

    def lossy(flit):
        if rng.random() < errors["drop"]:
            stats["dropped"] += 1
            return None
        if rng.random() < errors["corrupt"]:
            stats["corrupted"] += 1
            bit = rng.randrange(8 * len(flit))
            flit = bytearray(flit)
            flit[bit // 8] ^= 1 << bit % 8
            return bytes(flit)
        return flit

    while True:
        await RisingEdge(dut.clk)
        now += 1
        if offered and int(dut.phy_in__ready.value):
            to_rtl.popleft()
        if int(dut.phy_out__valid.value):
            payload = int(dut.phy_out__payload.value)
            beats.append(payload & ((1 << BEAT_BITS) - 1))
            if payload >> BEAT_BITS & 1:
                flit = b"".join(b.to_bytes(BEAT_BYTES, "little") for b in beats)
                beats = []
                stats["rtl_flits"] += 1
                flit = lossy(flit)
                if flit is not None:
                    to_model.append((now + 10 * _DELAY, flit))
        while to_model and to_model[0][0] <= now:
            model.receive(to_model.popleft()[1])
        if now % BEATS_PER_FLIT == 0:                   # the model end's flit time
            flit = model.send()
            if flit is not None:
                stats["model_flits"] += 1
                flit = lossy(flit)
                if flit is not None:
                    due = now + 10 * _DELAY
                    for b in range(BEATS_PER_FLIT):
                        to_rtl.append((due, int.from_bytes(flit[b * BEAT_BYTES:(b + 1) * BEAT_BYTES],
                                                           "little") | (b == 9) << BEAT_BITS))
        offered = bool(to_rtl) and to_rtl[0][0] <= now
        dut.phy_in__valid.value = int(offered)
        if offered:
            dut.phy_in__payload.value = to_rtl[0][1]


def _tl(rng, n):
    return [dl_flit.TlFlit.from_int(rng.getrandbits(2 * HALF_BITS), rng.getrandbits(1),
                                    rng.getrandbits(1)) for _ in range(n)]


async def _exchange(dut, rng, n, errors):
    """``n`` TL flits each way; checks both arrive complete and in order."""
    stats = collections.Counter()
    ours, theirs = _tl(rng, n), _tl(rng, n)
    model = _ModelEnd(theirs)
    cocotb.start_soon(_link(dut, rng, model, errors, stats))
    source = LayoutSource(dut, "tl_in", flit_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "tl_out", flit_layout, dut.clk, dut.rst)
    sink.set_backpressure(random_pauses(rng, 0.1))
    for flit in ours:
        source.send_nowait(data=[flit.value & ((1 << HALF_BITS) - 1), flit.value >> HALF_BITS],
                           msg=int(flit.m0) | int(flit.m1) << 1)
    for k, want in enumerate(theirs):
        got = await sink.recv()
        assert int(got.data[0]) | int(got.data[1]) << HALF_BITS == want.value, f"TL flit {k}"
        assert int(got.msg) == int(want.m0) | int(want.m1) << 1, f"TL flit {k}: message bits"
    for _ in range(2000):
        if len(model.received) >= n and model.llr.quiescent and int(dut.unacked.value) == 0:
            break
        await ClockCycles(dut.clk, 10)
    assert model.received == ours, (f"the model end got {len(model.received)} of {n} TL "
                                     f"flits, or not in order")
    assert model.llr.quiescent and int(dut.unacked.value) == 0, "flits left unacknowledged"
    assert source.empty() and sink.empty()
    tx = tx_counts.from_bits(int(dut.tx_counts.value))
    rx = rx_counts.from_bits(int(dut.rx_counts.value))
    dut._log.info("channel %s; RTL tx %s; RTL rx %s; model %s", dict(stats),
                  {k.name: int(tx[k]) for k in TxCount}, {k.name: int(rx[k]) for k in RxCount},
                  {k: v for k, v in model.llr.counters.as_dict().items() if v})
    return tx, rx


async def _start(dut):
    await start_end(dut, ack_timeout=_ACK_TIMEOUT, replay_limit=_REPLAY_LIMIT)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def cosim_clean(dut):
    """No errors: both ends come Up and exchange 600 TL flits each way, no replay."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    tx, rx = await _exchange(dut, rng, 600, {"corrupt": 0, "drop": 0})
    assert int(dut.state.value) == DlState.UP.value
    assert int(tx[TxCount.REPLAYED]) == 0 and int(rx[RxCount.BAD_CRC]) == 0


@cocotb.test(timeout_time=80, timeout_unit="ms")
async def cosim_errors(dut):
    """Flits corrupted (3 %) and dropped (1 %) both ways: 2000 TL flits each way, once, in
    order; both ends replayed."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    tx, rx = await _exchange(dut, rng, 2000, {"corrupt": 0.03, "drop": 0.01})
    assert int(tx[TxCount.REPLAYED]) > 0 and int(rx[RxCount.BAD_CRC]) > 0


@pytest.mark.parametrize("test", ["cosim_clean", "cosim_errors"])
def test_dl_cosim(test):
    harness.run(UalinkDl(DlConfig()), DlConfig(), toplevel="ualink_dl",
                test_module="tb.test_dl_cosim", testcase=test)
