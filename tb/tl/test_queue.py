# SPDX-License-Identifier: BSD-2-Clause
"""The window queue (``rtl/scaleup_ip/tl/queue.py``) against a list: random entries offered,
random pops of up to ``count``; every clock ``entries``, ``entries_next``, ``count``,
``hidden`` and ``i.ready`` are checked (an entry accepted at ``t`` is in the registers from
``t + 1``; with a FIFO behind them, one entry moves up per clock). Every shape the packer
builds: the response queue (all in registers), the request queue (a 4-entry window before a
FIFO), the schedule queue (a window of one), a ring larger than it holds, a ring before a
FIFO, and the compact packer's queues (a window of two before a FIFO, ``i.ready`` from
registers)."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.lib import data
from amaranth.sim import Simulator

from scaleup_ip.tl import WindowQueue

_LAYOUT = data.StructLayout({"value": 12, "flag": 1})

SHAPES = [  # depth, window, held, ready_registered
    (16, 8, 16, False), (16, 4, 4, False), (5, 1, 5, False), (12, 4, 12, False),
    (20, 8, 8, False), (24, 4, 12, False), (18, 2, 2, True), (24, 4, 12, True),
]


def _run(depth, window, held, ready_registered, seed, clocks=3000):
    dut = WindowQueue(_LAYOUT, depth, window, held, ready_registered=ready_registered)
    rng = random.Random(seed)
    print(f"WindowQueue({depth}, {window}, held={held}, ready_registered={ready_registered}): "
          f"seed {seed}")
    sent, got = [], []

    async def bench(ctx):
        regs, fifo = [], []          # the entries in the registers, and those behind them
        serial = 0
        for clock in range(clocks):
            p_in, p_pop = ((0.9, 0.3), (0.3, 0.9), (0.7, 0.7), (0.0, 1.0))[4 * clock // clocks]
            count = min(window, len(regs))
            assert ctx.get(dut.count) == count, (clock, ctx.get(dut.count), count)
            assert ctx.get(dut.hidden) == bool(fifo)
            shown = ctx.get(dut.entries)
            for k in range(count):
                assert shown[k] == regs[k], (clock, k)
            pop = rng.randint(0, count) if rng.random() < p_pop else 0
            offer = rng.random() < p_in
            entry = {"value": serial & 0xFFF, "flag": serial >> 12 & 1}
            ctx.set(dut.pop, pop)
            ctx.set(dut.i.valid, offer)
            ctx.set(dut.i.payload, entry)
            ready = ctx.get(dut.i.ready)
            # Straight into the registers when the FIFO is empty and they have room: after
            # this clock's pop, or with ``ready_registered`` before it.
            room = len(regs) if ready_registered else len(regs) - pop
            bypass = not fifo and room < held
            assert ready == (bypass or (depth > held and len(fifo) < depth - held)), \
                (clock, ready)
            got.extend(regs[:pop])
            regs = regs[pop:]                            # one entry moves up per clock
            if fifo and len(regs) < held:
                regs.append(fifo.pop(0))
            if offer and ready:
                sent.append(entry)
                serial += 1
                if bypass:
                    regs.append(entry)
                else:
                    fifo.append(entry)
            nxt = ctx.get(dut.entries_next)
            for k in range(min(window, len(regs))):
                assert nxt[k] == regs[k], (clock, "next", k)
            await ctx.tick()
        assert not fifo and not regs, "entries left"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got == sent and sent, (len(got), len(sent))


@pytest.mark.parametrize("depth, window, held, ready_registered", SHAPES)
def test_window_queue(depth, window, held, ready_registered):
    _run(depth, window, held, ready_registered, random.getrandbits(32))


def test_window_queue_shapes():
    """A window of other than a power of two, or no room beyond it, is refused, and so is a
    registered ``i.ready`` without a FIFO behind the registers."""
    with warnings.catch_warnings():     # the refused ones are never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        for args in ((16, 3, 16), (8, 8, 8), (16, 8, 4)):
            with pytest.raises(ValueError):
                WindowQueue(_LAYOUT, *args)
        with pytest.raises(ValueError, match="ready_registered"):
            WindowQueue(_LAYOUT, 8, 2, 8, ready_registered=True)
        gc.collect()
