# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the ``ualink`` part of ``make sim``: two full UALink ends (TL and DL) over
error-injecting links (:class:`sim.ualink.link.UalinkLink`), random UPLI traffic both ways.

The link comes up, the error links start flipping bits at ``SIM_BER``, each end's traffic
generator (:class:`scaleup_ip.tl.traffic.UpliGen`) sends ``SIM_TL_ITEMS`` random items and the far
end's checker (:class:`scaleup_ip.tl.traffic.UpliCheck`) checks every transfer on arrival, all in
hardware (:func:`run_traffic`); then errors stop and both DL ends must have every flit
acknowledged. The report (the JSON file named by ``SIM_REPORT``) has the TL figures of
:mod:`sim.tl.system` and the DL's: bad CRCs, replays, goodput of the link's DL flits, and the
counters' changes. :func:`run` is the same with the traffic made and checked in Python
(:func:`sim.tl.system.exchange`), for tests that need the items themselves.
"""

import json
import os
import random

import cocotb
from cocotb.triggers import ClockCycles

from sim.dl.link_env import ber_threshold, dl_counts, start
from sim.tl.system import Flits, check, credits_home, exchange, hardware_exchange
from sim.ualink.link import UalinkLinkConfig

#: The DL link environment's clock period (:func:`sim.dl.link_env.start`).
PERIOD_NS = 10

#: One-way delay of the error links, clocks, and Rx_replay_limit, flit times: above the replay
#: round trip of 24 DL flits at this delay (the DL benchmark measures it), with a margin.
DELAY = 60
REPLAY_LIMIT = 28


async def settle(dut, config, clocks=100_000):
    """Stop the errors and wait until neither DL end has a flit unacknowledged and each TL
    holds all the credits its peer advertises; raise if that does not come."""
    dut.link_enable.value = 0
    for _ in range(clocks // 100):
        if all(int(getattr(dut, f"{end}_unacked").value) == 0
               and credits_home(dut, end, config) for end in "ab"):
            return
        await ClockCycles(dut.clk, 100)
    raise AssertionError(f"flits left unacknowledged or credits not home: {dl_counts(dut)}")


async def run(dut, count, *, delay=DELAY, replay_limit=REPLAY_LIMIT, during=None):
    """Bring the link up (error links ``delay`` clocks each way), exchange ``count`` items each
    way (``during`` alongside), stop the errors and settle; returns the TL report with the DL
    counters' changes (``dl``) added."""
    config = UalinkLinkConfig.from_env()
    rng = random.Random(cocotb.RANDOM_SEED)
    dut.traffic.value = dut.guard.value = 0
    await start(dut, delay=delay, seed=rng.getrandbits(64) | 1, ack_timeout=2000,
                replay_limit=replay_limit)
    counter = Flits(dut)
    before = dl_counts(dut)
    dut.link_enable.value = 1
    report = await exchange(dut, config, rng, count, counter, during,
                            settle=lambda: settle(dut, config))
    after = dl_counts(dut)
    report["dl"] = {k: after[k] - before[k] for k in after if "unacked" not in k}
    report["dl"].update({f"{end}_tx_peak": after[f"{end}_tx_peak"] for end in "ab"})
    return report


async def run_traffic(dut, count, *, ber, delay=DELAY, replay_limit=REPLAY_LIMIT,
                      during=None):
    """Bring the link up with the traffic in hardware, send ``count`` items each way at bit
    error rate ``ber`` (``during``, a coroutine, alongside from the start; awaited before the
    errors stop) until every transfer has been checked, stop the errors and settle; returns
    the report (:func:`sim.tl.system.hardware_exchange`'s, and the DL counters' changes)."""
    config = UalinkLinkConfig.from_env()
    rng = random.Random(cocotb.RANDOM_SEED)
    dut.traffic.value, dut.guard.value = 1, 0
    dut.gen_enable.value = dut.gen_load.value = 0
    await start(dut, delay=delay, seed=rng.getrandbits(64) | 1, ack_timeout=2000,
                replay_limit=replay_limit)
    before = dl_counts(dut)

    alongside = []

    async def errors():
        dut.link_enable.value = 1
        dut.ber_threshold.value = ber_threshold(ber)
        if during is not None:
            alongside.append(cocotb.start_soon(during))

    async def finish():
        for task in alongside:
            await task
        await settle(dut, config)

    report = await hardware_exchange(dut, config, rng, count, period_ns=PERIOD_NS,
                                     during=errors, settle=finish)
    after = dl_counts(dut)
    report["dl"] = {k: after[k] - before[k] for k in after if "unacked" not in k}
    report["dl"].update({f"{end}_tx_peak": after[f"{end}_tx_peak"] for end in "ab"})
    return report


@cocotb.test(timeout_time=100_000, timeout_unit="ms")
async def system(dut):
    ber = float(os.environ["SIM_BER"])
    report = await run_traffic(dut, int(os.environ["SIM_TL_ITEMS"]), ber=ber)
    report["ber"], report["delay_clocks"] = ber, DELAY
    with open(os.environ["SIM_REPORT"], "w") as f:
        json.dump(report, f, indent=2)
    check(report)
    assert report["lost"] == 0, f"{report['lost']} transfers lost"
