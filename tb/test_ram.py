# SPDX-License-Identifier: BSD-2-Clause
"""The twice-registered RAM (``rtl/scaleup_ip/ram.py``): its read timing against a Python array
(each register's enable at random), what it elaborates to on ECP5 and elsewhere, and its
parameter checks."""

import random

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from fpga.blocks import BlockPlatform
from sim import harness
from scaleup_ip.ram import PipelinedRam

CLOCKS = 2000


@pytest.mark.parametrize("width, depth", [(40, 32), (7, 5), (3, 1)])
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
            w_en, out_en = rng.random() < 0.6, rng.random() < 0.6
            r_en = rng.random() < 0.6 and not (w_en and w_addr == r_addr)
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


@pytest.mark.parametrize("width, depth, cells, shape", [
    (513, 32, 15, 36), (36, 1024, 2, 18), (38, 4096, 10, 4), (3, 16384, 3, 1),
])
def test_ecp5_block_rams(width, depth, cells, shape):
    """On ECP5: DP16KDs of the widest shape that holds ``depth`` entries, as many as ``width``
    needs, with their output registers on, and no memory left to infer; elsewhere (no
    platform) an Amaranth memory."""
    ecp5 = rtlil.convert(PipelinedRam(width, depth), platform=BlockPlatform())
    assert ecp5.count("cell \\DP16KD") == cells
    assert ecp5.count(f"parameter \\DATA_WIDTH_B {shape}\n") == cells
    assert ecp5.count('parameter \\REGMODE_B "OUTREG"') == cells
    assert ecp5.count('parameter \\REGMODE_A "OUTREG"') == (cells if shape == 36 else 0)
    assert "$mem" not in ecp5
    generic = rtlil.convert(PipelinedRam(width, depth))
    assert "DP16KD" not in generic and "$mem" in generic


@pytest.mark.parametrize("depth, width, low, enables", [
    (512, 36, 5, 4), (1024, 18, 4, 2), (2048, 9, 3, 0), (4096, 4, 2, 0), (8192, 2, 1, 0),
    (16384, 1, 0, 0),
])
def test_ecp5_pins(depth, width, low, enables):
    """The word address in the DP16KD's address bits 13 down to ``low`` on both ports, below
    them port A's byte enables (on) in the 36- and 18-bit shapes, else 0; the data written on
    port A's pins and read on port B's, except in the 36-bit shape, whose bits 18-35 are on
    port B's input pins and its bits 0-17 on port A's output pins."""
    ram = PipelinedRam(width, depth)
    cell = Fragment.get(ram, BlockPlatform()).subfragments[0][0]
    ports = {name: value for name, (value, _) in cell.ports.items()}
    for i in range(14):
        a, b = ports[f"ADA{i}"], ports[f"ADB{i}"]
        if i >= low:
            assert repr(a) == repr(ram.w_addr[i - low]) and repr(b) == repr(ram.r_addr[i - low])
        else:
            assert a.value == int(i < enables) and b.value == 0, i
    for bit in range(width):
        din = dout = f"A{bit}" if bit < 18 else f"B{bit - 18}"
        if width < 36:
            din, dout = f"A{bit}", f"B{bit}"
        assert repr(ports[f"DI{din}"]) == repr(ram.w_data[bit]), bit
        assert repr(ports[f"DO{dout}"]) == repr(ram.r_data[bit]), bit
    assert sum(name.startswith("DO") for name in ports) == width    # no other output pin


def test_deeper_than_a_block_ram():
    """Deeper than one DP16KD holds: an Amaranth memory on ECP5 too."""
    deep = rtlil.convert(PipelinedRam(2, 16385), platform=BlockPlatform())
    assert "DP16KD" not in deep and "$mem" in deep


@pytest.mark.parametrize("width, depth, error, message", [
    (0, 8, ValueError, "PipelinedRam width must be 1 .. 4096, not 0"),
    (8, 0, ValueError, "PipelinedRam depth must be 1 .. 65536, not 0"),
    (8.5, 8, TypeError, "PipelinedRam width must be an integer, not 8.5"),
])
def test_parameters(width, depth, error, message):
    with pytest.raises(error, match=message):
        PipelinedRam(width, depth)
