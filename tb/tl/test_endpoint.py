# SPDX-License-Identifier: BSD-2-Clause
"""The TL behind UPLI channels (``rtl/scaleup_ip/tl/endpoint.py``), its flits looped back to itself:
credit-obeying UPLI senders in, credit-releasing UPLI receivers out."""

import dataclasses
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from scaleup_ip.model.tl.flit import READ, WRITE, WRITE_FULL, Request
from scaleup_ip.tl import (
    Status,
    TlConfig,
    TlEndpoint,
    UPLI_DEPTH,
    UpliError,
    orig_data_layout,
    rd_rsp_layout,
    request_layout,
    upli_error_counts,
    wr_rsp_layout,
)
from scaleup_ip.tl.tx import BURST_TIMEOUT
from sim import harness
from sim.streams import reset
from sim.tl.env import PERIOD_NS
from sim.tl.rx_env import rebuild_items
from sim.tl.traffic import (
    ALL_BYTES,
    by_kind,
    make_read_response,
    make_request,
    make_write_response,
    random_items,
    upli_transfers,
)
from sim.tl.upli_bfm import UpliItemSender, UpliReceiver, request_beats, response_beats

_OUT = {"req": request_layout, "orig": orig_data_layout, "rd_rsp": rd_rsp_layout,
        "wr_rsp": wr_rsp_layout}


async def _loop(dut):
    """The link: every flit out comes straight back in."""
    dut.flit_out__ready.value = 1
    while True:
        await RisingEdge(dut.clk)
        dut.flit_in__valid.value = dut.flit_out__valid.value
        dut.flit_in__payload.value = dut.flit_out__payload.value


async def _start(dut):
    """Clock, loop, sender and receivers of random credit behaviour; after reset."""
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    dut.flit_in__valid.value = 0
    sender = UpliItemSender(dut)
    receivers = {name: UpliReceiver(dut, f"rx_{name}", layout, rng, pool=rng.randint(4, 10),
                                    vcs=[rng.randrange(3) for _ in range(4)])
                 for name, layout in _OUT.items()}
    cocotb.start_soon(_loop(dut))
    await reset(dut)
    return rng, sender, receivers


async def _drain(dut, sender, receivers, want):
    """Wait until ``want`` UPLI transfers came out, then 50 clocks more."""
    for _ in range(20000):
        await RisingEdge(dut.clk)
        if sum(len(r.got) for r in receivers.values()) >= want:
            break
    await ClockCycles(dut.clk, 50)
    assert sender.idle()


async def _idle(dut, sender):
    while not sender.idle():
        await RisingEdge(dut.clk)


def _check_delivered(receivers, expected):
    got = rebuild_items({name: r.got for name, r in receivers.items()}, pool=None)
    for kind, delivered, want in zip(("requests", "read responses", "write responses"),
                                     got, expected):
        assert delivered == want, kind


def _check_credits_home(sender):
    """Every UPLI credit the endpoint released is back with the sender."""
    for name, (_, _, credits) in sender.channels.items():
        assert (credits.pool, credits.vc) == (UPLI_DEPTH, [0] * 4), name


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def endpoint_loopback(dut):
    """Random items in on UPLI come back out on UPLI intact; every UPLI beat in both
    directions went with a credit of the kind it names; no overrun, no error."""
    rng, sender, receivers = await _start(dut)
    items = random_items(rng, 200)
    for item in items:
        sender.send(item)
    await _drain(dut, sender, receivers, upli_transfers(items))
    _check_delivered(receivers, by_kind(items))
    assert not dut.error.value and int(dut.overrun.value) == 0
    assert int(dut.upli_errors.value) == 0
    _check_credits_home(sender)


def _patched(layout, bits, **changes):
    """``bits`` of ``layout`` with some fields changed."""
    view = layout.from_bits(bits)
    return layout.const({**{name: int(view[name]) for name, _ in layout},
                         **changes}).as_bits()


def _clocks(beats):
    """Transfers of one request or response as clocks: beat 0 with its request."""
    clocks = []
    for name, bits in beats:
        if name == "orig" and clocks and "orig" not in clocks[-1]:
            clocks[-1]["orig"] = bits
        else:
            clocks.append({name: bits})
    return clocks


