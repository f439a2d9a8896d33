# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of ``make sim``'s ``crc`` scenario: the CRC-32 engine with its traffic made and
checked in hardware (:class:`sim.crc.traffic.CrcTraffic`): ``SIM_CRC_ITEMS`` items of random
Ethernet frames (each sent bare, then with the FCS the engine gave it, 2 % of those with a bit
flipped) and 640-byte DL-flit-sized blocks. The testbench looks at the counters every
:data:`STEP` clocks; at the end the digest of every result must equal the golden model's
(:mod:`scaleup_ip.model.crc.traffic`, which computes every CRC with :func:`zlib.crc32`), and so must
the counts. The figures go to the JSON file named by ``SIM_REPORT``."""

import json
import os
import random
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from scaleup_ip.crc import CrcConfig
from scaleup_ip.model.crc import traffic as model

from sim import progress
from sim.streams import clocks, reset

__all__ = ["PERIOD_NS", "STEP", "expected", "run"]

#: Clock period in ns; every figure is reported in cycles.
PERIOD_NS = 2
#: Clocks between looks at the counters.
STEP = 20_000
_COUNTS = ("packets", "results", "oks", "malformed", "beats", "waits", "busy")


def expected(seed, items, data_width):
    """The model's packets and results, and the counts and digest the top must show after
    them."""
    sent = model.packets(seed, items, data_width)
    results = model.results(sent)
    return sent, results, {"packets": len(sent), "results": len(sent),
                           "oks": sum(ok for _, ok, _ in results), "malformed": 0,
                           "digest": model.digest(results)}


def counts(dut):
    return {name: int(getattr(dut, name).value) for name in (*_COUNTS, "digest")}


async def run(dut, seed, items, *, watch=True):
    """Reset, load ``seed``, send ``items`` items; until ``done`` (or 1000 clocks an item);
    the clock must run. Returns the clocks it took."""
    dut.enable.value, dut.load.value = 0, 0
    await reset(dut)
    dut.seed.value, dut.items.value, dut.load.value = seed, items, 1
    await RisingEdge(dut.clk)
    dut.load.value, dut.enable.value = 0, 1
    if watch:
        progress.watch(dut, items, lambda: int(dut.results.value), every=STEP,
                       period_ns=PERIOD_NS)
    taken = 0
    while not int(dut.done.value) and taken < 1000 * items + 10_000:
        await clocks(dut.clk, STEP, PERIOD_NS)
        taken += STEP
    return taken


@cocotb.test(timeout_time=100_000, timeout_unit="sec")
async def system(dut):
    config = CrcConfig.from_env()
    seed = random.Random(cocotb.RANDOM_SEED).getrandbits(64)
    items = int(os.environ["SIM_CRC_ITEMS"])
    sent, results, want = expected(seed, items, config.data_width)
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    started = time.monotonic()
    clocks_run = await run(dut, seed, items)
    wall = time.monotonic() - started
    got = counts(dut)
    frames = [ok for (kind, _), (_, ok, _) in zip(sent, results) if kind == "B"]
    cycles, total = got["busy"], sum(len(p) for _, p in sent)
    report = {
        "config": json.loads(config.to_json()), "seed": cocotb.RANDOM_SEED,
        "items": items, "frames": len(frames), "corrupted": frames.count(False),
        "rejected": len(frames) - got["oks"],
        "blocks": sum(kind == "block" for kind, _ in sent), "packets": got["packets"],
        "bytes": total, "cycles": cycles, "waits": got["waits"],
        "bytes_per_cycle": round(total / cycles, 3),
        "peak_bytes_per_cycle": config.bytes_per_beat,
        "digest": f"{got['digest']:#018x}", "expected_digest": f"{want['digest']:#018x}",
        "mismatches": sum(got[k] != want[k] for k in want),
        "sim_cycles_per_second": round(clocks_run / wall),
    }
    with open(os.environ["SIM_REPORT"], "w") as f:
        json.dump(report, f, indent=2)
    assert int(dut.done.value), f"not done: {got}"
    assert report["mismatches"] == 0, f"got {got}, expected {want}"
