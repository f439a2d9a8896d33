# SPDX-License-Identifier: BSD-2-Clause
"""TL receiver with an Rx address cache (``rtl/scaleup_ip/tl/rx/cache.py``, ``rtl/scaleup_ip/tl/rx/expand.py``):
compressed requests expanded, CLOADs, the Drop Mode of a request that cannot be expanded.

Traffic comes from ``sim/tl/cache_traffic.py`` (cache decisions from the golden Tx cache, the
receiver's answers from the golden Rx cache, flits laid out at random by a sender of its own,
requests and responses interleaved at every footprint) or from the golden packer with a Tx
cache (its own layouts, Flow Control fields beside). What the RTL delivers is compared with the
golden unpacker fed the same flits, with a golden Rx cache of the receiver's shape, request for
request and address for address; its cache counters with that cache's.
"""

import dataclasses
import random

import cocotb
import pytest
from amaranth import ClockDomain, Module
from amaranth.sim import Simulator
from cocotb.triggers import RisingEdge

from scaleup_ip.model.tl.addrcache import AddrCacheConfig as ModelCacheConfig
from scaleup_ip.model.tl.addrcache import Decision, RxAddressCache, TxAddressCache
from scaleup_ip.model.tl.flit import (
    CLASSES,
    READ,
    SLOTS,
    Flit,
    FType,
    Packer,
    ReadResponse,
    Request,
    Unpacker,
    WriteResponse,
    credit_table,
    encode_field,
    place,
)
from scaleup_ip.tl import AddrCacheConfig, RxCacheCount, RxError, TlConfig, rx_cache_counts
from scaleup_ip.tl.rx import RxAddrCache, TlRx
from sim import harness
from sim.tl.cache_traffic import CMD_CODE, CacheSender, CacheTraffic, RegionAnswers, responses
from sim.tl.env import config_credits
from sim.tl.rx_env import TlRxEnv
from sim.tl.traffic import CACHE_PATTERNS, as_received, by_kind, cache_pattern, upli_transfers

#: Clocks from driving a flit to the clock whose ``error`` decides whether it is taken: two
#: decode stages, then the sequencing stage reads ``error`` (RxFront).
_COMMIT_DELAY = 3


# --- Golden model: the address_cache hook -------------------------------------------------------

def _hook(regions, lenient=False):
    """An ``address_cache`` answering ``regions`` in turn (None: cannot be expanded; with
    ``lenient``, 0 instead)."""
    return RegionAnswers(regions, lenient)


def _compressed(cmd=READ, addr=0, cway=0, length=0, acc=0):
    return encode_field(FType.COMPRESSED_REQUEST, CMD=CMD_CODE[cmd], POOL=1, LEN=length,
                        ADDR=(addr >> 6) & 0x3FFF, SRCACCID=acc, DSTACCID=acc, CWAY=cway)


@pytest.mark.parametrize("region, want", [(0x12345, None), (None, "compressed_request")])
def test_model_hook_none(region, want):
    """The golden unpacker: a hook answering None is the error ``compressed_request``."""
    u = Unpacker(address_cache=RegionAnswers([region]))
    u.feed(Flit.of(place(0, _compressed(addr=0x1C0)), 0))
    assert u.error == want
    assert u.requests == ([] if want else [u.requests[0]])
    assert want or u.requests[0].addr == 0x12345 << 20 | 0x1C0


def test_model_hook_order():
    """The hook is not asked for a reserved CMD (that is ``reserved_command``), and an
    impossible length outranks an entry that cannot be expanded (README §4 order)."""
    hook = RegionAnswers([])
    u = Unpacker(address_cache=hook)
    u.feed(Flit.of(place(0, encode_field(FType.COMPRESSED_REQUEST, CMD=0b001, POOL=1)), 0))
    assert u.error == "reserved_command" and not hook.asked
    u = Unpacker(address_cache=RegionAnswers([None]))
    u.feed(Flit.of(place(0, _compressed(addr=0xC0, length=1)), 0))     # crosses 256 bytes
    assert u.error == "impossible_length"


# --- RxAddrCache alone (Amaranth simulator) ------------------------------------------------------