def _filled(item, from_beat):
    """``item`` as delivered when its beats from ``from_beat`` on never came: each sent as a
    poisoned beat of zeros with no byte enables (all for a WriteFull)."""
    n = len(item.data)
    keep = range(from_beat)
    changes = {
        "data": tuple(item.data[k] if k in keep else bytes(64) for k in range(n)),
        "error": tuple(item.error[k] if k in keep else True for k in range(n)),
    }
    if isinstance(item, Request):
        none = ALL_BYTES if item.cmd == WRITE_FULL else 0
        changes["byte_en"] = tuple(item.byte_en[k] if k in keep else none for k in range(n))
    return dataclasses.replace(item, **changes)


@dataclasses.dataclass(frozen=True)
class _Until:
    """A step of :func:`_violations`: wait until the endpoint has counted ``count`` violations
    of ``kind`` (a burst closed by the timeout: how long that takes depends on when the packer
    has room for the next beat)."""
    kind: UpliError
    count: int


async def _until(dut, step):
    for _ in range(64 * BURST_TIMEOUT):
        got = upli_error_counts.from_bits(int(dut.upli_errors.value))
        if int(got[step.kind]) >= step.count:
            return
        await RisingEdge(dut.clk)
    raise AssertionError(f"{step.kind.name} never reached {step.count}")


