# SPDX-License-Identifier: BSD-2-Clause
"""The block measurements' platform (fpga/blocks.py): the speed grade and the part reach
nextpnr, and a grade a part does not come in is refused."""

import pytest
from amaranth import Elaboratable, Module, Signal

from fpga import report
from fpga.blocks import SPEED, BlockPlatform


class _Flop(Elaboratable):
    """One flop between the platform's two pins."""

    def elaborate(self, platform):
        m = Module()
        din, dout = platform.request("din", 0), platform.request("dout", 0)
        q = Signal()
        m.d.sync += q.eq(din.i)
        m.d.comb += dout.o.eq(q)
        return m


def _nextpnr_args(platform):
    """nextpnr's arguments in the build plan of one flop on ``platform``."""
    plan = platform.build(_Flop(), name="top", do_build=False)
    return report.nextpnr_command(plan.files["build_top.json"])[1:]


def _speed(args):
    return args[args.index("--speed") + 1]


def test_default_grade():
    """Grade 6, the ULX3S's, unless named."""
    assert SPEED == "6"
    assert _speed(_nextpnr_args(BlockPlatform())) == SPEED


@pytest.mark.parametrize("speed", ["6", "7", "8"])
def test_speed_reaches_nextpnr(speed):
    """``--speed`` of the build plan is the platform's grade."""
    assert _speed(_nextpnr_args(BlockPlatform(speed=speed))) == speed


def test_ecp5_5g():
    """An ECP5-5G part (the ECPIX-5's) is placed as one, at grade 8, the only one it comes
    in."""
    args = _nextpnr_args(BlockPlatform(device="LFE5UM5G-85F", speed="8"))
    assert "--um5g-85k" in args and _speed(args) == "8"
    with pytest.raises(ValueError, match="speed grade 8 only"):
        BlockPlatform(device="LFE5UM5G-85F")


def test_bad_speed():
    """A grade ECP5 parts do not come in is refused by name."""
    with pytest.raises(ValueError, match="speed must be one of"):
        BlockPlatform(speed="5")
