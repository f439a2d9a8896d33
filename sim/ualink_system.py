"""cocotb side of the ``ualink`` part of ``make sim``: two full UALink ends (TL and DL) over
error-injecting links (:class:`sim.ualink_link.UalinkLink`), random UPLI traffic both ways.

The link comes up, the error links start flipping bits at ``SIM_BER``, each end's traffic
generator (:class:`rtl.tl.traffic.UpliGen`) sends ``SIM_TL_ITEMS`` random items and the far
end's checker (:class:`rtl.tl.traffic.UpliCheck`) checks every transfer on arrival, all in
hardware (:func:`run_traffic`); then errors stop and both DL ends must have every flit
acknowledged. The report (the JSON file named by ``SIM_REPORT``) has the TL figures of
:mod:`sim.tl_system` and the DL's: bad CRCs, replays, goodput of the link's DL flits, and the
counters' changes. :func:`run` is the same with the traffic made and checked in Python
(:func:`sim.tl_system.exchange`), for tests that need the items themselves.
"""

import json
import os
import random
import time

import cocotb
from cocotb.triggers import ClockCycles
from cocotb.utils import get_sim_time

from rtl.tl.layout import UpliChannel, traffic_counts
from sim import progress
from sim.dl_link_env import ber_threshold, dl_counts, start
from sim.streams import clocks
from sim.tl_system import Flits, check, credits_home, exchange
from sim.ualink_link import UalinkLinkConfig

#: The DL link environment's clock period (:func:`sim.dl_link_env.start`).
PERIOD_NS = 10
#: Clocks between looks at the counters while the traffic runs in hardware.
STEP = 5000
#: Idle and busy levels of the generators and checkers (of 256): about 10 %.
PACING = 26

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
    dut.traffic.value = 0
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


def limits(count):
    """Items of each kind out of ``count``: half requests, 30 % read and 20 % write
    responses."""
    req, rd = count // 2, count * 3 // 10
    return {"req": req, "rd_rsp": rd, "wr_rsp": count - req - rd}


def traffic(dut, name):
    """A :data:`~rtl.tl.layout.traffic_counts` port as a dict by channel name."""
    view = traffic_counts.from_bits(getattr(dut, name).value.to_unsigned())
    return {c.name.lower(): int(view[c]) for c in UpliChannel}


async def run_traffic(dut, count, *, ber, delay=DELAY, replay_limit=REPLAY_LIMIT):
    """Bring the link up with the traffic in hardware, send ``count`` items each way at bit
    error rate ``ber`` until every transfer has been checked, stop the errors and settle;
    returns the report."""
    config = UalinkLinkConfig.from_env()
    rng = random.Random(cocotb.RANDOM_SEED)
    dut.traffic.value = 1
    dut.gen_enable.value = dut.gen_load.value = 0
    await start(dut, delay=delay, seed=rng.getrandbits(64) | 1, ack_timeout=2000,
                replay_limit=replay_limit)
    share = limits(count)
    dut.gen_limits.value = share["req"] | share["rd_rsp"] << 32 | share["wr_rsp"] << 64
    dut.gen_idle.value = dut.check_busy.value = PACING
    for end in "ab":
        getattr(dut, f"{end}_seed").value = rng.getrandbits(64)
    dut.gen_load.value = 1
    await ClockCycles(dut.clk, 1)
    dut.gen_load.value = 0
    before, flits = dl_counts(dut), {e: int(getattr(dut, f"{e}_flits").value) for e in "ab"}
    started, began = time.monotonic(), get_sim_time("ns")
    dut.link_enable.value = 1
    dut.ber_threshold.value = ber_threshold(ber)
    dut.gen_enable.value = 1
    def finished():
        return all(int(getattr(dut, f"{e}_done").value) for e in "ab") and all(
            traffic(dut, f"{e}_got") == traffic(dut, f"{f}_sent") for e, f in (("a", "b"),
                                                                                ("b", "a")))

    # Progress: requests and write responses checked (read responses count by beat).
    progress.watch(dut, 2 * (share["req"] + share["wr_rsp"]),
                   lambda: sum(traffic(dut, f"{e}_got")["req"] + traffic(dut, f"{e}_got")
                               ["wr_rsp"] for e in "ab"),
                   lambda: sum(sum(traffic(dut, f"{e}_bad").values()) for e in "ab"),
                   every=STEP, period_ns=PERIOD_NS)
    while not finished():
        await clocks(dut.clk, STEP, PERIOD_NS)
    busy = round((get_sim_time("ns") - began) / PERIOD_NS)
    dut.gen_enable.value = 0
    await settle(dut, config)
    wall = time.monotonic() - started
    after = dl_counts(dut)
    report = {"seed": int(os.environ["COCOTB_RANDOM_SEED"]),
              "config": json.loads(config.to_json()), "traffic": "hardware",
              "cycles": busy, "sim_cycles_per_second": round(
                  (get_sim_time("ns") - began) / PERIOD_NS / wall),
              "directions": {}, "mismatches": 0, "lost": 0}
    for end, far in (("a", "b"), ("b", "a")):
        sent, got, bad = (traffic(dut, f"{end}_sent"), traffic(dut, f"{far}_got"),
                          traffic(dut, f"{far}_bad"))
        report["mismatches"] += sum(bad.values())
        report["lost"] += sum(sent.values()) - sum(got.values())
        data = 64 * (sent["orig"] + sent["rd_rsp"])
        n = int(getattr(dut, f"{end}_flits").value) - flits[end]
        report["directions"][f"{end}->{far}"] = {
            "items": count, "transfers": sent, "data_bytes": data, "flits": n,
            "efficiency": round(data / (64 * n), 4), "flits_per_clock": round(n / busy, 3),
            "credits_home": credits_home(dut, end, config),
            "error": bool(getattr(dut, f"{far}_error").value),
        }
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
