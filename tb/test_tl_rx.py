"""TL unpacker (``rtl/tl/rx.py``): golden-model packer traffic in, UPLI items out; errors."""

import dataclasses

import cocotb
import pytest

from rtl.model.tl import (
    CLASSES,
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
from rtl.tl.layout import RSP_LIMIT, RxError, TlConfig
from rtl.tl.rx import TlRx
from sim import harness
from sim.tl_env import config_credits
from sim.tl_examples import EXAMPLES, build
from sim.tl_rx_env import TlRxEnv
from sim.tl_traffic import (
    as_received,
    by_kind,
    random_items,
    random_request,
    upli_transfers,
)


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
    """A read request is valid on ``req`` at most 3 clocks after its flit."""
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
    assert clocks <= 3
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


CONFIGS = [TlConfig(), TlConfig(rx_req=4, rx_rsp=8, rx_req_data=8, rx_rsp_data=8)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.slug())
def test_tl_rx(config):
    harness.run(TlRx(config), config, toplevel="tl_rx", test_module="tb.test_tl_rx")


def test_rx_rejects_other_config():
    with pytest.raises(TypeError, match="TlConfig"):
        TlRx(dataclasses.replace)
