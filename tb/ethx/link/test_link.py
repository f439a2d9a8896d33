# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/link/link.py: two lossless links back to back (sim/ethx/link/pair.py)
through cocotb channels that lose and corrupt frames of chosen kinds. Every bridge frame
offered reaches the other end once and in order (per VC); every wire frame is well formed
(checked by the golden model's receive checks); the counters of the two ends agree with each
other and with what the channels did; at the end nothing is kept, queued or owed credit."""

import collections
import itertools

import cocotb
import pytest
from amaranth import Shape
from cocotb.triggers import ClockCycles

from scaleup_ip.ethx.link import (LINK_WORD_BYTES, MIN_BE_BYTES, EthxLink, LinkConfig, TxState,
                                  default_settings, settings_layout, verdict_layout)
from scaleup_ip.ethx.link.tx import BestEffortTx
from scaleup_ip.model.ethx import link as model
from sim import harness
from sim.ethx.link.env import LinkPairEnv as TB, kind_of
from sim.ethx.link.pair import EthxLinkPair
from sim.ethx.pair import NODES

TIMEOUT_US = 8000


async def run(dut, frames, **kwargs):
    vcs, pause, rule = kwargs.pop("vcs", None), kwargs.pop("pause", 0.1), kwargs.pop("rule", None)
    tb = TB(dut, **kwargs)
    tb.rule = rule
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
async def best_effort(dut):
    """The best-effort path both ways beside the link's frames: frames of every length (the
    FCS at every place in a beat), malformed ones (too short, too long, a gap in ``keep``;
    from the two ends in turn) dropped and counted at the source, 3 % of the wire's frames of
    both kinds lost or corrupted. The link's frames all arrive; the best-effort frames
    corrupted or dropped on the wire are lost, the others arrive in order, but those the
    receiver counted dropped for lack of room (its output paused at random, then stopped
    while four longest frames come)."""
    tb = TB(dut, loss=_loss(0.03, ("data", "be")))
    seen = {e: 0 for e in NODES}

    def fate(end, got, wire):               # each end's 3rd corrupted, 5th dropped
        if got.cls is not model.Class.FOREIGN:
            return None
        seen[end] += 1
        return {3: wire[:-1] + bytes([wire[-1] ^ 0x10]), 5: False}.get(seen[end])

    tb.rule = fate
    await tb.start(pause=0.3)
    cfg = tb.config
    frames = max(20, 40 * cfg.eth_bytes // 8)
    bad_keep = 0b101 if cfg.eth_bytes > 1 else None
    task = cocotb.start_soon(tb.traffic(frames))
    ends = list(NODES)
    for k in range(frames * 3):
        e = tb.rng.choice(ends)
        if k % 10 == 9 or k % 10 == 5 and bad_keep:     # malformed: from the ends in turn
            e = ends[k // 10 % 2]
        if k % 10 == 9:
            size = tb.rng.choice([1, 13, MIN_BE_BYTES - 1, cfg.max_be_bytes + 1])
            tb.offer_be(e, tb.be_frame(max(size, 14))[:size])
        elif k % 10 == 5 and bad_keep:
            tb.offer_be(e, tb.be_frame(MIN_BE_BYTES + 8 * cfg.eth_bytes + 3), keep=bad_keep)
        else:
            tb.offer_be(e, tb.be_frame(MIN_BE_BYTES + k % 64 if k % 3 else None))
        while not tb.be_source[e].empty():
            await ClockCycles(dut.clk, 1)
        await ClockCycles(dut.clk, tb.rng.randrange(0, 40))
    await task
    tb.loss = {}
    tb.be_sink["b"].set_backpressure(itertools.repeat(True))
    for _ in range(4):
        tb.offer_be("a", tb.be_frame(cfg.max_be_bytes))
    while tb.be_sent["a"] < len(tb.be_offered["a"]):
        await ClockCycles(dut.clk, 10)
    await ClockCycles(dut.clk, 2 * cfg.rows(cfg.max_wire_bytes))
    tb.be_sink["b"].set_backpressure(itertools.repeat(False))
    await tb.settle()
    tb.check()
    counts = {e: tb.be_counts(e) for e in NODES}
    assert sum(c["BE_TX"] for c in counts.values()) > 2 * frames
    assert all(c["BE_TX_MALFORMED"] > 0 for c in counts.values())
    assert counts["b"]["BE_RX_DROPPED"] >= 3
    assert all(tb.lost[e]["be", "corrupt"] and tb.lost[e]["be", "drop"] for e in NODES)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def best_effort_refused(dut):
    """Frames the best-effort path must refuse while good ones wait in its buffer (a's wire
    held down): one with more empty beats than the buffer has rows (it must not overwrite the
    frames waiting), and frames the far end would take for the link's own: EtherType 0x88B6
    (an INIT) or 0x88B5, and, with the tag option, either inside a tag of the link's VID. A
    frame tagged with the link's VID around another EtherType is not the link's: it goes."""
    tb = TB(dut)
    await tb.start()
    cfg = tb.config
    dut.a_up.value = 0
    await ClockCycles(dut.clk, 10)
    good = [tb.be_frame(100), tb.be_frame(200)]
    tb.offer_be("a", good[0])
    tb.offer_be("a", tb.be_frame(80), holes=cfg.be_bytes // cfg.eth_bytes + 10)
    tb.offer_be("a", good[1])
    init = model.encode_control(model.Ctl.INIT, NODES["a"], seq=5)[:-model.FCS_BYTES]
    data = model.to_wire(tb.bridge_frame("a", words=6), 3)[:-model.FCS_BYTES]
    for frame in (init, data):
        tb.offer_be("a", frame, malformed=True)
        if cfg.vlan:
            tagged = model.tag(frame, 0, tb.settings["vid"])
            tb.offer_be("a", tagged, malformed=True)
    if cfg.vlan:
        ipv4 = model.tag(tb.be_frame(120), 3, tb.settings["vid"])
        tb.offer_be("a", ipv4)
    while not tb.be_source["a"].empty():
        await ClockCycles(dut.clk, 1)
    await ClockCycles(dut.clk, 50)
    dut.a_up.value = 1
    await tb.traffic(20)
    await tb.settle()
    tb.check()
    assert tb.be_got["b"][:2] == good
    assert tb.rx("b")["INIT_RX"] == tb.tx("a")["INIT_TX"] and tb.tx("b")["ACK_NACK_SEQ_ERROR"] == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lost_acks(dut):
    """Half the ACKs lost: later cumulative ACKs and duplicates' ACKs cover them."""
    await run(dut, 60, loss={"ack": 0.5}, corrupt=0.0)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lost_nacks(dut):
    """Data and NACKs lost, 5 % and 60 %, and for certain a's 10th data frame and b's first
    NACK (that frame must come again, and with the first NACK lost only the timer can replay
    it): the replay timer and duplicates' ACKs recover."""
    frame = LinkConfig.from_env().rows(LinkConfig.from_env().max_wire_bytes)
    seen = collections.Counter()

    def fate(end, got, wire):               # a's 10th data frame lost, b's first NACK
        kind = (end, kind_of(got))
        if kind not in (("a", "data"), ("b", "nack")):
            return None
        seen[kind] += 1
        return False if seen[kind] == {"data": 10, "nack": 1}[kind[1]] else None

    tb = await run(dut, 60, loss={"data": 0.05, "nack": 0.6}, rule=fate,
                   settings={"replay_timeout": frame + 600})
    assert sum(tb.tx(e)["TX_REPLAY_TIMER"] for e in NODES) > 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def nack_after_replays(dut):
    """A NACK that frees frames is progress even when it asks for a replay: with ``replay_max``
    1, a's first frame lost once (its NACK frees nothing: one replay without progress), then
    in the replay that frame arrives and the next is lost; the NACK of the first frees it and
    replays from the second. The count of replays without progress was cleared by the NACK
    and counts this replay only: no FLUSH (README §3.2)."""
    tb = TB(dut, settings={"replay_max": 1, "ack_bytes": 0xFFFF, "ack_delay": 1000})
    seen = collections.Counter()
    first = []

    def fate(end, got, wire):           # a: the 1st data frame lost once, the 2nd in the replay
        if end != "a" or got.cls is not model.Class.DATA:
            return None
        first[:] = first or [got.seq]
        seen[got.seq] += 1
        lose = {first[0]: 1, (first[0] + 1) % (1 << tb.config.seq_bits): 2}
        return False if lose.get(got.seq) == seen[got.seq] else None

    tb.rule = fate
    await tb.start()
    for _ in range(6):
        tb.offer("a", tb.bridge_frame("a", words=6))
    await tb.settle()
    tb.check()
    assert tb.tx("a")["TX_REPLAY_NACK"] == 2, tb.tx("a")


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lost_credit_updates(dut):
    """CF_UPDATEs and CC_UPDATEs lost: the next ones repair the credits. A CC_UPDATE every 50
    control frames' time: with 30 % of them lost, go-back-N still drains the ring.

    The oldest frame kept is lost again on a replay with odds 0.3, and ``replay_max`` + 1
    replays in a row without progress FLUSH (README §3.2), which this test does not expect:
    with the default 8, 0.3**9 = 2e-5 for each of some 200 replays a run (at SEED=885625408 a
    CC_UPDATE was lost ten times running and its end flushed two data frames); with 24,
    0.3**25 ~ 1e-13."""
    cfg = LinkConfig.from_env()
    period = 50 * cfg.rows(model.CONTROL_BYTES + model.FCS_BYTES)
    await run(dut, 80, loss={"cf_update": 0.5, "cc": 0.3},
              settings={"cc_period": period, "replay_max": 24})