def _cache_bench(config, rng, steps):
    """Random loads, lookups and uses against the golden Rx cache, reset walks included;
    returns the mismatches."""
    dut = RxAddrCache(config)
    m = Module()
    m.domains.sync = cd = ClockDomain()
    m.submodules.dut = dut
    sim = Simulator(m)
    sim.add_clock(1e-6)
    model_config = ModelCacheConfig(ways=config.ways, rows=config.rows)
    wrong = []

    async def bench(ctx):
        model = RxAddressCache(model_config)
        first = want_answer = None                          # (tag, loaded) in each stage
        counts = [0, 0, 0]

        def load_at_random(entry=None):
            """A random load (of ``entry``, an ``(acc, way)``, when given) set on the ports and
            applied to the model; returns its (acc, way)."""
            hot = rng.random() < 0.7                        # mostly entries that exist
            acc = rng.randrange(config.rows) if hot else rng.randrange(1024)
            way = rng.randrange(config.ways) if hot else rng.randrange(4)
            if entry is not None:
                acc, way = entry
            load = rng.random() < 0.4
            tag = rng.getrandbits(37)
            ctx.set(dut.load, {"valid": load, "acc": acc, "way": way, "tag": tag})
            if load:
                ok = model.load(acc, way, tag)
                counts[RxCacheCount.LOADS if ok else RxCacheCount.ERRORS] += 1
            return acc, way

        async def walk(what):
            clocks = 0
            while ctx.get(dut.busy):
                clocks += 1
                await ctx.tick()
            if clocks != config.rows * config.ways:
                wrong.append((what, clocks))

        await walk("walk")
        for step in range(steps):
            if rng.random() < 0.01:                         # reset: every entry forgotten
                ctx.set(cd.rst, 1)
                await ctx.tick()
                ctx.set(cd.rst, 0)
                model = RxAddressCache(model_config)
                counts, first, want_answer = [0, 0, 0], None, None
                await walk("walk after reset")
                continue
            # The lookup's clock: a load first (of the same entry at times: the bypass).
            acc, way = load_at_random()
            look = rng.random() < 0.6
            same = rng.random() < 0.3                       # the lookup reads the loaded entry
            l_acc, l_way = (acc, way) if same else (rng.randrange(config.rows),
                                                    rng.randrange(config.ways))
            use = want_answer is not None and rng.random() < 0.5
            ctx.set(dut.lookup, {"valid": look, "acc": l_acc, "way": l_way})
            ctx.set(dut.use, use)
            if use:
                counts[RxCacheCount.EXPANSIONS if want_answer[1] else RxCacheCount.ERRORS] += 1
            if look:
                entry = model.entry(l_acc, l_way)
                first = (entry or 0, entry is not None)
            await ctx.tick()
            ctx.set(dut.lookup.valid, 0)
            ctx.set(dut.use, 0)
            # Up to two clocks before the answer takes it, then the clock it does; loads
            # (of the looked-up entry at times) that must not change what the lookup read.
            for _ in range(rng.randrange(3)):
                load_at_random((l_acc, l_way) if rng.random() < 0.5 else None)
                await ctx.tick()
            load_at_random((l_acc, l_way) if rng.random() < 0.5 else None)
            ctx.set(dut.advance, 1)
            want_answer = first
            await ctx.tick()
            ctx.set(dut.advance, 0)
            ctx.set(dut.load.valid, 0)
            answer = ctx.get(dut.answer)
            got = (answer.tag, answer.loaded)
            if want_answer is not None and (got if want_answer[1] else (0, got[1])) != want_answer:
                wrong.append((step, "answer", got, want_answer))
            # Counters of the use settle; the answer holds through a lookup without advance.
            if rng.random() < 0.5:
                l_acc, l_way = rng.randrange(config.rows), rng.randrange(config.ways)
                ctx.set(dut.lookup, {"valid": 1, "acc": l_acc, "way": l_way})
                entry = model.entry(l_acc, l_way)
                first = (entry or 0, entry is not None)
            await ctx.tick()
            ctx.set(dut.lookup.valid, 0)
            for _ in range(2):
                answer = ctx.get(dut.answer)
                got = (answer.tag, answer.loaded)
                if want_answer is not None and \
                        (got if want_answer[1] else (0, got[1])) != want_answer:
                    wrong.append((step, "answer not held", got, want_answer))
                await ctx.tick()
            got_counts = [ctx.get(dut.counts[k]) for k in RxCacheCount]
            if got_counts != counts:
                wrong.append((step, "counts", got_counts, counts))
            if len(wrong) > 5:
                return

    sim.add_testbench(bench)
    sim.run()
    return wrong


