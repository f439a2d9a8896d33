# SPDX-License-Identifier: BSD-2-Clause
"""The packer's data half-flit producer (``rtl/scaleup_ip/tl/tx/data.py``) against a reference expansion of
each schedule (README §1, §3): request beats in request order, each request's byte-enable
half-flit after its last beat, then the response beats; errored beats as Poisoned Data messages.
Random schedules, random idle on every input, random takes; then full rate with nothing idle."""

import dataclasses
import random

import cocotb
import pytest
from amaranth.lib import data
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge

from scaleup_ip.config import BlockConfig
from scaleup_ip.tl import BEAT_BYTES, HALF_BITS, MAX_BEATS, MsgType, REQS_PER_CONTROL
from scaleup_ip.tl.tx import (
    DataSequencer,
    half_layout,
    req_beat_layout,
    rsp_beat_layout,
    schedule_layout,
)
from sim import harness
from sim.streams import LayoutSource, random_pauses, reset

_HEAD = data.ArrayLayout(half_layout, 2)
_HALF_MASK = (1 << HALF_BITS) - 1
#: Response beats one control half-flit may call for: eight four-beat read responses.
_RSP_BEATS = 8 * MAX_BEATS


def _data_halves(beat):
    """The two half-flits of a beat, as (data, msg)."""
    halves = [beat["data"] & _HALF_MASK, beat["data"] >> HALF_BITS]
    if beat["error"]:
        return [(h & ~0xFF | MsgType.POISONED_DATA.value, 1) for h in halves]
    return [(h, 0) for h in halves]


def _schedule(rng, data_only=False):
    """A random schedule: requests (reads, partial writes with byte enables, WriteFulls) and
    a number of response beats."""
    reqs = []
    for _ in range(REQS_PER_CONTROL):
        kind = rng.choice(["write", "full"] if data_only else ["none", "read", "write", "full"])
        if kind in ("none", "read"):
            reqs.append({"beats": 0, "be": 0, "be_pos": 0})
            continue
        beats = rng.randint(1, MAX_BEATS)
        reqs.append({"beats": beats, "be": int(kind == "write"),
                     "be_pos": rng.randint(0, MAX_BEATS - beats)})
    rsp_beats = rng.choice([0, rng.randint(1, 4), rng.randint(1, _RSP_BEATS)])
    if data_only:
        for r in reqs:
            r["be"] = 0
    # The emitter sent the first data half-flit itself (TlTx's direct path).
    has_data = rsp_beats or any(r["beats"] for r in reqs)
    skip = int(has_data and rng.random() < 0.3)
    return {"req": reqs, "rsp_beats": rsp_beats, "skip": skip}


def _expand(rng, sched):
    """The beats a schedule needs and the half-flits it must become."""
    req_beats, rsp_beats, halves = [], [], []
    for r in sched["req"]:
        acc = 0
        for k in range(r["beats"]):
            beat = {"data": rng.getrandbits(2 * HALF_BITS), "error": int(rng.random() < 0.1),
                    "byte_en": rng.getrandbits(BEAT_BYTES)}
            req_beats.append(beat)
            halves += _data_halves(beat)
            acc |= beat["byte_en"] << BEAT_BYTES * (r["be_pos"] + k)
        if r["be"]:
            halves.append((acc, 0))
    for _ in range(sched["rsp_beats"]):
        beat = {"data": rng.getrandbits(2 * HALF_BITS), "error": int(rng.random() < 0.1)}
        rsp_beats.append(beat)
        halves += _data_halves(beat)
    return req_beats, rsp_beats, halves[sched["skip"]:]


