"""One UALink DL end (``rtl/dl/dl.py``) whose flits come back to itself through a channel
written here (a delay in clocks, flits corrupted or dropped at random): it is its own link
partner, so every rule of link-level replay runs on both sides at once.

TL flits sent are checked to come out in order, none lost or repeated, under errors, with the
replay counters showing that replays happened; at the end nothing is left unacknowledged.
"""

import collections
import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from rtl.dl.dl import DlState, UalinkDl
from rtl.dl.layout import BEAT_BITS, DlConfig, RxCount, TxCount, rx_counts, tx_counts
from rtl.tl.layout import HALF_BITS, flit_layout
from sim import harness
from sim.dl_link_env import start_end
from sim.streams import LayoutSink, LayoutSource, random_pauses

#: The channel's delay, clocks: with the DL's own latency, a round trip of about 8 DL flits.
_DELAY = 30


async def _channel(dut, rng, errors, stats):
    """``phy_out`` into ``phy_in`` :data:`_DELAY` clocks later. ``errors`` (may change while
    running): ``corrupt`` and ``drop``, probabilities per DL flit; ``stats`` counts them."""
    queue = collections.deque()
    beats, now, offered = [], 0, False
    dut.phy_out__ready.value = 1
    dut.phy_in__valid.value = 0
    while True:
        await RisingEdge(dut.clk)             # values read now are those of the edge
        now += 1
        if int(dut.rst.value):
            queue.clear()
            beats = []
        if offered and int(dut.phy_in__ready.value):
            queue.popleft()
        if int(dut.phy_out__valid.value):
            payload = int(dut.phy_out__payload.value)
            beats.append(payload)
            if payload >> BEAT_BITS & 1:                     # the flit's last beat
                stats["flits"] += 1
                if rng.random() < errors["drop"]:
                    stats["dropped"] += 1
                else:
                    if rng.random() < errors["corrupt"]:
                        stats["corrupted"] += 1
                        b = rng.randrange(len(beats))
                        beats[b] ^= 1 << rng.randrange(BEAT_BITS)
                    queue.extend((now + _DELAY, beat) for beat in beats)
                beats = []
        offered = bool(queue) and queue[0][0] <= now
        dut.phy_in__valid.value = int(offered)
        if offered:
            dut.phy_in__payload.value = queue[0][1]


def _counts(layout, value):
    return layout.from_bits(int(value))


async def _run(dut, rng, n, errors, stall):
    """Send ``n`` random TL flits with ``errors`` on the channel and ``stall`` on ``tl_out``;
    check they all come out in order."""
    source = LayoutSource(dut, "tl_in", flit_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "tl_out", flit_layout, dut.clk, dut.rst)
    source.set_idle(random_pauses(rng, 0.2))
    sink.set_backpressure(random_pauses(rng, stall))
    sent = [rng.getrandbits(2 * HALF_BITS) for _ in range(n)]
    for value in sent:
        source.send_nowait(data=[value & ((1 << HALF_BITS) - 1), value >> HALF_BITS],
                           msg=value & 3)
    for k, value in enumerate(sent):
        got = await sink.recv()
        assert int(got.data[0]) | int(got.data[1]) << HALF_BITS == value, f"TL flit {k}"
        assert int(got.msg) == value & 3
    assert source.empty()


#: Tx_ack_time_out and Rx_replay_limit for this short link, in flit times: the limit twice the
#: round trip (about 20 flits) [§6.6.4.6]; it must exceed it (``LlrRx``).
_ACK_TIMEOUT = 300
_REPLAY_LIMIT = 40


async def _start(dut):
    await start_end(dut, ack_timeout=_ACK_TIMEOUT, replay_limit=_REPLAY_LIMIT)


def _log_counts(dut, stats):
    tx = _counts(tx_counts, dut.tx_counts.value)
    rx = _counts(rx_counts, dut.rx_counts.value)
    dut._log.info("channel %s; tx %s; rx %s", dict(stats),
                  {k.name: int(tx[k]) for k in TxCount}, {k.name: int(rx[k]) for k in RxCount})
    return tx, rx


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def loop_clean(dut):
    """No errors: the link comes Up and carries the TL flits; no replay, nothing left."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    stats = collections.Counter()
    cocotb.start_soon(_channel(dut, rng, {"corrupt": 0, "drop": 0}, stats))
    await _run(dut, rng, 300, None, 0.1)
    await ClockCycles(dut.clk, 400)
    tx, rx = _log_counts(dut, stats)
    assert int(dut.state.value) == DlState.UP.value
    assert int(tx[TxCount.REPLAYED]) == 0 and int(rx[RxCount.BAD_CRC]) == 0
    assert int(rx[RxCount.GOOD]) == int(tx[TxCount.PAYLOAD])


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def loop_errors(dut):
    """Flits corrupted and dropped at random: every TL flit comes out once, in order; replays
    happened; at the end everything is acknowledged."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    stats = collections.Counter()
    errors = {"corrupt": 0.05, "drop": 0.03}
    cocotb.start_soon(_channel(dut, rng, errors, stats))
    await _run(dut, rng, 1500, errors, 0.2)
    errors.update(corrupt=0, drop=0)
    await ClockCycles(dut.clk, 2000)
    tx, rx = _log_counts(dut, stats)
    assert int(tx[TxCount.REPLAYED]) > 0 and int(rx[RxCount.BAD_CRC]) > 0
    assert int(tx[TxCount.PEAK]) == 32, "TxReplay never filled"
    assert int(dut.state.value) == DlState.UP.value
    await _drained(dut)


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
    cocotb.start_soon(_channel(dut, rng, errors, stats))

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
    await _run(dut, rng, 8000, errors, 0.1)
    errors.update(corrupt=0, drop=0)
    await _drained(dut)
    tx, _ = _log_counts(dut, stats)
    assert int(tx[TxCount.PAYLOAD]) > 511, "the sequence numbers did not wrap"
    assert int(tx[TxCount.TIMEOUTS]) >= 1 and int(dut.ups.value) >= 3
    assert int(dut.state.value) == DlState.UP.value


@pytest.mark.parametrize("test", ["loop_clean", "loop_errors", "loop_wrap_retrain"])
def test_dl_loop(test):
    harness.run(UalinkDl(DlConfig(replay_depth=32)), DlConfig(replay_depth=32),
                toplevel="ualink_dl", test_module="tb.test_dl_loop", testcase=test)
