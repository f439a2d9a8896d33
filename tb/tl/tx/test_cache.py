# SPDX-License-Identifier: BSD-2-Clause
"""The Tx address cache (``rtl/scaleup_ip/tl/tx/cache.py``) against the golden model
``scaleup_ip.model.tl.addrcache.TxAddressCache``.

A monitor watches every clock (in ReadOnly) and applies the handshakes it sees on ``clear``,
``invalidate`` and ``i``, and any change of ``policy``, to the model in that order; every item on
``o`` must be the request accepted, unchanged, with the model's decision, and at the end every
counter must equal the model's and nothing may be left. Traffic: streaming in one 1 MB region;
four and eight interleaved streams per destination (eight thrash four ways, and the adaptive
backoff engages); random addresses over 1 GB; every one of the 1024 IDs, twice (IDs at or above
``rows`` included); requests that Table 5-32 rules out mixed in; invalidates, clears and
policy changes at random; random idle on ``i`` and backpressure on ``o``. Also: policy changes
every few windows with a hit rate near the backoff threshold; one operation per clock with ``o``
always ready; a reset mid-stream leaves no stale state; ``busy`` for exactly ``rows`` clocks
after reset and each clear; configuration checks.
"""

import collections
import random
import re

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

from scaleup_ip.model.tl import addrcache as model
from scaleup_ip.model.tl.flit import ATOMIC_R, BLOCK_BYTES, READ, WRITE, WRITE_FULL, WRITE_MESSAGE
from scaleup_ip.tl import (
    AddrCacheConfig,
    CachePolicy,
    TlConfig,
    TxCacheCount,
    cache_entry_layout,
    cached_request_layout,
    request_layout,
    tx_cache_counts,
)
from scaleup_ip.tl.tx import TxAddrCache
from sim import harness
from sim.streams import LayoutSource, random_pauses

REGION = 1 << model.TAG_LSB                     # 1 MB: what one entry holds
LINE = 1 << model.LINE_LSB                      # 64 bytes
REGION_LINES = 1 << model.LINE_BITS
BLOCK_LINES = BLOCK_BYTES // LINE
IDS = 1 << model.ACC_BITS
WAYS_MAX = 1 << model.CWAY_BITS
VENDOR_READS = range(0x08, 0x10)                # [Table 2-6]
#: Idle probability on ``i`` and backpressure probability on ``o``.
PRESSURE = {"none": (0.0, 0.0), "random": (0.3, 0.4)}


def _lines(req):
    return (req["len"] + 1) * 4 // LINE


