# SPDX-License-Identifier: BSD-2-Clause
"""The RTL DL end (``rtl/scaleup_ip/dl/dl.py``) against the golden models as its link partner: the far end
is ``rtl/scaleup_ip/model/dl/llr.py`` (replay, link states) with ``rtl/scaleup_ip/model/dl/flit.py``
(packing, CRC), both written from the spec without reading the RTL.

One flit time is 10 clocks. Each flit time the model end sends one DL flit (its header and the
body its packer made, in the wire order of Figure 6-4 with the CRC over that order, as the
model reads the figure) and takes the RTL's flits as they come; each way a
channel corrupts or drops flits at random and delays them. TL traffic both ways: the RTL's
``tl_out`` must be the model end's TL flits in order, and the model end's unpacked flits the
RTL's ``tl_in`` flits, once each. Where RTL and model read the spec differently, one of them
rejects the other's flits or asks for replays forever, and the test stalls and fails.
"""

import collections
import dataclasses
import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from scaleup_ip.dl import BEATS_PER_FLIT, DlConfig, DlState, FH_BYTES, FH_OFFSET, SEGMENTS, UalinkDl
from scaleup_ip.model.dl import flit as dl_flit, llr as dl_llr
from scaleup_ip.tl import flit_layout
from sim import harness
from sim.dl.env import PhySide, end_counts, lossy, random_tl_flits, start_end, tl_fields, tl_value
from sim.streams import LayoutSink, LayoutSource, random_pauses

#: Flit times each way through the channel.
_DELAY = 3
_ACK_TIMEOUT = 400
_REPLAY_LIMIT = 40
#: A channel that corrupts every flit (:func:`lossy`).
_CORRUPT = {"corrupt": 1, "drop": 0}
#: The model's NOP body.
_NOP = dl_flit.DlPayload(data=bytes(dl_flit.PAYLOAD_BYTES), segment_headers=bytes(SEGMENTS),
                         starts=(), carry_in=0, carry_out=0)


class _ModelEnd:
    """The far end: the LLR model, its packer's bodies queued as TL payloads, an unpacker for
    what it delivers."""

    def __init__(self, tl, malformed=None):
        self.llr = dl_llr.DlEndpoint(depth=32, ack_timeout=_ACK_TIMEOUT,
                                     replay_limit=_REPLAY_LIMIT)
        packer, source = dl_flit.Packer(), dl_flit.ListSource(tl)
        self.bodies = []
        while not source.empty or packer.carry:
            body = packer.pack(source)
            if not body.nop:
                if len(self.bodies) == malformed:         # DLAltSector set in SH0
                    headers = bytes([body.segment_headers[0] | dl_flit.SH_ALT_SECTOR]) + \
                        body.segment_headers[1:]
                    body = dataclasses.replace(body, segment_headers=headers)
                self.bodies.append(body)
                self.llr.push(body)
        self.unpacker = dl_flit.Unpacker()
        self.received = []

    def send(self):
        """The flit of this flit time as 640 bytes in wire order, or ``None``."""
        flit = self.llr.send()
        if flit is None:
            return None
        return dl_flit.wire_flit(dl_flit.assemble(flit.payload or _NOP, flit.header))

    def receive(self, wire):
        ok = dl_flit.wire_crc_ok(wire)
        logical = dl_flit.from_wire(wire)               # its CRC made anew for the unpacker
        flit = logical[:dl_flit.CRC_OFFSET] + dl_flit.crc_field(logical)
        header = int.from_bytes(flit[FH_OFFSET:FH_OFFSET + FH_BYTES], "little")
        delivered = self.llr.receive(dl_llr.Flit(header, flit if ok else None), crc_ok=ok)
        if delivered is not None:
            self.received.extend(self.unpacker.feed(delivered))


def _payload(wire):
    """Whether the DL flit ``wire`` (wire order) carries a payload."""
    logical = dl_flit.from_wire(wire)
    return bool(int.from_bytes(logical[FH_OFFSET:FH_OFFSET + FH_BYTES], "little")
                >> dl_llr.PAYLOAD_BIT & 1)


def _nop_ok(wire):
    """Whether the DL flit ``wire`` (wire order), which carries no payload, is the model's NOP
    flit with the same header: a zero body and segment headers, and its CRC."""
    logical = dl_flit.from_wire(wire)
    header = int.from_bytes(logical[FH_OFFSET:FH_OFFSET + FH_BYTES], "little")
    return dl_flit.wire_flit(dl_flit.assemble(_NOP, header)) == wire