@pytest.mark.parametrize("ways, rows", [(2, 4), (1, 3), (4, 16)])
def test_rx_addr_cache(ways, rows):
    """Loads, lookups (also of the entry loaded in the same clock: the bypass; or the clock
    after: from block RAM), answers taken 1 to 3 clocks after their lookup with loads of the
    same entry in between that must not change them, entries that do not exist, answers held,
    counters, reset walks: as the golden Rx cache says."""
    seed = harness.seed()
    print(f"seed {seed}")
    wrong = _cache_bench(AddrCacheConfig(ways=ways, rows=rows), random.Random(seed), 1500)
    assert not wrong, wrong


def test_cache_counts_port():
    """``cache_counts`` exists only with an address cache (README §4)."""
    for config, present in ((TlConfig(), False), (TlConfig(cache_ways=1, cache_rows=1), True)):
        rx = TlRx(config)
        rx._MustUse__silence = True                 # never elaborated: nothing to warn about
        assert ("cache_counts" in rx.signature.members) == present


# --- cocotb: shared steps -----------------------------------------------------------------------

def _cache_counts(env):
    view = rx_cache_counts.from_bits(int(env.dut.cache_counts.value))
    return {k.name.lower(): int(view[k]) for k in RxCacheCount}


class _Run:
    """Flits from a :class:`CacheSender` into the DUT, credits back to it, and the receive
    error seen after every clock (to tell which flits the receiver took)."""

    def __init__(self, env, sender):
        self.env, self.sender = env, sender
        self.errors = []                # dut.error after each clock
        self.driven = []                # per flit: the clock it was driven after

    async def edge(self):
        give = await self.env.edge()
        self.errors.append(int(self.env.dut.error.value))
        if self.sender is not None and self.env.dut.give_init.value:
            self.sender.grant(give)
        return give

    async def send(self, idle=0.0, limit=100000, flits=None, after_error=None):
        """Send until the sender has nothing left (or ``flits`` flits have been sent, or
        ``after_error`` clocks have passed since ``error`` rose: the receiver then returns
        no more credits)."""
        env = self.env
        for _ in range(limit):
            await self.edge()
            if after_error is not None and self.errors[-1]:
                after_error -= 1
            if (flits is not None and len(self.driven) >= flits) or after_error == 0:
                env.drive(None)
                return
            if env.rng.random() < idle:
                env.drive(None)
                continue
            flit = self.sender.step()
            env.drive(flit)
            if flit is not None:
                self.driven.append(len(self.errors) - 1)
            elif self.sender.done:
                return
        raise AssertionError("sender still busy")

    async def idle(self, clocks):
        self.env.drive(None)
        for _ in range(clocks):
            await self.edge()

    async def quiet(self, clocks=64, limit=200000):
        """Idle until no UPLI transfer has come out for ``clocks`` clocks."""
        self.env.drive(None)
        seen, still = self.env.count(), 0
        for _ in range(limit):
            await self.edge()
            if self.env.count() != seen:
                seen, still = self.env.count(), 0
            else:
                still += 1
                if still >= clocks:
                    return
        raise AssertionError("UPLI outputs never went quiet")

    def taken(self):
        """Indexes of the flits the receiver took: those whose sequencing clock saw no
        error."""
        return [k for k, clock in enumerate(self.driven)
                if not self.errors[clock + _COMMIT_DELAY]]


#: The request path's buffers, by a port of theirs in the generated Verilog (reached through
#: VPI) and its value when empty: the catch buffer, the receive buffer, the data and
#: byte-enable buffers, the cache stage's two registers.
_REQUEST_BUFFERS = [("req_catch", "empty", 1), ("req_fifo", "r__valid", 0),
                    ("req_data", "r__valid", 0), ("req_be", "r__valid", 0),
                    ("req_expand", "idle", 1), ("req_expand", "o__valid", 0)]


