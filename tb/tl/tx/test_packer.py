# SPDX-License-Identifier: BSD-2-Clause
"""TL packer (``rtl/scaleup_ip/tl/tx/packer.py``): flit-by-flit against the golden model, and random timing."""

import dataclasses

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from scaleup_ip.model.tl.flit import (
    CLASSES,
    SLOTS,
    Packer,
    ReadResponse,
    Request,
    Unpacker,
    WriteResponse,
    credit_table,
)
from scaleup_ip.model.tl.slots import SlotPacker
from scaleup_ip.tl import TlConfig
from scaleup_ip.tl.tx import TlTx
from sim import harness
from sim.streams import random_pauses
from sim.tl.env import TlTxEnv, config_credits
from sim.tl.traffic import as_received, random_items, random_request, random_response


def _burst(rng, config, n_req, n_rsp, dataless=False):
    """Random items that fit the packer's queues at once, shuffled together; ``dataless``:
    only items without data (so that the rate limits, not the data, space the controls)."""
    items, beats = [], {"req": 0, "rsp": 0}
    while len(items) < n_req + n_rsp:
        want_req = sum(isinstance(i, Request) for i in items) < n_req
        item = random_request(rng) if want_req else random_response(rng)
        if want_req != isinstance(item, Request) or (dataless and item.beats):
            continue
        kind = "req" if want_req else "rsp"
        if beats[kind] + item.beats > config.tx_data_depth:
            continue
        beats[kind] += item.beats
        items.append(item)
    rng.shuffle(items)
    return items


def _demand(items):
    """Credits ``items`` need, all from the pool."""
    table = credit_table()
    for item in items:
        side = "req" if isinstance(item, Request) else "rsp"
        table[f"{side}_cmd"]["pool"] += 1
        table[f"{side}_data"]["pool"] += item.beats
    return table


def _grants(rng, items, vc=True):
    """Enough credits for ``items``: pool plus (with ``vc``) some random VC credits."""
    table = _demand(items)
    for cls in CLASSES:
        for slot in SLOTS[1:]:
            table[cls][slot] = rng.randrange(6) if vc else 0
    return table


async def _collect(env, quiet=64):
    """Flits until none has come for ``quiet`` clocks."""
    flits, idle = [], 0
    while idle < quiet:
        await RisingEdge(env.dut.clk)
        if env.flits.empty():
            idle += 1
            continue
        while not env.flits.empty():
            flits.append(await env.recv_flit())
        idle = 0
    return flits


def _check_delivered(items, flits, kinds=(Request, (ReadResponse, WriteResponse))):
    """Decode ``flits`` with the model: every item exactly once, nothing left, in order within
    each of ``kinds`` (read and write responses come on two channels, so under random timing
    only their order within a channel is defined)."""
    u = Unpacker()
    for flit in flits:
        u.feed(flit)
    assert u.error is None, f"model receiver rejected the flits: {u.error}"
    assert u.peer_init_done and u.idle()
    for kind in kinds:
        got = [i for i in u.requests + u.responses if isinstance(i, kind)]
        assert got == [as_received(i) for i in items if isinstance(i, kind)], kind
    return u


def _sector_diff(got, want):
    """``{sector: (got, want)}`` of the sectors where two flits differ, and the message bits."""
    diff = {s: (hex(got.data >> 32 * s & 0xFFFF_FFFF), hex(want.data >> 32 * s & 0xFFFF_FFFF))
            for s in range(16) if (got.data ^ want.data) >> 32 * s & 0xFFFF_FFFF}
    if (got.m0, got.m1) != (want.m0, want.m1):
        diff["msg"] = ((got.m0, got.m1), (want.m0, want.m1))
    return diff


@cocotb.test(timeout_time=400, timeout_unit="us")
async def tx_matches_model(dut):
    """A burst queued while the link is stalled leaves exactly as the model packs it; runs 4 to
    6 without data (requests alone, responses alone, both), where the rate limits decide and
    the slot packer sends pacing flits; the last two on pool credits alone, many more than a
    control takes (so that each control spends from the slot the one before spent from)."""
    env = TlTxEnv(dut)
    full = env.config.tx_req_depth, env.config.tx_rsp_depth
    for run in range(9):
        await env.reset()
        env.flits.set_backpressure(random_pauses(env.rng, 1.0))
        counts = [(env.rng.randint(1, 16), env.rng.randint(1, 16))] * 4
        counts += [(full[0], 0), (0, full[1]), full, full, full]
        items = _burst(env.rng, env.config, *counts[run], dataless=run in (4, 5, 6))
        granted = _grants(env.rng, items, vc=run < 7)
        await env.grant(granted)
        await env.release(config_credits(env.config))
        dut._log.info("run %d: %d items queued", run, len(items))
        await env.send_in_order(items)
        await env.settle()
        dut._log.info("run %d: released", run)
        env.flits.set_backpressure(None)
        flits = await _collect(env)
        model = _model(env.config, granted)
        for item in items:
            (model.push_request if isinstance(item, Request) else model.push_response)(item)
        expected = model.drain()
        for k, (got, want) in enumerate(zip(flits, expected)):
            assert got == want, (f"run {run} flit {k} ({model.trace[k]}): sectors "
                                 f"{_sector_diff(got, want)} (got, model) differ")
        assert len(flits) == len(expected), f"{len(flits)} flits, model {len(expected)}"
        _check_delivered(items, flits)
        assert env.credits() == model.credits
        if isinstance(model, SlotPacker) and run in (4, 5, 6):   # the rate limits space them
            assert model.pace_flits > 0, f"run {run}: no pacing flit"


