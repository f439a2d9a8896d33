# SPDX-License-Identifier: BSD-2-Clause
"""The unit queue (``rtl/scaleup_ip/tl/tx/slots/units.py``) against a list of units: random
compressed and uncompressed responses offered, random takes and cuts of the window, random
``freeze``; every clock the window's units (flags and responses, registered, and as announced
the clock before; slot words as read from the banks), ``count`` and ``i.ready`` are checked, and every response leaves exactly
once, in order. The rule checked is README §3's (*Slot packer*): a compressed response joins
the newest unit when that is a compressed response alone and not in the window while units
are taken (``freeze``)."""

import random

import pytest
from amaranth.sim import Simulator

from scaleup_ip.tl import SLOT_WINDOW
from scaleup_ip.tl.tx.slots import UnitQueue

_MASK32 = (1 << 32) - 1


def _view(unit):
    """What the window shows of ``unit`` (a list of one or two responses)."""
    first = unit[0]
    if first["wide"]:
        word = first["field"]
    else:
        word = first["field"] & _MASK32
        if len(unit) == 2:
            word |= (unit[1]["field"] & _MASK32) << 32
    rsp = [{"vc": r["vc"], "beats": r["beats"], "run": r["run"]} for r in unit]
    rsp += [{"vc": 0, "beats": 0, "run": unit[-1]["run"]}]
    return {"word": word, "wide": first["wide"], "pair": len(unit) == 2, "rsp": rsp[:2]}


def _run(depth, seed, clocks=3000):
    dut = UnitQueue(depth)
    rng = random.Random(seed)
    print(f"UnitQueue({depth}): seed {seed}")
    sent, got = [], []
    joins = 0

    async def bench(ctx):
        nonlocal joins
        units, is_open = [], False
        serial = run = 0
        for clock in range(clocks):
            p_in, p_take = ((0.9, 0.3), (0.3, 0.9), (0.7, 0.7), (0.0, 1.0))[4 * clock // clocks]
            count = min(SLOT_WINDOW, len(units))
            assert ctx.get(dut.count) == count, (clock, ctx.get(dut.count), count)
            flags, words, lane = ctx.get(dut.flags), ctx.get(dut.words), ctx.get(dut.lane)
            if clock:                    # as announced the clock before
                assert ctx.get(dut.count) == ahead[0] and flags == ahead[1], clock
            for k in range(count):
                want = _view(units[k])
                assert words[(lane + k) % SLOT_WINDOW] == want["word"], (clock, k, "word")
                for name in ("wide", "pair"):
                    assert getattr(flags[k], name) == want[name], (clock, k, name)
                for p in range(2):
                    for name in ("vc", "beats", "run"):
                        assert getattr(flags[k].rsp[p], name) == want["rsp"][p][name], \
                            (clock, k, p, name)
            take = rng.randint(0, count) if rng.random() < p_take else 0
            cut = len(units) > take and len(units[take]) == 2 and rng.random() < 0.3
            freeze = bool(take or cut) or rng.random() < 0.3
            wide = rng.random() < 0.3
            beats = rng.randrange(5)
            entry = {"field": rng.getrandbits(64), "wide": wide, "vc": rng.randrange(4),
                     "beats": beats, "serial": serial, "run": (run + beats) % 64}
            offer = rng.random() < p_in
            ctx.set(dut.take, take)
            ctx.set(dut.cut, cut)
            ctx.set(dut.freeze, freeze)
            ctx.set(dut.i.valid, offer)
            ctx.set(dut.i.payload, {k: entry[k] for k in ("field", "wide", "vc", "beats")})
            join = not wide and is_open and not (freeze and len(units) <= SLOT_WINDOW)
            ready = ctx.get(dut.i.ready)
            assert ready == (join or len(units) < depth), (clock, ready)
            ahead = ctx.get(dut.count_next), ctx.get(dut.flags_next)
            level = len(units)
            for unit in units[:take]:
                got.extend(r["serial"] for r in unit)
            units = units[take:]
            if cut:
                got.append(units[0].pop(0)["serial"])
            if offer and ready:
                sent.append(serial)
                serial += 1
                run = entry["run"]
                if join:
                    units[-1].append(entry)
                    is_open = False
                    joins += 1
                else:
                    units.append([entry])
                    is_open = not wide
            elif take == level:
                is_open = False
            await ctx.tick()
        assert not units, "units left"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got == sent and sent, (len(got), len(sent))
    assert joins > 100, joins


@pytest.mark.parametrize("depth", [16, 8, 12])
def test_unit_queue(depth):
    _run(depth, random.randrange(1 << 32))