CONFIGS = [
    LinkConfig(eth_width=64, vcs=3, seq_bits=6, replay_frames=16, rx_bytes=4096, be_bytes=2048,
               vlan=True),
    LinkConfig(eth_width=8, vcs=2, be_bytes=2048, vlan=True),
    LinkConfig(eth_width=32, vcs=2, be_bytes=2048, vlan=True),
]


#: Cases that once failed, run by ``make soak`` with their seed: at 639272305 end a's INIT, built
#: while it waited for INIT_ECHO, left after the echo had come and a frame had gone: the far end
#: went back to that frame's sequence number and took it twice.
#: At 594245554 (64-bit) no frame was on the wire at any of link_down_and_up's breaks, so none
#: was lost to them and the test proved nothing; each break now waits for one. At 2019296820
#: (8-bit) lossy sent an INIT twice and counted a stale ACK (see LinkPairEnv.check). At
#: 885625408 (64-bit) lost_credit_updates lost one CC_UPDATE on ten tries in a row: FLUSH.
SEEDS = [(CONFIGS[1], "link_down_too_long", 639272305),
         (CONFIGS[0], "link_down_and_up", 594245554), (CONFIGS[1], "lossy", 2019296820),
         (CONFIGS[0], "lost_credit_updates", 885625408)]


