# SPDX-License-Identifier: BSD-2-Clause
"""TL unpacker (``rtl/scaleup_ip/tl/rx/unpacker.py``): golden-model packer traffic in, UPLI items out; errors."""

import copy
import dataclasses
import itertools
import os

import cocotb
import pytest
from amaranth import Cat, Const, Module, Signal
from amaranth.sim import Simulator
from cocotb.triggers import ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

from scaleup_ip.model.tl.flit import (
    ATOMIC_R,
    CLASSES,
    CREDIT_SUBFIELDS,
    MSG_INIT_DONE,
    MSG_POISON,
    READ,
    SLOTS,
    WRITE,
    WRITE_FULL,
    Flit,
    FType,
    Packer,
    ReadResponse,
    Request,
    Unpacker,
    WriteResponse,
    credit_table,
    encode_credit,
    encode_field,
    place,
    request_field,
    response_field,
)
from scaleup_ip.tl import (
    MAX_BEATS,
    RSP_LIMIT,
    RxError,
    TlConfig,
    rd_rsp_layout,
    request_length_ok,
)
from scaleup_ip.tl.rx import TlRx, beats_held, field_length_ok
from sim import harness
from sim.prove import prove
from sim.tl.cache_traffic import RegionAnswers
from sim.tl.env import config_credits
from sim.tl.examples import EXAMPLES, build
from sim.tl.rx_env import TlRxEnv, credit_update_table
from sim.tl.traffic import (
    as_received,
    by_kind,
    make_read_response,
    make_request,
    make_write_response,
    random_items,
    random_request,
    upli_transfers,
)
from tb.tl.rx import test_cache as cache_tests


def _peer_advertise(rng):
    """Credits the model returns to the RTL in Flow Control fields (pool and VC slots)."""
    return {cls: {slot: rng.randrange(12) for slot in SLOTS} for cls in CLASSES}


async def _run(env, model, items, idle=0.0, sent=None, limit=20000, stall_ok=False):
    """Push ``items`` into ``model`` and feed its flits (random idle), returning credits
    from ``give`` to it, until it has nothing left to send (or, with ``stall_ok``, until
    ``limit`` clocks have passed). Returns the flits sent."""
    for item in items:
        (model.push_request if isinstance(item, Request) else model.push_response)(item)
    flits = [] if sent is None else sent
    for _ in range(limit):
        give = await env.edge()
        if env.dut.give_init.value:
            _return(model, give)
        if env.rng.random() < idle:
            env.drive(None)
            continue
        flit = model.step()
        env.drive(flit)
        if flit is not None:
            flits.append(flit)
        elif model.backlog == 0 and model.init_sent:
            return flits
    if stall_ok:
        return flits
    raise AssertionError(f"model still sending after {limit} clocks ({model.backlog} queued)")


def _return(model, give):
    for cls in CLASSES:
        for slot in SLOTS:
            if give[cls][slot]:
                model.grant(cls, slot, give[cls][slot])


async def _settle(env, want, model=None, limit=4000):
    """Wait until ``want`` UPLI transfers have come out (and 20 quiet clocks), feeding idle
    and returning credits to ``model``."""
    env.drive(None)
    reached = None
    for k in range(limit):
        give = await env.edge()
        if model is not None and env.dut.give_init.value:
            _return(model, give)
        if env.count() >= want:
            reached = k if reached is None else reached
            if k - reached >= 20:
                break
    assert env.count() == want, f"{env.count()} UPLI transfers, expected {want}"


async def _traffic(env, items, idle, backpressure):
    """Reset, send ``items`` through a fresh model, check delivery and credits."""
    env.set_backpressure(backpressure)
    init = await env.reset()
    advertise = _peer_advertise(env.rng)
    model = Packer(advertise, init)
    flits = await _run(env, model, items, idle)
    want = by_kind(items)
    await _settle(env, upli_transfers(items), model)
    got = env.delivered()
    for g, w, what in zip(got, want, ("requests", "read responses", "write responses")):
        assert g == w, f"{what} differ"
    ref = Unpacker()
    for flit in flits:
        ref.feed(flit)
    assert ref.error is None
    dut = env.dut
    assert not dut.error.value and dut.peer_init.value
    assert env.granted == ref.granted == credit_table(advertise)
    assert int(dut.poisoned.value) == model.poison_halves
    # credit conservation: everything the model spent came back
    assert env.given == ref.consumed, "credits returned differ from credits spent"
    assert model.credits == credit_table(init)
    return flits


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def rx_random_traffic(dut):
    """Every command/length/VC/status with poison; random idle and UPLI backpressure."""
    env = TlRxEnv(dut)
    flits = await _traffic(env, random_items(env.rng, 500), idle=0.3, backpressure=0.3)
    dut._log.info("%d flits", len(flits))


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def rx_back_to_back(dut):
    """One flit per clock, heavy backpressure: the buffers and credits carry the load."""
    env = TlRxEnv(dut)
    await _traffic(env, random_items(env.rng, 300), idle=0.0, backpressure=0.0)
    await _traffic(env, random_items(env.rng, 300), idle=0.0, backpressure=0.7)


