# SPDX-License-Identifier: BSD-2-Clause
"""Completion timeouts on a whole UALink: the UALink link top (``sim/ualink/link.py``) with
an accelerator's originator (``UpliOriginator``, TL README §7) on end ``a`` (``guard``), end
``b``'s completer played by Python, the error links between them (which can drop every flit).

* ``dead_peer``: requests are answered end to end and reach the device intact; then the
  completer stops answering: the oldest request's watchdog expires in its window, every
  outstanding request gets its completion-timeout dummy, requests after it are answered at once
  and never reach ``b``; when the completer answers after all, its responses cross the link and
  are discarded and counted, and the UPLI credits of both ends come home.
* ``link_never_back``: the error links drop every flit from a point on, with requests in
  flight: ``a``'s DL goes down (its flits are never acknowledged) and never comes back up,
  every request the device made gets one whole answer (its completer's, or the dummy), and
  the port is isolated; nothing hangs.
"""

import dataclasses
import random

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.dl import DlState
from scaleup_ip.model.tl.flit import ReadResponse, WriteResponse
from scaleup_ip.model.tl.isolation import (
    CMPTO,
    MANUFACTURED,
    Originator,
    ReadBeat,
    answer_of,
    expiry_window,
)
from scaleup_ip.model.tl.traffic import UpliTraffic, as_delivered
from scaleup_ip.tl import (
    IsolationCause,
    OriginatorCount,
    orig_data_layout,
    rd_rsp_layout,
    request_layout,
    wr_rsp_layout,
)
from sim import harness
from sim.dl.link_env import start
from sim.streams import LayoutSink, LayoutSource
from sim.tl.originator_env import OriginatorDevice
from sim.ualink.link import UALINK_LINK, UalinkLink
from sim.ualink.system import settle

CONFIG = UALINK_LINK
TAGS = range(32)
#: Clocks from the device's request to the originator's table (the boundary's skid buffer,
#: the UPLI channel ends) and from expiry to ``isolated``: the slack of the expiry window.
SLACK = 16
#: Tx_ack_time_out, flit times: a DL end with flits unacknowledged goes down 5,000 clocks into
#: the cut, well before the originator's timeout.
ACK_TIMEOUT = 500


class Completer:
    """End ``b``'s completer: takes every request with its data and, while :attr:`alive`,
    answers it at once, else keeps it in :attr:`held`. ``lookup``: the request of a tag."""

    def __init__(self, dut, rng, lookup):
        self.rng, self.lookup = rng, lookup
        clk, rst = dut.clk, dut.rst
        self.reqs = LayoutSink(dut, "b_rx_req", request_layout, clk, rst)
        self.origs = LayoutSink(dut, "b_rx_orig", orig_data_layout, clk, rst)
        self.rd = LayoutSource(dut, "b_rd_rsp", rd_rsp_layout, clk, rst)
        self.wr = LayoutSource(dut, "b_wr_rsp", wr_rsp_layout, clk, rst)
        self.alive, self.held, self.answers, self.got, self.sent = True, [], {}, 0, 0
        cocotb.start_soon(self._run())
        cocotb.start_soon(self._data())

    async def _run(self):
        while True:
            r = self.lookup(int((await self.reqs.recv()).tag))
            self.got += 1
            if self.alive:
                self.answer(r)
            else:
                self.held.append(r)

    async def _data(self):
        while True:
            await self.origs.recv()

    def answer(self, r):
        a = answer_of(r)
        common = dict(vc=r.vc, tag=r.tag, src_acc=r.dst_acc, dst_acc=r.src_acc, status=0)
        if a.channel == "read":
            item = ReadResponse(**common, num_beats=a.beats - 1, offset=0, last=True,
                                data=tuple(self.rng.randbytes(64) for _ in range(a.beats)),
                                error=(0,) * a.beats)
            for k, d in enumerate(item.data):
                self.rd.send_nowait(data=int.from_bytes(d, "little"), vc=r.vc, pool=0,
                                    tag=r.tag, src_acc=r.dst_acc, dst_acc=r.src_acc,
                                    num_beats=item.num_beats, status=0, offset=k,
                                    last=k == item.num_beats, error=0)
            self.sent += a.beats
        else:
            item = WriteResponse(**common)
            self.wr.send_nowait(vc=r.vc, pool=0, tag=r.tag, src_acc=r.dst_acc,
                                dst_acc=r.src_acc, status=0)
            self.sent += 1
        self.answers[r.tag] = item

    def idle(self):
        return self.rd.empty() and self.wr.empty()


def _as_delivered(item):
    """What the device gets for a completer's response, once over the link
    (:func:`~scaleup_ip.model.tl.traffic.as_delivered`): read beats or the write response."""
    item = as_delivered(item)
    if isinstance(item, WriteResponse):
        return [item]
    return [ReadBeat(tag=item.tag, vc=item.vc, src_acc=item.src_acc, dst_acc=item.dst_acc,
                     num_beats=item.num_beats, offset=k, last=k == item.num_beats,
                     status=item.status, data=int.from_bytes(d, "little"), error=e)
            for k, (d, e) in enumerate(zip(item.data, item.error))]


async def _start(dut, rng):
    """The link up with ``a`` guarded (the traffic from Python); returns the device, the
    completer and the table of the device's latest request of each tag."""
    dut.traffic.value = 0
    dut.guard.value = 1
    device = OriginatorDevice(dut, rng, prefix="a_", rx_prefix="a_rx_", backpressure=0.2)
    latest = {}
    completer = Completer(dut, rng, lambda tag: latest[tag])
    await start(dut, delay=20, seed=rng.getrandbits(64) | 1, ack_timeout=ACK_TIMEOUT)
    dut.link_enable.value = 1
    return device, completer, latest