#: The signals inside the receiver the tests here read: one build serves these tests and those of
#: ``tb/tl/rx/test_unpacker.py`` at the same configuration.
INTERNAL = [f"{instance}.{port}" for instance, port, _ in _REQUEST_BUFFERS]


def _request_buffers(env):
    """Which of the request path's buffers hold something (``instance.port``)."""
    return [f"{instance}.{port}" for instance, port, empty in _REQUEST_BUFFERS
            if int(getattr(getattr(env.dut, instance), port).value) != empty]


def _split(responses_):
    return ([r for r in responses_ if isinstance(r, ReadResponse)],
            [r for r in responses_ if isinstance(r, WriteResponse)])


async def _walk(env):
    """Wait out the cache's reset walk (requests would wait in the buffers meanwhile)."""
    env.drive(None)
    for _ in range(env.config.cache_rows * env.config.cache_ways + 4):
        await env.edge()


def _rx_model(config):
    """A golden Rx cache of the receiver's shape."""
    return RxAddressCache(ModelCacheConfig(ways=config.cache_ways, rows=config.cache_rows),
                          index=config.cache_rx_index)


def _check_clean(env, traffic, sender, run, reqs, rsps):
    """Everything delivered as sent and as the golden unpacker says, counters, credits."""
    dut = env.dut
    cache = _rx_model(env.config)
    ref = Unpacker(address_cache=cache)
    for flit in sender.flits:
        ref.feed(flit)
    assert ref.error is None and ref.idle(), ref.error
    assert cache.counters() == traffic.rx.counters()
    got = env.delivered()
    want = [as_received(s.request) for s in reqs]
    assert ref.requests == want, "golden unpacker and sender disagree"
    for k, (a, b) in enumerate(zip(got[0], want)):
        assert a == b, f"request {k} ({reqs[k].ftype.name}): " + ", ".join(
            f"{f} {getattr(a, f)!r:.40} vs {getattr(b, f)!r:.40}"
            for f in a.__dataclass_fields__ if getattr(a, f) != getattr(b, f))
    assert len(got[0]) == len(want)
    assert (got[1], got[2]) == _split(ref.responses) == by_kind(rsps)[1:]
    assert _cache_counts(env) == traffic.rx.counters()
    assert not dut.error.value and env.error_counts() == [0] * len(RxError)
    assert env.given == ref.consumed
    assert sender.credits == credit_table(config_credits(env.config))
    assert sender.done and not _request_buffers(env)


# --- cocotb tests ---------------------------------------------------------------------------------

@cocotb.parametrize(flow=["back_to_back", "idle_backpressure"])
@cocotb.test(timeout_time=100, timeout_unit="ms")
async def rx_cache_random(dut, flow):
    """Random requests, compressed or not as the golden Tx cache decides (runs to one region,
    so CLOADs and the compressed requests using them often share a control half; entries
    replaced; every row; reads, writes, WriteFulls with data and poison), some CLOADs to
    entries the receiver lacks (counted, delivered), and responses, in random control
    layouts: request for request, address for address, as the golden models say."""
    env = TlRxEnv(dut)
    idle, backpressure = {"back_to_back": (0.0, 0.0), "idle_backpressure": (0.3, 0.4)}[flow]
    env.set_backpressure(backpressure)
    init = await env.reset()
    traffic = CacheTraffic(env.config, env.rng)
    reqs = traffic.run(400)
    rsps = responses(env.rng, 200)
    sender = CacheSender(env.rng, init)
    sender.push(reqs)
    sender.push(rsps)
    run = _Run(env, sender)
    await run.send(idle)
    await run.quiet()
    assert env.count() == upli_transfers([s.request for s in reqs] + rsps)
    _check_clean(env, traffic, sender, run, reqs, rsps)
    compressed = sum(s.ftype == FType.COMPRESSED_REQUEST for s in reqs)
    dut._log.info("%d requests (%d compressed), %d responses, %d flits, cache %s", len(reqs),
                  compressed, len(rsps), len(sender.flits), _cache_counts(env))
    assert compressed > len(reqs) // 4 and traffic.rx.loads > 10


