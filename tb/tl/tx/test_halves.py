# SPDX-License-Identifier: BSD-2-Clause
"""The packer's half-flit queue (``rtl/scaleup_ip/tl/tx/halves.py``) against a list: random pushes of up
to three half-flits while ``space``, random takes of up to ``avail``; ``halves`` and ``avail``
are checked every clock (a half-flit is visible from the clock after it is written)."""

import dataclasses
import random

import cocotb
import pytest
from amaranth.lib import data
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from scaleup_ip.config import BlockConfig
from scaleup_ip.tl import HALF_BITS
from scaleup_ip.tl.tx import HALF_QUEUE_DEPTH, HalfQueue, PUSH_MAX, half_layout
from sim import harness
from sim.streams import reset

_PUSH = data.ArrayLayout(half_layout, PUSH_MAX)
_HEAD = data.ArrayLayout(half_layout, 2)


def _half(rng):
    return {"data": rng.getrandbits(HALF_BITS), "msg": rng.getrandbits(1)}


async def _run(dut, rng, held, clocks, p_push, p_take, fill=True, sizes=range(PUSH_MAX + 1)):
    """``clocks`` clocks of random traffic on the queue whose content is ``held``, pushes of a
    size drawn from ``sizes``; returns the half-flits taken and the clocks in which two were
    available."""
    taken, full_clocks = [], 0
    for _ in range(clocks):
        await FallingEdge(dut.clk)
        space = len(held) <= HALF_QUEUE_DEPTH - PUSH_MAX
        assert int(dut.space.value) == space, (len(held), int(dut.space.value))
        push = [_half(rng) for _ in range(rng.choice(sizes))] \
            if fill and space and rng.random() < p_push else []
        avail = min(2, len(held))
        if p_take >= 1:
            take = avail
        else:
            take = rng.randint(0, avail) if rng.random() < p_take else 0
        dut.push.value = len(push)
        dut.push_data.value = _PUSH.const(push + [{}] * (PUSH_MAX - len(push))).as_bits()
        dut.take.value = take
        await ReadOnly()
        assert int(dut.avail.value) == avail, (int(dut.avail.value), avail)
        head = _HEAD.from_bits(dut.halves.value.to_unsigned())
        for k in range(avail):
            assert (int(head[k].data), int(head[k].msg)) == \
                (held[k]["data"], held[k]["msg"]), f"half {k} of {len(held)}"
        full_clocks += avail == 2
        taken += held[:take]
        held[:] = held[take:] + push
    await RisingEdge(dut.clk)
    dut.push.value = 0
    dut.take.value = 0
    return taken, full_clocks


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def halves_in_order(dut):
    """Random pushes and takes, then a drain: every half-flit out once, in order."""
    Clock(dut.clk, 10, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    dut.push.value = 0
    dut.take.value = 0
    await reset(dut)
    held, taken = [], []
    for p_push, p_take in ((0.9, 0.3), (0.3, 0.9), (0.7, 0.7), (1.0, 1.0)):
        taken += (await _run(dut, rng, held, 2000, p_push, p_take))[0]
    taken += (await _run(dut, rng, held, HALF_QUEUE_DEPTH + 1, 0, 1, fill=False))[0]
    dut._log.info("%d half-flits through", len(taken))
    await FallingEdge(dut.clk)
    assert held == [] and int(dut.avail.value) == 0 and int(dut.space.value) == 1


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def halves_stream(dut):
    """A stream of beats (two half-flits, or three with a byte-enable half, pushed whenever
    there is space) taken two at a time: from the second clock on, two half-flits are ready in
    every clock, although a half-flit is seen only the clock after it is written."""
    Clock(dut.clk, 10, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    dut.push.value = 0
    dut.take.value = 0
    await reset(dut)
    held, clocks = [], 500
    taken, full = await _run(dut, rng, held, clocks, 1.0, 1.0, sizes=(2, 3))
    assert full == clocks - 1, f"two half-flits ready in {full} of {clocks} clocks"
    taken += (await _run(dut, rng, held, HALF_QUEUE_DEPTH + 1, 0, 1, fill=False))[0]
    assert held == []
    dut._log.info("%d half-flits, two ready in %d of %d clocks", len(taken), full, clocks)


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """HalfQueue: one build."""


@pytest.mark.parametrize("config", [_Config()], ids=lambda c: c.slug() or "default")
def test_tl_tx_halves(config):
    harness.run(HalfQueue(), config, toplevel="tl_tx_halves", test_module=__name__)
