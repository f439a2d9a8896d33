# SPDX-License-Identifier: BSD-2-Clause
"""The carry-free compares of the TL blocks against Python's, for every value."""

import pytest
from amaranth import Cat, Module, Signal, signed, unsigned
from amaranth.sim import Simulator

from scaleup_ip.tl import above, thermometer


def _values(shape):
    if shape.signed:
        return range(-(1 << (shape.width - 1)), 1 << (shape.width - 1))
    return range(1 << shape.width)


def _check(shape, outputs, expect):
    """Every value of a ``shape`` signal into ``outputs(value)``; each result against
    ``expect(value)``."""
    value = Signal(shape)
    got = outputs(value)

    async def bench(ctx):
        for v in _values(shape):
            ctx.set(value, v)
            assert ctx.get(got) == expect(v), (shape, v, ctx.get(got), expect(v))

    sim = Simulator(Module())
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("width", [1, 2, 3, 5])
def test_above(width):
    consts = range(-2, (1 << width) + 2)
    _check(unsigned(width), lambda v: Cat(*(above(v, c) for c in consts)),
           lambda v: sum(1 << k for k, c in enumerate(consts) if v > c))


@pytest.mark.parametrize("shape, width", [(unsigned(7), 32), (unsigned(7), 4),
                                          (unsigned(3), 8), (unsigned(5), 1),
                                          (signed(5), 4), (signed(6), 8)])
def test_thermometer(shape, width):
    _check(shape, lambda v: thermometer(v, width),
           lambda v: sum(1 << i for i in range(width) if v > i))