def _send(device, latest, requests, rng, count):
    """``count`` requests with tags the device has free."""
    sent = []
    for _ in range(count):
        free = [t for t in TAGS if device.answered(t) and t not in sent]
        r = dataclasses.replace(next(requests), tag=rng.choice(free))
        latest[r.tag] = r
        device.send(r)
        sent.append(r.tag)
    return sent


async def _until(dut, done, clocks, what):
    for _ in range(clocks // 10):
        if done():
            return
        await ClockCycles(dut.clk, 10)
    raise AssertionError(f"{what} did not happen in {clocks} clocks")


def _counts(dut):
    value = int(dut.guard_counts.value)
    return {kind.name: (value >> (16 * kind)) & 0xFFFF for kind in OriginatorCount}


async def _answered_phase(dut, device, completer, latest, requests, rng, count):
    """``count`` requests answered end to end: the device gets each completer's response."""
    for _ in range(count // 8):
        tags = _send(device, latest, requests, rng, 8)
        await _until(dut, lambda: all(device.answered(t) for t in tags), 20_000, "answers")
        for t in tags:
            assert device.answers(t) == _as_delivered(completer.answers[t]), t
    assert not int(dut.isolated.value)


async def _isolation(dut, timeout):
    clocks = 0
    while not int(dut.isolated.value):
        await RisingEdge(dut.clk)
        await ReadOnly()
        clocks += 1
        assert clocks < timeout, "no Isolation Mode"
    return clocks


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def dead_peer(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    device, completer, latest = await _start(dut, rng)
    requests = UpliTraffic(rng.getrandbits(64)).requests()
    await _answered_phase(dut, device, completer, latest, requests, rng, 48)
    completer.alive = False
    tags = _send(device, latest, requests, rng, 6)
    waited = await _isolation(dut, 2 * CONFIG.completion_timeout)
    lo, hi = expiry_window(CONFIG.completion_timeout)
    assert lo <= waited <= hi + SLACK, (waited, lo, hi)
    assert IsolationCause(int(dut.cause.value)) == IsolationCause.EXPIRED
    assert len(completer.held) == len(tags)
    model = Originator(CONFIG.outstanding, CONFIG.completion_timeout)
    for t in tags:
        model.issue(latest[t])
    model.expire(tags[0])
    late = list(range(100, 103))
    for t in late:
        latest[t] = r = dataclasses.replace(next(requests), tag=t)
        device.send(r)
    await ClockCycles(dut.clk, 300)
    dummies = {t: model.dummy(t) for t in tags}
    for t in late:                                            # entries free again: taken
        assert not model.issue(latest[t])
        dummies[t] = model.dummy(t)
    for t in tags + late:
        assert device.answers(t) == dummies[t], t
    assert completer.got == 48 + len(tags)                    # the late ones never crossed
    for r in completer.held:                                  # the peer answers after all
        completer.answer(r)
    beats = sum(len(_as_delivered(completer.answers[t])) for t in tags)
    await _until(dut, lambda: _counts(dut)["DISCARDED"] == beats and completer.idle(),
                 20_000, "discarding the late answers")
    await ClockCycles(dut.clk, 200)
    for t in tags + late:
        assert device.answers(t) == dummies[t], t
    counts = _counts(dut)
    assert counts["DUMMY"] == len(tags) + len(late) and counts["UNEXPECTED"] == 0
    await settle(dut, CONFIG)                        # every DL flit acknowledged, credits home
    device.check_bursts()


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def link_never_back(dut):
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    device, completer, latest = await _start(dut, rng)
    requests = UpliTraffic(rng.getrandbits(64)).requests()
    await _answered_phase(dut, device, completer, latest, requests, rng, 16)
    tags = _send(device, latest, requests, rng, 6)
    await ClockCycles(dut.clk, rng.randrange(5, 100))         # some answered, some not
    dut.drop_threshold.value = (1 << 32) - 1                  # every flit, for good
    tags += _send(device, latest, requests, rng, 2)           # never answered
    await _isolation(dut, 2 * CONFIG.completion_timeout)
    assert IsolationCause(int(dut.cause.value)) == IsolationCause.EXPIRED
    await ClockCycles(dut.clk, 300)
    for t in tags:
        got = device.answers(t)
        _check_whole(got, t)
        expected = _as_delivered(completer.answers[t]) if t in completer.answers else []
        for item in got:                                      # the completer's, or dummies
            mine = [e for e in expected if _same_place(e, item)]
            assert mine == [item] or (item.status == CMPTO and _dummy_like(item)), (t, item)
    assert _counts(dut)["DUMMY"] >= 2
    assert int(dut.a_state.value) != DlState.UP.value       # its flits were never acknowledged
    device.check_bursts()


def _check_whole(got, tag):
    """``got`` is one whole answer: a write response, or read beats with every offset once
    and RdRspLast on the final one only."""
    assert got, f"tag {tag}: no answer"
    if isinstance(got[0], WriteResponse):
        assert len(got) == 1, (tag, got)
        return
    assert all(isinstance(b, ReadBeat) for b in got) and [b.last for b in got][-1], (tag, got)
    assert sum(b.last for b in got) == 1, (tag, got)
    assert sorted(b.offset for b in got) == list(range(len(got))), (tag, got)


def _same_place(expected, item):
    if isinstance(item, WriteResponse):
        return isinstance(expected, WriteResponse)
    return isinstance(expected, ReadBeat) and expected.offset == item.offset


def _dummy_like(item):
    return isinstance(item, WriteResponse) or item.data == MANUFACTURED


def test_isolation():
    harness.run(UalinkLink(CONFIG), CONFIG, toplevel="ualink_link", test_module=__name__)
