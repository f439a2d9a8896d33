"""cocotb side of the TL part of ``make sim``: two TL ends back to back under random traffic.

Each end sends a random mix of requests (every command class, 4-256 bytes, poison now and
then) and responses (every status) to the other, with idle cycles on the UPLI inputs and
backpressure on the outputs. Every item must arrive intact; the figures go to the JSON file
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

from rtl.model.tl import Request, credit_table
from rtl.tl.layout import TlConfig, TxCacheCount, tx_cache_counts
from sim import progress
from sim.streams import random_pauses, reset
from sim.tl_env import PERIOD_NS, UpliItemSource, config_credits, credit_table_of
from sim.tl_rx_env import UpliItemSink
from sim.tl_traffic import (
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
    counter = Flits(dut)
    await reset(dut)
    if config.cache_ways:
        # The caches' reset walks: the Tx cache's (``busy``), and the Rx cache's, one entry per
        # clock, during which received requests wait (and so, for credits, the peer).
        for end in "ab":
            while getattr(dut, f"{end}_tx_cache__busy").value:
                await RisingEdge(dut.clk)
        await ClockCycles(dut.clk, config.cache_rows * config.cache_ways)
        counter.cycles = 0                  # flits per clock count from here
    report = await exchange(dut, config, rng, int(os.environ["SIM_TL_ITEMS"]), counter)
    with open(os.environ["SIM_REPORT"], "w") as f:
        json.dump(report, f, indent=2)
    check(report)


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
        data = sum(payload_bytes(i) for i in sent[end])
        flits = counter.flits[end]
        report["directions"][f"{end}->{far}"] = {
            "items": len(sent[end]), "data_bytes": data, "flits": flits,
            "efficiency": round(data / (64 * flits), 4),
            "flits_per_clock": round(flits / busy, 3),
            "credits_home": credits_home(dut, end, config),
            "error": bool(getattr(dut, f"{far}_error").value),
        }
        if config.cache_ways:
            report["directions"][f"{end}->{far}"]["tx_cache"] = _cache_counts(dut, end)
    return report


def credits_home(dut, end, config):
    """Whether ``end``'s TL packer holds every credit its peer advertises (``config``)."""
    return (credit_table_of(getattr(dut, f"{end}_credits").value)
            == credit_table(config_credits(config)))


def check(report):
    """Every item arrived intact, every credit is home, no TL saw an error."""
    assert report["mismatches"] == 0, f"{report['mismatches']} items lost, extra or changed"
    assert all(d["credits_home"] and not d["error"] for d in report["directions"].values())