class _PackerSender:
    """The golden packer as a :class:`_Run` sender: it keeps its own flits, takes credits."""

    def __init__(self, packer):
        self.packer, self.flits = packer, []

    def step(self):
        flit = self.packer.step()
        if flit is not None:
            self.flits.append(flit)
        return flit

    def grant(self, table):
        for cls in CLASSES:
            for slot in SLOTS:
                if table[cls][slot]:
                    self.packer.grant(cls, slot, table[cls][slot])

    @property
    def done(self):
        return self.packer.backlog == 0 and self.packer.init_sent


@cocotb.parametrize(pattern=sorted(CACHE_PATTERNS))
@cocotb.test(timeout_time=100, timeout_unit="ms")
async def rx_cache_packer(dut, pattern):
    """The golden packer with a Tx cache of the receiver's shape (rows by the same ID field)
    sends an address pattern of the cache tests, with uncacheable requests and responses, and
    Flow Control fields returning credits: the RTL delivers what the golden unpacker with a
    golden Rx cache does, and its cache counters are that cache's."""
    env = TlRxEnv(dut)
    cfg = env.config
    env.set_backpressure(0.2)
    init = await env.reset()
    rng = env.rng
    items = []
    field = "dst_acc" if cfg.cache_rx_index == "DSTACCID" else "src_acc"
    for r in cache_pattern(rng, pattern, 200, uncacheable=0.1):
        # The pattern's destinations, as rows of this cache.
        r = dataclasses.replace(r, **{field: r.dst_acc % cfg.cache_rows})
        items += [r] + (responses(rng, 1) if rng.random() < 0.4 else [])
    tx = TxAddressCache(ModelCacheConfig(ways=cfg.cache_ways, rows=cfg.cache_rows), "always")
    peer = {cls: {slot: rng.randrange(12) for slot in SLOTS} for cls in CLASSES}
    packer = Packer(peer, init, address_cache=tx, cache_index=cfg.cache_rx_index)
    for item in items:
        (packer.push_request if isinstance(item, Request) else packer.push_response)(item)
    sender = _PackerSender(packer)
    run = _Run(env, sender)
    await run.send(idle=0.1)
    await run.quiet()
    cache = _rx_model(cfg)
    ref = Unpacker(address_cache=cache)
    for flit in sender.flits:
        ref.feed(flit)
    assert ref.error is None and ref.idle(), ref.error
    assert env.delivered() == (ref.requests, *_split(ref.responses)) == by_kind(items)
    assert _cache_counts(env) == cache.counters()
    assert cache.expansions == tx.compressed and cache.loads == tx.loads
    assert not env.dut.error.value and env.error_counts() == [0] * len(RxError)
    assert env.given == ref.consumed and env.granted == credit_table(peer)
    assert packer.credits == credit_table(init) and not _request_buffers(env)
    dut._log.info("%s: %d items, %d flits, %d requests compressed, cache %s", pattern,
                  len(items), len(sender.flits), tx.compressed, _cache_counts(env))


