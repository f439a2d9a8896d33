# SPDX-License-Identifier: BSD-2-Clause
"""The twice-registered RAM (``rtl/scaleup_ip/ram.py``): its read timing against a Python array
(each register's enable at random), what it elaborates to on ECP5 and elsewhere, and its
parameter checks."""

import random

import pytest
from amaranth.back import rtlil
from amaranth.sim import Simulator

from fpga.blocks import BlockPlatform
from sim import harness
from scaleup_ip.ram import PipelinedRam

CLOCKS = 2000


@pytest.mark.parametrize("width, depth", [(40, 32), (7, 5)])
def test_read_registers(width, depth):
    """Each register takes its input only while its enable is set: ``r_data`` is the entry
    the first register took, once the second has taken it. No read of the entry written in
    the same clock."""
    seed = harness.seed()
    rng = random.Random(seed)
    print(f"seed {seed}")
    dut = PipelinedRam(width, depth)
    mem = [None] * depth

    async def bench(ctx):
        first = second = None
        for clock in range(CLOCKS):
            w_addr, r_addr = rng.randrange(depth), rng.randrange(depth)
            w_en = rng.random() < 0.6 and w_addr != r_addr
            r_en, out_en = rng.random() < 0.6, rng.random() < 0.6
            data = rng.getrandbits(width)
            ctx.set(dut.w_addr, w_addr)
            ctx.set(dut.w_data, data)
            ctx.set(dut.w_en, w_en)
            ctx.set(dut.r_addr, r_addr)
            ctx.set(dut.r_en, r_en)
            ctx.set(dut.r_out_en, out_en)
            if second is not None:
                assert ctx.get(dut.r_data) == second, clock
            if out_en:
                second = first
            if r_en:
                first = mem[r_addr]
            if w_en:
                mem[w_addr] = data
            await ctx.tick()
        assert second is not None

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_ecp5_block_rams():
    """On ECP5: one DP16KD per 36 bits with both output registers on, and no memory left to
    infer; elsewhere (no platform) an Amaranth memory. Deeper than 512, a memory on ECP5 too."""
    ecp5 = rtlil.convert(PipelinedRam(513, 32), platform=BlockPlatform())
    assert ecp5.count("cell \\DP16KD") == 15
    assert ecp5.count('parameter \\REGMODE_B "OUTREG"') == 15
    assert ecp5.count('parameter \\REGMODE_A "OUTREG"') == 15
    assert "$mem" not in ecp5
    generic = rtlil.convert(PipelinedRam(513, 32))
    assert "DP16KD" not in generic and "$mem" in generic
    deep = rtlil.convert(PipelinedRam(36, 1024), platform=BlockPlatform())
    assert "DP16KD" not in deep and "$mem" in deep


@pytest.mark.parametrize("width, depth, error, message", [
    (0, 8, ValueError, "PipelinedRam width must be 1 .. 4096, not 0"),
    (8, 1, ValueError, "PipelinedRam depth must be 2 .. 65536, not 1"),
    (8.5, 8, TypeError, "PipelinedRam width must be an integer, not 8.5"),
])
def test_parameters(width, depth, error, message):
    with pytest.raises(error, match=message):
        PipelinedRam(width, depth)