#: The tests the 8-bit configuration runs (a byte a clock is slow to simulate); the loss of
#: single kinds of control frame and the full replay ring do not depend on the width
#: (``link_down_too_long`` runs at this width with its seed below, in ``make soak``).
NARROW_TESTS = "clean,lossy,vc_without_credit,link_down_and_up,best_effort,best_effort_refused"


#: The 32-bit configuration checks the tag and the best-effort path at its width.
WIDE_TESTS = "clean,lossy,best_effort,best_effort_refused"


@pytest.mark.parametrize("config", CONFIGS, ids=LinkConfig.slug)
def test_link(config):
    tests = {CONFIGS[0].eth_width: None, CONFIGS[1].eth_width: NARROW_TESTS,
             CONFIGS[2].eth_width: WIDE_TESTS}[config.eth_width]
    harness.run(EthxLinkPair(config), config, toplevel="ethx_link_pair",
                test_module=__name__, testcase=tests)


@pytest.mark.soak_only
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
    await tb.settle(flushed=True)
    tb.check(flushed=True)
    assert sum(tb.tx(e)["TX_FLUSHED"] for e in NODES) > 0
    assert all(tb.tx(e)["INIT_ECHO_RX"] >= 2 for e in NODES)


def test_best_effort_config():
    """``be_bytes``: 0, or a power of two holding a longest wire frame; the ports only with it."""
    assert LinkConfig(be_bytes=2048).max_be_bytes == 14 + 1500 + 8
    for bad in (1000, 1024, 3000):          # a longest wire frame is 1526 bytes at MTU 1500
        with pytest.raises(ValueError, match="be_bytes"):
            LinkConfig(be_bytes=bad)
    with pytest.raises(ValueError, match="be_bytes"):
        LinkConfig(mtu=9216, queue_bytes=16384, rx_bytes=16384, be_bytes=8192)
    with pytest.raises(ValueError, match="needs a link configuration with be_bytes"):
        BestEffortTx(LinkConfig())
    without, with_path = EthxLink(LinkConfig()), EthxLink(LinkConfig(be_bytes=2048))
    without._MustUse__silence = with_path._MustUse__silence = True     # inspected only
    assert "be_i" not in without.signature.members
    assert {"be_i", "be_o", "be_counts"} <= set(with_path.signature.members)


def test_vlan_config():
    """``vlan``: a bool; the tag adds 8 bytes to the longest wire frame; its settings only
    with it, their defaults as README §1 says."""
    with pytest.raises(TypeError, match="vlan"):
        LinkConfig(vlan=1)
    assert LinkConfig(vlan=True).max_wire_bytes == LinkConfig().max_wire_bytes + 8
    assert "vid" not in settings_layout(LinkConfig()).members
    defaults = default_settings(LinkConfig(vcs=3, vlan=True))
    assert (defaults["vid"], defaults["pcps"], defaults["ctl_pcp"]) == (0, [0, 1, 2], 7)
    assert defaults["vc_of_pcp"] == [0, 1, 2, 2, 2, 2, 2, 2]


def test_verdict_holds_every_foreign_frame():
    """The verdict's byte count holds the longest frame the receiver passes on at every MTU
    (a foreign frame's, less link word and FCS: 8 more than a bridge frame's with the tag;
    MTU 2033 with the tag once cut 2064-byte best-effort frames to 12 bytes)."""
    for mtu in range(1500, 9217):
        for vlan in (False, True):
            cfg = LinkConfig(mtu=mtu, vlan=vlan, queue_bytes=16384, rx_bytes=16384,
                             replay_bytes=16384)
            field = Shape.cast(verdict_layout(cfg)["bytes"].shape)
            assert (1 << field.width) > cfg.max_be_bytes - LINK_WORD_BYTES, (mtu, vlan)