@cocotb.test(timeout_time=400, timeout_unit="us")
async def tx_random_timing(dut):
    """Random idle, backpressure and slowly returned credits: every item still arrives intact,
    and the credits the packer holds are what it was granted less what the fields spent."""
    env = TlTxEnv(dut)
    await env.reset()
    env.flits.set_backpressure(random_pauses(env.rng, 0.3))
    for source in (env.req, env.orig, env.rd_rsp, env.wr_rsp):
        source.set_idle(random_pauses(env.rng, 0.3))
    items = random_items(env.rng, 300)
    await env.release(config_credits(env.config))
    flits = []

    async def receive():
        while True:
            flits.append(await env.recv_flit())

    receiver = cocotb.start_soon(receive())
    demand = _demand(items)
    granted = credit_table()
    for item in items:
        env.send(item)
    while any(demand[c]["pool"] > granted[c]["pool"] for c in CLASSES):
        step = {c: {"pool": min(env.rng.randrange(4), demand[c]["pool"] - granted[c]["pool"])}
                for c in CLASSES}
        await env.grant(step)
        for c in CLASSES:
            granted[c]["pool"] += step[c]["pool"]
        await ClockCycles(dut.clk, env.rng.randrange(8))
    await env.settle(200)
    receiver.cancel()
    dut._log.info("%d items in %d flits", len(items), len(flits))
    u = _check_delivered(items, flits, kinds=(Request, ReadResponse, WriteResponse))
    assert env.credits() == {c: {s: granted[c][s] - u.consumed[c][s] for s in SLOTS}
                             for c in CLASSES}
    assert not any(v for row in env.pending().values() for v in row.values())


@cocotb.test(timeout_time=400, timeout_unit="us")
async def tx_returns_every_release(dut):
    """Credits released by the local receiver in short runs at random clocks, with requests
    and responses now and then: after each run every released credit goes back in Flow
    Control fields, none is left pending (a release in the clock a control is placed or closed
    included), and what the fields return is exactly what was released."""
    env = TlTxEnv(dut)
    await env.reset()
    initial = config_credits(env.config)
    await env.release(initial)
    flits, released = [], credit_table(initial)

    async def receive():
        while True:
            flits.append(await env.recv_flit())

    receiver = cocotb.start_soon(receive())
    items = []
    for run in range(200):
        for _ in range(env.rng.randint(1, 4)):
            # Mostly a few credits of a few slots (all of them fit one control's fields),
            # now and then more than a field carries.
            table = {c: {s: (env.rng.choice((9, 40)) if env.rng.random() < 0.05
                             else env.rng.randint(1, 5)) if env.rng.random() < 0.2 else 0
                         for s in SLOTS} for c in CLASSES}
            await env.release_more(table)
            for c in CLASSES:
                for s in SLOTS:
                    released[c][s] += table[c][s]
            await ClockCycles(dut.clk, env.rng.choice((0, 0, 1, 2, 5)))
        if env.rng.random() < 0.2:
            item = random_request(env.rng) if env.rng.random() < 0.5 \
                else random_response(env.rng)
            await env.grant(_demand([item]))
            env.send(item)
            items.append(item)
        for _ in range(200):
            await RisingEdge(dut.clk)
            if not any(v for row in env.pending().values() for v in row.values()):
                break
        left = {c: {s: n for s, n in row.items() if n} for c, row in env.pending().items()}
        assert not any(left.values()), f"run {run}: credits left pending {left}"
    await env.settle(64)
    receiver.cancel()
    u = _check_delivered(items, flits, kinds=(Request, ReadResponse, WriteResponse))
    assert u.granted == released, f"returned {u.granted}, released {released}"


def _model(config, granted):
    """The golden model's packer of ``config``'s ``tx_packer``."""
    if config.tx_packer == "slots":
        return SlotPacker(config_credits(config), granted)
    return Packer(config_credits(config), granted, compact=config.tx_packer == "compact")


CONFIGS = [TlConfig(), TlConfig(tx_packer="compact")]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.slug())
def test_tl_tx(config):
    harness.run(TlTx(config), config, toplevel="tl_tx", test_module=__name__)


def test_config_rejects_small_data_buffer():
    with pytest.raises(ValueError, match="rx_req_data"):
        TlConfig(rx_req_data=3)


def test_component_rejects_other_config():
    with pytest.raises(TypeError, match="TlConfig"):
        TlTx(dataclasses.replace)
