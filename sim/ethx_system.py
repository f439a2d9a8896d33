"""``make sim`` ETH-X scenario (:mod:`sim.system`): two bridges over line-rate channels, random
accesses of every burst type from four workers on each GPU at once (``SIM_ETHX_ACCESSES``
each), every read and both memories checked; then the release litmus and the message-passing
litmus with acquire (``SIM_ETHX_ROUNDS`` rounds each). Writes the figures to the JSON named by
``SIM_REPORT``."""

import json
import os
import time

import cocotb
from cocotb.triggers import ClockCycles

from rtl.ethx.layout import AggregateCount, CompleterCount
from rtl.model import ethx as model

from . import progress
from .ethx_env import cycle
from .ethx_litmus import message_passing, release_litmus
from .ethx_pair import NODES
from .ethx_pair_env import PairEnv

WORKERS = 4
ACCESSES = int(os.environ.get("SIM_ETHX_ACCESSES", "60"))
ROUNDS = int(os.environ.get("SIM_ETHX_ROUNDS", "500"))


@cocotb.test(timeout_time=1000, timeout_unit="ms")
async def system(dut):
    tb = PairEnv(dut, line_rate=True, quiet=True)
    await tb.reset()
    progress.watch(dut, 2 * WORKERS * ACCESSES + 2 * ROUNDS, tb.progress)
    started, first = time.monotonic(), cycle()
    moved = await tb.traffic(ACCESSES, WORKERS)
    clocks = cycle() - first
    stale = await release_litmus(tb, ROUNDS)
    reads, seen, failures = await message_passing(tb, ROUNDS)
    await ClockCycles(dut.clk, 4 * (tb.config.timeout + tb.channel["a"].delay))
    tb.check_frames()
    errors = {e: tb.errors(e) for e in NODES}
    frames = {e: [f for _, f in c.frames] for e, c in tb.channel.items()}
    wire = sum(model.wire_bytes(len(f) + (0 if tb.config.fcs else model.FCS_BYTES))
               for fs in frames.values() for f in fs)
    report = {
        "config": json.loads(tb.config.to_json()), "seed": cocotb.RANDOM_SEED,
        "workers": WORKERS, "accesses": 2 * WORKERS * ACCESSES,
        "bytes_moved": moved, "traffic_clocks": clocks,
        "bytes_per_clock": round(moved / clocks, 3),
        "frames": {e: len(f) for e, f in frames.items()}, "wire_bytes": wire,
        "litmus_rounds": ROUNDS, "litmus_stale": stale,
        "message_passing": {"rounds": ROUNDS, "reads": reads, "flags_seen": seen,
                            "failures": failures[:20]},
        "served": {e: {k.name.lower(): v for k, v in tb.counts(
            CompleterCount, f"{e}_counts_completer").items()} for e in NODES},
        "frames_closed": {e: {k.name.lower(): v for k, v in tb.counts(
            AggregateCount, f"{e}_counts_aggregate").items()} for e in NODES},
        "errors": errors, "mismatches": 0,
        "sim_cycles_per_second": round(cycle() / (time.monotonic() - started)),
    }
    with open(os.environ["SIM_REPORT"], "w") as f:
        json.dump(report, f, indent=2)
    assert not stale, f"litmus rounds that saw the flag before the data: {stale}"
    assert not failures, failures[:10]
    assert not any(errors.values()), errors
