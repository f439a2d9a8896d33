# SPDX-License-Identifier: BSD-2-Clause
"""UPLI channel ends (``rtl/scaleup_ip/tl/upli/receiver.py``, ``upli/sender.py``): credit release and returns,
overrun, sending only with credit, bursts back to back."""

import dataclasses
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from scaleup_ip.config import BlockConfig
from scaleup_ip.tl import orig_data_layout, rd_rsp_layout, request_layout, wr_rsp_layout
from scaleup_ip.tl.upli import UpliReceiver, UpliRequestSender, UpliSender
from sim import harness
from sim.streams import LayoutSink, LayoutSource, random_pauses, reset
from sim.tl.env import PERIOD_NS
from sim.tl.upli_bfm import Credits
from sim.tl.upli_bfm import UpliReceiver as BfmReceiver

DEPTH = 6


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """The one configuration built: a write-response channel of ``depth`` beats."""
    depth: int = DEPTH


class Sender:
    """Drives the receiver's UPLI channel ``i``: counts the credits it is given (with the BFM's
    :class:`~sim.tl.upli_bfm.Credits`) and spends them, VC ones first."""

    def __init__(self, dut, rng):
        self.dut, self.rng = dut, rng
        self.credits = Credits(dut, "i")
        self.sent = []
        dut.i__vld.value = 0
        cocotb.start_soon(self._credits())

    async def _credits(self):
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            self.credits.sample()

    def beat(self, force=False):
        """A random beat if a credit allows it (or ``force``); spends the credit."""
        vc = self.rng.randrange(4)
        pool = self.credits.choose(vc, 1)
        if pool is None and not force:
            return None
        pool = 1 if pool is None else pool
        self.credits.spend(vc, 1, pool)
        return {"vc": vc, "pool": pool, "tag": self.rng.randrange(1 << 11),
                "src_acc": self.rng.randrange(1024), "dst_acc": self.rng.randrange(1024),
                "status": self.rng.randrange(16)}

    async def drive(self, beat):
        self.dut.i__payload.value = wr_rsp_layout.const(beat).as_bits()
        self.dut.i__vld.value = 1
        self.sent.append(beat)
        await RisingEdge(self.dut.clk)
        self.dut.i__vld.value = 0


async def _start(dut):
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    sender = Sender(dut, rng)
    sink = LayoutSink(dut, "o", wr_rsp_layout, dut.clk, dut.rst)
    await reset(dut)
    while not sender.credits.ready:
        await RisingEdge(dut.clk)
    return rng, sender, sink


def _fields(view):
    return {name: int(getattr(view, name)) for name, _ in wr_rsp_layout}


@cocotb.test(timeout_time=200, timeout_unit="us")
async def upli_credits_balance(dut):
    """Released credits equal the depth; a sender that obeys them never overruns; every beat
    comes out once, in order; every credit comes back with the attributes it was spent with."""
    rng, sender, sink = await _start(dut)
    assert sender.credits.pool == DEPTH and sender.credits.vc == [0, 0, 0, 0]
    sink.set_backpressure(random_pauses(rng, 0.5))
    got = []
    for _ in range(300):
        beat = sender.beat() if rng.random() < 0.7 else None
        if beat:
            await sender.drive(beat)
        else:
            await RisingEdge(dut.clk)
        while not sink.empty():
            got.append(_fields(await sink.recv()))
    sink.set_backpressure(None)
    for _ in range(16):
        await RisingEdge(dut.clk)
    while not sink.empty():
        got.append(_fields(await sink.recv()))
    assert got == sender.sent
    assert int(dut.overrun.value) == 0
    # pool credits spent come back as pool credits; VC credits were never released
    assert sender.credits.pool == DEPTH and sender.credits.vc == [0, 0, 0, 0]


@cocotb.test(timeout_time=200, timeout_unit="us")
async def upli_overrun_counted(dut):
    """Beats beyond the credits are counted and dropped; the buffered ones still come out."""
    rng, sender, sink = await _start(dut)
    sink.set_backpressure(random_pauses(rng, 1.0))
    for _ in range(DEPTH + 3):
        await sender.drive(sender.beat(force=True))
    for _ in range(4):
        await RisingEdge(dut.clk)
    assert int(dut.overrun.value) == 3
    sink.set_backpressure(None)
    for _ in range(DEPTH + 8):
        await RisingEdge(dut.clk)
    got = []
    while not sink.empty():
        got.append(_fields(await sink.recv()))
    assert got == sender.sent[:DEPTH]


def test_upli_receiver():
    config = _Config()
    for name in ("upli_credits_balance", "upli_overrun_counted"):
        harness.run(UpliReceiver(wr_rsp_layout, config.depth), config, toplevel="upli_rx",
                    test_module=__name__, testcase=name)