@cocotb.parametrize(backlog=[False, True])
@cocotb.test(timeout_time=10, timeout_unit="ms")
async def rx_cache_same_half(dut, backlog):
    """Table 5-23: a CLOAD then two compressed requests using it in one control half; then a
    compressed request below a CLOAD that replaces its entry in the same half (it still sees
    the old region), then one using the new region. Without ``backlog`` each request meets
    the cache some clocks after the one before it; with it (UPLI requests held back until all
    have arrived) they pass back to back, each lookup in the clock of the load before it."""
    env = TlRxEnv(dut)
    env.set_backpressure(1.0 if backlog else 0.0)
    await env.reset()
    await _walk(env)
    traffic = CacheTraffic(env.config, env.rng)
    acc, way = env.config.cache_rows - 1, env.config.cache_ways - 1
    a, b = env.rng.getrandbits(37), env.rng.getrandbits(37)

    def read(region, decision):
        r = traffic.compressible(acc, region, cmd=READ)
        return traffic.add(r, decision)

    load = Decision(compressed=False, cload=True, way=way)
    use = Decision(compressed=True, cload=False, way=way)
    halves = [
        [(0, read(a, load)), (4, read(a, use)), (6, read(a, use))],
        [(0, read(a, use)), (4, read(b, load))],
        [(0, read(b, use)), (2, read(b, use))],
    ]
    flits = []
    for fields in halves:                   # reads carry no data: MANDATORY NOP upper halves
        flits.append(Flit.of(sum(place(s, sent.field) for s, sent in fields), 0))
        flits += [Flit(0)] * 4              # NOP flits retire the requests [§5.7]
    for flit in flits:
        env.drive(flit)
        await env.edge()
    env.set_backpressure(0.0)
    await _Run(env, None).quiet()
    reqs = [sent for fields in halves for _, sent in fields]
    got = env.delivered()[0]
    assert [r.addr for r in got] == [s.request.addr for s in reqs]
    assert got == [s.request for s in reqs]
    assert _cache_counts(env) == traffic.rx.counters() == {"loads": 2, "expansions": 5,
                                                            "errors": 0}
    assert not env.dut.error.value


_UNEXPANDABLE = ["never_loaded", "way", "row"]


async def _release(env, clocks, probability):
    for _ in range(clocks):
        await RisingEdge(env.dut.clk)
    env.set_backpressure(probability)


@cocotb.parametrize(kind=_UNEXPANDABLE, backlog=[False, True])
@cocotb.test(timeout_time=100, timeout_unit="ms")
async def rx_cache_unexpandable(dut, kind, backlog):
    """A compressed request naming an entry never loaded, a way or a row the cache lacks, amid
    traffic: the requests before it are delivered intact, it and every later request are
    dropped with their data and byte enables (credits come back for all of them, the request
    buffers end empty), the responses of the flits taken are delivered, nothing hangs;
    ``compressed_request`` and the cache's error counted once. With ``backlog`` the UPLI
    outputs are held for a while, so that the receive buffers fill (to their credits) before
    the bad request reaches the cache. Then reset heals."""
    env = TlRxEnv(dut)
    cfg = env.config
    if (kind == "way" and cfg.cache_ways == 4) or (kind == "row" and cfg.cache_rows == 1024):
        dut._log.info("every %s exists in this cache", kind)
        return
    env.set_backpressure(1.0 if backlog else 0.3)
    init = await env.reset()
    await _walk(env)
    rng = env.rng
    traffic = CacheTraffic(cfg, rng)
    # With backlog, the bad request waits behind a request held at the output while the
    # traffic after it fills the buffers.
    row = rng.randrange(cfg.cache_rows)             # for "never_loaded": kept unloaded
    before = traffic.run(rng.randint(1, 3) if backlog else rng.randrange(40),
                         missing_loads=False, avoid=row)
    bad = traffic.unexpandable(kind, row)
    after = traffic.run(30, missing_loads=False)
    rsps = responses(rng, 60)
    sender = CacheSender(rng, init)
    sender.push(before + [bad] + after)
    sender.push(rsps)
    run = _Run(env, sender)
    if backlog:
        cocotb.start_soon(_release(env, 400, 0.3))
    await run.send(idle=0.1, after_error=16)
    await run.quiet()
    taken = run.taken()
    assert taken == list(range(len(taken))), "the flits taken are not the first ones"
    ref = Unpacker(address_cache=_hook(traffic.regions(), lenient=True))
    for k in taken:
        ref.feed(sender.flits[k])
    assert ref.error is None
    got = env.delivered()
    assert got[0] == [as_received(s.request) for s in before], "requests before the bad one"
    assert (got[1], got[2]) == _split(ref.responses), "responses of the flits taken"
    assert env.dut.error.value
    assert env.error_counts() == [int(k == RxError.COMPRESSED_REQUEST) for k in RxError]
    assert _cache_counts(env) == traffic.counts_at_failure
    want = credit_table()
    want["req_cmd"]["pool"] = ref.consumed["req_cmd"]["pool"]
    want["req_data"]["pool"] = sum(sender.req_beats[k] for k in taken)
    want["rsp_cmd"]["pool"] = len(ref.responses)
    want["rsp_data"]["pool"] = sum(r.beats for r in ref.responses)
    assert env.given == want, "credits of what was taken"
    assert not _request_buffers(env), "request buffers not drained"
    dut._log.info("%d of %d flits taken, %d requests dropped", len(taken), len(sender.flits),
                  ref.consumed["req_cmd"]["pool"] - len(before))
    # reset heals
    await _fresh(env)


