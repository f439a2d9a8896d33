# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the TL benchmark: packer efficiency against the best legal packing, flits per
clock, items per clock and latency per mix.

Every figure is counted on the RTL: a monitor records the clock edges at which UPLI items are
accepted and flits leave. Efficiency is the data bytes of the whole burst over the bytes of all
its flits, the drain of the last queued items included. The flits are decoded by the golden
model's receiver, which must deliver every item intact, so a figure cannot come from broken
traffic. The bound is the best legal packing of the same items
(:func:`scaleup_ip.model.tl.bound.best_packing`, README §3), its flits counted from the first
control half-flit as the RTL's are. With an address cache (the packer built with one), the
requests are made cacheable (:func:`sim.tl.traffic.cacheable`), the cache runs its adaptive
policy, and the bound compresses the requests the golden model's cache compresses (the RTL's
count must agree).
"""

import json
import os

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.model.tl.addrcache import TxAddressCache
from scaleup_ip.model.tl.bound import best_packing
from scaleup_ip.model.tl.flit import CLASSES, Request, Unpacker
from scaleup_ip.tl import CachePolicy, TxCacheCount
from sim.streams import random_pauses
from sim.tl.env import (
    TlTxEnv,
    TxCacheControls,
    cache_receiver,
    config_credits,
    delivered_with_cache,
    model_cache_config,
)
from sim.tl.traffic import MIXES, as_received, cacheable, payload_bytes

#: Transaction pairs (a request and a response) per mix; the first WARMUP flits are not counted.
PAIRS = 200
WARMUP = 16
#: Clocks the link is held after the first item, with the rest offered: the bound assumes a
#: backlog (every item there to choose from), and so does the spec's efficiency [§5.4]; the
#: packer then starts with its queues full, and in every mix with data the link is slower
#: than the UPLI channels, so they stay full.
BACKLOG_CLOCKS = 160
#: Credits granted up front: more than any mix spends.
PLENTY = {cls: {"pool": 4000} for cls in CLASSES}


class FlitCounter:
    """Clock edges at which requests were accepted and flits left."""

    def __init__(self, dut):
        self.dut, self.cycle, self.requests, self.responses, self.flits = dut, 0, [], [], []
        cocotb.start_soon(self._run())

    async def _run(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            self.cycle += 1
            if dut.req__valid.value and dut.req__ready.value:
                self.requests.append(self.cycle)
            for valid, ready in ((dut.rd_rsp__valid, dut.rd_rsp__ready),
                                 (dut.wr_rsp__valid, dut.wr_rsp__ready)):
                if valid.value and ready.value:
                    self.responses.append(self.cycle)
            if dut.flit__valid.value and dut.flit__ready.value:
                self.flits.append(self.cycle)


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def bench(dut):
    env = TlTxEnv(dut)
    counter = FlitCounter(dut)
    cached = env.config.tx_cache is not None
    ctl = TxCacheControls(dut) if cached else None
    rows = []
    for mix, pair in MIXES.items():
        await env.reset()
        if cached:
            ctl.policy(CachePolicy.ADAPTIVE)
            await ctl.idle()
        await env.grant(PLENTY)
        await env.release(config_credits(env.config))
        items = [item for _ in range(PAIRS) for item in pair(env.rng)]
        if cached:
            items = [cacheable(env.rng, item) for item in items]
        received = []
        receiver = cocotb.start_soon(_receive(env, received))
        await ClockCycles(dut.clk, 64)                   # credit advertisement and 0x01 sent
        start = len(counter.flits)
        counter.requests.clear()
        counter.responses.clear()
        # Latency: the first item into the idle packer; accepted -> its control half leaves.
        env.send(items[0])
        await env.settle(16)
        accepted = (counter.requests if isinstance(items[0], Request) else counter.responses)
        latency = counter.flits[start] - accepted[-1]
        env.flits.set_backpressure(random_pauses(env.rng, 1.0))
        for item in items[1:]:
            env.send(item)
        await ClockCycles(dut.clk, BACKLOG_CLOCKS)
        env.flits.set_backpressure(None)
        await env.settle(256)
        receiver.cancel()
        flits = counter.flits[start:]
        requests = [i for i in items if isinstance(i, Request)]
        responses = [i for i in items if not isinstance(i, Request)]
        compressed = _delivered(env, items, received, requests, ctl)
        best = best_packing(requests, responses, compressed)
        window = _saturated(counter, start, _carried(env.config, received)[-len(flits):])
        rows.append({
            "mix": mix, "packer": env.config.tx_packer, "cache": cached, "items": len(items),
            "flits": len(flits),
            "efficiency": round(sum(payload_bytes(i) for i in items) / (len(flits) * 64), 4),
            "bound": round(best.efficiency, 4), "bound_flits": best.flits,
            "compressed": sum(compressed),
            "flits_per_clock": window["flits_per_clock"],
            "items_per_clock": window["items_per_clock"],
            "window_flits": window["flits"],
            "items_per_flit": round(len(items) / len(flits), 3),
            "tx_latency": latency,
        })
        dut._log.info("%s", rows[-1])
    with open(os.environ["BENCH_OUT"], "w") as f:
        json.dump({"config": json.loads(env.config.to_json()), "rows": rows}, f, indent=2)


def _delivered(env, items, received, requests, ctl):
    """Check the flits through the model's receiver (every item intact, nothing left owed);
    return which requests went compressed, as the golden model's cache decides."""
    if ctl is None:
        u = Unpacker()
        for flit in received:
            u.feed(flit)
        assert u.error is None and u.idle()
        assert u.requests == [as_received(i) for i in requests]
        assert sorted(map(repr, u.responses)) == sorted(
            repr(as_received(i)) for i in items if not isinstance(i, Request))
        return [False] * len(requests)
    delivered_with_cache(env.config, items, received)
    model = TxAddressCache(model_cache_config(env.config), "adaptive")
    compressed = [model.request(r.dst_acc, r.cmd, r.attr, r.length, r.addr,
                                r.metadata).compressed for r in requests]
    assert sum(compressed) == ctl.counts()[TxCacheCount.COMPRESSED]
    return compressed


def _carried(config, flits):
    """Items the model's receiver has delivered after each of ``flits``, cumulative."""
    u = cache_receiver(config)[0] if config.tx_cache is not None else Unpacker()
    carried = []
    for flit in flits:
        u.feed(flit)
        carried.append(len(u.requests) + len(u.responses))
    return carried


def _saturated(counter, start, carried):
    """Throughput over the saturated window: from flit WARMUP until the last request or the
    last response enters the packer, whichever is first (then one queue may run dry); flits
    and items they deliver (``carried``, per flit from ``start``, cumulative) per clock."""
    end = min(arrivals[-1] for arrivals in (counter.requests, counter.responses) if arrivals)
    cycles = counter.flits[start:]
    last = max(k for k, cycle in enumerate(cycles) if cycle <= end)
    flits = last - WARMUP + 1
    clocks = cycles[last] - cycles[WARMUP] + 1
    items = carried[last] - carried[WARMUP - 1]
    return {"flits_per_clock": round(flits / clocks, 3),
            "items_per_clock": round(items / clocks, 3), "flits": flits}


async def _receive(env, received):
    while True:
        received.append(await env.recv_flit())