def _link(dut, rng, model, errors, stats, corrupt_nth=None):
    """The channel both ways (:func:`lossy`, :data:`_DELAY` flit times) and the model end's
    flit times, every 10 clocks; every NOP flit the RTL sends must be the model's. With
    ``corrupt_nth``, each way's ``corrupt_nth``-th payload flit is corrupted (one bit flipped)
    whatever the draws: its receiver counts a bad CRC, and its sender replays it."""
    to_model = collections.deque()                  # (due clock, flit)
    payloads = collections.Counter()                # payload flits so far, by way

    def channel(way, flit):
        if corrupt_nth and _payload(flit):
            payloads[way] += 1
            if payloads[way] == corrupt_nth:
                return lossy(rng, _CORRUPT, stats, flit)
        return lossy(rng, errors, stats, flit)

    def on_flit(flit, now):
        stats["rtl_flits"] += 1
        assert _payload(flit) or _nop_ok(flit), f"clock {now}: a NOP flit not all zero"
        flit = channel("to_model", flit)
        if flit is not None:
            to_model.append((now + BEATS_PER_FLIT * _DELAY, flit))

    def on_clock(now):
        while to_model and to_model[0][0] <= now:
            model.receive(to_model.popleft()[1])
        if now % BEATS_PER_FLIT == 0:
            flit = model.send()
            if flit is not None:
                stats["model_flits"] += 1
                flit = channel("to_rtl", flit)
                if flit is not None:
                    phy.send(flit, now + BEATS_PER_FLIT * _DELAY)

    phy = PhySide(dut, on_flit, on_clock)
    cocotb.start_soon(phy.run())




async def _exchange(dut, rng, n, errors, corrupt_nth=None):
    """``n`` TL flits each way (the channel as :func:`_link` says); checks both arrive complete
    and in order."""
    stats = collections.Counter()
    ours, theirs = random_tl_flits(rng, n), random_tl_flits(rng, n)
    model = _ModelEnd(theirs)
    _link(dut, rng, model, errors, stats, corrupt_nth)
    source = LayoutSource(dut, "tl_in", flit_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "tl_out", flit_layout, dut.clk, dut.rst)
    sink.set_backpressure(random_pauses(rng, 0.1))
    for flit in ours:
        source.send_nowait(**tl_fields(flit.value, int(flit.m0) | int(flit.m1) << 1))
    for k, want in enumerate(theirs):
        got = await sink.recv()
        assert tl_value(got) == want.value, f"TL flit {k}"
        assert int(got.msg) == int(want.m0) | int(want.m1) << 1, f"TL flit {k}: message bits"
    for _ in range(2000):
        if len(model.received) >= n and model.llr.quiescent and int(dut.unacked.value) == 0:
            break
        await ClockCycles(dut.clk, 10)
    assert model.received == ours, (f"the model end got {len(model.received)} of {n} TL "
                                     f"flits, or not in order")
    assert model.llr.quiescent and int(dut.unacked.value) == 0, "flits left unacknowledged"
    assert source.empty() and sink.empty()
    tx, rx = end_counts(dut)
    dut._log.info("channel %s; RTL tx %s; RTL rx %s; model %s", dict(stats), tx, rx,
                  {k: v for k, v in model.llr.counters.as_dict().items() if v})
    return tx, rx


async def _start(dut):
    await start_end(dut, ack_timeout=_ACK_TIMEOUT, replay_limit=_REPLAY_LIMIT)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def cosim_clean(dut):
    """No errors: both ends come Up and exchange 600 TL flits each way, no replay."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    tx, rx = await _exchange(dut, rng, 600, {"corrupt": 0, "drop": 0})
    assert int(dut.state.value) == DlState.UP.value
    assert tx["REPLAYED"] == 0 and rx["BAD_CRC"] == 0


@cocotb.test(timeout_time=80, timeout_unit="ms")
async def cosim_errors(dut):
    """Flits corrupted (3 %, and each way's 10th payload flit for certain) and dropped (1 %)
    both ways: 2000 TL flits each way, once, in order; both ends replayed."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    tx, rx = await _exchange(dut, rng, 2000, {"corrupt": 0.03, "drop": 0.01}, corrupt_nth=10)
    assert tx["REPLAYED"] > 0 and rx["BAD_CRC"] > 0


@cocotb.test(timeout_time=40, timeout_unit="ms")
async def cosim_malformed(dut):
    """The model end's 6th payload flit has DLAltSector set (its CRC good): the RTL end
    delivers the TL flits the model's unpacker gives up to there (those of its first nine
    beats), counts the flit, takes the link down (§6.7.4.2) and brings it up again."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    theirs = random_tl_flits(rng, 200)
    model = _ModelEnd(theirs, malformed=5)
    unpacker = dl_flit.Unpacker()
    expected = [t for body in model.bodies
                for t in unpacker.feed(dl_flit.assemble(body, dl_flit.FH_PAYLOAD))]
    assert unpacker.error == "alt_sector" and len(expected) < len(theirs)
    _link(dut, rng, model, {"corrupt": 0, "drop": 0}, collections.Counter())
    sink = LayoutSink(dut, "tl_out", flit_layout, dut.clk, dut.rst)
    ups = int(dut.ups.value)                    # up, then down and up again: two more
    for k, want in enumerate(expected):
        got = await sink.recv()
        assert tl_value(got) == want.value, f"TL flit {k}"
    for _ in range(1000):
        await ClockCycles(dut.clk, 10)
        if int(dut.malformed.value) == 1 and int(dut.ups.value) >= ups + 2 \
                and int(dut.state.value) == DlState.UP.value:
            break
    else:
        raise AssertionError("the link did not go down and come up again")
    assert int(dut.malformed.value) == 1


@pytest.mark.parametrize("test", ["cosim_clean", "cosim_errors", "cosim_malformed"])
def test_dl_cosim(test):
    harness.run(UalinkDl(DlConfig()), DlConfig(), toplevel="ualink_dl",
                test_module=__name__, testcase=test)
