# SPDX-License-Identifier: BSD-2-Clause
"""The packer's half-flit aligner (``rtl/scaleup_ip/tl/tx/halves.py``) against a model of its
contract: items of one to three half-flits offered at random, random takes of up to ``avail``;
``halves``, ``avail`` and ``i.ready`` are checked every clock (an item is readable from the
clock after it is accepted; ``avail`` counts the carried half-flits and the oldest item's)."""

import dataclasses
import random

import cocotb
import pytest
from amaranth.lib import data
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from scaleup_ip.config import BlockConfig
from scaleup_ip.tl import HALF_BITS
from scaleup_ip.tl.tx import ITEM_HALVES, HalfAligner, half_item, half_layout
from sim import harness
from sim.streams import reset

_HEAD = data.ArrayLayout(half_layout, 2)


def _half(rng):
    return {"data": rng.getrandbits(HALF_BITS), "msg": rng.getrandbits(1)}


class _Model:
    """The carry, the items waiting (two at most), and the items accepted this clock."""

    def __init__(self):
        self.carry, self.items, self.accepted = [], [], []

    def avail(self):
        return min(2, len(self.carry) + (len(self.items[0]) if self.items else 0))

    def visible(self):
        return self.carry + (self.items[0] if self.items else [])

    def take(self, n):
        got = self.visible()[:n]
        if n > len(self.carry):
            self.carry = self.visible()[n:]
            self.items.pop(0)
        else:
            self.carry = self.carry[n:]
            if not self.carry and self.items and len(self.items[0]) == 1:
                self.carry = self.items.pop(0)          # a lone half-flit moves up
        return got

    def held(self):
        return len(self.carry) + sum(map(len, self.items))


async def _run(dut, rng, model, clocks, p_push, p_take, fill=True, sizes=(1, 2, 3)):
    """``clocks`` clocks of random traffic: items of a size drawn from ``sizes``; returns the
    half-flits taken and the clocks in which two were available."""
    taken, full_clocks, waits = [], 0, 0
    for _ in range(clocks):
        await FallingEdge(dut.clk)
        ready = len(model.items) < 2
        assert int(dut.i__ready.value) == ready, (len(model.items), int(dut.i__ready.value))
        item = [_half(rng) for _ in range(rng.choice(sizes))] \
            if fill and rng.random() < p_push else []
        avail = model.avail()
        if p_take == "pairs":           # as the flit emitter while data is owed
            take = 2 if avail == 2 else 0
            waits = 0 if avail == 2 or model.held() < 2 else waits + 1
            assert waits <= 1, f"{model.held()} half-flits held, {avail} shown for two clocks"
        else:
            take = avail if p_take >= 1 else (
                rng.randint(0, avail) if rng.random() < p_take else 0)
        dut.i__valid.value = int(bool(item))
        dut.i__payload.value = half_item.const({
            "count": len(item), "halves": item + [{}] * (ITEM_HALVES - len(item))}).as_bits()
        if hasattr(dut, "go"):          # strobed: no read is ``go`` low, ``take`` anything
            go = int(take != 0 or rng.random() < 0.5)
            dut.go.value = go
            dut.take.value = take if go else rng.randint(0, 2)
        else:
            dut.take.value = take
        await ReadOnly()
        assert int(dut.avail.value) == avail, (int(dut.avail.value), avail)
        head = _HEAD.from_bits(dut.halves.value.to_unsigned())
        want = model.visible()
        for k in range(avail):
            assert (int(head[k].data), int(head[k].msg)) == (want[k]["data"], want[k]["msg"]), \
                f"half {k} of {avail}"
        full_clocks += avail == 2
        taken += model.take(take)
        if item and ready:
            model.items.append(item)
            model.accepted += item
    await RisingEdge(dut.clk)
    dut.i__valid.value = 0
    dut.take.value = 0
    if hasattr(dut, "go"):
        dut.go.value = 0
    return taken, full_clocks


async def _start(dut):
    Clock(dut.clk, 10, unit="ns").start()
    dut.i__valid.value = 0
    dut.take.value = 0
    if hasattr(dut, "go"):
        dut.go.value = 0
    await reset(dut)
    return random.Random(cocotb.RANDOM_SEED), _Model()


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def halves_in_order(dut):
    """Random items and takes, then a drain: every half-flit offered out once, in order."""
    rng, model = await _start(dut)
    taken = []
    for p_push, p_take in ((0.9, 0.3), (0.3, 0.9), (0.7, 0.7), (1.0, 1.0)):
        taken += (await _run(dut, rng, model, 2000, p_push, p_take))[0]
    taken += (await _run(dut, rng, model, 3 * ITEM_HALVES, 0, 1, fill=False))[0]
    dut._log.info("%d half-flits through", len(taken))
    await FallingEdge(dut.clk)
    assert taken == model.accepted
    assert model.items == [] and model.carry == [] and int(dut.avail.value) == 0
    assert int(dut.i__ready.value) == 1


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def halves_stream(dut):
    """A stream of beats (two half-flits, or three with a byte-enable half-flit, offered in
    every clock) taken two at a time: from the second clock on, two half-flits are ready in
    every clock, although an item is seen only the clock after it is accepted."""
    rng, model = await _start(dut)
    clocks = 500
    taken, full = await _run(dut, rng, model, clocks, 1.0, 1.0, sizes=(2, 3))
    assert full == clocks - 1, f"two half-flits ready in {full} of {clocks} clocks"
    taken += (await _run(dut, rng, model, 3 * ITEM_HALVES + 4, 0, 1, fill=False))[0]
    assert taken == model.accepted and model.items == [] and model.carry == []
    dut._log.info("%d half-flits, two ready in %d of %d clocks", len(taken), full, clocks)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def halves_pairs(dut):
    """Taken two at a time only (as the flit emitter takes them while data is owed), items of
    one half-flit among the others: whenever two half-flits are held, two are shown within a
    clock, so such a reader never waits for ever."""
    rng, model = await _start(dut)
    taken = []
    for p_push in (0.9, 0.5, 1.0):
        taken += (await _run(dut, rng, model, 2000, p_push, "pairs"))[0]
    taken += (await _run(dut, rng, model, 3 * ITEM_HALVES + 4, 0, 1, fill=False))[0]
    assert taken == model.accepted and model.items == [] and model.carry == []
    dut._log.info("%d half-flits taken in pairs", len(taken))


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """HalfAligner: ``avail`` from gates (the slot packer's), or a register with reads strobed
    by ``go`` (the compact packer's)."""
    strobe: bool = False


@pytest.mark.parametrize("config", [_Config(), _Config(strobe=True)],
                         ids=lambda c: c.slug() or "default")
def test_tl_tx_halves(config):
    harness.run(HalfAligner(config.strobe), config, toplevel="tl_tx_halves",
                test_module=__name__)
