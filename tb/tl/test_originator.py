# SPDX-License-Identifier: BSD-2-Clause
"""The UPLI originator with its watchdog and Isolation Mode (``rtl/scaleup_ip/tl/upli/originator.py``,
TL README §7) against the model (``rtl/scaleup_ip/model/tl/isolation.py``), the TL played by
Python on its UPLI channels, with credits.

* ``answered``: random requests of every command class from the device; the TL answers each,
  in any order, reads in multi-beat or single-beat mode, with any status, and forges
  responses (unknown tags, the wrong channel, the wrong size) among them. Every request
  reaches the TL once and intact; every answer reaches the device unchanged and every forgery
  is dropped and counted, as the model says; nothing isolates; every credit comes back.
* ``dead_peer``: the TL takes requests and never answers: the first request's watchdog expires
  within the window, every outstanding request gets its dummy (the model's), requests after
  it never reach the TL and are answered by dummies, and late answers are discarded and
  counted while their credits come back.
* ``isolate_mid_burst``: an ISOLATE write response while the device is part-way through a
  multi-beat read response and a single-beat one: the burst is finished first, in its mode,
  and the rest of each answer made up as the model says.
* ``stalled``: the TL never gives a request credit: the waiting request isolates the port.
"""

import dataclasses
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.model.tl.flit import Request, WriteResponse
from scaleup_ip.model.tl.isolation import (
    ISOLATE,
    Originator,
    ReadBeat,
    answer_of,
    expiry_window,
)
from scaleup_ip.model.tl.traffic import UpliTraffic
from scaleup_ip.tl import (
    IsolationCause,
    OriginatorConfig,
    OriginatorCount,
    orig_data_layout,
    rd_rsp_layout,
    request_layout,
    wr_rsp_layout,
)
from scaleup_ip.tl.upli import RESPONSE_DEPTH, UpliOriginator
from sim import harness
from sim.streams import reset
from sim.tl.env import PERIOD_NS
from sim.tl.originator_env import OriginatorDevice
from sim.tl.upli_bfm import Credits
from sim.tl.upli_bfm import UpliReceiver as BfmReceiver

#: The one configuration built: a small table, so that requests wait for entries.
CONFIG = OriginatorConfig(outstanding=4, completion_timeout=600)
#: Tags the device uses, more than the table holds; forgeries use tags above them.
TAGS = range(12)
FORGED_TAGS = range(1024, 2048)
#: Statuses a completer answers with (Tables 2-9, 2-12).
STATUSES = (0x0, 0x2, 0x3, 0x6, 0x8)
#: Clocks from a request on the TL channel to its entry's expiry being seen on ``isolated``.
SLACK = 3


class TlSide:
    """The TL on the originator's UPLI channels: takes requests and data beats (credits from
    the BFM receivers), and sends response beats with the originator's credits."""

    def __init__(self, dut, rng, req_credits=8):
        self.dut, self.rng = dut, rng
        self.reqs = BfmReceiver(dut, "tl_req", request_layout, rng, pool=req_credits)
        self.origs = BfmReceiver(dut, "tl_orig", orig_data_layout, rng, pool=16)
        self.credits = {ch: Credits(dut, f"tl_{ch}") for ch in ("rd_rsp", "wr_rsp")}
        self.queues = {"rd_rsp": [], "wr_rsp": []}
        self.sent = {"rd_rsp": 0, "wr_rsp": 0}
        for ch in self.queues:
            getattr(dut, f"tl_{ch}__vld").value = 0
        cocotb.start_soon(self._send())

    def read(self, beats):
        """Queue read beats (model ``ReadBeat``), to go in order."""
        self.queues["rd_rsp"].extend(beats)

    def write(self, rsp):
        self.queues["wr_rsp"].append(rsp)

    def idle(self):
        return not any(self.queues.values())

    async def _send(self):
        layouts = {"rd_rsp": rd_rsp_layout, "wr_rsp": wr_rsp_layout}
        while True:
            await RisingEdge(self.dut.clk)
            for ch, queue in self.queues.items():
                credits = self.credits[ch]
                credits.sample()
                vld, payload = (getattr(self.dut, f"tl_{ch}__{s}") for s in ("vld", "payload"))
                item = queue[0] if queue else None
                pool = credits.choose(item.vc, 1) if item and credits.ready else None
                if pool is None:
                    vld.value = 0
                    continue
                credits.spend(item.vc, 1, pool)
                fields = {k: v for k, v in dataclasses.asdict(item).items()
                          if k in layouts[ch].members}
                payload.value = layouts[ch].const({**fields, "pool": pool}).as_bits()
                vld.value = 1
                queue.pop(0)
                self.sent[ch] += 1

    def credits_home(self):
        return all(c.pool == RESPONSE_DEPTH and not any(c.vc) for c in self.credits.values())


