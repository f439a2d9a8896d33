# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/tl/traffic (the UPLI traffic generator and checker) on
``sim/tl/upli_traffic_pair.py``, against the golden model ``rtl/scaleup_ip/model/tl/traffic.py``,
written from the block's README alone.

The generator's four channels, taken with random backpressure, are the model's sequence
transfer by transfer; the checker passes the model's sequence as delivered (poisoned beats,
OKAY responses without SRCACCID) fed with random idle clocks, and counts one mismatch for each
transfer changed, dropped or poisoned wrongly; the two in a hardware loop agree over many
transfers; ``load`` restarts both from a new seed."""

import dataclasses
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer

from scaleup_ip.model.tl import traffic as model
from scaleup_ip.model.tl.flit import Request
from scaleup_ip.tl import UpliChannel, traffic_counts
from sim import harness
from sim.streams import random_pauses, reset
from sim.tl.env import PERIOD_NS, UpliItemSource
from sim.tl.rx_env import UpliItemSink
from sim.tl.upli_traffic_pair import UpliTrafficConfig, UpliTrafficPair

LIMITS = {"req": 300, "rd_rsp": 200, "wr_rsp": 200}
CHANNELS = [c.name.lower() for c in UpliChannel]


def counts(dut, name):
    view = traffic_counts.from_bits(getattr(dut, name).value.to_unsigned())
    return {c.name.lower(): int(view[c]) for c in UpliChannel}


def items(seed, limits=LIMITS, cacheable=False):
    traffic = model.UpliTraffic(seed, cacheable=cacheable)
    return (traffic.first_requests(limits["req"]), traffic.first_read_responses(limits["rd_rsp"]),
            traffic.first_write_responses(limits["wr_rsp"]))


def transfers(groups):
    total = dict.fromkeys(CHANNELS, 0)
    for group in groups:
        for item in group:
            for channel, n in model.channel_transfers(item).items():
                total[channel] += n
    return total


def norm(item):
    """An item with its beat lists as tuples (rebuilt items carry lists)."""
    if not hasattr(item, "byte_en") and not hasattr(item, "offset"):
        return item
    fields = {name: tuple(getattr(item, name)) for name in ("data", "byte_en", "error")
              if hasattr(item, name)}
    return dataclasses.replace(item, **fields)


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.rng = random.Random(cocotb.RANDOM_SEED)
        for name in ("loop", "load", "enable", "idle", "busy", "seed", "check_seed", "limits",
                     "cacheable"):
            getattr(dut, name).value = 0

    async def start(self):
        Clock(self.dut.clk, PERIOD_NS, unit="ns").start()
        await reset(self.dut)

    async def load(self, seed, check_seed=None, limits=LIMITS):
        dut = self.dut
        dut.seed.value, dut.check_seed.value = seed, seed if check_seed is None else check_seed
        dut.limits.value = limits["req"] | limits["rd_rsp"] << 32 | limits["wr_rsp"] << 64
        dut.load.value = 1
        await RisingEdge(dut.clk)
        dut.load.value = 0
        await RisingEdge(dut.clk)

    async def until(self, done, clocks=200_000):
        for _ in range(clocks // 100):
            if done():
                return
            await ClockCycles(self.dut.clk, 100)
        raise AssertionError("timed out")


@cocotb.parametrize(cacheable=[False, True])
async def gen_sequence(dut, cacheable):
    """The generator's four channels, with idle clocks and random backpressure, carry the
    model's sequence exactly (with and without cacheable requests), and it stops at its
    limits."""
    tb = TB(dut)
    await tb.start()
    dut.cacheable.value = cacheable
    seed = tb.rng.getrandbits(64)
    sink = UpliItemSink(dut, "gen_", tb.rng)
    sink.set_backpressure(0.3)
    await tb.load(seed)
    dut.idle.value, dut.enable.value = 64, 1
    want = transfers(items(seed, cacheable=cacheable))
    await tb.until(lambda: int(dut.done.value) and sink.count() == sum(want.values()))
    await ClockCycles(dut.clk, 50)
    got = sink.delivered()
    for name, expected, delivered in zip(("requests", "reads", "writes"),
                                         items(seed, cacheable=cacheable), got):
        assert [norm(i) for i in delivered] == [norm(i) for i in expected], name
    assert counts(dut, "sent") == want
    assert sink.count() == sum(want.values())          # nothing more after the limits


@cocotb.parametrize(cacheable=[False, True])
async def check_sequence(dut, cacheable):
    """The checker takes the model's sequence as delivered, with idle clocks between transfers
    and its own pauses, and finds nothing wrong."""
    tb = TB(dut)
    await tb.start()
    dut.cacheable.value = cacheable
    seed = tb.rng.getrandbits(64)
    await tb.load(seed)
    source = UpliItemSource(dut, "check_")
    source.set_idle(lambda: random_pauses(tb.rng, 0.3))
    dut.busy.value = 96
    groups = items(seed, cacheable=cacheable)
    for group in groups:
        for item in group:
            source.send(model.as_delivered(item))
    want = transfers(groups)
    await tb.until(lambda: counts(dut, "got") == want)
    assert counts(dut, "bad") == dict.fromkeys(CHANNELS, 0)


def _data_flipped(item, rng):
    """``item`` as delivered with one bit of one data beat flipped."""
    item = model.as_delivered(item)
    k = rng.randrange(len(item.data))
    beat = bytearray(item.data[k])
    beat[rng.randrange(64)] ^= 1 << rng.randrange(8)
    return dataclasses.replace(item, data=item.data[:k] + (bytes(beat),) + item.data[k + 1:])


def _header_flipped(item, rng):
    """``item`` as delivered with one bit of its address (a request) or tag flipped."""
    item = model.as_delivered(item)
    if isinstance(item, Request):
        return dataclasses.replace(item, addr=item.addr ^ 1 << (8 + rng.randrange(49)))
    return dataclasses.replace(item, tag=item.tag ^ 1 << rng.randrange(11))


@cocotb.test()
async def check_catches(dut):
    """A request's address changed (one mismatch on ``req``), a data bit of a request and of a
    read response (one on ``orig``, one on ``rd_rsp``), a read response's tag (one per beat),
    a write response dropped (every later one differs), a poisoned beat delivered as sent (a
    mismatch): each counted, and the transfers around them still check."""
    tb = TB(dut)
    await tb.start()
    seed = tb.rng.getrandbits(64)
    await tb.load(seed)
    source = UpliItemSource(dut, "check_")
    requests, reads, writes = items(seed)
    with_data = [n for n, r in enumerate(requests) if r.data]
    changed = {n: f(requests[n], tb.rng) for n, f in zip(
        tb.rng.sample(with_data, 2), (_header_flipped, _data_flipped))}
    read_victims = tb.rng.sample(range(len(reads)), 2)
    changed_reads = {read_victims[0]: _data_flipped(reads[read_victims[0]], tb.rng),
                     read_victims[1]: _header_flipped(reads[read_victims[1]], tb.rng)}
    dropped = tb.rng.randrange(len(writes) - 1)
    for n, item in enumerate(requests):
        source.send(changed.get(n) or model.as_delivered(item))
    for n, item in enumerate(reads):
        source.send(changed_reads.get(n) or model.as_delivered(item))
    for n, item in enumerate(writes):
        if n != dropped:
            source.send(model.as_delivered(item))
    want = transfers((requests, reads, writes))
    want["wr_rsp"] -= 1
    await tb.until(lambda: counts(dut, "got") == want)
    assert counts(dut, "bad") == {"req": 1, "orig": 1,
                                  "rd_rsp": 1 + reads[read_victims[1]].beats,
                                  "wr_rsp": len(writes) - 1 - dropped}
    # Poisoned beats with their data as sent, not as delivered: a mismatch each.
    await tb.load(seed)
    first = next(n for n, r in enumerate(reads) if any(r.error))
    for item in reads[:first]:
        source.send(model.as_delivered(item))
    source.send(dataclasses.replace(model.as_delivered(reads[first]), data=reads[first].data))
    want = transfers([reads[:first + 1]])["rd_rsp"]
    await tb.until(lambda: counts(dut, "got")["rd_rsp"] == want)
    assert counts(dut, "bad")["rd_rsp"] == sum(reads[first].error)


@cocotb.test()
async def loop(dut):
    """Generator into checker in hardware, both pacing: every transfer arrives and checks."""
    tb = TB(dut)
    await tb.start()
    dut.loop.value = 1
    seed = tb.rng.getrandbits(64)
    limits = {"req": 20_000, "rd_rsp": 15_000, "wr_rsp": 15_000}
    await tb.load(seed, limits=limits)
    dut.idle.value, dut.busy.value, dut.enable.value = 40, 40, 1
    await tb.until(lambda: int(dut.done.value), clocks=1_000_000)
    await ClockCycles(dut.clk, 4)
    sent = counts(dut, "sent")
    assert counts(dut, "got") == sent and counts(dut, "bad") == dict.fromkeys(CHANNELS, 0)
    assert sent == transfers(items(seed, limits))
    await Timer(1, "ns")


@cocotb.test()
async def load_restarts(dut):
    """``load`` in the middle of a run clears the counts and starts the sequence again from
    the new seed; a checker loaded with another seed than the generator sees mismatches."""
    tb = TB(dut)
    await tb.start()
    dut.loop.value = 1
    first, second = tb.rng.getrandbits(64), tb.rng.getrandbits(64)
    await tb.load(first, limits={"req": 0, "rd_rsp": 0, "wr_rsp": 0})
    dut.enable.value = 1
    await ClockCycles(dut.clk, 500)
    dut.enable.value = 0
    await ClockCycles(dut.clk, 10)
    assert sum(counts(dut, "got").values()) > 0 and not any(counts(dut, "bad").values())
    dut.loop.value = 0
    sink = UpliItemSink(dut, "gen_", tb.rng)
    await tb.load(second)
    assert counts(dut, "sent") == dict.fromkeys(CHANNELS, 0) == counts(dut, "got")
    dut.enable.value = 1
    want = transfers(items(second))
    await tb.until(lambda: sink.count() == sum(want.values()))
    got = sink.delivered()
    for expected, delivered in zip(items(second), got):
        assert [norm(i) for i in delivered] == [norm(i) for i in expected]
    dut.enable.value, dut.loop.value = 0, 1
    await tb.load(first, check_seed=second, limits={"req": 50, "rd_rsp": 50, "wr_rsp": 50})
    dut.enable.value = 1
    await tb.until(lambda: int(dut.done.value))
    await ClockCycles(dut.clk, 4)
    assert all(counts(dut, "bad")[c] > 0 for c in CHANNELS)


def test_upli_traffic():
    config = UpliTrafficConfig()
    harness.run(UpliTrafficPair(config), config, toplevel="upli_traffic",
                test_module=__name__)