@cocotb.test(timeout_time=200, timeout_unit="us")
async def rx_read_latency(dut):
    """A read request is valid on ``req`` 3 clocks after its flit (two decode stages, the
    sequencing stage; TlRx docstring), 5 with an address cache (its lookup, then its answer
    registered)."""
    env = TlRxEnv(dut)
    init = await env.reset()
    model = Packer(credit_table(), init)
    await _run(env, model, [])                       # Initial Credit Release Complete
    read = dataclasses.replace(random_request(env.rng), cmd=0x03, num_beats=0, length=0,
                               data=(), byte_en=(), error=())
    model.push_request(read)
    env.drive(model.step())
    await env.edge()
    env.drive(None)
    for clocks in range(1, 10):
        await env.edge()
        if env.dut.req__valid.value:
            break
    dut._log.info("read request latency: %d clocks", clocks)
    assert clocks == 3 + 2 * (env.config.rx_cache is not None)
    await _settle(env, 1)
    assert env.delivered()[0] == [as_received(read)]


def _bad_flits(kind, rng):
    """Flits showing one malformed ``kind`` (sent while nothing is owed)."""
    def lower(value, m0=False, upper=0, m1=False):
        return Flit.of(value, upper, m0, m1)
    req = {"POOL": 1, "ADDR": rng.getrandbits(55) & ~0x3F}
    wr = place(0, 0)
    for s in range(8):
        wr |= place(s, encode_field(FType.COMPRESSED_RESPONSE, POOL=1, TAG=s))
    return {
        "reserved_ftype": [lower(place(7, 0x7 << 28))],
        "footprint": [lower(place(6, 0x2 << 28))],
        "reserved_command": [lower(place(0, encode_field(FType.REQUEST, CMD=0x01, **req)))],
        "impossible_length": [lower(place(0, encode_field(
            FType.REQUEST, CMD=0x03, POOL=1, ADDR=63, LEN=1)))],
        "reserved_status": [lower(place(0, encode_field(FType.RESPONSE, STATUS=1, POOL=1)))],
        "misplaced_poison": [lower(0, upper=0x20, m1=True)],
        "unknown_message": [lower(0x55, m0=True)],
        "mandatory_nop": [lower(0, upper=1 << 100)],
        "catch_overrun": [lower(wr), lower(place(0, encode_field(
            FType.COMPRESSED_RESPONSE, POOL=1)) | place(1, encode_field(
                FType.COMPRESSED_RESPONSE, POOL=1)))],
        "buffer_overrun": [lower(place(0, encode_field(FType.REQUEST, CMD=0x03, POOL=0)))],
        "compressed_request": [lower(place(0, encode_field(
            FType.COMPRESSED_REQUEST, POOL=1)))],
    }[kind]


@cocotb.parametrize(kind=[k.name.lower() for k in RxError])
@cocotb.test(timeout_time=1, timeout_unit="ms")
async def rx_error(dut, kind):
    """A malformed flit: the right counter, nothing later delivered, no hang; reset heals."""
    env = TlRxEnv(dut)
    env.set_backpressure(0.2)
    init = await env.reset()
    model = Packer(credit_table(), init)
    before = random_items(env.rng, 12)
    await _run(env, model, before)
    await _settle(env, upli_transfers(before), model)   # buffers empty again
    bad = _bad_flits(kind, env.rng)
    ref = Unpacker(buffers=config_credits(env.config))
    for flit in bad:
        ref.feed(flit)
    assert ref.error == kind, f"golden model says {ref.error}"
    # All-NOP flits first: each retires one outstanding request and response at the receiver
    # [§5.7], so the bad flits meet empty catch buffers, as they do in ``ref``.
    for flit in [Flit(0)] * RSP_LIMIT + bad:
        env.drive(flit)
        await env.edge()
    if env.config.rx_cache is not None:
        # A compressed request to an entry never loaded is found at the cache, a few clocks
        # later than the errors of the flit itself (README §4).
        env.drive(None)
        for _ in range(8):
            await env.edge()
    after = random_items(env.rng, 12)
    await _run(env, model, after, idle=0.2, limit=400, stall_ok=True)
    want = by_kind(before)
    want = (want[0], want[1], want[2] + [as_received(i) for i in ref.responses])
    await _settle(env, upli_transfers(before + ref.responses))
    assert env.delivered() == want
    assert env.dut.error.value
    counts = env.error_counts()
    assert counts == [int(k == RxError[kind.upper()]) for k in RxError], counts
    # reset heals
    again = random_items(env.rng, 20)
    await _traffic(env, again, idle=0.1, backpressure=0.2)
    assert env.error_counts() == [0] * len(RxError)


def _mutate(rng, flit):
    """``flit`` with one field changed: a sector's FTYPE or its other bits or one bit of it, in
    either half-flit, or a half's message flag."""
    how = rng.randrange(5)
    if how == 4:
        return Flit(flit.data, *((not flit.m0, flit.m1) if rng.random() < 0.5
                                 else (flit.m0, not flit.m1)))
    at = 32 * rng.randrange(16)                     # a sector of either half
    if how == 0:
        mask, value = 0xF << 28, rng.randrange(16) << 28
    elif how == 1:
        mask, value = (1 << 28) - 1, rng.getrandbits(28)
    else:
        bit = 1 << rng.randrange(32)
        mask, value = bit, ~(flit.data >> at) & bit
    data = flit.data & ~(mask << at) | value << at
    return Flit(data, flit.m0, flit.m1)


