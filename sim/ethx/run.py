# SPDX-License-Identifier: BSD-2-Clause
"""The ETH-X scenarios of ``make sim`` whose traffic lives in hardware (``ethx``,
``ethx_lossy``, ``ethx_long``), on :class:`sim.ethx.traffic_system.EthxTrafficSystem`:
:class:`TrafficEnv`, and the cocotb test :func:`system`, which sends bursts both ways until the
bridges have received ``SIM_ETHX_FRAMES`` frames between them, then runs ``SIM_ETHX_ROUNDS``
rounds of the message-passing litmus; over lossless links, with the channels losing
``SIM_LOSSY_FER`` of frames and flipping bits at ``SIM_LOSSY_BER``. Then it checks every count,
both memories word by word against :func:`sim.ethx.axi_traffic.word` and
:func:`sim.ethx.axi_litmus.mp_word`, and the links drained; and writes its figures to
``SIM_REPORT``."""

import json
import os
import time

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge

from scaleup_ip.ethx import AggregateCount, CompleterCount, DeframerCount

from sim import progress
from sim.ethx.axi_litmus import DATA_OFFSET, MP_WORDS, mp_word
from sim.ethx.axi_traffic import SLOT_BEATS, burst_beats, word
from sim.ethx.env import CLOCK_NS, cycle
from sim.ethx.lossy_env import LossyEnv
from sim.ethx.pair import NODES, other
from sim.ethx.traffic_system import RAM_WORDS_LOG2, SLOTS_LOG2, litmus_flag_at
from sim.streams import clocks

__all__ = ["TrafficEnv", "expected_memory"]

FRAMES = int(os.environ.get("SIM_ETHX_FRAMES", "100000"))
ROUNDS = int(os.environ.get("SIM_ETHX_ROUNDS", "500"))
FER = float(os.environ.get("SIM_LOSSY_FER", "0"))
BER = float(os.environ.get("SIM_LOSSY_BER", "0"))
#: Generator counters, by port name.
GEN_COUNTS = ("writes", "acked", "reads", "checked", "bad_data", "bad_resp")
#: Litmus counters, by port name.
LITMUS_COUNTS = ("rounds_done", "reads", "flags_seen", "stale", "bad_index", "bad_acquire",
                 "bad_resp")
#: Clocks between looks at the counters.
STEP = 20_000


def expected_memory(bursts, config, litmus=None):
    """The memory's bus words after bursts ``0 .. bursts - 1`` of one generator (bridges of
    ``config``): each slot its last round's words over its burst's length; with ``litmus``
    the last litmus round (0: round 0's data, the flag 0), its flag and data; zero
    elsewhere."""
    slots, lanes = 1 << SLOTS_LOG2, config.bus_words
    memory = [0] * (1 << RAM_WORDS_LOG2)
    for slot in range(min(slots, bursts)):
        rnd = (bursts - 1 - slot) // slots
        for beat in range(burst_beats(slot)):
            row = slot * SLOT_BEATS + beat
            memory[row] = sum(word(row * lanes + lane, rnd) << (64 * lane)
                              for lane in range(lanes))
    if litmus is not None:
        for row, value in litmus_rows(litmus, config).items():
            memory[row] = value
    return memory


