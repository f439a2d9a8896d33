# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the address cache benchmark: for each address pattern, the Tx cache's hit
rate and the packer's efficiency with the cache off (policy NEVER) and on (ADAPTIVE).

The link is held for the first :data:`BACKLOG_CLOCKS` clocks of each run, so that the packer
starts with its queues full: the spec's figures [§5.4] assume a backlog, and a packer fed at
one 64-byte beat per clock, its output rate when every half-flit carries data, never builds
one (each control would take only the requests that arrived since the last). Every request is
paired with the response to a peer request of the same kind (a read response
of as many beats, or a write response), as in the TL benchmark's symmetric mixes. The flits are
decoded by the golden model's receiver with an Rx address cache, which must deliver every
request address for address, so a figure cannot come from broken traffic.
"""

import json
import os

import cocotb
from cocotb.triggers import ClockCycles

from scaleup_ip.model.tl.flit import READ, WRITE_FULL
from scaleup_ip.tl import CachePolicy, TxCacheCount
from sim.streams import random_pauses
from sim.tl.bench import BACKLOG_CLOCKS, PLENTY, FlitCounter, _receive
from sim.tl.env import TlTxEnv, TxCacheControls, config_credits, delivered_with_cache
from sim.tl.traffic import (
    CACHE_PATTERNS,
    cacheable_request,
    make_read_response,
    make_write_response,
    payload_bytes,
)

#: Requests per run.
REQUESTS = 200


def _writefull_stream(rng, n):
    """256-byte WriteFulls streaming through one 1 MB region [§5.4 reference point]."""
    region = rng.randrange(1 << 37)
    return [cacheable_request(rng, region, 7, cmd=WRITE_FULL, nbytes=256) for _ in range(n)]


PATTERNS = {"writefull_256_stream": _writefull_stream, **CACHE_PATTERNS}


def _pairs(rng, requests):
    items = []
    for r in requests:
        response = (make_read_response(rng, r.num_beats) if r.cmd == READ
                    else make_write_response(rng))
        items += [r, response]
    return items


async def _latency(env, ctl, counter):
    """Clocks from a request accepted by the idle packer to the flit carrying its control
    half-flit, through the Tx cache (a miss, then a hit in the same region)."""
    await env.reset()
    ctl.policy(CachePolicy.ALWAYS)
    await ctl.idle()
    await env.grant(PLENTY)
    await env.release(config_credits(env.config))
    await ClockCycles(env.dut.clk, 64)
    region, clocks, flits = env.rng.randrange(1 << 37), [], []
    receiver = cocotb.start_soon(_receive(env, flits))
    for _ in range(2):
        start = len(counter.flits)
        env.send(cacheable_request(env.rng, region, 3, cmd=READ, nbytes=64))
        await env.settle(16)
        clocks.append(counter.flits[start] - counter.requests[-1])
    receiver.cancel()
    return {"miss": clocks[0], "hit": clocks[1]}


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def bench(dut):
    env = TlTxEnv(dut)
    ctl = TxCacheControls(dut)
    counter = FlitCounter(dut)
    rows = []
    latency = await _latency(env, ctl, counter)
    for name, pattern in PATTERNS.items():
        requests = pattern(env.rng, REQUESTS)
        for policy in (CachePolicy.NEVER, CachePolicy.ADAPTIVE):
            await env.reset()
            ctl.policy(policy)
            await ctl.idle()
            await env.grant(PLENTY)
            await env.release(config_credits(env.config))
            items = _pairs(env.rng, requests)
            received = []
            receiver = cocotb.start_soon(_receive(env, received))
            await ClockCycles(dut.clk, 64)               # credit advertisement and 0x01 sent
            start = len(counter.flits)
            env.flits.set_backpressure(random_pauses(env.rng, 1.0))
            for item in items:
                env.send(item)
            await ClockCycles(dut.clk, BACKLOG_CLOCKS)
            env.flits.set_backpressure(None)
            await env.settle(256)
            receiver.cancel()
            flits = counter.flits[start:]
            rx = delivered_with_cache(env.config, items, received)
            counts = ctl.counts()
            looked_up = counts[TxCacheCount.HITS] + counts[TxCacheCount.MISSES]
            rows.append({
                "pattern": name, "cache": policy.name.lower(), "requests": REQUESTS,
                "flits": len(flits),
                "efficiency": round(sum(payload_bytes(i) for i in items) / (len(flits) * 64), 4),
                "hit_rate": round(counts[TxCacheCount.HITS] / looked_up, 4) if looked_up else 0,
                "compressed": counts[TxCacheCount.COMPRESSED],
                "loads": counts[TxCacheCount.LOADS],
                "backoffs": counts[TxCacheCount.BACKOFF_ENTRIES],
            })
            assert rx.expansions == counts[TxCacheCount.COMPRESSED]
            dut._log.info("%s", rows[-1])
    with open(os.environ["BENCH_OUT"], "w") as f:
        json.dump({"config": json.loads(env.config.to_json()), "rows": rows,
                   "tx_latency": latency}, f, indent=2)
