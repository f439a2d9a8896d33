# SPDX-License-Identifier: BSD-2-Clause
"""The RAM queue (``rtl/scaleup_ip/fifo.py``: the TL receiver's buffers, the DL's CRC beat
queues) in distributed and in block RAM, clock by clock against a queue in Python: random
writes, writes not kept, reads and stalls; what ``r`` shows, ``level``, ``w_rdy`` and
``kept`` each clock, then drained empty. An entry kept at clock ``t`` is readable from
``t + 1`` in distributed RAM and ``t + 3`` in block RAM; until then it counts against
``w_rdy`` only."""

import collections
import random

import pytest
from amaranth.sim import Simulator

from sim import harness
from scaleup_ip.fifo import RamFifo

WIDTH = 40
CLOCKS = 3000


@pytest.mark.parametrize("depth, block_ram", [(8, False), (32, True), (6, True)])
def test_ram_fifo(depth, block_ram):
    seed = harness.seed()
    rng = random.Random(seed)
    print(f"seed {seed}")
    dut = RamFifo(WIDTH, depth, block_ram=block_ram)
    delay = 3 if block_ram else 1
    model = collections.deque()        # (clock it was kept, entry), kept and not yet read

    async def bench(ctx):
        # Phases of the write and read odds, so that the queue runs full, empty and between.
        phases = [(0.9, 0.3), (0.3, 0.9), (0.6, 0.6), (1.0, 1.0), (0.5, 0.1), (0.1, 0.5)]
        for clock in range(CLOCKS + 4 * depth + 2 * delay):
            draining = clock >= CLOCKS
            w_odds, r_odds = (0.0, 1.0) if draining else phases[clock // 250 % len(phases)]
            data = rng.getrandbits(WIDTH)
            w_en = rng.random() < w_odds
            commit = rng.random() < 0.85
            ready = rng.random() < r_odds
            ctx.set(dut.w_data, data)
            ctx.set(dut.w_en, w_en)
            ctx.set(dut.w_commit, commit)
            ctx.set(dut.r.ready, ready)
            readable = [entry for at, entry in model if at + delay <= clock]
            assert ctx.get(dut.level) == len(readable), (clock, ctx.get(dut.level),
                                                         len(readable))
            assert ctx.get(dut.w_rdy) == (len(model) < depth), clock
            assert ctx.get(dut.r.valid) == bool(readable), clock
            if readable:
                assert ctx.get(dut.r.payload) == readable[0], (
                    clock, hex(ctx.get(dut.r.payload)), hex(readable[0]))
            kept = w_en and commit and len(model) < depth
            joins = any(at + delay - 1 == clock for at, _ in model) or (kept and delay == 1)
            assert ctx.get(dut.kept) == joins, clock
            if ready and readable:
                model.popleft()
            if kept:
                model.append((clock, data))
            await ctx.tick()
        assert not model and not ctx.get(dut.r.valid) and ctx.get(dut.level) == 0

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