def _answer(rng, r, status=None):
    """A completer's whole answer to ``r``: a list of ``ReadBeat`` (multi-beat or single-beat
    mode, offsets in any order in the latter) or a ``WriteResponse``."""
    a = answer_of(r)
    status = rng.choice(STATUSES) if status is None else status
    common = dict(tag=r.tag, vc=r.vc, src_acc=r.dst_acc, dst_acc=r.src_acc, status=status)
    channel = a.channel if a.channel != "either" else rng.choice(("read", "write"))
    if channel == "write":
        return WriteResponse(**common)
    beats = a.beats if a.channel == "read" else rng.randint(1, 4)
    if beats > 1 and rng.random() < 0.5:                    # single-beat mode
        offsets = rng.sample(range(beats), beats)
        return [ReadBeat(**common, num_beats=0, offset=o, last=k == beats - 1,
                         data=rng.getrandbits(512)) for k, o in enumerate(offsets)]
    return [ReadBeat(**common, num_beats=beats - 1, offset=k, last=k == beats - 1,
                     data=rng.getrandbits(512)) for k in range(beats)]


def _forgery(rng, outstanding):
    """A response the originator must drop: an unknown tag, an outstanding read or write
    request's tag on the other channel (never for a request either channel answers), or a
    Read's or AtomicR's tag on a burst of the wrong size."""
    fixed = [r for r in outstanding if answer_of(r).channel != "either"]
    sized = [r for r in outstanding if answer_of(r).known and answer_of(r).beats < 4]
    common = dict(vc=rng.randrange(4), src_acc=rng.randrange(1024), dst_acc=rng.randrange(1024),
                  status=0)
    if sized and rng.random() < 0.3:                     # a burst one beat too long
        r = rng.choice(sized)
        n = answer_of(r).beats
        return [ReadBeat(tag=r.tag, **common, num_beats=n, offset=k, last=k == n, data=0)
                for k in range(n + 1)]
    if fixed and rng.random() < 0.5:
        r = rng.choice(fixed)
        if answer_of(r).channel == "read":
            return WriteResponse(tag=r.tag, **common)
        return [ReadBeat(tag=r.tag, **common, num_beats=0, offset=0, last=True, data=0)]
    tag = rng.choice(FORGED_TAGS)
    if rng.random() < 0.5:
        return WriteResponse(tag=tag, **common)
    return [ReadBeat(tag=tag, **common, num_beats=k, offset=0, last=k == 0, data=0)
            for k in [rng.randrange(4)] for _ in range(1)]


def _requests(rng):
    """Random legal requests of every class (the traffic model's), fresh tags filled in later."""
    return UpliTraffic(rng.getrandbits(64)).requests()


async def _start(dut, rng, backpressure=0.3, req_credits=8):
    """Clock, the TL, the device and a reset; returns them with a :class:`Clocked` that counts
    as the TL's BFM receivers do."""
    cocotb.start_soon(Clock(dut.clk, PERIOD_NS, unit="ns").start())
    for name in ("req", "orig"):
        getattr(dut, f"{name}__valid").value = 0
    clock = Clocked(dut)
    tl = TlSide(dut, rng, req_credits)
    device = OriginatorDevice(dut, rng, backpressure=backpressure)
    await reset(dut)
    return tl, device, clock


def _counts(dut):
    value = int(dut.counts.value)
    return {kind.name: (value >> (16 * kind)) & 0xFFFF for kind in OriginatorCount}


class Clocked:
    """Rising clock edges since it was made."""

    def __init__(self, dut):
        self.now = 0
        cocotb.start_soon(self._count(dut))

    async def _count(self, dut):
        while True:
            await RisingEdge(dut.clk)
            self.now += 1


async def _issue(dut, device, model, tl, requests, rng, count):
    """The device sends ``count`` requests, each with a tag it has free; each reaching the TL
    is issued to the model and answered after a random delay, a forgery now and then."""
    seen, pending, sent, clock = 0, [], 0, 0
    while sent < count or seen < len(device.sent) or pending:
        await RisingEdge(dut.clk)
        clock += 1
        if sent < count and rng.random() < 0.3:
            free = [t for t in TAGS if device.answered(t)]
            if free:
                device.send(dataclasses.replace(next(requests), tag=rng.choice(free)))
                sent += 1
        while seen < len(tl.reqs.got):
            r = device.sent[seen]
            assert int(tl.reqs.got[seen].tag) == r.tag
            model.issue(r)
            pending.append((clock + rng.randrange(60), r))
            seen += 1
        for due, r in [p for p in pending if p[0] <= clock]:
            pending.remove((due, r))
            if rng.random() < 0.15:
                _deliver(tl, model, _forgery(rng, model.outstanding()))
            _deliver(tl, model, _answer(rng, r))