def _violations(rng):
    """``(steps, items as sent, counts)`` for each kind of UPLI violation (README §5), with
    good transfers among them: the steps to drive (each a list of clocks, driven back to back with
    credits for all its beats, or an :class:`_Until`), the items the far side must deliver (before
    :func:`~sim.tl.traffic.as_received`), and the expected :class:`UpliError` counts."""
    clocks, want, counts = [], [], dict.fromkeys(UpliError, 0)

    def good(item):
        clocks.append(_clocks(request_beats(item) if isinstance(item, Request)
                              else response_beats(item)))
        want.append(item)

    def bad(kind, beats, delivered=None, extra=()):
        clocks.append(beats)
        counts[kind] += 1
        for k in extra:
            counts[k] += 1
        if delivered is not None:
            want.append(delivered)

    def req(cmd, addr, nbytes, **kw):
        return make_request(rng, cmd, addr, nbytes, **kw)

    # Requests refused whole, with the beats they announce.
    read = req(READ, 0x100, 64)
    bad(UpliError.RESERVED_COMMAND,
        [{"req": _patched(request_layout, request_beats(read)[0][1], cmd=0x01)}])
    bad(UpliError.IMPOSSIBLE_LENGTH,            # crosses 256 bytes
        [{"req": _patched(request_layout, request_beats(read)[0][1], addr=0x1C0, len=31)}])
    bad(UpliError.IMPOSSIBLE_LENGTH,            # ReqAddr[1:0] = 2
        [{"req": _patched(request_layout, request_beats(read)[0][1], addr=0x102)}])
    w = req(WRITE, 0x200, 16, num_beats=1)      # 16 bytes announced as 2 beats
    bad(UpliError.IMPOSSIBLE_LENGTH, _clocks(request_beats(w)))
    good(req(READ, 0x300, 32))
    # Timing of Request and OrigData.
    w = req(WRITE, 0x400, 64)
    bad(UpliError.MISSING_BEAT0,
        [{"req": request_beats(w)[0][1]}, {"orig": request_beats(w)[1][1]}],
        extra=[UpliError.STRAY_DATA])
    bad(UpliError.STRAY_DATA, [{"orig": request_beats(req(WRITE, 0, 64))[1][1]}])
    # Beats mended in flight.
    w = req(WRITE, 0x500, 128)
    beats = request_beats(w)
    beats[2] = ("orig", _patched(orig_data_layout, beats[2][1], offset=3))
    bad(UpliError.BEAT_SEQUENCE, _clocks(beats),
        dataclasses.replace(w, error=(False, True)))
    w = req(WRITE, 0x600, 128)
    beats = request_beats(w)
    beats[1] = ("orig", _patched(orig_data_layout, beats[1][1], last=1))
    bad(UpliError.BEAT_SEQUENCE, _clocks(beats), w)
    w = req(WRITE_FULL, 0x700, 64)
    beats = request_beats(w)
    beats[1] = ("orig", _patched(orig_data_layout, beats[1][1], byte_en=ALL_BYTES >> 1))
    bad(UpliError.WRITEFULL_BYTE_EN, _clocks(beats), dataclasses.replace(w, error=(True,)))
    # Bursts closed early: by the next request, by the timeout (then the late beat is dropped).
    w, nxt = req(WRITE, 0x800, 192), req(WRITE, 0x900, 64)
    bad(UpliError.TRUNCATED_BURST, _clocks(request_beats(w)[:3]), _filled(w, 2))
    good(nxt)
    w = req(WRITE, 0xA00, 128)
    beats = request_beats(w)
    bad(UpliError.TRUNCATED_BURST, _clocks(beats[:2]), _filled(w, 1))
    clocks += [_Until(UpliError.TRUNCATED_BURST, counts[UpliError.TRUNCATED_BURST]),
               [{"orig": beats[2][1]}]]                 # the late beat, dropped
    good(req(WRITE, 0xB00, 64))
    # Responses.
    wr = make_write_response(rng)
    bad(UpliError.RESERVED_STATUS,
        [{"wr_rsp": _patched(wr_rsp_layout, response_beats(wr)[0][1], status=1)}],
        dataclasses.replace(wr, status=Status.TARGET_ABORT.value))
    rd = make_read_response(rng, 0)
    bad(UpliError.RESERVED_STATUS,              # ISOLATE is for write responses only
        [{"rd_rsp": _patched(rd_rsp_layout, response_beats(rd)[0][1],
                             status=Status.ISOLATE.value)}],
        dataclasses.replace(rd, status=Status.TARGET_ABORT.value))
    rd = make_read_response(rng, 2)
    beats = response_beats(rd)
    beats[1] = ("rd_rsp", _patched(rd_rsp_layout, beats[1][1], offset=2))
    bad(UpliError.RSP_SEQUENCE, _clocks(beats), dataclasses.replace(rd, error=(False, True, False)))
    bad(UpliError.RSP_SEQUENCE, _clocks(response_beats(make_read_response(rng, 1))[1:]))
    rd = make_read_response(rng, 3)
    bad(UpliError.RSP_SEQUENCE, _clocks(response_beats(rd)[:2]), _filled(rd, 2))
    good(make_read_response(rng, 0))
    rd = make_read_response(rng, 1)
    beats = response_beats(rd)
    bad(UpliError.RSP_SEQUENCE, _clocks(beats[:1]), _filled(rd, 1))
    clocks += [_Until(UpliError.RSP_SEQUENCE, counts[UpliError.RSP_SEQUENCE]),
               _clocks(beats[1:])]                      # the late beat, dropped
    good(make_write_response(rng))
    return clocks, want, counts


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def endpoint_upli_violations(dut):
    """Each UPLI violation (README §5) is counted by kind and answered as documented (dropped,
    poisoned, mended or made up); the good transfers before, among and after them arrive
    intact; no TL error; every UPLI credit comes home."""
    rng, sender, receivers = await _start(dut)
    before, after = random_items(rng, 40), random_items(rng, 40)
    steps, middle, counts = _violations(rng)
    for item in before:                 # in order: the raw steps would overtake queued items
        sender.send(item)
    await _idle(dut, sender)
    for step in steps:
        if isinstance(step, _Until):
            await _idle(dut, sender)
            await _until(dut, step)
        else:
            sender.send_raw(step)
    await _idle(dut, sender)
    for item in after:
        sender.send(item)
    want = before + middle + after
    await _drain(dut, sender, receivers, upli_transfers(want))
    _check_delivered(receivers, by_kind(want))
    got = upli_error_counts.from_bits(int(dut.upli_errors.value))
    assert {k: int(got[k]) for k in UpliError} == counts
    assert not dut.error.value and int(dut.overrun.value) == 0
    _check_credits_home(sender)


@pytest.mark.parametrize("config", [TlConfig(rx_req=4, rx_rsp=8, rx_req_data=8,
                                             rx_rsp_data=8)], ids=lambda c: c.slug())
def test_tl_endpoint(config):
    harness.run(TlEndpoint(config), config, toplevel="tl_endpoint",
                test_module=__name__)
