# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the TL part of ``make sim``: two TL ends back to back under random traffic.

Each end sends a random mix of requests (every command class, 4-256 bytes, poison now and
then) and responses (every status) to the other, with idle cycles on the UPLI inputs and
backpressure on the outputs, made and checked in hardware (:func:`hardware_exchange`, on
:mod:`scaleup_ip.tl.traffic`); :func:`exchange` does the same in Python for tests that need the
items themselves. Every item must arrive intact; the figures go to the JSON file
named by ``SIM_REPORT``: per direction the data bytes, flits, efficiency (data bytes / flit
bytes) and flits per clock, and the credits each end holds at the end (all of them, when nothing
is in flight). With address caches (``cache_ways``), half of each end's requests stream through a
few 1 MB regions per destination (compressible when they hit) and the report adds each end's
Tx cache counters.
"""

import json
import os
import random
import time
from collections import Counter

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb.utils import get_sim_time

from scaleup_ip.model.tl.flit import Request, credit_table
from scaleup_ip.tl import TlConfig, TxCacheCount, UpliChannel, traffic_counts, tx_cache_counts
from sim import progress
from sim.streams import clocks, random_pauses, reset
from sim.tl.env import PERIOD_NS, UpliItemSource, config_credits, credit_table_of
from sim.tl.rx_env import UpliItemSink
from sim.tl.traffic import (
    as_received,
    cacheable_request,
    payload_bytes,
    random_items,
    upli_transfers,
)


class Flits:
    """Counts each end's flits and the clocks."""

    def __init__(self, dut):
        self.dut, self.cycles, self.flits = dut, 0, {"a": 0, "b": 0}
        cocotb.start_soon(self._run())

    async def _run(self):
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            self.cycles += 1
            for end in "ab":
                self.flits[end] += int(getattr(self.dut, f"{end}_flit").value)


def _traffic(rng, config, count):
    """``count`` random items; with caches, requests of the streaming patterns mixed in."""
    items = random_items(rng, count)
    if not config.cache_ways:
        return items
    regions = [[rng.randrange(1 << 37) for _ in range(4)] for _ in range(config.cache_rows)]
    for k in range(0, len(items), 2):
        if isinstance(items[k], Request):
            dst = rng.randrange(min(config.cache_rows, 8))
            items[k] = cacheable_request(rng, rng.choice(regions[dst]), dst)
    return items


def _cache_counts(dut, end):
    view = tx_cache_counts.from_bits(getattr(dut, f"{end}_tx_cache__counts").value.to_unsigned())
    return {kind.name.lower(): int(view[kind]) for kind in TxCacheCount}


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def system(dut):
    config = TlConfig.from_env()
    rng = random.Random(cocotb.RANDOM_SEED)
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    await reset(dut)
    if config.cache_ways:
        # The caches' reset walks: the Tx cache's (``busy``), and the Rx cache's, one entry per
        # clock, during which received requests wait (and so, for credits, the peer).
        for end in "ab":
            while getattr(dut, f"{end}_tx_cache__busy").value:
                await RisingEdge(dut.clk)
        await clocks(dut.clk, config.cache_rows * config.cache_ways, PERIOD_NS)
    report = await hardware_exchange(dut, config, rng, int(os.environ["SIM_TL_ITEMS"]),
                                     period_ns=PERIOD_NS, cacheable=bool(config.cache_ways))
    with open(os.environ["SIM_REPORT"], "w") as f:
        json.dump(report, f, indent=2)
    check(report)


#: Clocks between looks at the counters while the traffic runs in hardware.
STEP = 5000
#: Idle and busy levels of the generators and checkers (of 256): about 10 %.
PACING = 26


def limits(count):
    """Items of each kind out of ``count``: half requests, 30 % read and 20 % write
    responses."""
    req, rd = count // 2, count * 3 // 10
    return {"req": req, "rd_rsp": rd, "wr_rsp": count - req - rd}


def traffic(dut, name):
    """A :data:`~scaleup_ip.tl.layout.traffic_counts` port as a dict by channel name."""
    view = traffic_counts.from_bits(getattr(dut, name).value.to_unsigned())
    return {c.name.lower(): int(view[c]) for c in UpliChannel}