def _deliver(tl, model, answer):
    """Send ``answer`` from the TL and tell the model, which records what the device gets."""
    if isinstance(answer, WriteResponse):
        tl.write(answer)
        if model.tl_write_response(answer):
            model.delivered.append(answer)
    else:
        tl.read(answer)
        for beat in answer:
            if model.tl_read_beat(beat):
                model.delivered.append(beat)


def _model():
    model = Originator(CONFIG.outstanding, CONFIG.completion_timeout)
    model.delivered = []
    return model


async def _drain(dut, tl, device, clocks=3000):
    for _ in range(clocks // 10):
        if tl.idle() and tl.credits_home() and all(device.answered(r.tag) for r in device.sent):
            return
        await ClockCycles(dut.clk, 10)
    raise AssertionError("answers or credits did not come home")


async def _drained(dut, tl, device):
    """:func:`_drain`, then the counters' two clocks."""
    await _drain(dut, tl, device)
    await ClockCycles(dut.clk, 4)


def _check_requests(tl, device):
    """Every request the TL got is the device's, in order, with its data beats."""
    sent = [r for r in device.sent]
    assert len(tl.reqs.got) <= len(sent)
    for got, r in zip(tl.reqs.got, sent):
        assert (int(got.cmd), int(got.tag), int(got.addr), int(got.len)) == \
            (r.cmd, r.tag, r.addr, r.length)
    beats = [b for r in sent[:len(tl.reqs.got)] for b in r.data]
    assert [int(b.data).to_bytes(64, "little") for b in tl.origs.got] == beats


@cocotb.test()
async def answered(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    tl, device, _ = await _start(dut, rng)
    model = _model()
    await _issue(dut, device, model, tl, _requests(rng), rng, 300)
    await _drain(dut, tl, device)
    await ClockCycles(dut.clk, 20)
    _check_requests(tl, device)
    assert len(tl.reqs.got) == len(device.sent) == 300
    for channel, kind in (("rd", ReadBeat), ("wr", WriteResponse)):
        assert [item for ch, item in device.order if ch == channel] == \
            [item for item in model.delivered if isinstance(item, kind)], channel
    device.check_bursts()
    assert int(dut.isolated.value) == 0
    counts = _counts(dut)
    assert counts["UNEXPECTED"] == model.counts["UNEXPECTED"] > 0, counts
    assert counts["DUMMY"] == counts["DISCARDED"] == counts["ISOLATE"] == 0
    assert not model.outstanding()


async def _isolation(dut, clock, timeout=5000):
    for _ in range(timeout):
        await RisingEdge(dut.clk)
        await ReadOnly()
        if int(dut.isolated.value):
            return clock.now, IsolationCause(int(dut.cause.value))
    raise AssertionError("no Isolation Mode")


def _check_dummies(model, device, tags, before):
    """Each request of ``tags`` got, after the ``before`` items it had, the model's dummy."""
    for tag in tags:
        expected = model.dummy(tag)
        got = device.answers(tag)[before.get(tag, 0):]
        assert [repr(x) for x in got] == [repr(x) for x in expected], (tag, got, expected)


@cocotb.test()
async def dead_peer(dut):
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    tl, device, clock = await _start(dut, rng)
    model = _model()
    requests = _requests(rng)
    for tag in range(CONFIG.outstanding + 2):             # two wait for an entry
        device.send(dataclasses.replace(next(requests), tag=tag))
    while len(tl.reqs.got) < CONFIG.outstanding:
        await RisingEdge(dut.clk)
    for r in device.sent[:CONFIG.outstanding]:
        model.issue(r)
    when, cause = await _isolation(dut, clock)
    assert cause == IsolationCause.EXPIRED
    lo, hi = expiry_window(CONFIG.completion_timeout)
    assert lo <= when - tl.reqs.cycles[0] <= hi + SLACK, (when - tl.reqs.cycles[0], lo, hi)
    model.expire(device.sent[0].tag)
    await ClockCycles(dut.clk, 200)
    _check_dummies(model, device, [r.tag for r in device.sent[:CONFIG.outstanding]], {})
    for r in device.sent[CONFIG.outstanding:]:        # entries free: taken, never sent
        assert not model.issue(r)
    _check_dummies(model, device, [r.tag for r in device.sent[CONFIG.outstanding:]], {})
    # Requests after it: answered at once, never sent.
    got = len(tl.reqs.got)
    late = [dataclasses.replace(next(requests), tag=t) for t in (20, 21, 22)]
    for r in late:
        device.send(r)
        model.issue(r)
    await ClockCycles(dut.clk, 100)
    assert len(tl.reqs.got) == got
    _check_dummies(model, device, [r.tag for r in late], {})
    # The peer answers after all: discarded, credits back.
    for r in device.sent[:got]:
        _deliver(tl, model, _answer(rng, r))
    await _drained(dut, tl, device)
    counts = _counts(dut)
    assert counts["DISCARDED"] == model.counts["DISCARDED"] == sum(tl.sent.values()) > 0
    assert counts["DUMMY"] == model.counts["DUMMY"] == len(device.sent)
    assert counts["UNEXPECTED"] == 0 and IsolationCause(int(dut.cause.value)) == IsolationCause.EXPIRED
    device.check_bursts()


@cocotb.test()
async def isolate_mid_burst(dut):
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    tl, device, clock = await _start(dut, rng)
    model = _model()
    read4 = Request(cmd=0x03, vc=1, asi=0, tag=1, attr=0, length=63, metadata=0, addr=0x1000,
                    src_acc=5, dst_acc=9, num_beats=0)
    reads = [dataclasses.replace(read4, tag=t) for t in (1, 2, 3)]
    write = dataclasses.replace(next(_requests(rng)), tag=4)
    while answer_of(write).channel != "write":
        write = dataclasses.replace(next(_requests(rng)), tag=4)
    for r in [*reads, write]:
        device.send(r)
    while len(tl.reqs.got) < 4:
        await RisingEdge(dut.clk)
    for r in [*reads, write]:
        model.issue(r)
    burst = _answer(rng, reads[0], status=0)
    while burst[0].num_beats == 0:
        burst = _answer(rng, reads[0], status=0)
    single = [ReadBeat(tag=2, vc=1, src_acc=9, dst_acc=5, num_beats=0, offset=o, last=False,
                       status=0, data=rng.getrandbits(512)) for o in (2, 0)]
    _deliver(tl, model, single)
    _deliver(tl, model, burst[:2])
    while len(device.answers(1)) < 2 or len(device.answers(2)) < 2:
        await RisingEdge(dut.clk)
    _deliver(tl, model, WriteResponse(vc=0, tag=0x7FF, src_acc=0, dst_acc=0, status=ISOLATE))
    await _isolation(dut, clock)
    assert IsolationCause(int(dut.cause.value)) == IsolationCause.ISOLATE
    await ClockCycles(dut.clk, 200)
    before = {1: 2, 2: 2}
    assert device.answers(1)[:2] == burst[:2] and device.answers(2)[:2] == single
    _check_dummies(model, device, [1, 2, 3, 4], before)
    device.check_bursts()
    counts = _counts(dut)
    assert counts["ISOLATE"] == 1 and counts["DUMMY"] == model.counts["DUMMY"] == 4
    assert counts["DISCARDED"] == counts["UNEXPECTED"] == 0


@cocotb.test()
async def stalled(dut):
    rng = random.Random(cocotb.RANDOM_SEED + 3)
    tl, device, clock = await _start(dut, rng, req_credits=0)
    model = _model()
    r = dataclasses.replace(next(_requests(rng)), tag=7)
    device.send(r)
    start = clock.now
    when, cause = await _isolation(dut, clock)
    assert cause == IsolationCause.STALLED
    lo, hi = expiry_window(CONFIG.completion_timeout)
    assert lo <= when - start <= hi + SLACK, (when - start, lo, hi)
    model.stall()
    model.issue(r)
    await ClockCycles(dut.clk, 50)
    assert not tl.reqs.got
    _check_dummies(model, device, [7], {})


def test_originator():
    harness.run(UpliOriginator(CONFIG), CONFIG, toplevel="upli_originator", test_module=__name__)


@pytest.mark.parametrize("field, value, message", [
    ("outstanding", 0, "originator outstanding must be 1 .. 64, not 0"),
    ("outstanding", 65, "not 65"),
    ("completion_timeout", 15, "must be 0 \\(never\\) or 16"),
    ("completion_timeout", 1 << 32, "0 .. 4294967295"),
])
def test_config_checked(field, value, message):
    with pytest.raises(ValueError, match=message):
        OriginatorConfig(**{field: value})