def test_upli_receiver_rejects_depth():
    with pytest.raises(ValueError, match="depth"):
        UpliReceiver(wr_rsp_layout, 0)


@cocotb.test(timeout_time=200, timeout_unit="us")
async def upli_sender_obeys_credits(dut):
    """Beats go only with credit of the kind they name; a multi-beat read response goes in
    consecutive clocks; every beat goes, in order; all credits come home."""
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    source = LayoutSource(dut, "i", rd_rsp_layout, dut.clk, dut.rst)
    dut.o__credit.value = 0
    await reset(dut)
    giver = BfmReceiver(dut, "o", rd_rsp_layout, rng, pool=5, vcs=[2, 0, 1, 0], give_back=0.3)
    sent = []
    for _ in range(60):
        n = rng.randrange(4)
        vc, tag = rng.randrange(4), rng.randrange(1 << 11)
        for k in range(n + 1):
            beat = {"data": rng.getrandbits(512), "vc": vc, "pool": 0, "tag": tag,
                    "num_beats": n, "offset": k if n else rng.randrange(4),
                    "last": int(k == n) if n else rng.randrange(2), "status": 0}
            sent.append(beat)
            source.send_nowait(**beat)
    await source.wait()
    for _ in range(32):
        await RisingEdge(dut.clk)
    got = [{name: int(getattr(b, name)) for name in sent[0]} for b in giver.got]
    assert [dict(g, pool=0) for g in got] == sent
    for before, cycle, beat in zip(giver.cycles, giver.cycles[1:], giver.got[1:]):
        if beat.num_beats and beat.offset:
            assert cycle == before + 1, "a multi-beat read response was split"
    assert giver.outstanding() == {"pool": 5, 0: 2, 1: 0, 2: 1, 3: 0}


@cocotb.test(timeout_time=200, timeout_unit="us")
async def upli_request_sender_obeys_credits(dut):
    """A write goes only with a Request credit and credits for all its beats; beat 0 goes with
    the request and the rest back to back; reads pass meanwhile; everything goes in order."""
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    req = LayoutSource(dut, "req", request_layout, dut.clk, dut.rst)
    orig = LayoutSource(dut, "orig", orig_data_layout, dut.clk, dut.rst)
    dut.req_o__credit.value = dut.orig_o__credit.value = 0
    await reset(dut)
    reqs = BfmReceiver(dut, "req_o", request_layout, rng, 3, [1, 0, 0, 1], give_back=0.3)
    beats = BfmReceiver(dut, "orig_o", orig_data_layout, rng, 6, [0, 2, 0, 0], give_back=0.3)
    sent_req, sent_beats = [], []
    for tag in range(80):
        write = rng.random() < 0.5
        n = rng.randrange(4) if write else 0
        r = {"cmd": 0x28 if write else 0x03, "vc": rng.randrange(4), "tag": tag,
             "num_beats": n, "addr": rng.getrandbits(57) & ~3, "len": rng.randrange(64)}
        req.send_nowait(**r)
        sent_req.append(r)
        for k in range(n + 1 if write else 0):
            b = {"data": rng.getrandbits(512), "byte_en": rng.getrandbits(64), "offset": k,
                 "last": int(k == n), "vc": r["vc"]}
            orig.send_nowait(**b)
            sent_beats.append((r["tag"], b))
    await req.wait()
    await orig.wait()
    for _ in range(32):
        await RisingEdge(dut.clk)
    assert [{k: int(getattr(b, k)) for k in sent_req[0]} for b in reqs.got] == sent_req
    assert [{k: int(getattr(b, k)) for k in sent_beats[0][1]} for b in beats.got] \
        == [b for _, b in sent_beats]
    req_cycle = {int(b.tag): c for c, b in zip(reqs.cycles, reqs.got) if b.cmd == 0x28}
    tags = iter(t for t, _ in sent_beats)
    for cycle, beat, tag in zip(beats.cycles, beats.got, tags):
        assert cycle == req_cycle[tag] + int(beat.offset), "beats not back to back from the request"
    assert reqs.outstanding() == {"pool": 3, 0: 1, 1: 0, 2: 0, 3: 1}
    assert beats.outstanding() == {"pool": 6, 0: 0, 1: 2, 2: 0, 3: 0}


def test_upli_request_sender():
    harness.run(UpliRequestSender(), _Config(), toplevel="upli_req_tx",
                test_module=__name__, testcase="upli_request_sender_obeys_credits")


def test_upli_sender():
    config = _Config()
    harness.run(UpliSender(rd_rsp_layout, multi_beat=True), config, toplevel="upli_tx",
                test_module=__name__, testcase="upli_sender_obeys_credits")
