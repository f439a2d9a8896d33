# SPDX-License-Identifier: BSD-2-Clause
"""One UALink DL end (``rtl/scaleup_ip/dl/dl.py``) whose flits come back to itself through a channel
written here (a delay in clocks, flits corrupted or dropped at random): it is its own link
partner, so every rule of link-level replay runs on both sides at once.

TL flits sent are checked to come out in order, none lost or repeated, under errors, with the
replay counters showing that replays happened; at the end nothing is left unacknowledged.
"""

import collections
import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from scaleup_ip.dl import BEATS_PER_FLIT, DlConfig, DlState, FH_BYTES, FH_OFFSET, UalinkDl
from scaleup_ip.model.dl import flit as dl_flit, llr as dl_llr
from scaleup_ip.tl import HALF_BITS, flit_layout
from sim import harness
from sim.dl.env import PhySide, end_counts, lossy, start_end, tl_fields, tl_value
from sim.streams import LayoutSink, LayoutSource, random_pauses

#: The channel's delay, clocks: with the DL's own latency, a round trip of about 20 DL flits.
_DELAY = 30
#: That round trip, in flit times.
_ROUND_TRIP = 20
#: A channel that corrupts every flit (:func:`lossy`).
_CORRUPT = {"corrupt": 1, "drop": 0}


def _payload(wire):
    """Whether the DL flit ``wire`` (wire order) carries a payload."""
    logical = dl_flit.from_wire(wire)
    return bool(int.from_bytes(logical[FH_OFFSET:FH_OFFSET + FH_BYTES], "little")
                >> dl_llr.PAYLOAD_BIT & 1)


def _channel(dut, rng, errors, stats, corrupt_nth=None):
    """``phy_out`` into ``phy_in`` :data:`_DELAY` clocks later, through :func:`lossy` with
    ``errors`` (may change while running); with ``corrupt_nth``, the ``corrupt_nth``-th payload
    flit corrupted (one bit flipped) whatever the draws. ``stats`` counts. Returns the
    :class:`~sim.dl.env.PhySide`."""
    def on_flit(flit, now):
        stats["flits"] += 1
        chosen = False
        if corrupt_nth and _payload(flit):
            stats["payload_flits"] += 1
            chosen = stats["payload_flits"] == corrupt_nth
        flit = lossy(rng, _CORRUPT if chosen else errors, stats, flit)
        if flit is not None:
            phy.send(flit, now + _DELAY)

    phy = PhySide(dut, on_flit)
    cocotb.start_soon(phy.run())
    return phy


async def _run(dut, rng, n, stall):
    """Send ``n`` random TL flits with ``stall`` on ``tl_out``; check they all come out in
    order. Returns the sink (to check later that nothing more came)."""
    source = LayoutSource(dut, "tl_in", flit_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "tl_out", flit_layout, dut.clk, dut.rst)
    source.set_idle(random_pauses(rng, 0.2))
    sink.set_backpressure(random_pauses(rng, stall))
    sent = [rng.getrandbits(2 * HALF_BITS) for _ in range(n)]
    for value in sent:
        source.send_nowait(**tl_fields(value, value & 3))
    for k, value in enumerate(sent):
        got = await sink.recv()
        assert tl_value(got) == value, f"TL flit {k}"
        assert int(got.msg) == value & 3
    assert source.empty()
    return sink


#: Tx_ack_time_out and Rx_replay_limit for this short link, in flit times. The limit must
#: exceed the round trip (``LlrRx``; §6.6.4.6 asks for twice it): a Replay Request repeated
#: sooner brings a second, stale replay, whose Command flits alias in the 3-bit flitSeqLo when
#: its Explicit first flit is lost (SEED=1321150788 with a limit of 40 delivered a DL flit's
#: TL flits twice). The round trip here is not 20 flits: the TL output's stalls back the
#: receive side up, and flits wait in the channel (``PhySide.lag``, up to about 50 flit times
#: one way); so the limit is the largest, and each test checks the round trip stayed below it.
_ACK_TIMEOUT = 300
_REPLAY_LIMIT = 255


def _check_round_trip(phy):
    """The round trip, with the most any flit waited for the receive side each way, stayed
    below the replay limit (the condition LlrRx needs)."""
    worst = _ROUND_TRIP + 2 * phy.lag / BEATS_PER_FLIT
    cocotb.log.info("round trip up to %.0f flit times (lag %d clocks)", worst, phy.lag)
    assert worst < _REPLAY_LIMIT, f"round trip up to {worst:.0f} flit times"


