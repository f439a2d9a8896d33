"""``make sim`` lossy ETH-X scenario (:mod:`sim.system`): two bridges behind lossless links over
error-injecting channels (:class:`sim.ethx_lossy_pair.EthxLossyPair`) that drop frames at
``SIM_LOSSY_FER`` (1e-3) and flip bits at ``SIM_LOSSY_BER`` (1e-6) both ways; random accesses
of every burst type from four workers on each GPU at once (``SIM_ETHX_ACCESSES`` each), every
read and both memories checked; then the message-passing litmus with acquire
(``SIM_ETHX_ROUNDS`` rounds). Writes the links' and channels' figures to ``SIM_REPORT``."""

import json
import os
import time

import cocotb

from . import progress
from .ethx_env import cycle
from .ethx_litmus import message_passing
from .ethx_lossy_env import SETTLE, LossyEnv
from .ethx_pair import NODES

WORKERS = 4
ACCESSES = int(os.environ.get("SIM_ETHX_ACCESSES", "60"))
ROUNDS = int(os.environ.get("SIM_ETHX_ROUNDS", "500"))
FER = float(os.environ.get("SIM_LOSSY_FER", "1e-3"))
BER = float(os.environ.get("SIM_LOSSY_BER", "1e-6"))


@cocotb.test(timeout_time=2000, timeout_unit="ms")
async def system(dut):
    tb = LossyEnv(dut)
    await tb.reset()
    tb.lossy_both(fer=FER, ber=BER)
    progress.watch(dut, 2 * WORKERS * ACCESSES + ROUNDS, tb.progress)
    started, first = time.monotonic(), cycle()
    moved = await tb.traffic(ACCESSES, WORKERS, settle=SETTLE)
    clocks = cycle() - first
    reads, seen, failures = await message_passing(tb, ROUNDS)
    await tb.drain()
    report = {
        "config": json.loads(tb.config.to_json()), "seed": cocotb.RANDOM_SEED,
        "fer": FER, "ber": BER, "workers": WORKERS, "accesses": 2 * WORKERS * ACCESSES,
        "bytes_moved": moved, "traffic_clocks": clocks,
        "bytes_per_clock": round(moved / clocks, 3),
        "message_passing": {"rounds": ROUNDS, "reads": reads, "flags_seen": seen,
                            "failures": failures[:20]},
        "channels": {e: tb.wire_counts(e) for e in NODES},
        "links": {e: {"tx": tb.tx(e), "rx": tb.rx(e)} for e in NODES},
        "errors": {e: tb.errors(e) for e in NODES}, "mismatches": 0,
        "sim_cycles_per_second": round(cycle() / (time.monotonic() - started)),
    }
    with open(os.environ["SIM_REPORT"], "w") as f:
        json.dump(report, f, indent=2)
    assert not failures, failures[:10]
    tb.check_links()
