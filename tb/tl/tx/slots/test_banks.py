# SPDX-License-Identifier: BSD-2-Clause
"""The bank queue (``rtl/scaleup_ip/tl/tx/slots/banks.py``) against a list: random entries
offered, random pops of up to ``count``, random rewrites of the newest entry's second part;
every clock ``entries``, ``amends``, ``count``, ``level``, ``more`` and ``i.ready`` are checked
(an entry accepted at ``t`` is shown from ``t + 1``, and the window is full again the clock
after any pop), with the window read from the banks and registered (and then as announced
the clock before). Depths that fill the banks' rows and one that does not."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.lib import data
from amaranth.sim import Simulator

from scaleup_ip.tl.tx.slots import BankQueue

_LAYOUT = data.StructLayout({"value": 12, "flag": 1})
_AMEND = data.StructLayout({"note": 5})


def _run(depth, banks, registered, seed, clocks=3000):
    dut = BankQueue(_LAYOUT, depth, banks, amend=_AMEND, registered=registered)
    rng = random.Random(seed)
    print(f"BankQueue({depth}, {banks}, registered={registered}): seed {seed}")
    sent, got = [], []

    async def bench(ctx):
        held = []                    # [entry, note]
        serial = 0
        for clock in range(clocks):
            p_in, p_pop = ((0.9, 0.3), (0.3, 0.9), (0.7, 0.7), (0.0, 1.0))[4 * clock // clocks]
            count = min(banks, len(held))
            assert ctx.get(dut.count) == count, (clock, ctx.get(dut.count), count)
            assert ctx.get(dut.level) == len(held)
            assert ctx.get(dut.more) == (len(held) > banks)
            shown, notes = ctx.get(dut.entries), ctx.get(dut.amends)
            if registered and clock:     # as announced the clock before
                assert (ctx.get(dut.count), ctx.get(dut.more), shown, notes) == ahead, clock
            reads, amend_reads = ctx.get(dut.reads), ctx.get(dut.amend_reads)
            lane = ctx.get(dut.lane)
            for k in range(count):
                assert shown[k] == held[k][0], (clock, k)
                assert notes[k].note == held[k][1], (clock, k, "amend")
                if not registered:
                    assert reads[(lane + k) % banks] == held[k][0], (clock, k, "reads")
                    assert amend_reads[(lane + k) % banks].note == held[k][1], (clock, k)
            pop = rng.randint(0, count) if rng.random() < p_pop else 0
            offer = rng.random() < p_in
            amend = not offer and bool(held) and rng.random() < 0.5
            entry = {"value": serial & 0xFFF, "flag": serial >> 12 & 1}
            note = rng.randrange(32)
            ctx.set(dut.pop, pop)
            ctx.set(dut.i.valid, offer)
            ctx.set(dut.i.payload, entry)
            ctx.set(dut.i_amend, {"note": note})
            ctx.set(dut.amend.valid, amend)
            ctx.set(dut.amend.payload, {"note": note})
            ready = ctx.get(dut.i.ready)
            assert ready == (len(held) < depth), (clock, ready)
            if registered:
                ahead = (ctx.get(dut.count_next), ctx.get(dut.more_next),
                         ctx.get(dut.entries_next), ctx.get(dut.amends_next))
            if amend:
                held[-1][1] = note
            got.extend(e for e, _ in held[:pop])
            held = held[pop:]
            if offer and ready:
                sent.append(entry)
                held.append([entry, note])
                serial += 1
            await ctx.tick()
        assert not held, "entries left"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got == sent and sent, (len(got), len(sent))


@pytest.mark.parametrize("registered", [False, True], ids=["read", "registered"])
@pytest.mark.parametrize("depth, banks", [(16, 4), (8, 4), (12, 4), (4, 4), (16, 2)])
def test_bank_queue(depth, banks, registered):
    _run(depth, banks, registered, random.randrange(1 << 32))


def test_bank_queue_rejects_bad_shapes():
    """Banks other than a power of two, or fewer entries than banks, are refused."""
    with warnings.catch_warnings():     # the refused ones are never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        for args in ((12, 3), (2, 4)):
            with pytest.raises(ValueError, match="must be a power of two and depth"):
                BankQueue(_LAYOUT, *args)
        gc.collect()
