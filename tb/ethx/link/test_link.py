# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/link/link.py: two lossless links back to back (sim/ethx/link/pair.py)
through cocotb channels that lose and corrupt frames of chosen kinds. Every bridge frame
offered reaches the other end once and in order (per VC); every wire frame is well formed
(checked by the golden model's receive checks); the counters of the two ends agree with each
other and with what the channels did; at the end nothing is kept, queued or owed credit."""

import collections
import functools

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from scaleup_ip.ethx.link import (
    LinkConfig,
    LinkRxCount,
    LinkTxCount,
    RxState,
    TxState,
    default_settings,
    eth_beat_layout,
    settings_layout,
)
from scaleup_ip.model.ethx import bridge as bridge_model
from scaleup_ip.model.ethx import link as model
from sim import harness
from sim.ethx.link.channel import EthxChannel
from sim.ethx.env import EthxEnv
from sim.ethx.link.pair import EthxLinkPair
from sim.ethx.pair import NODES, other
from sim.streams import LayoutSink, LayoutSource, bytes_to_beats, random_pauses

TIMEOUT_US = 8000
COUNT_MASK = (1 << model.COUNT_BITS) - 1


def kind_of(received):
    """A wire frame's kind for loss rules: ``data``, ``cc`` or a control kind's name."""
    if received.cls is model.Class.DATA:
        return "data"
    if received.cls is model.Class.CC:
        return "cc"
    return received.kind.name.lower()


class TB(EthxEnv):
    """Both ends' bridge sides, the channels between them, and what was offered and got."""

    config_class = LinkConfig

    def __init__(self, dut, *, delay=30, settings=None, loss=None, corrupt=0.5,
                 first_lost=False):
        super().__init__(dut)
        cfg = self.config
        layout = eth_beat_layout(cfg.eth_width)
        self.source = {e: LayoutSource(dut, f"{e}_i", layout, dut.clk, dut.rst) for e in NODES}
        self.sink = {e: LayoutSink(dut, f"{e}_o", layout, dut.clk, dut.rst) for e in NODES}
        self.settings = dict(default_settings(cfg), **(settings or {}))
        self.loss = loss or {}          # probability of loss by kind (see kind_of)
        self.corrupt = corrupt          # of a loss, the part corrupted rather than dropped
        self.lose_first = set(NODES) if first_lost else set()  # ends to lose a data frame
        self.lost = {e: collections.Counter() for e in NODES}      # by (kind, fate), from e
        self.sent_kinds = {e: collections.Counter() for e in NODES}
        self.channel = {e: EthxChannel(dut, cfg, e, other(e), delay=delay,
                                       fate=functools.partial(self._fate, e)) for e in NODES}
        self.offered = {e: [[] for _ in range(cfg.vcs)] for e in NODES}
        self.got = {e: [[] for _ in range(cfg.vcs)] for e in NODES}
        self.down = False

    def _fate(self, end, wire):
        got = model.classify(wire, max_bytes=self.config.max_wire_bytes,
                             seq_bits=self.config.seq_bits)
        assert got.cls in (model.Class.DATA, model.Class.CC, model.Class.CONTROL), (
            got, len(wire), wire[:24].hex())
        assert got.node == NODES[end], got
        kind = kind_of(got)
        self.sent_kinds[end][kind] += 1
        if self.down:
            self.lost[end][kind, "down"] += 1
            return False
        if kind == "data" and end in self.lose_first:
            self.lose_first.discard(end)
            self.lost[end][kind, "drop"] += 1
            return False
        if self.rng.random() >= self.loss.get(kind, 0):
            return None
        if self.rng.random() < self.corrupt:
            self.lost[end][kind, "corrupt"] += 1
            bad = bytearray(wire)
            bad[self.rng.randrange(len(bad))] ^= 1 << self.rng.randrange(8)
            return bytes(bad)
        self.lost[end][kind, "drop"] += 1
        return False

    def apply_settings(self, end=None):
        layout = settings_layout(self.config)
        for e in NODES if end is None else [end]:
            getattr(self.dut, f"{e}_settings").value = layout.const(self.settings).as_bits()

    def set_up(self, level):
        for e in NODES:
            getattr(self.dut, f"{e}_up").value = level

    async def start(self, pause=0.0):
        self.apply_settings()
        self.set_up(1)
        await self.reset()
        for e in NODES:
            self.sink[e].set_backpressure(random_pauses(self.rng, pause))
            cocotb.start_soon(self._collect(e))

    async def _collect(self, end):
        cfg = self.config
        while True:
            data = b""
            while True:
                beat = await self.sink[end].recv()
                data += int(beat.data).to_bytes(cfg.eth_bytes, "little")
                if beat.last:
                    break
            self.got[end][model.link_vc(data, cfg.vcs)].append(data)

    # --- traffic ---------------------------------------------------------------------------

    def bridge_frame(self, end, vc=None, words=None):
        cfg = self.config
        vc = self.rng.randrange(cfg.vcs) if vc is None else vc
        most = (cfg.max_frame_bytes - 16) // 8
        words = words or self.rng.choice([6, 6, 7, 12, self.rng.randrange(6, most + 1), most])
        head = bridge_model.header(NODES[other(end)], NODES[end], vc)
        return head + self.rng.randbytes(bridge_model.WORD * words)

    def offer(self, end, frame):
        vc = model.link_vc(frame, self.config.vcs)
        self.offered[end][vc].append(frame)
        for beat in bytes_to_beats(frame, self.config.eth_bytes):
            self.source[end].send_nowait(user=0, **beat)

    async def traffic(self, frames, vcs=None, gap=0.02):
        """``frames`` random frames from each end, now and then a pause."""
        for _ in range(frames):
            for e in NODES:
                vc = None if vcs is None else self.rng.choice(vcs)
                self.offer(e, self.bridge_frame(e, vc))
            while not all(self.source[e].empty() for e in NODES):
                await RisingEdge(self.dut.clk)
            if self.rng.random() < gap:
                await ClockCycles(self.dut.clk, self.rng.randrange(1, 400))

    def delivered(self):
        return all(len(self.got[other(e)][v]) >= len(self.offered[e][v])
                   for e in NODES for v in range(self.config.vcs))

    async def settle(self, clocks=200_000):
        """Until every frame has arrived and both ends have nothing kept or owed; then the
        periodic CF_UPDATEs and CC_UPDATEs stop, and those on the way land."""
        for _ in range(clocks // 100):
            if self.delivered() and self.quiet():
                break
            await ClockCycles(self.dut.clk, 100)
        self.settings.update(cf_period=0, cc_period=0)
        self.apply_settings()
        for _ in range(clocks // 100):          # the last frames may wait for the timer
            if not any(int(getattr(self.dut, f"{e}_kept").value) for e in NODES):
                break
            await ClockCycles(self.dut.clk, 100)
        assert not any(int(getattr(self.dut, f"{e}_kept").value) for e in NODES), \
            "the replay rings did not drain"
        for _ in range(clocks // 100):          # and the control frames it asks for
            await ClockCycles(self.dut.clk, 4 * self.config.rows(self.config.max_wire_bytes))
            if all(self.channel[e].idle() for e in NODES):
                break

    def quiet(self):
        for e in NODES:
            s_cc = getattr(self.dut, f"{e}_s_cc").value.to_unsigned()
            s_cf = getattr(self.dut, f"{e}_s_cf").value.to_unsigned()
            if s_cc != s_cf:
                return False
        return True

    def tx(self, end):
        return {k.name: v for k, v in self.counts(LinkTxCount, f"{end}_tx_counts").items()}

    def rx(self, end):
        return {k.name: v for k, v in self.counts(LinkRxCount, f"{end}_rx_counts").items()}

    def check(self, flushed=False):
        """Everything offered arrived once, in order per VC; with ``flushed``, but the frames
        a FLUSH dropped, as many as the transmitter counted."""
        cfg = self.config
        for e in NODES:
            f = other(e)
            if flushed:
                self.check_flushed(e)
                continue
            for v in range(cfg.vcs):
                assert self.got[f][v] == self.offered[e][v], (e, v, len(self.got[f][v]),
                                                              len(self.offered[e][v]))
            assert self.source[e].empty() and self.sink[e].empty()
            assert self.channel[e].idle()
            tx, rx, lost = self.tx(e), self.rx(f), self.lost[e]
            self.dut._log.info("%s tx %s", e, tx)
            self.dut._log.info("%s rx %s", f, rx)
            self.dut._log.info("%s -> %s lost %s; sent %s", e, f, dict(lost),
                               dict(self.sent_kinds[e]))
            sent = self.sent_kinds[e]
            corrupted = sum(n for (k, why), n in lost.items() if why == "corrupt")
            assert rx["RX_BAD"] == corrupted
            assert rx["RX_FOREIGN"] == 0 and rx["RX_OVERFLOW"] == 0
            assert tx["TX_OK"] + tx["TX_REPLAYED"] == sent["data"] + sent["cc"]
            assert tx["TX_OK"] == rx["RX_OK"] == sum(len(q) for q in self.offered[e]) + tx["CC_TX"]
            assert rx["CC_RX"] == tx["CC_TX"]
            assert tx["INIT_TX"] == sent["init"]
            assert tx["TX_FLUSHED"] == 0 and tx["CREDIT_ERROR"] == 0
            # An INIT sent again (its echo lost or late) starts the sequence over: ACKs and NACKs
            # of the first exchange still on the wire are then out of the window, counted and
            # dropped (SEED=2019296820, 8-bit, lossy). Without a second INIT there are none.
            assert tx["ACK_NACK_SEQ_ERROR"] == 0 or tx["INIT_TX"] > 1
            assert tx["TX_MALFORMED"] == 0
            assert tx["PEAK_REPLAY"] <= cfg.replay_frames - 1       # room kept for one more
            assert tx["PEAK_REPLAY"] > 0 or not any(self.offered[e])
            # What the far end's transmitter got is what this end's receiver sent, less losses.
            for name, kind, count in (("ACK_RX", "ack", "ACK_TX"), ("NACK_RX", "nack", "NACK_TX"),
                                      ("CF_RX", "cf_update", "CF_TX"),
                                      ("INIT_ECHO_RX", "init_echo", "INIT_ECHO_TX")):
                gone = sum(n for (k, _), n in lost.items() if k == kind)
                assert sent[kind] == self.rx(e)[count], name
                assert self.tx(f)[name] == self.rx(e)[count] - gone, name
            assert int(getattr(self.dut, f"{e}_tx_state").value) == TxState.ADVANCE.value
            # A bad or missing frame into e's receiver leaves it NACK_SENT until the next
            # eligible frame, which may never come; without either it is SEND_ACKS.
            trouble = any(why != "drop" or k in ("data", "cc") for k, why in self.lost[f])
            states = (RxState.SEND_ACKS, RxState.NACK_SENT) if trouble else (RxState.SEND_ACKS,)
            assert int(getattr(self.dut, f"{e}_rx_state").value) in [s.value for s in states]
            s_cc = getattr(self.dut, f"{e}_s_cc").value.to_unsigned()
            r_cf = getattr(self.dut, f"{f}_r_cf").value.to_unsigned()
            assert s_cc == getattr(self.dut, f"{e}_s_cf").value.to_unsigned() == r_cf
            for v in range(cfg.vcs):        # each frame took its credits once
                used = sum(model.pkt_credits(len(f), cfg.credit_size, cfg.pkt_overhead)
                           for f in self.offered[e][v])
                assert s_cc >> (model.COUNT_BITS * v) & COUNT_MASK == used % (COUNT_MASK + 1)


    def check_flushed(self, end):
        """``end``'s frames: what arrived is what was offered less some frames, in order, and
        every frame missing (CC_UPDATEs too: entered, never accepted) was FLUSHed."""
        tx, rx, missing = self.tx(end), self.rx(other(end)), 0
        for v in range(self.config.vcs):
            got = iter(self.got[other(end)][v])
            at = next(got, None)
            for frame in self.offered[end][v]:
                if frame == at:
                    at = next(got, None)
                else:
                    missing += 1
            assert at is None, (end, v, "a frame out of order, doubled or not offered")
        delivered = sum(len(q) for q in self.got[other(end)])
        assert rx["RX_OK"] == delivered + rx["CC_RX"]
        # A flushed frame may have arrived (its ACK lost on the way down); one missing was
        # flushed.
        assert missing + tx["CC_TX"] - rx["CC_RX"] <= tx["TX_FLUSHED"], (missing, tx, rx)
        s_cc = getattr(self.dut, f"{end}_s_cc").value.to_unsigned()
        assert s_cc == getattr(self.dut, f"{end}_s_cf").value.to_unsigned()
        assert s_cc == getattr(self.dut, f"{other(end)}_r_cf").value.to_unsigned()
        assert self.source[end].empty() and self.sink[end].empty() and self.channel[end].idle()
        self.dut._log.info("%s: %d frames flushed; tx %s; rx %s", end, missing, tx, rx)


async def run(dut, frames, **kwargs):
    vcs, pause = kwargs.pop("vcs", None), kwargs.pop("pause", 0.1)
    tb = TB(dut, **kwargs)
    frames = max(20, frames * tb.config.eth_bytes // 8)     # a byte a clock is slow to simulate
    await tb.start(pause=pause)
    await tb.traffic(frames, vcs=vcs)
    await tb.settle()
    tb.check()
    return tb


def _loss(q, kinds=("data", "cc", "ack", "nack", "init", "init_echo", "cf_update")):
    return {k: q for k in kinds}


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def clean(dut):
    """No losses: everything arrives, nothing is replayed."""
    tb = await run(dut, 60)
    assert tb.tx("a")["TX_REPLAYED"] == 0 and tb.rx("b")["NACK_TX"] == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lossy(dut):
    """3 % of every kind of frame lost or corrupted, both ways, and each end's first data
    frame lost."""
    tb = await run(dut, 120, loss=_loss(0.03), settings={"cc_period": 700}, first_lost=True)
    assert tb.tx("a")["TX_REPLAYED"] > 0
    if tb.config.seq_bits < 20:
        assert tb.tx("a")["TX_OK"] > 2 << tb.config.seq_bits        # the sequence wrapped


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lost_acks(dut):
    """Half the ACKs lost: later cumulative ACKs and duplicates' ACKs cover them."""
    await run(dut, 60, loss={"ack": 0.5}, corrupt=0.0)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lost_nacks(dut):
    """Data and NACKs lost: the replay timer and duplicates' ACKs recover."""
    frame = LinkConfig.from_env().rows(LinkConfig.from_env().max_wire_bytes)
    tb = await run(dut, 60, loss={"data": 0.05, "nack": 0.6},
                   settings={"replay_timeout": frame + 600})
    assert sum(tb.tx(e)["TX_REPLAY_TIMER"] for e in NODES) > 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lost_credit_updates(dut):
    """CF_UPDATEs and CC_UPDATEs lost: the next ones repair the credits. A CC_UPDATE every 50
    control frames' time: with 30 % of them lost, go-back-N still drains the ring."""
    cfg = LinkConfig.from_env()
    period = 50 * cfg.rows(model.CONTROL_BYTES + model.FCS_BYTES)
    await run(dut, 80, loss={"cf_update": 0.5, "cc": 0.3}, settings={"cc_period": period})


CONFIGS = [
    LinkConfig(eth_width=64, vcs=3, seq_bits=6, replay_frames=16, rx_bytes=4096),
    LinkConfig(eth_width=8, vcs=2),
]


#: Cases that once failed, run every time with their seed: at 639272305 end a's INIT, built
#: while it waited for INIT_ECHO, left after the echo had come and a frame had gone: the far end
#: went back to that frame's sequence number and took it twice.
#: At 594245554 (64-bit) no frame was on the wire at any of link_down_and_up's breaks, so none
#: was lost to them and the test proved nothing; each break now waits for one. At 2019296820
#: (8-bit) lossy sent an INIT twice and counted a stale ACK (see TB.check).
SEEDS = [(CONFIGS[1], "link_down_too_long", 639272305),
         (CONFIGS[0], "link_down_and_up", 594245554), (CONFIGS[1], "lossy", 2019296820)]


@pytest.mark.parametrize("config", CONFIGS, ids=LinkConfig.slug)
def test_link(config):
    harness.run(EthxLinkPair(config), config, toplevel="ethx_link_pair",
                test_module=__name__)


@pytest.mark.parametrize("config, testcase, seed", SEEDS,
                         ids=[f"{c.slug()}-{t}-{s}" for c, t, s in SEEDS])
def test_link_seeds(config, testcase, seed):
    harness.run(EthxLinkPair(config), config, toplevel="ethx_link_pair",
                test_module=__name__, testcase=testcase, seed_value=seed,
                run_name=f"{testcase}-{seed}")


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def vc_without_credit(dut):
    """VC 0 of end a without credit (S_CL 0) while VC 1 flows; its frames wait in their queue
    and go once the limit is back."""
    tb = TB(dut)
    limits = list(tb.settings["limits"])
    tb.settings["limits"] = [0] + limits[1:]
    await tb.start()
    held = [tb.bridge_frame("a", vc=0, words=6) for _ in range(tb.config.queue_frames - 1)]
    for frame in held:
        tb.offer("a", frame)
    await tb.traffic(max(20, 60 * tb.config.eth_bytes // 8), vcs=[1])
    for _ in range(2000):
        if len(tb.got["b"][1]) == len(tb.offered["a"][1]):
            break
        await ClockCycles(dut.clk, 50)
    assert len(tb.got["b"][1]) == len(tb.offered["a"][1]) and not tb.got["b"][0]
    tb.settings["limits"] = limits
    tb.apply_settings()
    await tb.settle()
    tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def link_down_and_up(dut):
    """The wire breaks three times in the middle of traffic (every frame on it lost; both links
    told once a frame has been lost to the break) and comes back before ``down_max``: the kept
    frames are replayed, none lost or doubled."""
    tb = TB(dut, loss=_loss(0.01))
    await tb.start()
    frames = max(20, 80 * tb.config.eth_bytes // 8)
    task = cocotb.start_soon(tb.traffic(frames))

    def broken():
        return sum(n for e in NODES for (k, why), n in tb.lost[e].items() if why == "down")

    for _ in range(3):
        await ClockCycles(dut.clk, tb.rng.randrange(500, 3000))
        before = broken()
        tb.down = True
        for _ in range(1000):                   # a data or control frame lost to the break
            if broken() > before:
                break
            await ClockCycles(dut.clk, 20)
        tb.set_up(0)
        await ClockCycles(dut.clk, tb.rng.randrange(100, 2000))
        tb.set_up(1)
        tb.down = False
    await task
    await tb.settle()
    tb.check()
    assert broken() >= 3


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def full_replay_ring(dut):
    """A round trip longer than the replay ring: the ring fills, frames wait for ACKs."""
    cfg = LinkConfig.from_env()
    delay = cfg.replay_frames * (cfg.rows(76) + 4)         # the ring's frames' time on the wire
    frame = cfg.rows(cfg.max_wire_bytes)
    tb = TB(dut, delay=delay, settings={"replay_timeout": min(0xFFFF, 4 * delay + 4 * frame),
                                        "init_period": 3 * delay})
    await tb.start(pause=0.0)
    for _ in range(2 * cfg.replay_frames):
        tb.offer("a", tb.bridge_frame("a", words=6))
    await tb.settle()
    tb.check()
    assert tb.tx("a")["PEAK_REPLAY"] == cfg.replay_frames - 1


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def link_down_too_long(dut):
    """Down longer than ``down_max``: each transmitter FLUSHes (the kept frames dropped and
    counted), then INITs once up; the CC_UPDATEs give back the flushed frames' credits."""
    tb = TB(dut, settings={"down_max": 300, "cc_period": 400})
    await tb.start()
    frames = max(20, 60 * tb.config.eth_bytes // 8)
    task = cocotb.start_soon(tb.traffic(frames))
    await ClockCycles(dut.clk, 1500 * 8 // tb.config.eth_bytes)
    tb.down = True
    tb.set_up(0)
    await ClockCycles(dut.clk, 600)
    assert all(getattr(dut, f"{e}_tx_state").value == TxState.OFF.value for e in NODES)
    tb.set_up(1)
    tb.down = False
    await task
    await tb.settle()
    tb.check(flushed=True)
    assert sum(tb.tx(e)["TX_FLUSHED"] for e in NODES) > 0
    assert all(tb.tx(e)["INIT_ECHO_RX"] >= 2 for e in NODES)