def litmus_rows(rnd, config):
    """The memory's bus words of the litmus after round ``rnd`` (bridges of ``config``): its
    data and its flag."""
    lanes, flag_at = config.bus_words, litmus_flag_at(config)
    rows = {flag_at // (8 * lanes): rnd}
    for k in range(0, MP_WORDS, lanes):
        rows[(flag_at + DATA_OFFSET) // (8 * lanes) + k // lanes] = sum(
            mp_word(rnd, k + lane) << (64 * lane) for lane in range(lanes))
    return rows


class TrafficEnv(LossyEnv):
    """:class:`~sim.ethx.lossy_env.LossyEnv` on the hardware-traffic top: the generators',
    the litmus's and the memories' counters, the frames the bridges received, the end-of-run
    checks."""

    def __init__(self, dut):
        super().__init__(dut, axi=False)
        for end in NODES:
            self.set(end, gen_enable=0, ram_poke=0, ram_peek_addr=0)
        self.set("a", select=0, litmus_enable=0, litmus_rounds=0, litmus_relaxed=0)
        self.litmus_rounds = None           # the rounds the litmus was asked to run

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

    def litmus(self):
        return {name: self.get("a", f"litmus_{name}") for name in LITMUS_COUNTS}

    def bytes_moved(self):
        """Bytes the generators wrote and read back."""
        slots, bus = 1 << SLOTS_LOG2, self.config.data_width // 8
        total = 0
        for end in NODES:
            gen = self.generator(end)
            for count in (gen["writes"], gen["checked"]):
                whole, part = divmod(count, slots)
                total += bus * (whole * sum(map(burst_beats, range(slots)))
                                + sum(map(burst_beats, range(part))))
        return total

    def frames(self):
        """Good frames the two bridges have received."""
        return sum(self.counts(DeframerCount, f"{end}_counts_deframer")[DeframerCount.FRAMES]
                   for end in NODES)

    def bad(self):
        """Wrong R words and wrong responses at both generators, and the memories' bad
        bursts."""
        litmus = self.litmus()
        return (sum(self.get(end, name) for end in NODES
                    for name in ("gen_bad_data", "gen_bad_resp", "ram_bad"))
                + sum(litmus[k] for k in ("stale", "bad_index", "bad_acquire", "bad_resp")))

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

    async def start_litmus(self, rounds):
        """Round 0's data and flag into b's memory, a's GPU port lent to the litmus for
        ``rounds`` rounds."""
        for row, value in litmus_rows(0, self.config).items():
            self.set("b", ram_poke=1, ram_poke_addr=row, ram_poke_data=value)
            await RisingEdge(self.dut.clk)
        self.set("b", ram_poke=0)
        self.set("a", select=1, litmus_rounds=rounds, litmus_enable=1)
        self.litmus_rounds = rounds

    async def run_litmus(self, rounds):
        """:meth:`start_litmus`; until it is done (or a check fails), then a's GPU port back
        to the generator. Returns the clocks it took."""
        first = cycle()
        await self.start_litmus(rounds)
        while not self.get("a", "litmus_done") and not self.bad():
            await clocks(self.dut.clk, 1000, CLOCK_NS)
        self.set("a", select=0, litmus_enable=0)
        return cycle() - first

    async def wrong_words(self, end):
        """The rows of ``end``'s memory (read through its peek port) that differ from
        :func:`expected_memory` after the far generator's bursts (and on b, the litmus's
        rounds), with both values."""
        want = expected_memory(self.get(other(end), "gen_writes"), self.config,
                               self.litmus_rounds if end == "b" else None)
        wrong = []
        for row, value in enumerate(want):
            self.set(end, ram_peek_addr=row)
            await RisingEdge(self.dut.clk)      # the address crosses the top's boundary
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
            if far == "b" and self.litmus_rounds is not None:      # the litmus's: 5 and 2
                litmus = self.litmus()
                ram["writes"] -= 5 * litmus["rounds_done"]
                ram["reads"] -= 2 * litmus["reads"]
            assert ram == {"writes": gen["writes"], "reads": gen["reads"], "bad": 0}, (far, ram)
            wrong = await self.wrong_words(far)
            assert not wrong, (far, wrong[:8])
        if self.litmus_rounds is not None:
            litmus = self.litmus()
            assert litmus["rounds_done"] == self.litmus_rounds, litmus
            assert litmus["reads"] > 0 and self.get("a", "litmus_done"), litmus
            assert litmus["flags_seen"] > 1 or self.litmus_rounds < 2, litmus
            assert not any(litmus[k] for k in ("stale", "bad_index", "bad_acquire",
                                               "bad_resp")), litmus
        await self.drain()
        self.check_links()


@cocotb.test(timeout_time=100_000, timeout_unit="sec")
async def system(dut):
    tb = TrafficEnv(dut)
    await tb.reset()
    if tb.links:
        tb.lossy_both(fer=FER, ber=BER)
    else:
        assert not (FER or BER), "frames lost without links are lost for good"
    progress.watch(dut, FRAMES + ROUNDS,
                   lambda: min(tb.frames(), FRAMES) + tb.litmus()["rounds_done"],
                   tb.bad, every=STEP, period_ns=CLOCK_NS)
    started = time.monotonic()
    traffic_clocks = await tb.run(FRAMES)
    litmus_clocks = await tb.run_litmus(ROUNDS) if ROUNDS else 0
    report = {
        "config": json.loads(tb.config.to_json()), "seed": cocotb.RANDOM_SEED,
        "links": tb.links, "fer": FER, "ber": BER,
        "frames": tb.frames(), "traffic_clocks": traffic_clocks,
        "bytes_moved": tb.bytes_moved(),
        "bytes_per_clock": round(tb.bytes_moved() / traffic_clocks, 3),
        "generators": {e: tb.generator(e) for e in NODES},
        "litmus": dict(tb.litmus(), clocks=litmus_clocks),
        "served": {e: {k.name.lower(): v for k, v in tb.counts(
            CompleterCount, f"{e}_counts_completer").items()} for e in NODES},
        "frames_closed": {e: {k.name.lower(): v for k, v in tb.counts(
            AggregateCount, f"{e}_counts_aggregate").items()} for e in NODES},
        "channels": {e: tb.wire_counts(e) for e in NODES},
        "errors": {e: tb.errors(e) for e in NODES},
        "sim_cycles_per_second": round(cycle() / (time.monotonic() - started)),
    }
    if tb.links:
        report["link_counts"] = {e: {"tx": tb.tx(e), "rx": tb.rx(e)} for e in NODES}
    await tb.check()
    report["mismatches"] = 0
    with open(os.environ["SIM_REPORT"], "w") as f:
        json.dump(report, f, indent=2)