@cocotb.skipif(os.environ.get("TL_RX_CACHE") == "1",
                reason="with an address cache, a compressed request's error is found a few "
                       "clocks after the others (README §4); the model's unpacker has no cache")
@cocotb.test(timeout_time=200, timeout_unit="ms")
async def rx_fuzz(dut):
    """Structure-aware fuzzing: golden-model packer flits of random items, one flit with one
    field changed (FTYPEs, field bits, message flags), fed after a reset. The golden model's
    unpacker is the oracle: the items it delivers come out, and its first error, if any, is the
    one counted (``FUZZ_CASES`` cases)."""
    env = TlRxEnv(dut)
    env.set_backpressure(0.2)
    rng, tally = env.rng, {}
    for case in range(int(os.environ["FUZZ_CASES"])):
        init = await env.reset()
        model = Packer(_peer_advertise(rng), init)
        items = random_items(rng, rng.randrange(1, 7))
        while not _fits(env.config, items):
            items.pop()
        for item in items:
            (model.push_request if isinstance(item, Request) else model.push_response)(item)
        flits = []
        for _ in range(200):
            flit = model.step()
            if flit is not None:
                flits.append(flit)
            elif model.backlog == 0 and model.init_sent:
                break
        k = rng.randrange(len(flits))
        flits[k] = _mutate(rng, flits[k])
        ref = Unpacker(buffers=config_credits(env.config))
        for flit in flits:
            ref.feed(flit)
        got_items = ref.requests + ref.responses
        tally[ref.error] = tally.get(ref.error, 0) + 1
        for flit in flits:
            while rng.random() < 0.2:
                env.drive(None)
                await env.edge()
            env.drive(flit)
            await env.edge()
        env.drive(None)
        for _ in range(8):                  # a compressed request meets the cache later
            await env.edge()
        await _settle(env, upli_transfers(got_items))
        got, want = env.delivered(), _grouped(got_items)
        assert got == want, f"case {case}: flit {k} {flits[k]}: {_first_difference(got, want)}"
        counts = env.error_counts()
        want = [int(ref.error is not None and kind == RxError[ref.error.upper()])
                for kind in RxError]
        assert counts == want, (f"case {case}: counts {counts}, model {ref.error}; flit {k} of "
                                f"{[(hex(f.data), f.m0, f.m1) for f in flits]}")
    dut._log.info("fuzz: %s", {str(k): v for k, v in tally.items()})


def _grouped(items):
    """``items`` the model's unpacker delivered, as :func:`by_kind` groups them but unchanged:
    they are already as received (a lone Poisoned Data half leaves the beat's other half as it
    came, where :func:`by_kind` would poison both, as the packer sends them)."""
    return tuple([i for i in items if isinstance(i, kind)]
                 for kind in (Request, ReadResponse, WriteResponse))


def _first_difference(got, want):
    """The first item that differs between two :func:`by_kind` tuples, for a failure's
    message."""
    for kind, (g, w) in enumerate(zip(got, want)):
        for n, (a, b) in enumerate(zip(g, w)):
            if a != b:
                return f"kind {kind} item {n}: RTL {a!r}, model {b!r}"
        if len(g) != len(w):
            return f"kind {kind}: RTL {len(g)} items, model {len(w)}"
    return "none"


def _fits(config, items):
    """Whether ``items`` fit the receive buffers without any credit coming back."""
    reqs = [i for i in items if isinstance(i, Request)]
    rsps = [i for i in items if not isinstance(i, Request)]
    return (len(reqs) <= config.rx_req and len(rsps) <= config.rx_rsp
            and sum(i.beats for i in reqs) <= config.rx_req_data
            and sum(i.beats for i in rsps) <= config.rx_rsp_data)


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def rx_spec_examples(dut):
    """The spec's own flit sequences [§5.2-5.4] (layouts our packer never makes): the RTL
    delivers what the golden model does, with no error."""
    env = TlRxEnv(dut)
    for name in EXAMPLES:
        flits, items = build(name, seed=env.rng.randrange(1 << 30), pool=1)
        if not _fits(env.config, items):
            continue
        ref = Unpacker()
        for flit in flits:
            ref.feed(flit)
        want = tuple([i for i in items if isinstance(i, kind)]       # already as received
                     for kind in (Request, ReadResponse, WriteResponse))
        assert ref.error is None and ref.idle(), name
        assert ref.requests == want[0], name
        assert sorted(map(repr, ref.responses)) == sorted(map(repr, want[1] + want[2])), name
        await env.reset()
        for flit in flits:
            env.drive(flit)
            await env.edge()
        await _settle(env, upli_transfers(items))
        got = env.delivered()
        for kind, g, w in zip(("requests", "reads", "writes"), got, want):
            assert len(g) == len(w), f"{name}: {len(g)} {kind}, expected {len(w)}"
            for k, (a, b) in enumerate(zip(g, w)):
                assert a == b, f"{name}: {kind}[{k}] differs: " + ", ".join(
                    f"{f} {getattr(a, f)} vs {getattr(b, f)}" for f in a.__dataclass_fields__
                    if getattr(a, f) != getattr(b, f))
        assert not env.dut.error.value, (name, env.error_counts())


