# SPDX-License-Identifier: BSD-2-Clause
"""The two-entry stream register (``rtl/scaleup_ip/skid.py``): every transfer passes, in order, under
random idle and backpressure; with neither, one transfer per clock."""

import dataclasses
import random

import cocotb
import pytest
from amaranth.lib import data
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from scaleup_ip.config import BlockConfig
from scaleup_ip.skid import SkidBuffer
from sim import harness
from sim.streams import LayoutSink, LayoutSource, random_pauses, reset

_LAYOUT = data.StructLayout({"value": 16})


async def _run(dut, rng, source, sink, n, idle, stall):
    """Send ``n`` random values; returns the clocks from the first to the last out."""
    source.set_idle(random_pauses(rng, idle))
    sink.set_backpressure(random_pauses(rng, stall))
    sent = [rng.getrandbits(16) for _ in range(n)]
    for v in sent:
        source.send_nowait(value=v)
    start = 0
    got = []
    for k in range(n):
        got.append(int((await sink.recv()).value))
        if k == 0:
            start = cocotb.utils.get_sim_time("ns")
    end = cocotb.utils.get_sim_time("ns")
    await ClockCycles(dut.clk, 4)
    assert got == sent and sink.empty() and source.empty()
    return (end - start) / 10 + 1


@cocotb.test(timeout_time=200, timeout_unit="us")
async def skid_order_and_rate(dut):
    """In order and complete under random idle/backpressure; back to back at full rate."""
    Clock(dut.clk, 10, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    source = LayoutSource(dut, "i", _LAYOUT, dut.clk, dut.rst)
    sink = LayoutSink(dut, "o", _LAYOUT, dut.clk, dut.rst)
    await reset(dut)
    for idle, stall in ((0.3, 0.5), (0.0, 0.7), (0.6, 0.0)):
        await _run(dut, rng, source, sink, 300, idle, stall)
    clocks = await _run(dut, rng, source, sink, 100, 0, 0)
    assert clocks == 100, f"100 transfers took {clocks} clocks"
    await RisingEdge(dut.clk)


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """SkidBuffer of a 16-bit layout, with or without its own output register."""

    flop_out: bool = False


@pytest.mark.parametrize("config", [_Config(), _Config(flop_out=True)],
                         ids=lambda c: c.slug() or "default")
def test_skid(config):
    harness.run(SkidBuffer(_LAYOUT, flop_out=config.flop_out), config, toplevel="skid",
                test_module=__name__)