async def hardware_exchange(dut, config, rng, count, *, period_ns, cacheable=False,
                            during=None, settle=None):
    """:func:`exchange` with the traffic made and checked in hardware (the top's
    :func:`sim.tl.link.traffic_members`): ``count`` items each way (:func:`limits`), about
    10 % idle and busy clocks, until every transfer sent has been checked; ``during`` (a
    coroutine function) is awaited as the traffic starts, ``settle`` (one too) after it.
    Returns the report, with ``mismatches`` (transfers that differed) and ``lost`` (sent and
    never checked)."""
    share = limits(count)
    dut.traffic.value = 1
    dut.gen_limits.value = share["req"] | share["rd_rsp"] << 32 | share["wr_rsp"] << 64
    dut.gen_idle.value = dut.check_busy.value = PACING
    dut.gen_cacheable.value = int(cacheable)
    for end in "ab":
        getattr(dut, f"{end}_seed").value = rng.getrandbits(64)
    dut.gen_load.value = 1
    await RisingEdge(dut.clk)
    dut.gen_load.value = 0
    flits = {e: int(getattr(dut, f"{e}_flits").value) for e in "ab"}
    started, began = time.monotonic(), get_sim_time("ns")
    if during is not None:
        await during()
    dut.gen_enable.value = 1

    def finished():
        return all(int(getattr(dut, f"{e}_done").value) for e in "ab") and all(
            traffic(dut, f"{e}_got") == traffic(dut, f"{f}_sent")
            for e, f in (("a", "b"), ("b", "a")))

    # Progress: requests and write responses checked (read responses count by beat).
    progress.watch(dut, 2 * (share["req"] + share["wr_rsp"]),
                   lambda: sum(traffic(dut, f"{e}_got")["req"] + traffic(dut, f"{e}_got")
                               ["wr_rsp"] for e in "ab"),
                   lambda: sum(sum(traffic(dut, f"{e}_bad").values()) for e in "ab"),
                   every=STEP, period_ns=period_ns)
    while not finished():
        await clocks(dut.clk, STEP, period_ns)
    busy = round((get_sim_time("ns") - began) / period_ns)
    dut.gen_enable.value = 0
    if settle is not None:
        await settle()
    else:
        await ClockCycles(dut.clk, 64)
    wall = time.monotonic() - started
    report = {"seed": int(os.environ["COCOTB_RANDOM_SEED"]),
              "config": json.loads(config.to_json()), "traffic": "hardware",
              "cycles": busy, "sim_cycles_per_second": round(
                  (get_sim_time("ns") - began) / period_ns / wall),
              "directions": {}, "mismatches": 0, "lost": 0}
    for end, far in (("a", "b"), ("b", "a")):
        sent, got, bad = (traffic(dut, f"{end}_sent"), traffic(dut, f"{far}_got"),
                          traffic(dut, f"{far}_bad"))
        report["mismatches"] += sum(bad.values())
        report["lost"] += sum(sent.values()) - sum(got.values())
        report["directions"][f"{end}->{far}"] = {
            "items": count, "transfers": sent,
            **_direction(dut, config, end, far, 64 * (sent["orig"] + sent["rd_rsp"]),
                         int(getattr(dut, f"{end}_flits").value) - flits[end], busy)}
    return report


def _direction(dut, config, end, far, data, flits, busy):
    """One direction's figures: ``data`` bytes in ``flits`` flits over ``busy`` clocks, the
    credits and the far receiver's error, the Tx cache's counters if any."""
    figures = {"data_bytes": data, "flits": flits, "efficiency": round(data / (64 * flits), 4),
               "flits_per_clock": round(flits / busy, 3),
               "credits_home": credits_home(dut, end, config),
               "error": bool(getattr(dut, f"{far}_error").value)}
    if config.cache_ways:
        figures["tx_cache"] = _cache_counts(dut, end)
    return figures


async def exchange(dut, config, rng, count, counter, during=None, settle=None):
    """Send ``count`` random items each way (idle cycles on the UPLI inputs, backpressure on
    the outputs) and wait until every transfer arrived and ``during`` (a coroutine run alongside,
    if given) returned, then for ``settle`` (a coroutine function; by default 64 clocks: the
    last credit returns); then compare what arrived with what was sent and return the report.
    Flits per clock count from :attr:`Flits.cycles` as it is."""
    sources = {end: UpliItemSource(dut, f"{end}_") for end in "ab"}
    sinks = {end: UpliItemSink(dut, f"{end}_rx_", rng) for end in "ab"}
    sent = {}
    started = time.monotonic()
    for end in "ab":
        sources[end].set_idle(lambda: random_pauses(rng, 0.1))
        sinks[end].set_backpressure(0.1)
        sent[end] = _traffic(rng, config, count)
        for item in sent[end]:
            sources[end].send(item)
    side = cocotb.start_soon(during) if during is not None else None
    want = sum(upli_transfers(sent[end]) for end in "ab")
    progress.watch(dut, want, lambda: sum(sinks[end].count() for end in "ab"))
    while sum(sinks[end].count() for end in "ab") < want:
        await RisingEdge(dut.clk)
    busy = counter.cycles
    if side is not None:
        await side
    if settle is not None:
        await settle()
    else:
        await ClockCycles(dut.clk, 64)
    wall = time.monotonic() - started
    report = {"seed": int(os.environ["COCOTB_RANDOM_SEED"]),
              "config": json.loads(config.to_json()),
              "cycles": busy, "sim_cycles_per_second": round(counter.cycles / wall),
              "directions": {}, "mismatches": 0}
    for end, far in (("a", "b"), ("b", "a")):
        requests, reads, writes = sinks[far].delivered()
        got = Counter(map(repr, requests + reads + writes))
        expected = Counter(repr(as_received(i)) for i in sent[end])
        report["mismatches"] += (got - expected).total() + (expected - got).total()
        report["directions"][f"{end}->{far}"] = {
            "items": len(sent[end]),
            **_direction(dut, config, end, far, sum(payload_bytes(i) for i in sent[end]),
                         counter.flits[end], busy)}
    return report


def credits_home(dut, end, config):
    """Whether ``end``'s TL packer holds every credit its peer advertises (``config``)."""
    return (credit_table_of(getattr(dut, f"{end}_credits").value)
            == credit_table(config_credits(config)))


def check(report):
    """Every item arrived intact, every credit is home, no TL saw an error."""
    assert report["mismatches"] == 0, f"{report['mismatches']} items lost, extra or changed"
    assert report.get("lost", 0) == 0, f"{report['lost']} transfers sent and never checked"
    assert all(d["credits_home"] and not d["error"] for d in report["directions"].values())