async def _start(dut):
    await start_end(dut, ack_timeout=_ACK_TIMEOUT, replay_limit=_REPLAY_LIMIT)


def _log_counts(dut, stats):
    tx, rx = end_counts(dut)
    dut._log.info("channel %s; tx %s; rx %s", dict(stats), tx, rx)
    return tx, rx


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def loop_clean(dut):
    """No errors: the link comes Up and carries the TL flits; no replay, nothing left."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    stats = collections.Counter()
    _channel(dut, rng, {"corrupt": 0, "drop": 0}, stats)
    sink = await _run(dut, rng, 300, 0.1)
    await ClockCycles(dut.clk, 400)
    tx, rx = _log_counts(dut, stats)
    assert int(dut.state.value) == DlState.UP.value
    assert tx["REPLAYED"] == 0 and rx["BAD_CRC"] == 0
    assert rx["GOOD"] == tx["PAYLOAD"]
    await _drained(dut)
    assert sink.empty()


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def loop_errors(dut):
    """Flits corrupted and dropped at random (and the 10th payload flit corrupted for
    certain): every TL flit comes out once, in order; replays happened; at the end everything
    is acknowledged."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    stats = collections.Counter()
    errors = {"corrupt": 0.05, "drop": 0.03}
    phy = _channel(dut, rng, errors, stats, corrupt_nth=10)
    sink = await _run(dut, rng, 1500, 0.2)
    errors.update(corrupt=0, drop=0)
    await ClockCycles(dut.clk, 2000)
    tx, rx = _log_counts(dut, stats)
    _check_round_trip(phy)
    assert tx["REPLAYED"] > 0 and rx["BAD_CRC"] > 0
    assert tx["PEAK"] == 32, "TxReplay never filled"
    assert int(dut.state.value) == DlState.UP.value
    await _drained(dut)
    assert sink.empty()


async def _drained(dut):
    """Nothing left unacknowledged (every flit sent was delivered and acknowledged)."""
    for _ in range(100):
        await ClockCycles(dut.clk, 10)
        if int(dut.unacked.value) == 0:
            return
    raise AssertionError(f"{int(dut.unacked.value)} flits never acknowledged")


@cocotb.test(timeout_time=80, timeout_unit="ms")
async def loop_wrap_retrain(dut):
    """More than 511 payload flits (the sequence numbers wrap), bursts of bad flits (every copy
    of a Replay Request among them), a retrain in the middle of traffic and a blackout longer
    than the ack timeout (the link goes down and up again): every TL flit once, in order.

    Bursts are of corrupted flits, not of flits that vanish: a UALink PHY hands every flit
    slot to the DL, an uncorrectable one with a bad CRC [§6.6.1], and 8 flits vanishing
    unseen would alias in the 3-bit flitSeqLo. Lone vanishing flits are in the mix, and the
    blackout makes many vanish, which the link states recover from."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    stats = collections.Counter()
    errors = {"corrupt": 0.02, "drop": 0.01}
    phy = _channel(dut, rng, errors, stats)

    async def trouble():
        await ClockCycles(dut.clk, 5000)
        for _ in range(20):                             # bursts of 4 .. 12 bad flits
            errors["corrupt"] = 1.0
            await ClockCycles(dut.clk, rng.randint(40, 120))
            errors["corrupt"] = 0.02
            await ClockCycles(dut.clk, rng.randint(200, 600))
        dut.retrain.value = 1                           # a retrain
        await ClockCycles(dut.clk, 50)
        dut.retrain.value = 0
        await ClockCycles(dut.clk, 3000)
        errors["drop"] = 1.0                            # a blackout: the ack timer runs out
        await ClockCycles(dut.clk, (_ACK_TIMEOUT + 50) * 10)
        errors["drop"] = 0.01

    cocotb.start_soon(trouble())
    sink = await _run(dut, rng, 8000, 0.1)
    errors.update(corrupt=0, drop=0)
    await _drained(dut)
    tx, _ = _log_counts(dut, stats)
    _check_round_trip(phy)
    assert tx["PAYLOAD"] > 511, "the sequence numbers did not wrap"
    assert tx["TIMEOUTS"] >= 1 and int(dut.ups.value) >= 3
    assert sink.empty()
    assert int(dut.state.value) == DlState.UP.value


@pytest.mark.parametrize("test", ["loop_clean", "loop_errors", "loop_wrap_retrain"])
def test_dl_loop(test):
    harness.run(UalinkDl(DlConfig(replay_depth=32)), DlConfig(replay_depth=32),
                toplevel="ualink_dl", test_module=__name__, testcase=test)