class Traffic:
    """Request fields for one configuration: the row ID in the field ``index`` names."""

    def __init__(self, rng, config):
        self.rng, self.config = rng, config
        self.index, self.other = (("dst_acc", "src_acc") if config.index == "DSTACCID"
                                  else ("src_acc", "dst_acc"))

    def dest(self, outside=0.1):
        """A row ID: one of the rows, or with probability ``outside`` an ID the cache lacks."""
        if self.config.rows < IDS and self.rng.random() < outside:
            return self.rng.randrange(self.config.rows, IDS)
        return self.rng.randrange(self.config.rows)

    def request(self, acc, region, line, lines=None):
        """A cacheable request of ``lines`` (random) 64-byte lines from line ``line`` of 1 MB
        region ``region``, cut at its 256-byte block."""
        rng = self.rng
        lines = min(lines or rng.randint(1, BLOCK_LINES), BLOCK_LINES - line % BLOCK_LINES)
        cmd = rng.choice((READ, WRITE, WRITE_FULL))
        return {"cmd": cmd, "attr": model.READ_ATTR if cmd == READ else model.WRITE_ATTR,
                "len": lines * LINE // 4 - 1, "addr": region * REGION + line * LINE,
                "metadata": rng.randrange(1 << model.METADATA_CARRIED_BITS),
                "num_beats": lines - 1, "vc": rng.randrange(4), "asi": rng.randrange(4),
                "tag": rng.randrange(1 << 11), "pool": rng.randrange(2), self.index: acc,
                self.other: rng.randrange(IDS)}

    def spoil(self, req):
        """``req`` made non-cacheable in one of the ways Table 5-32 names (a block crossing is
        illegal upstream, but checked all the same)."""
        rng, req = self.rng, dict(req)
        kind = rng.choice(("atomic", "vendor", "message", "attr", "unaligned", "partial",
                           "crossing", "metadata"))
        base = req["addr"] - req["addr"] % BLOCK_BYTES
        if kind == "atomic":
            req.update(cmd=ATOMIC_R, attr=rng.randrange(256), len=1, num_beats=0)
        elif kind == "vendor":
            req.update(cmd=rng.choice(VENDOR_READS), attr=model.READ_ATTR)
        elif kind == "message":
            req.update(cmd=WRITE_MESSAGE, attr=model.WRITE_ATTR)
        elif kind == "attr":
            req["attr"] ^= 1 << rng.randrange(8)
        elif kind == "unaligned":
            req.update(addr=base + 4 * rng.randrange(1, LINE // 4), len=LINE // 4 - 1)
        elif kind == "partial":
            req.update(addr=base, len=rng.choice([n for n in range(BLOCK_BYTES // 4)
                                                  if (n + 1) * 4 % LINE]))
        elif kind == "crossing":
            line = rng.randrange(1, BLOCK_LINES)
            req.update(addr=base + line * LINE, len=(BLOCK_LINES - line + 1) * LINE // 4 - 1)
        else:
            req["metadata"] |= 1 << rng.randrange(model.METADATA_CARRIED_BITS, 8)
        return req

    def mixed(self, requests, bad):
        """``requests`` with each spoiled with probability ``bad``."""
        return [self.spoil(r) if self.rng.random() < bad else r for r in requests]

    def streams(self, n, per_dest, dests=3, order="random", outside=0.1):
        """``n`` requests over ``per_dest`` sequential streams in 1 MB regions of their own for
        each of ``dests`` destinations (each outside the rows with probability ``outside``);
        ``order`` "cycle" takes the streams in turn."""
        rng = self.rng
        pos = [(acc, rng.randrange(IDS), rng.randrange(REGION_LINES))
               for acc in [self.dest(outside) for _ in range(dests)] for _ in range(per_dest)]
        out = []
        for k in range(n):
            s = k % len(pos) if order == "cycle" else rng.randrange(len(pos))
            acc, region, line = pos[s]
            out.append(self.request(acc, region, line))
            pos[s] = (acc, region, (line + _lines(out[-1])) % REGION_LINES)
        return out

    def random_1g(self, n, dests=4):
        """Random lines of a 1 GB space (1024 regions) for a few destinations."""
        accs = [self.dest() for _ in range(dests)]
        return [self.request(self.rng.choice(accs), self.rng.randrange(IDS),
                             self.rng.randrange(REGION_LINES)) for _ in range(n)]

    def pool(self, n, regions, dests=2):
        """Random lines of a few regions per destination: with ``regions`` a little above the
        ways, some hits and some misses."""
        pools = [(self.dest(outside=0), [self.rng.randrange(IDS) for _ in range(regions)])
                 for _ in range(dests)]
        out = []
        for _ in range(n):
            acc, pool = self.rng.choice(pools)
            out.append(self.request(acc, self.rng.choice(pool), self.rng.randrange(REGION_LINES)))
        return out

    def every_id(self):
        """Every ID once in a random order, then again: the second pass hits."""
        regions = [self.rng.randrange(4) for _ in range(IDS)]
        out = []
        for _ in range(2):
            for acc in self.rng.sample(range(IDS), IDS):
                out.append(self.request(acc, regions[acc], self.rng.randrange(REGION_LINES)))
        return out


def _model_config(config):
    return model.AddrCacheConfig(ways=config.ways, rows=config.rows,
                                 backoff_window=config.backoff_window,
                                 backoff_min_hits=config.backoff_min_hits,
                                 backoff_length=config.backoff_length)


class TB:
    """Clock, drivers and the scoreboard: the monitor (:meth:`_watch`) drives ``o.ready`` and
    ``clear_valid`` and applies every handshake to the model."""

    def __init__(self, dut, rng, *, idle=0.0, stall=0.0):
        self.dut, self.rng, self.stall = dut, rng, stall
        self.config = AddrCacheConfig.from_env()
        self.traffic = Traffic(rng, self.config)
        self.i = LayoutSource(dut, "i", request_layout, dut.clk, dut.rst)
        self.i.set_idle(random_pauses(rng, idle))
        self.inv = LayoutSource(dut, "invalidate", cache_entry_layout, dut.clk, dut.rst)
        self.model = None
        self.expected = collections.deque()      # (request bits, model decision)
        self.clears = 0                          # clears asked for and not yet taken
        self.clock = 0
        self.accepted = []                       # clocks in which an operation was taken
        self.delivered = []                      # clocks in which ``o`` transferred
        self.busy_left = 0                       # clocks ``busy`` must still be high
        self.handshakes = {"clear": (dut.clear_valid, dut.clear_ready),    # in priority order
                           "invalidate": (dut.invalidate__valid, dut.invalidate__ready),
                           "i": (dut.i__valid, dut.i__ready)}
        Clock(dut.clk, 10, unit="ns").start()
        cocotb.start_soon(self._watch())

    async def reset(self, policy):
        """Reset (the DUT then walks its rows) and start a fresh model with ``policy``."""
        dut = self.dut
        self.model = None
        self.clears, self.busy_left = 0, self.config.rows
        dut.policy.value = policy.value
        dut.rst.value = 1
        await ClockCycles(dut.clk, 3)
        self.expected.clear()
        self.model = model.TxAddressCache(_model_config(self.config), policy.name.lower())
        self.policy = policy
        dut.rst.value = 0
        await RisingEdge(dut.clk)

    def set_policy(self, policy):
        self.dut.policy.value = policy.value

    async def _watch(self):
        dut = self.dut
        dut.o__ready.value = 0
        dut.clear_valid.value = 0
        while True:
            await FallingEdge(dut.clk)
            dut.o__ready.value = int(self.rng.random() >= self.stall)
            dut.clear_valid.value = int(self.clears > 0)
            await ReadOnly()
            if self.model is not None and not dut.rst.value:
                self._sample()
                self.clock += 1

    def _sample(self):
        dut, m = self.dut, self.model
        o_valid, o_ready = int(dut.o__valid.value), int(dut.o__ready.value)
        self._check_busy()
        if o_valid and o_ready:
            self._check_output(cached_request_layout.from_bits(dut.o__payload.value.to_unsigned()))
            self.delivered.append(self.clock)
        if not o_valid or o_ready:                          # the stage advances
            policy = CachePolicy(int(dut.policy.value))
            if policy != self.policy:
                m.policy, self.policy = policy.name.lower(), policy
        taken = [name for name, (valid, ready) in self.handshakes.items()
                 if int(valid.value) and int(ready.value)]
        assert len(taken) <= 1, f"clock {self.clock}: {taken} taken together"
        if taken:
            self.accepted.append(self.clock)
        if taken == ["clear"]:
            m.clear()
            self.clears -= 1
            self.busy_left = self.config.rows
        elif taken == ["invalidate"]:
            entry = cache_entry_layout.from_bits(dut.invalidate__payload.value.to_unsigned())
            if entry.acc < self.config.rows and entry.way < self.config.ways:
                m.invalidate(entry.acc, entry.way)
        elif taken == ["i"]:
            bits = dut.i__payload.value.to_unsigned()
            req = request_layout.from_bits(bits)
            acc = getattr(req, self.traffic.index)
            self.expected.append(
                (bits, m.request(acc, req.cmd, req.attr, req.len, req.addr, req.metadata)))

    def _check_busy(self):
        """``busy`` for exactly ``rows`` clocks after reset and after each clear."""
        busy = int(self.dut.busy.value)
        if self.busy_left:
            assert busy, f"clock {self.clock}: busy fell {self.busy_left} clocks early"
            self.busy_left -= 1
        else:
            assert not busy, f"clock {self.clock}: busy after the walk"

    def _check_output(self, out):
        assert self.expected, f"clock {self.clock}: an output nobody asked for"
        bits, decision = self.expected.popleft()
        assert out.req.as_bits() == bits, f"clock {self.clock}: request changed"
        got = (out.cache.compressed, out.cache.cload, out.cache.cway)
        want = (int(decision.compressed), int(decision.cload), decision.way or 0)
        assert got == want, (f"clock {self.clock}: decision {got}, model {want} for "
                             f"{request_layout.from_bits(bits)}")

    async def run(self, requests, *, invalidate=0.0, clear=0.0, policy=0.0,
                  policies=tuple(CachePolicy)):
        """Send ``requests``; meanwhile, each clock, an invalidate, a clear (unless one is
        pending or running) and a policy change (among ``policies``) with the given
        probabilities. With ``invalidate``, also one invalidate of an entry the cache has,
        queued with the requests: at least one counted whatever the draws."""
        rng = self.rng
        for req in requests:
            self.i.send_nowait(**req)
        if invalidate:
            self.inv.send_nowait(acc=self.traffic.dest(outside=0),
                                 way=rng.randrange(self.config.ways))
        while not self.i.empty():
            await RisingEdge(self.dut.clk)
            if rng.random() < invalidate:
                self.inv.send_nowait(acc=self.traffic.dest(), way=rng.randrange(WAYS_MAX))
            if not self.clears and not self.dut.busy.value and rng.random() < clear:
                self.clears += 1
            if rng.random() < policy:
                self.set_policy(rng.choice(policies))
        await self.i.wait()

    async def drain(self):
        """Wait for every operation to pass; check that nothing is left and the counters."""
        dut = self.dut
        await self.i.wait()
        await self.inv.wait()
        for _ in range(4 * self.config.rows + 1000):
            await RisingEdge(dut.clk)
            if not self.expected and not self.clears and not dut.o__valid.value:
                break
        await ClockCycles(dut.clk, 4)
        await ReadOnly()
        assert not self.expected and not self.clears, (len(self.expected), self.clears)
        assert not dut.o__valid.value
        counts = tx_cache_counts.from_bits(dut.counts.value.to_unsigned())
        got = {k.name.lower(): counts[k] for k in TxCacheCount}
        assert got == self.model.counters(), (got, self.model.counters())
        dut._log.info("counters %s", got)
        await RisingEdge(dut.clk)
        return got


@cocotb.test(timeout_time=20, timeout_unit="ms")
@cocotb.parametrize(pressure=list(PRESSURE))
async def tx_cache_patterns(dut, pressure):
    """Every pattern against the model, with invalidates (in each phase that has them, one of
    an entry the cache has for certain), clears and policy changes at random; the adaptive
    backoff engages on eight streams per destination."""
    idle, stall = PRESSURE[pressure]
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = TB(dut, rng, idle=idle, stall=stall)
    t = tb.traffic
    await tb.reset(CachePolicy.ALWAYS)
    await tb.run(t.mixed(t.streams(300, 1, dests=1), 0.1), invalidate=0.02)
    await tb.run(t.mixed(t.streams(400, 4), 0.1), invalidate=0.02, clear=0.002, policy=0.01)
    tb.clears += 1
    tb.set_policy(CachePolicy.ADAPTIVE)
    entries = tb.model.backoff_entries
    cfg = tb.config                     # long enough to outlast a backoff already pending
    await tb.run(t.streams(max(400, cfg.backoff_length + 2 * cfg.backoff_window + 50), 8,
                           order="cycle", outside=0))      # rows the cache holds, so it thrashes
    assert tb.model.backoff_entries > entries, "no backoff on eight streams per destination"
    await tb.run(t.mixed(t.random_1g(300), 0.1), invalidate=0.02, policy=0.01)
    await tb.run(t.mixed(t.every_id(), 0.05), invalidate=0.01, policy=0.002,
                 policies=(CachePolicy.ADAPTIVE, CachePolicy.ALWAYS))
    await tb.run(t.mixed(t.streams(300, 2), 0.5), invalidate=0.05, clear=0.002, policy=0.02)
    got = await tb.drain()
    for name in ("hits", "misses", "invalidations", "clears", "backoff_entries"):
        assert got[name] > 0, f"no {name}"


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def tx_cache_policy(dut):
    """Policy changes every few clocks, many of them in clocks that take no operation, while
    the hit rate hovers around the backoff threshold: each change starts a new window with no
    backoff pending, before the operations accepted from its clock on."""
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = TB(dut, rng, idle=0.5, stall=0.2)
    t = tb.traffic
    await tb.reset(CachePolicy.ADAPTIVE)
    cfg = tb.config         # a hit rate near the threshold, about four windows per change
    regions = cfg.ways * cfg.backoff_window // max(1, cfg.backoff_min_hits)
    for _ in range(4):          # until the random policies let a backoff happen (most seeds: once)
        await tb.run(t.pool(3000, regions), invalidate=0.01, policy=1 / (4 * cfg.backoff_window),
                     policies=(CachePolicy.ADAPTIVE, CachePolicy.ADAPTIVE, CachePolicy.ALWAYS,
                               CachePolicy.NEVER))
        got = await tb.drain()
        if got["backoff_entries"] > 0 and got["hits"] > 0:
            break
    assert got["backoff_entries"] > 0 and got["hits"] > 0, got


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def tx_cache_full_rate(dut):
    """With ``i`` always valid and ``o`` always ready, ``o`` transfers every clock once the
    pipeline is full: requests back to back to one row (loads, hits and round-robin
    replacement, each lookup seeing the row the one before wrote) and to different rows; then
    invalidates between them: one operation every clock."""
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = TB(dut, rng)
    t = tb.traffic
    await tb.reset(CachePolicy.ALWAYS)
    while int(dut.busy.value):
        await RisingEdge(dut.clk)
    acc = t.dest(outside=0)
    one_row = [t.request(acc, rng.randrange(6), rng.randrange(REGION_LINES)) for _ in range(200)]
    requests = one_row + t.streams(200, 4) + one_row
    first = len(tb.delivered)
    await tb.run(requests)
    await tb.drain()
    clocks = tb.delivered[first:]
    assert len(clocks) == len(requests) and clocks[-1] - clocks[0] + 1 == len(requests), \
        f"{len(requests)} requests out over {clocks[-1] - clocks[0] + 1} clocks"
    tb.inv.set_idle(random_pauses(rng, 0.5))
    for _ in range(300):
        tb.inv.send_nowait(acc=acc, way=rng.randrange(tb.config.ways))
    first = len(tb.accepted)
    await tb.run(one_row * 3)           # outlasts the invalidates, which go first
    await tb.inv.wait()
    taken = tb.accepted[first:]
    assert taken[-1] - taken[0] + 1 == len(taken) == 900, \
        f"{len(taken)} operations over {taken[-1] - taken[0] + 1} clocks"
    await tb.drain()
    dut._log.info("%d requests out in %d clocks", len(requests), clocks[-1] - clocks[0] + 1)


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def tx_cache_reset(dut):
    """A reset mid-stream, with requests in flight, an output held and a backoff pending,
    leaves no entry, pointer or backoff behind: the same traffic after it matches a fresh
    model (it would hit where the model misses if any entry survived)."""
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = TB(dut, rng, idle=0.2, stall=0.5)
    t = tb.traffic
    await tb.reset(CachePolicy.ADAPTIVE)
    requests = t.streams(300, 2, dests=4)
    await tb.run(t.streams(200, 8, order="cycle", outside=0))     # a backoff pending
    await tb.run(requests)
    for req in requests:
        tb.i.send_nowait(**req)
    await ClockCycles(dut.clk, rng.randrange(20, 200))
    await tb.reset(CachePolicy.ADAPTIVE)
    await tb.run(requests)
    await tb.drain()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"ways": 3}, ValueError, "address cache ways must be one of 1, 2, 4, not 3"),
    ({"ways": 8}, ValueError, "address cache ways must be one of 1, 2, 4, not 8"),
    ({"rows": 0}, ValueError, "address cache rows must be 1 .. 1024, not 0"),
    ({"rows": 1025}, ValueError, "address cache rows must be 1 .. 1024, not 1025"),
    ({"rows": 4.0}, TypeError, "address cache rows must be an integer, not 4.0"),
    ({"index": "ACCID"}, ValueError,
     "address cache index must be one of ('DSTACCID', 'SRCACCID'), not 'ACCID'"),
    ({"backoff_min_hits": 65}, ValueError, "address cache backoff_min_hits must be 0 .. 64"),
])
def test_config_rejects(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        AddrCacheConfig(**kwargs)


def test_wrong_config_type():
    with pytest.raises(TypeError, match="TxAddrCache config must be a AddrCacheConfig"):
        TxAddrCache(TlConfig())


CONFIGS = [
    AddrCacheConfig(ways=2, rows=4, backoff_window=8, backoff_min_hits=2, backoff_length=16),
    AddrCacheConfig(ways=1, rows=2, index="SRCACCID", backoff_window=4, backoff_min_hits=1,
                    backoff_length=8),
    AddrCacheConfig(),
]


@pytest.mark.sim
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.ways}x{c.rows}-{c.index}")
def test_tl_tx_cache(config):
    harness.run(TxAddrCache(config), config, toplevel="tl_tx_cache",
                test_module=__name__)
