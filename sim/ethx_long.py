"""The lossy ETH-X system with its AXI traffic in hardware (:class:`sim.ethx_lossy_traffic.
EthxLossyTraffic`): :class:`LongEnv`, and the ``make sim`` scenario ``ethx_long`` (the long
run), whose cocotb test :func:`system` sends bursts both ways while the channels lose
``SIM_LOSSY_FER`` (1e-3) of frames and flip bits at ``SIM_LOSSY_BER`` (1e-6), until the
bridges have received ``SIM_ETHX_LONG_FRAMES`` frames between them; then checks every count,
both memories word by word against :func:`sim.ethx_axi_traffic.word` and the links drained.
Writes its figures to ``SIM_REPORT``."""

import json
import os
import time

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge

from rtl.ethx.layout import DeframerCount

from . import progress
from .ethx_axi_traffic import SLOT_BEATS, burst_beats, word
from .ethx_env import CLOCK_NS, cycle
from .ethx_lossy_env import LossyEnv
from .ethx_lossy_traffic import RAM_WORDS_LOG2, SLOTS_LOG2
from .ethx_pair import NODES, other
from .streams import clocks

__all__ = ["LongEnv", "expected_memory"]

FRAMES = int(os.environ.get("SIM_ETHX_LONG_FRAMES", "100000"))
FER = float(os.environ.get("SIM_LOSSY_FER", "1e-3"))
BER = float(os.environ.get("SIM_LOSSY_BER", "1e-6"))
#: Generator counters, by port name.
GEN_COUNTS = ("writes", "acked", "reads", "checked", "bad_data", "bad_resp")
#: Clocks between looks at the counters.
STEP = 20_000


def expected_memory(bursts, lanes):
    """The memory's bus words after bursts ``0 .. bursts - 1`` of one generator: each slot
    its last round's words over its burst's length, zero elsewhere."""
    slots = 1 << SLOTS_LOG2
    memory = [0] * (1 << RAM_WORDS_LOG2)
    for slot in range(min(slots, bursts)):
        rnd = (bursts - 1 - slot) // slots
        for beat in range(burst_beats(slot)):
            row = slot * SLOT_BEATS + beat
            memory[row] = sum(word(row * lanes + lane, rnd) << (64 * lane)
                              for lane in range(lanes))
    return memory


class LongEnv(LossyEnv):
    """:class:`~sim.ethx_lossy_env.LossyEnv` on the hardware-traffic top: the generators'
    and memories' counters, the frames the bridges received, the end-of-run checks."""

    def __init__(self, dut):
        super().__init__(dut, axi=False)
        for end in NODES:
            self.set(end, gen_enable=0, ram_poke=0, ram_peek_addr=0)

    async def reset(self):
        """Reset, and both memories cleared (their words outlive a reset)."""
        await super().reset()
        for row in range(1 << RAM_WORDS_LOG2):
            for end in NODES:
                self.set(end, ram_poke=1, ram_poke_addr=row, ram_poke_data=0)
            await RisingEdge(self.dut.clk)
        for end in NODES:
            self.set(end, ram_poke=0)

    def generator(self, end):
        return {name: self.get(end, f"gen_{name}") for name in GEN_COUNTS}

    def frames(self):
        """Good frames the two bridges have received."""
        return sum(self.counts(DeframerCount, f"{end}_counts_deframer")[DeframerCount.FRAMES]
                   for end in NODES)

    def bad(self):
        """Wrong R words and wrong responses at both generators, and the memories' bad
        bursts."""
        return sum(self.get(end, name) for end in NODES
                   for name in ("gen_bad_data", "gen_bad_resp", "ram_bad"))

    async def run(self, frames, *, log_every=100_000):
        """Both generators on until the bridges have received ``frames`` frames or a check
        fails; then off until every burst is read back. Returns the clocks it took."""
        first, next_log = cycle(), log_every
        for end in NODES:
            self.set(end, gen_enable=1)
        while self.frames() < frames and not self.bad():
            await clocks(self.dut.clk, STEP, CLOCK_NS)
            if self.frames() >= next_log:
                next_log += log_every
                self.dut._log.info("%d frames, %d clocks: %s", self.frames(), cycle() - first,
                                   {end: self.generator(end) for end in NODES})
        await self.stop()
        return cycle() - first

    async def stop(self):
        """Both generators off; until every burst is read back (or 200 000 clocks)."""
        for end in NODES:
            self.set(end, gen_enable=0)
        for _ in range(200):
            if all(self.get(end, "gen_idle") for end in NODES):
                break
            await clocks(self.dut.clk, 1000, CLOCK_NS)

    async def wrong_words(self, end):
        """The rows of ``end``'s memory (read through its peek port) that differ from
        :func:`expected_memory` after the far generator's bursts, with both values."""
        want = expected_memory(self.get(other(end), "gen_writes"), self.config.bus_words)
        wrong = []
        for row, value in enumerate(want):
            self.set(end, ram_peek_addr=row)
            await RisingEdge(self.dut.clk)
            await FallingEdge(self.dut.clk)
            got = self.get(end, "ram_peek_data")
            if got != value:
                wrong.append((row, hex(got), hex(value)))
        return wrong

    async def check(self):
        """Every burst written once and read back right; each memory took exactly the far
        generator's bursts and holds its last rounds; the links drained and clean."""
        for end in NODES:
            gen, far = self.generator(end), other(end)
            assert gen["bad_data"] == 0 and gen["bad_resp"] == 0, (end, gen)
            assert self.get(end, "gen_idle"), (end, gen)
            assert gen["writes"] == gen["acked"] == gen["reads"] == gen["checked"] > 0, gen
            ram = {name: self.get(far, f"ram_{name}") for name in ("writes", "reads", "bad")}
            assert ram == {"writes": gen["writes"], "reads": gen["reads"], "bad": 0}, (far, ram)
            wrong = await self.wrong_words(far)
            assert not wrong, (far, wrong[:8])
        await self.drain()
        self.check_links()


@cocotb.test(timeout_time=100_000, timeout_unit="sec")
async def system(dut):
    tb = LongEnv(dut)
    await tb.reset()
    tb.lossy_both(fer=FER, ber=BER)
    progress.watch(dut, FRAMES, tb.frames, tb.bad, every=STEP, period_ns=CLOCK_NS)
    started = time.monotonic()
    clocks = await tb.run(FRAMES)
    report = {
        "config": json.loads(tb.config.to_json()), "seed": cocotb.RANDOM_SEED,
        "fer": FER, "ber": BER, "frames": tb.frames(), "clocks": clocks,
        "generators": {e: tb.generator(e) for e in NODES},
        "channels": {e: tb.wire_counts(e) for e in NODES},
        "links": {e: {"tx": tb.tx(e), "rx": tb.rx(e)} for e in NODES},
        "errors": {e: tb.errors(e) for e in NODES},
        "sim_cycles_per_second": round(cycle() / (time.monotonic() - started)),
    }
    await tb.check()
    report["mismatches"] = 0
    with open(os.environ["SIM_REPORT"], "w") as f:
        json.dump(report, f, indent=2)