async def _fresh(env, n=60):
    """Reset, then clean random traffic."""
    init = await env.reset()
    assert _cache_counts(env) == {"loads": 0, "expansions": 0, "errors": 0}
    traffic = CacheTraffic(env.config, env.rng)
    reqs = traffic.run(n, missing_loads=False)
    rsps = responses(env.rng, n // 2)
    sender = CacheSender(env.rng, init)
    sender.push(reqs)
    sender.push(rsps)
    run = _Run(env, sender)
    await run.send()
    await _settle_all(run, reqs, rsps)
    _check_clean(env, traffic, sender, run, reqs, rsps)


async def _settle_all(run, reqs, rsps):
    want = upli_transfers([s.request for s in reqs] + rsps)
    for _ in range(20000):
        if run.env.count() >= want:
            break
        await run.idle(1)
    await run.quiet(16)
    assert run.env.count() == want


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def rx_cache_reset(dut):
    """Reset in the middle of traffic leaves no stale entry: after it, a compressed request to
    an entry a delivered CLOAD had loaded before the reset cannot be expanded; the requests
    before it (during the reset walk they wait) are delivered."""
    env = TlRxEnv(dut)
    env.set_backpressure(0.2)
    init = await env.reset()
    await _walk(env)
    traffic = CacheTraffic(env.config, env.rng)
    reqs = traffic.run(200)
    sender = CacheSender(env.rng, init)
    sender.push(reqs)
    sender.push(responses(env.rng, 50))
    run = _Run(env, sender)
    await run.send(flits=len(reqs) // 3)
    await run.quiet()
    delivered = env.delivered()[0]
    loaded = [s for s in reqs[:len(delivered)] if s.ftype == FType.REQUEST
              and (s.field >> 4) & 1 and traffic.rx.entry(
                  getattr(s.request, traffic.acc_field()), (s.field >> 2) & 3) is not None]
    assert loaded, "no CLOAD delivered before the reset"
    stale = env.rng.choice(loaded)
    acc, way = getattr(stale.request, traffic.acc_field()), (stale.field >> 2) & 3
    await run.send(flits=2 * len(reqs) // 3)
    init = await env.reset()                        # buffers not empty, flits in flight
    fresh = CacheTraffic(env.config, env.rng)
    rows = [a for a in range(min(env.config.cache_rows, 9)) if a != acc][:8]
    good = [fresh.add(fresh.compressible(a)) for a in rows for _ in range(2)]
    bad = fresh.add(fresh.compressible(acc, stale.request.addr >> 20),
                    Decision(compressed=True, cload=False, way=way))
    assert bad.addr is None and fresh.failed == len(good)
    sender = CacheSender(env.rng, init)
    sender.push(good + [bad])
    run = _Run(env, sender)
    await run.send()
    await _walk(env)
    await run.quiet()
    assert env.delivered()[0] == [as_received(s.request) for s in good]
    assert env.dut.error.value
    assert env.error_counts() == [int(k == RxError.COMPRESSED_REQUEST) for k in RxError]
    assert _cache_counts(env) == fresh.counts_at_failure
    await _fresh(env)


#: Two Rx caches [at most two hardware configurations]: a small one (2 ways, 4 rows, rows by
#: DSTACCID, as a switch's), which also runs every test of ``tb/tl/rx/test_unpacker.py``; and the
#: largest, 4 ways x 1024 rows by SRCACCID (an accelerator's).
CONFIGS = [TlConfig(cache_ways=2, cache_rows=4, cache_rx_index="DSTACCID"),
           TlConfig(cache_ways=4, cache_rows=1024)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.slug())
def test_tl_rx_cache(config):
    harness.run(TlRx(config), config, toplevel="tl_rx", test_module=__name__, internal=INTERNAL)