# --- Flow Control fields per credit slot --------------------------------------------------------

#: Largest count of each class in one Flow Control subfield: 7 (command), 31 (data) [Table 5-38].
_MAX = {cls: (1 << bits) - 1 for cls, (_, bits) in CREDIT_SUBFIELDS.items()}


def _fc(subfields):
    """A Flow Control field from ``{class: (slot, n)}``: each class names its own slot (a
    ``t vv c..c`` subfield each [Table 5-38]); classes left out return 0 pool credits."""
    return encode_field(FType.FLOW_CONTROL, **{
        name: encode_credit(*subfields.get(cls, ("pool", 0)), bits)
        for cls, (name, bits) in CREDIT_SUBFIELDS.items()})


def _granted_by(subfields_list):
    """``{class: {slot: n}}`` the Flow Control fields ``subfields_list`` return."""
    table = credit_table()
    for subfields in subfields_list:
        for cls, (slot, n) in subfields.items():
            table[cls][slot] += n
    return table


def _random_fc_half(rng, sectors):
    """Flow Control fields at ``sectors``: every class of every field names a random slot,
    no class names a slot twice with a non-zero count (README §3 rule 5, [§5.7]), counts are
    often the maximum. Returns ``(half, [subfields])``."""
    used = {cls: set() for cls in CLASSES}
    half, fields = 0, []
    for s in sectors:
        subfields = {}
        for cls in CLASSES:
            free = [slot for slot in SLOTS if slot not in used[cls]]
            if not free or rng.random() < 0.15:
                subfields[cls] = (rng.choice(SLOTS), 0)
                continue
            slot = rng.choice(free)
            used[cls].add(slot)
            n = _MAX[cls] if rng.random() < 0.35 else rng.randint(1, _MAX[cls])
            subfields[cls] = (slot, n)
        half |= place(s, _fc(subfields))
        fields.append(subfields)
    return half, fields


def _fc_flits(rng):
    """Directed then random control halves carrying Flow Control fields, some beside requests
    and responses. Returns ``[(flit, credits granted, directed)]`` and the items the flits
    carry."""
    every_max = [{cls: (slot, _MAX[cls]) for cls in CLASSES} for slot in SLOTS]
    mixed = [   # each class of one field in another slot
        {"req_cmd": ("vc3", 7), "rsp_cmd": ("vc2", 5), "req_data": ("vc1", 31),
         "rsp_data": ("pool", 17)},
        {"req_cmd": ("pool", 1), "rsp_cmd": ("vc0", 7), "req_data": ("vc0", 30),
         "rsp_data": ("vc3", 31)},
    ]
    vcs = [{cls: (f"vc{v}", _MAX[cls] if v % 2 else rng.randint(1, _MAX[cls]))
            for cls in CLASSES} for v in range(4)]
    zero = {cls: ("vc3", 0) for cls in CLASSES}         # t = 1, vv = 3, nothing returned
    read = make_request(rng, READ, 256 * rng.randrange(1 << 40), 64, vc=rng.randrange(4))
    writes = [make_write_response(rng, vc=v) for v in (0, 1, 2)]
    failed = make_write_response(rng, status=0x2, vc=3)
    items = [read, *writes, failed]
    cwr = [response_field(w, 1)[1] for w in writes]
    directed = [
        (sum(place(s, _fc(f)) for s, f in enumerate(every_max)), every_max),
        (sum(place(7 - s, _fc(f)) for s, f in enumerate(every_max)), every_max),
        (place(2, _fc(mixed[1])) | place(7, _fc(mixed[0])), mixed),
        (place(0, request_field(read, 1))
         | sum(place(4 + v, _fc(f)) for v, f in enumerate(vcs)), vcs),
        (place(0, cwr[0]) | place(1, _fc(vcs[1])) | place(2, cwr[1]) | place(3, _fc(vcs[3]))
         | place(4, _fc(every_max[0])) | place(5, cwr[2]) | place(6, _fc(vcs[2]))
         | place(7, _fc(vcs[0])), [vcs[1], vcs[3], every_max[0], vcs[2], vcs[0]]),
        (place(0, response_field(failed, 1)[1]) | place(2, _fc(every_max[1]))
         | place(3, _fc(mixed[0])) | place(7, _fc(zero)), [every_max[1], mixed[0], zero]),
    ]
    flits = [(Flit.of(half, 0), _granted_by(fields), True) for half, fields in directed]
    for _ in range(60):
        sectors = sorted(rng.sample(range(8), rng.randint(1, 8)))
        half, fields = _random_fc_half(rng, sectors)
        flits.append((Flit.of(half, 0), _granted_by(fields), False))
    return flits, items


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def rx_flow_control_slots(dut):
    """Flow Control fields for the pool and VC0..3 slots, every class, maximum counts, several
    fields per control half (also beside requests and responses, one field naming a slot per
    class): ``grant`` carries each flit's credits, by class and slot, and their sum."""
    env = TlRxEnv(dut)
    env.set_backpressure(0.3)
    await env.reset()
    flits, items = _fc_flits(env.rng)
    ref = Unpacker(buffers=config_credits(env.config))
    want = credit_table()
    for k, (flit, credits, directed) in enumerate(flits):
        ref.feed(flit)
        assert ref.error is None, (k, ref.error)
        for cls in CLASSES:
            for slot in SLOTS:
                want[cls][slot] += credits[cls][slot]
        before = copy.deepcopy(env.granted)
        env.drive(flit)
        await env.edge()
        if directed:                    # alone: exactly its credits come out
            env.drive(None)
            for _ in range(4):
                await env.edge()
            got = {cls: {slot: env.granted[cls][slot] - before[cls][slot] for slot in SLOTS}
                   for cls in CLASSES}
            assert got == credits, f"directed flit {k}: granted {got}, sent {credits}"
        elif env.rng.random() < 0.2:
            env.drive(None)
            await env.edge()
    init = Flit.of(MSG_INIT_DONE, 0, m0=True)
    ref.feed(init)
    env.drive(init)
    await env.edge()
    await _settle(env, upli_transfers(items))
    assert ref.granted == want, "golden model disagrees with the test's sums"
    assert env.granted == want, f"granted {env.granted}, sent {want}"
    assert all(want[cls][slot] for cls in CLASSES for slot in SLOTS)
    assert env.delivered() == by_kind(items)
    assert not dut.error.value and dut.peer_init.value, env.error_counts()
    assert ref.idle() and env.given == ref.consumed


