# SPDX-License-Identifier: BSD-2-Clause
"""cocotb helpers for :class:`sim.dl.link.DlLink`: bring the link up, set errors, measure
goodput, drain and check that every TL flit arrived once, in order."""

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles

from scaleup_ip.dl import (
    BEATS_PER_FLIT,
    DlState,
    PAYLOAD_SECTORS,
    RxCount,
    TL_FLIT_SECTORS,
    TxCount,
    rx_counts,
    tx_counts,
)
from scaleup_ip.model.dl import err_link as err_model

from sim.streams import reset

__all__ = ["TL_PER_CLOCK", "ber_threshold", "bound", "counts", "dl_counts", "drain",
           "flit_error_rate", "go_back_n", "measure", "start"]

#: The link's TL capacity: 157 sectors of 16 per DL flit of 10 clocks [§6.3.1].
TL_PER_CLOCK = PAYLOAD_SECTORS / TL_FLIT_SECTORS / BEATS_PER_FLIT
#: Bits per DL flit.
_FLIT_BITS = 640 * 8


def flit_error_rate(ber):
    """q: the chance that a DL flit has a bit error at bit error rate ``ber``."""
    return 1 - (1 - ber) ** _FLIT_BITS


def bound(ber, m):
    """The go-back-N goodput bound at bit error rate ``ber`` (:func:`go_back_n`)."""
    return go_back_n(flit_error_rate(ber), m)


def go_back_n(q, m):
    """The go-back-N goodput bound (1 - q) / (1 + (m - 1) q) at flit error rate ``q``, ``m`` the
    round trip in DL flits."""
    return (1 - q) / (1 + (m - 1) * q)


def ber_threshold(ber):
    return err_model.ber_threshold(ber)


async def start(dut, *, delay, seed, ack_timeout=40_000, replay_limit=50):
    """Clock, controls, reset; returns once both ends are UP (errors off)."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.enable.value = 1
    dut.retrain.value = 0
    dut.ack_timeout.value = ack_timeout
    dut.replay_limit.value = replay_limit
    dut.link_enable.value = 0
    for name in ("ber_threshold", "burst_threshold", "burst_length", "drop_threshold"):
        getattr(dut, name).value = 0
    dut.delay.value = delay
    dut.seed_ab.value = seed
    dut.seed_ba.value = seed ^ 0x5DEECE66D
    await reset(dut)
    await up(dut)


async def up(dut, clocks=20_000):
    for _ in range(clocks // 10):
        if all(int(getattr(dut, f"{end}_state").value) == DlState.UP.value for end in "ab"):
            return
        await ClockCycles(dut.clk, 10)
    raise AssertionError("the link did not come up")


def counts(dut):
    """Every counter of :class:`~sim.dl.link.DlLink` as a flat dict of ints."""
    out = dl_counts(dut)
    for end in "ab":
        for name in ("sent", "good", "bad"):
            out[f"{end}_{name}"] = int(getattr(dut, f"{end}_{name}").value)
    return out


def dl_counts(dut):
    """Both DL ends' counters (:func:`sim.dl.link.dl_members`) as a flat dict of ints."""
    out = {}
    for end in "ab":
        out[f"{end}_unacked"] = int(getattr(dut, f"{end}_unacked").value)
        for side, layout, kinds in (("tx", tx_counts, TxCount), ("rx", rx_counts, RxCount)):
            view = layout.from_bits(int(getattr(dut, f"{end}_{side}").value))
            out.update({f"{end}_{side}_{kind.name.lower()}": int(view[kind]) for kind in kinds})
    return out


async def measure(dut, clocks):
    """Run ``clocks`` with traffic on; returns the counters' changes and the goodput each way
    (TL flits delivered in order / the link's TL capacity)."""
    before = counts(dut)
    dut.traffic.value = 1
    await ClockCycles(dut.clk, clocks)
    after = counts(dut)
    delta = {k: after[k] - before[k] for k in after if "unacked" not in k}
    delta["a_tx_peak"], delta["b_tx_peak"] = after["a_tx_peak"], after["b_tx_peak"]
    goodput = {end: delta[f"{end}_good"] / (clocks * TL_PER_CLOCK) for end in "ab"}
    return delta, goodput


async def drain(dut, clocks=200_000):
    """Stop traffic and errors; wait until every flit sent arrived and was acknowledged; check
    that none arrived out of order, twice or corrupted."""
    dut.traffic.value = 0
    dut.link_enable.value = 0
    for _ in range(clocks // 100):
        await ClockCycles(dut.clk, 100)
        c = counts(dut)
        if (c["a_good"] == c["b_sent"] and c["b_good"] == c["a_sent"]
                and c["a_unacked"] == 0 and c["b_unacked"] == 0):
            break
    c = counts(dut)
    assert c["a_bad"] == 0 and c["b_bad"] == 0, f"TL flits lost, repeated or reordered: {c}"
    assert c["a_good"] == c["b_sent"] and c["b_good"] == c["a_sent"], f"not all arrived: {c}"
    assert c["a_unacked"] == 0 and c["b_unacked"] == 0, f"left unacknowledged: {c}"
    return c
