# SPDX-License-Identifier: BSD-2-Clause
"""The packer with its Tx address cache (the slot packer and the compact one):
compressed requests flit for flit as the golden model packs them, and every request
delivered address for address through the model's receiver with an Rx address cache, under
random timing, invalidations, clears and policy changes."""

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from scaleup_ip.model.tl import addrcache as model_cache
from scaleup_ip.model.tl.flit import CLASSES, Packer, Request
from scaleup_ip.model.tl.slots import SlotPacker
from scaleup_ip.tl import CachePolicy, TlConfig, TxCacheCount
from scaleup_ip.tl.tx import TlTx
from sim import harness
from sim.streams import random_pauses
from sim.tl.env import (
    TlTxEnv,
    TxCacheControls,
    config_credits,
    delivered_with_cache,
    model_cache_config,
)
from sim.tl.traffic import CACHE_PATTERNS, cacheable_request, make_write_response, random_response
from tb.tl.tx.test_packer import _collect, _sector_diff

PLENTY = {cls: {"pool": 4000} for cls in CLASSES}
#: Model policy names by RTL policy.
POLICY = {CachePolicy.ADAPTIVE: "adaptive", CachePolicy.ALWAYS: "always",
          CachePolicy.NEVER: "never"}


def requests(rng, config, pattern, n):
    """``n`` cacheable requests of ``pattern`` with destinations folded onto the cache's rows
    (and, now and then, one beyond them: never compressed)."""
    out = []
    for r in CACHE_PATTERNS[pattern](rng, n):
        dst = r.dst_acc % config.cache_rows if rng.random() < 0.95 else config.cache_rows
        out.append(cacheable_request(rng, r.addr >> 20, dst))
    return out


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def compress_matches_model(dut):
    """Bursts queued while the link is stalled leave exactly as the model packs them, its Tx
    cache deciding in the same order; each pattern in turn, the cache reset between."""
    env = TlTxEnv(dut)
    ctl = TxCacheControls(dut)
    for pattern in sorted(CACHE_PATTERNS):
        await env.reset()
        await ctl.idle()
        env.flits.set_backpressure(random_pauses(env.rng, 1.0))
        items = []
        for r in requests(env.rng, env.config, pattern, env.rng.randint(8, 14)):
            items.append(r)
            if env.rng.random() < 0.5:
                items.append(random_response(env.rng) if env.rng.random() < 0.3
                             else make_write_response(env.rng))
        await env.grant(PLENTY)
        await env.release(config_credits(env.config))
        await env.send_in_order(items)
        await env.settle()
        env.flits.set_backpressure(None)
        flits = await _collect(env)
        tx = model_cache.TxAddressCache(model_cache_config(env.config), "always")
        if env.config.tx_packer == "slots":
            model = SlotPacker(config_credits(env.config), PLENTY, address_cache=tx,
                               cache_index=env.config.cache_tx_index)
        else:
            model = Packer(config_credits(env.config), PLENTY, address_cache=tx,
                           cache_index=env.config.cache_tx_index, compact=True)
        for item in items:
            (model.push_request if isinstance(item, Request) else model.push_response)(item)
        expected = model.drain()
        for k, (got, want) in enumerate(zip(flits, expected)):
            assert got == want, (f"{pattern}: flit {k} ({model.trace[k]}): sectors "
                                 f"{_sector_diff(got, want)} (got, model) differ")
        assert len(flits) == len(expected), f"{len(flits)} flits, model {len(expected)}"
        rx = delivered_with_cache(env.config, items, flits)
        dut._log.info("%s: %d items, %d flits, %d compressed", pattern, len(items), len(flits),
                      model.compressed_sent)
        assert rx.expansions == tx.compressed
        assert ctl.counts() == dict(zip(TxCacheCount, tx.counters().values()))


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def compress_random_timing(dut):
    """Random idle and backpressure, Tx invalidations (two a batch: the first of an entry the
    cache has, the second of any entry, rows and ways beyond the cache's too), clears and
    policy changes while requests stream: every request still arrives with its own address."""
    env = TlTxEnv(dut)
    ctl = TxCacheControls(dut)
    await env.reset()
    await ctl.idle()
    env.flits.set_backpressure(random_pauses(env.rng, 0.3))
    for source in (env.req, env.orig, env.rd_rsp, env.wr_rsp):
        source.set_idle(random_pauses(env.rng, 0.3))
    await env.grant(PLENTY)
    await env.release(config_credits(env.config))
    flits, items = [], []

    async def receive():
        while True:
            flits.append(await env.recv_flit())

    receiver_task = cocotb.start_soon(receive())
    for pattern in sorted(CACHE_PATTERNS) * 2:
        batch = requests(env.rng, env.config, pattern, 40)
        batch += [make_write_response(env.rng) for _ in range(10)]
        env.rng.shuffle(batch)
        items += batch
        for item in batch:
            env.send(item)
        first = True                    # the batch's first invalidate: within the cache
        for op in env.rng.sample(["invalidate", "invalidate", "clear", "policy"], 4):
            await ClockCycles(dut.clk, env.rng.randrange(30))
            if op == "invalidate":
                cfg = env.config
                rows, ways = ((cfg.cache_rows, cfg.cache_ways) if first
                              else (cfg.cache_rows + 1, 4))
                await ctl.invalidate(env.rng.randrange(rows), env.rng.randrange(ways))
                first = False
            elif op == "clear":
                await ctl.clear()
            elif op == "policy":
                ctl.policy(env.rng.choice(list(POLICY)))
        await env.settle(env.rng.randrange(40))
    ctl.policy(CachePolicy.ALWAYS)
    await env.settle(300)
    receiver_task.cancel()
    rx = delivered_with_cache(env.config, items, flits)
    counts = ctl.counts()
    dut._log.info("%d items in %d flits; Tx cache %s", len(items), len(flits),
                  {k.name.lower(): v for k, v in counts.items()})
    assert rx.expansions == counts[TxCacheCount.COMPRESSED] > 0
    assert rx.loads == counts[TxCacheCount.LOADS] > 0
    assert counts[TxCacheCount.INVALIDATIONS] > 0 and counts[TxCacheCount.CLEARS] > 0


CONFIGS = [TlConfig(cache_ways=2, cache_rows=4, cache_rx_index="DSTACCID"),
           TlConfig(cache_ways=2, cache_rows=4, cache_rx_index="DSTACCID", tx_packer="compact")]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.slug())
def test_tl_tx_compress(config):
    harness.run(TlTx(config), config, toplevel="tl_tx", test_module=__name__)