class _Env:
    def __init__(self, dut):
        self.dut = dut
        self.rng = random.Random(cocotb.RANDOM_SEED)
        self.sched = LayoutSource(dut, "schedule", schedule_layout, dut.clk, dut.rst)
        self.req = LayoutSource(dut, "req_data", req_beat_layout, dut.clk, dut.rst)
        self.rsp = LayoutSource(dut, "rsp_data", rsp_beat_layout, dut.clk, dut.rst)

    def queue(self, n, data_only=False):
        """Queue ``n`` random schedules and their beats; returns the half-flits expected, how
        many schedules call for none and how many skip their first."""
        expected, empty, skips = [], 0, 0
        for _ in range(n):
            sched = _schedule(self.rng, data_only)
            req_beats, rsp_beats, halves = _expand(self.rng, sched)
            self.sched.send_nowait(**sched)
            for beat in req_beats:
                self.req.send_nowait(**beat)
            for beat in rsp_beats:
                self.rsp.send_nowait(**beat)
            expected += halves
            empty += not (req_beats or rsp_beats)
            skips += sched["skip"]
        return expected, empty, skips

    async def take(self, n, p_take):
        """Take ``n`` half-flits, each clock up to ``avail`` with probability ``p_take`` (all
        of them when ``p_take`` is 1); returns them and the clocks it took."""
        dut, got, clocks = self.dut, [], 0
        while len(got) < n:
            await FallingEdge(dut.clk)
            clocks += 1
            avail = int(dut.avail.value)
            take = avail if p_take >= 1 else (
                self.rng.randint(0, avail) if self.rng.random() < p_take else 0)
            take = min(take, n - len(got))
            head = _HEAD.from_bits(dut.halves.value.to_unsigned())
            got += [(int(head[k].data), int(head[k].msg)) for k in range(take)]
            dut.take.value = take
            assert clocks < 100 * n + 1000, f"{len(got)} of {n} half-flits"
        await RisingEdge(dut.clk)
        dut.take.value = 0
        return got, clocks

    async def check_empty(self):
        await ClockCycles(self.dut.clk, 8)
        await FallingEdge(self.dut.clk)
        assert int(self.dut.avail.value) == 0, "half-flits left over"
        assert self.sched.empty() and self.req.empty() and self.rsp.empty(), "input left over"
        assert not int(self.dut.req_data__ready.value) and not int(self.dut.rsp_data__ready.value)


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def data_in_order(dut):
    """Every schedule's half-flits in order, byte enables and poison included, under random
    idle on the schedule and data inputs and random takes."""
    Clock(dut.clk, 10, unit="ns").start()
    env = _Env(dut)
    dut.take.value = 0
    await reset(dut)
    for idle, p_take in ((0.3, 0.5), (0.0, 0.3), (0.6, 1.0), (0.2, 0.9)):
        for source in (env.sched, env.req, env.rsp):
            source.set_idle(random_pauses(env.rng, idle))
        expected, _, _ = env.queue(60)
        got, _ = await env.take(len(expected), p_take)
        assert got == expected
        await env.check_empty()
        dut._log.info("%d half-flits in order (idle %.1f, take %.1f)", len(got), idle, p_take)


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def data_full_rate(dut):
    """With the inputs never idle and every half-flit taken at once, two half-flits leave per
    clock, the first in the clock after the first schedule is offered; a schedule that calls for no
    data costs one clock, and one that skips its first half-flit half a clock (its beat
    still takes a clock)."""
    Clock(dut.clk, 10, unit="ns").start()
    env = _Env(dut)
    dut.take.value = 0
    await reset(dut)
    for data_only in (True, False):
        expected, empty, skips = env.queue(40, data_only=data_only)
        got, clocks = await env.take(len(expected), 1)
        assert got == expected
        assert clocks <= (len(expected) + skips + 1) // 2 + empty + 2, \
            f"{len(expected)} half-flits ({empty} empty, {skips} skipping) took {clocks} clocks"
        await env.check_empty()
        dut._log.info("%d half-flits in %d clocks", len(got), clocks)


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """DataSequencer: one build."""


@pytest.mark.parametrize("config", [_Config()], ids=lambda c: c.slug() or "default")
def test_tl_tx_data(config):
    harness.run(DataSequencer(), config, toplevel="tl_tx_data", test_module=__name__)