# --- Credit returns by slot ---------------------------------------------------------------------

def _slot_items(rng):
    """Every item kind on every VC: read, write (1..4 beats), WriteFull, atomic, vendor read and
    vendor atomic requests; read responses of 1..4 beats; write responses; OKAY and not."""
    def block():
        return 256 * rng.randrange(1 << 40)
    items = []
    for vc in range(4):
        off = 4 * rng.randrange(64)
        items += [
            make_request(rng, READ, block(), 256, vc=vc),
            make_request(rng, WRITE, block() + off, 4 * rng.randint(1, 64 - off // 4), vc=vc),
            make_request(rng, WRITE_FULL, block(), 64 * (vc + 1), vc=vc),
            make_request(rng, ATOMIC_R, block() + 64, 8, num_beats=0, vc=vc),
            make_request(rng, 0x0A, block(), 128, num_beats=vc, vc=vc),
            make_request(rng, 0x3D, block(), 64, num_beats=3 - vc, vc=vc),
            *(make_read_response(rng, n, vc=vc) for n in range(4)),
            make_read_response(rng, vc % 4, status=0x8, vc=vc),
            make_write_response(rng, vc=vc),
            make_write_response(rng, status=0xF, vc=vc),
        ]
    items += random_items(rng, 40)
    rng.shuffle(items)
    return items


def _consumed_by(items, slot="pool"):
    """Credits ``items`` spend in ``slot``: one command credit per field, one data credit per
    64-byte beat (README §3 rule 6), counted from the items alone."""
    table = credit_table()
    for item in items:
        cmd, dat = ("req_cmd", "req_data") if isinstance(item, Request) else ("rsp_cmd",
                                                                               "rsp_data")
        table[cmd][slot] += 1
        table[dat][slot] += item.beats
    return table


async def _watch_returns(env, stop):
    """Credits come back only for what has left the receive buffers: at every clock the sum
    returned on ``give`` (registered) is at most what had left by the clock before, per class
    (commands: a request header, a write response, a read response's last beat; data: a beat),
    and never in a VC slot. Returns the number of clocks checked."""
    dut = env.dut
    given = dict.fromkeys(CLASSES, 0)
    left = dict.fromkeys(CLASSES, 0)
    clocks = 0
    while not stop:
        await RisingEdge(dut.clk)
        await ReadOnly()
        give = credit_update_table(dut.give.value)
        for cls in CLASSES:
            assert not any(give[cls][s] for s in SLOTS[1:]), f"VC credit returned: {give}"
            given[cls] += give[cls]["pool"]
            assert given[cls] <= left[cls], f"{cls}: {given[cls]} returned, {left[cls]} left"
        fired = {name: bool(getattr(dut, f"{name}__valid").value
                            and getattr(dut, f"{name}__ready").value)
                 for name in ("req", "orig", "rd_rsp", "wr_rsp")}
        if fired["rd_rsp"]:
            beat = rd_rsp_layout.from_bits(int(dut.rd_rsp__payload.value))
            n = int(beat.num_beats)
            left["rsp_cmd"] += n == 0 or int(beat.offset) == n
        left["req_cmd"] += fired["req"]       # its credit comes back with its last beat
        left["req_data"] += fired["orig"]
        left["rsp_cmd"] += fired["wr_rsp"]
        left["rsp_data"] += fired["rd_rsp"]
        clocks += 1
    return clocks


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def rx_credit_returns_by_slot(dut):
    """Items of every kind on every VC with POOL = 1 (the receiver advertises pool credits
    only), drained under backpressure: ``give`` returns, per class, one command credit per
    field and one data credit per beat, all in the pool slot, never before the item (beat) has
    left; at the end the sender holds exactly the advertised credits again."""
    env = TlRxEnv(dut)
    env.set_backpressure(0.5)
    init = await env.reset()
    items = _slot_items(env.rng)
    model = Packer(credit_table(), init)
    stop = []
    watch = cocotb.start_soon(_watch_returns(env, stop))
    flits = await _run(env, model, items, idle=0.2)
    await _settle(env, upli_transfers(items), model)
    stop.append(True)
    clocks = await watch
    want = _consumed_by(items)
    ref = Unpacker()
    for flit in flits:
        ref.feed(flit)
    assert ref.error is None and ref.idle()
    assert ref.consumed == want, "golden model disagrees with the test's count"
    assert env.delivered() == by_kind(items)
    assert env.given == want, f"returned {env.given}, consumed {want}"
    assert model.credits == credit_table(init) == credit_table(config_credits(env.config))
    assert not dut.error.value
    dut._log.info("%d items, %d flits, returns watched over %d clocks", len(items), len(flits),
                  clocks)


@cocotb.parametrize(kind=["request", "read_response", "write_response"])
@cocotb.test(timeout_time=1, timeout_unit="ms")
async def rx_vc_credit_unadvertised(dut, kind):
    """POOL = 0 on any VC spends VC credits this receiver never released (it advertises the
    pool only, README §3 rule 6, TlConfig): ``buffer_overrun``, nothing delivered, no credit
    returned in any slot. (A sender holding VC credits is built with the golden packer.)"""
    env = TlRxEnv(dut)
    make = {"request": lambda rng, vc: make_request(rng, WRITE, 256 * rng.randrange(1 << 40),
                                                    128, vc=vc),
            "read_response": lambda rng, vc: make_read_response(rng, 1, vc=vc),
            "write_response": lambda rng, vc: make_write_response(rng, vc=vc)}[kind]
    for vc in range(4):
        init = await env.reset()
        item = make(env.rng, vc)
        vc_credits = {cls: {f"vc{vc}": 8} for cls in CLASSES}
        model = Packer(credit_table(), credit_table(vc_credits))
        flits = await _run(env, model, [item])
        cmd_cls = "req_cmd" if isinstance(item, Request) else "rsp_cmd"
        assert model.credits[cmd_cls][f"vc{vc}"] == 7, "the packer did not spend VC credits"
        ref = Unpacker(buffers=init)
        for flit in flits:
            ref.feed(flit)
        assert ref.error == "buffer_overrun", ref.error
        await _settle(env, 0)
        assert env.count() == 0
        assert env.given == credit_table() and env.granted == credit_table()
        assert dut.error.value and dut.peer_init.value
        counts = env.error_counts()
        assert counts == [int(k == RxError.BUFFER_OVERRUN) for k in RxError], (vc, counts)


# --- Several errors in one flit -----------------------------------------------------------------

def _request(cmd, **values):
    return encode_field(FType.REQUEST, CMD=cmd, POOL=values.pop("POOL", 1), **values)


_RESERVED_COMMAND = _request(0x01)                              # not in Table 2-6
_IMPOSSIBLE_LENGTH = _request(0x03, ADDR=63, LEN=1)             # read crossing 256 bytes
_RESERVED_STATUS = encode_field(FType.RESPONSE, STATUS=1, POOL=1)
_COMPRESSED_REQUEST = encode_field(FType.COMPRESSED_REQUEST, POOL=1)
_VC_READ = _request(0x03, POOL=0, VCHAN=2)                      # VC credits never released
_FOOTPRINT_REQUEST = _request(0x03, ADDR=0x100 >> 2)            # placed at sector 2

#: One flit with two malformations: ``(lower, upper, m0, m1)`` and the kind counted, by the RTL
#: and the golden model alike (RxError priority, layout.py, README §4): every error of the lower
#: half-flit is found and the lowest kind among them counted, whatever the sector order; the
#: upper half's error counts only when the lower half shows none. With an address cache a
#: compressed request is a field, its entry looked up only when the flit is taken (the golden
#: model is given an entry for it): :data:`_SEVERAL_CACHED` lists the kinds that change.
_SEVERAL = {
    # both in the lower (control) half
    "ftype_and_command": (place(0, _RESERVED_COMMAND) | place(7, 0x7 << 28), 0, 0, 0,
                          "reserved_ftype"),
    "command_and_length": (place(0, _RESERVED_COMMAND) | place(4, _IMPOSSIBLE_LENGTH), 0, 0, 0,
                           "reserved_command"),
    "length_then_command": (place(0, _IMPOSSIBLE_LENGTH) | place(4, _RESERVED_COMMAND), 0, 0, 0,
                            "reserved_command"),
    "status_then_command": (place(0, _RESERVED_STATUS) | place(4, _RESERVED_COMMAND), 0, 0, 0,
                            "reserved_command"),
    "compressed_then_status": (place(0, _COMPRESSED_REQUEST) | place(2, _RESERVED_STATUS),
                               0, 0, 0, "reserved_status"),
    "compressed_then_overrun": (place(0, _COMPRESSED_REQUEST) | place(4, _VC_READ), 0, 0, 0,
                                "buffer_overrun"),
    # a request topped at sector 5 (footprint); sector 2 below it is a top of its own and its
    # nibble, ReqAddr[8:5] = 8, a reserved FTYPE
    "footprint_then_ftype": (place(2, _FOOTPRINT_REQUEST), 0, 0, 0, "reserved_ftype"),
    # one in the lower half, one in the upper (MANDATORY NOP or message position)
    "ftype_and_nop": (place(7, 0xF << 28), 1 << 200, 0, 0, "reserved_ftype"),
    "compressed_and_nop": (place(0, _COMPRESSED_REQUEST), 1 << 100, 0, 0, "compressed_request"),
    "overrun_and_poison": (place(0, _VC_READ), MSG_POISON, 0, 1, "buffer_overrun"),
    "message_and_poison": (0x55, MSG_POISON, 1, 1, "unknown_message"),
    # the same kind in both halves: counted once
    "poison_and_poison": (MSG_POISON, MSG_POISON, 1, 1, "misplaced_poison"),
}
_SEVERAL_CACHED = {"compressed_and_nop": "mandatory_nop"}


async def _watch_ready(env, stalls):
    """Record every clock where a flit is offered and not taken."""
    dut = env.dut
    while True:
        await RisingEdge(dut.clk)
        await ReadOnly()
        if dut.flit__valid.value and not dut.flit__ready.value:
            stalls.append(get_sim_time(unit="ns"))


@cocotb.parametrize(case=list(_SEVERAL))
@cocotb.test(timeout_time=2, timeout_unit="ms")
async def rx_several_errors(dut, case):
    """A flit with two malformations: only the kind of RxError priority is counted, once; the
    error is latched; later flits (good traffic, Flow Control, another error) are dropped,
    never back-pressured; reset clears everything and later traffic is delivered intact."""
    lower, upper, m0, m1, kind = _SEVERAL[case]
    bad = Flit.of(lower, upper, bool(m0), bool(m1))
    env = TlRxEnv(dut)
    cached = env.config.rx_cache is not None
    kind = _SEVERAL_CACHED.get(case, kind) if cached else kind
    env.set_backpressure(0.2)
    stalls = []
    cocotb.start_soon(_watch_ready(env, stalls))
    init = await env.reset()
    model = Packer(credit_table(), init)
    before = random_items(env.rng, 12)
    await _run(env, model, before)
    await _settle(env, upli_transfers(before), model)   # buffers empty again
    ref = Unpacker(buffers=config_credits(env.config),
                   address_cache=RegionAnswers(itertools.repeat(0)) if cached else None)
    ref.feed(bad)
    assert ref.error == kind and ref.errors == {kind: 1}, f"golden model says {ref.error}"
    for flit in [Flit(0)] * RSP_LIMIT + [bad]:          # empty catch buffers, as in ``ref``
        env.drive(flit)
        await env.edge()
    granted, poisoned = copy.deepcopy(env.granted), int(dut.poisoned.value)
    late = [Flit.of(place(3, _fc({cls: ("pool", _MAX[cls]) for cls in CLASSES})), 0),
            Flit.of(place(0, _RESERVED_STATUS), 0), Flit.of(0x55, 0, m0=True),
            Flit.of(0, MSG_POISON, m1=True)]
    for flit in late:
        env.drive(flit)
        await env.edge()
    after = random_items(env.rng, 12)
    await _run(env, model, after, idle=0.2, limit=400, stall_ok=True)
    await _settle(env, upli_transfers(before))
    assert env.delivered() == by_kind(before), "a flit after the error was delivered"
    assert env.granted == granted, "Flow Control after the error was granted"
    assert int(dut.poisoned.value) == poisoned
    assert dut.error.value
    counts = env.error_counts()
    assert counts == [int(k == RxError[kind.upper()]) for k in RxError], counts
    assert not stalls, f"flit back-pressured at {stalls[:4]} ns"
    # reset clears the error, the counters, peer_init and the poison count
    await env.reset()
    assert not dut.error.value and not dut.peer_init.value and not int(dut.poisoned.value)
    assert env.error_counts() == [0] * len(RxError)
    await _traffic(env, random_items(env.rng, 20), idle=0.1, backpressure=0.2)
    assert env.error_counts() == [0] * len(RxError)
    assert not stalls


# --- Poisoned Data in place of a byte-enable half-flit -------------------------------------------

def _write_flits(rng, position, be_value, be_message):
    """A 64-byte Write (two data half-flits, then its byte-enable half) whose byte-enable half
    travels in the upper or the lower position of its flit; ``be_value``/``be_message`` stand in
    for that half. For the lower position a single-beat read response follows the write in the
    control half and a NOP message in the first data position moves the sequence down a half;
    returns the flits and the UPLI transfers they carry."""
    write = place(0, _request(WRITE, ADDR=0x1000 >> 2, LEN=15))
    d0, d1, r0, r1 = (rng.getrandbits(256) for _ in range(4))
    if position == "upper":
        return [Flit.of(write, d0), Flit.of(d1, be_value, m1=be_message)], 2
    read = place(7, encode_field(FType.COMPRESSED_READ_RESPONSE, POOL=1, LAST=1))
    return [Flit.of(write | read, 0, m1=True), Flit.of(d0, d1),
            Flit.of(be_value, r0, m0=be_message), Flit.of(0, r1)], 3


@cocotb.parametrize(position=["lower", "upper"])
@cocotb.test(timeout_time=1, timeout_unit="ms")
async def rx_poisoned_byte_enables(dut, position):
    """A byte-enable half-flit is never poisoned (README §3): Poisoned Data in its place, in
    either position, is ``misplaced_poison`` and the write is not delivered; with the byte
    enables in place the same flits deliver it."""
    env = TlRxEnv(dut)
    for poisoned in (False, True):
        await env.reset()
        flits, transfers = _write_flits(env.rng, position,
                                        MSG_POISON if poisoned else (1 << 64) - 1, poisoned)
        ref = Unpacker(buffers=config_credits(env.config))
        for flit in flits:
            ref.feed(flit)
            env.drive(flit)
            await env.edge()
        assert ref.error == ("misplaced_poison" if poisoned else None), ref.error
        await _settle(env, 0 if poisoned else transfers)
        counts = env.error_counts()
        assert counts == [int(poisoned and k == RxError.MISPLACED_POISON) for k in RxError]
        assert bool(dut.error.value) == poisoned
        requests = env.delivered()[0]
        assert len(requests) == (0 if poisoned else 1)
        assert poisoned or list(requests[0].byte_en) == [(1 << 64) - 1]


#: The default, small buffers, and an address cache (2 ways x 4 rows, as in
#: ``tb/tl/rx/test_cache.py``): every test here runs with compressed requests decoded too.
CONFIGS = [TlConfig(), TlConfig(rx_req=4, rx_rsp=8, rx_req_data=8, rx_rsp_data=8),
           TlConfig(cache_ways=2, cache_rows=4, cache_rx_index="DSTACCID")]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.slug())
def test_tl_rx(config):
    # The cache's configuration shares its build with tb/tl/rx/test_cache.py.
    internal = cache_tests.INTERNAL if config.rx_cache is not None else ()
    harness.run(TlRx(config), config, toplevel="tl_rx", test_module=__name__, internal=internal,
                extra_env={"FUZZ_CASES": str(harness.long_form(150, 4000)),
                           "TL_RX_CACHE": str(int(config.rx_cache is not None))})


def test_rx_rejects_other_config():
    with pytest.raises(TypeError, match="TlConfig"):
        TlRx(dataclasses.replace)


def test_field_length_rule(tmp_path):
    """The receiver's length check (rx_tally.field_length_ok, arranged for speed) equals the
    shared rule (rules.request_length_ok) for every command, address, length and NumBeats:
    Yosys proves the two circuits equal."""
    m = Module()
    cmd, addr, length, beats = Signal(6), Signal(55), Signal(6), Signal(2)
    same = Signal()
    ref = request_length_ok(m, cmd, Cat(Const(0, 2), addr[:6]), length, beats, "ref")
    dut = field_length_ok(m, cmd, addr, length, beats, "dut")
    m.d.comb += same.eq(ref == dut)
    proved, log = prove(m, [cmd, addr, length, beats], same, tmp_path)
    assert proved, log[-2000:]


def test_beats_held():
    """The delivery's registered ``enough`` (rx_req_out.beats_held) is ``level >= left`` after
    every update: for every head size, buffer level, next head, load, beat sent and beat
    joining, from the kept ``short`` = max(0, left − level)."""
    m = Module()
    enough = Signal(name="enough")
    left, nxt_left = Signal(range(MAX_BEATS + 1)), Signal(range(MAX_BEATS + 1))
    load, fire, incoming = Signal(), Signal(), Signal()
    level = Signal(range(33))
    short = beats_held(m, enough, left, nxt_left, load, fire, level, incoming)
    sim = Simulator(m)
    sim.add_clock(1e-6)
    wrong = []

    async def bench(ctx):
        for lft, lvl, nxt, ld, fr, inc in itertools.product(
                range(MAX_BEATS + 1), range(2 * MAX_BEATS + 2), range(MAX_BEATS + 1),
                (0, 1), (0, 1), (0, 1)):
            if fr and (lvl < lft or lft == 0):
                continue                        # a beat leaves only when all are there
            for sig, value in ((left, lft), (level, lvl), (nxt_left, nxt), (load, ld),
                               (fire, fr), (incoming, inc), (short, max(0, lft - lvl)),
                               (enough, int(lvl >= lft))):
                ctx.set(sig, value)
            await ctx.tick()
            new_left = nxt if ld else lft - fr
            new_level = lvl + inc - fr
            got = (ctx.get(short), ctx.get(enough))
            want = (max(0, new_left - new_level), int(new_level >= new_left))
            if got != want:
                wrong.append((lft, lvl, nxt, ld, fr, inc, got, want))

    sim.add_testbench(bench)
    sim.run()
    assert not wrong, wrong[:5]

