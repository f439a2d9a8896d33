# SPDX-License-Identifier: BSD-2-Clause
"""The DL flit packer (``rtl/scaleup_ip/dl/pack.py``) and unpacker (``rtl/scaleup_ip/dl/unpack.py``) against the
golden model ``rtl/scaleup_ip/model/dl/flit.py``.

Packer: with TL flits always there, its DL flits equal the model's byte for byte; with TL flits
missing at random and ``o`` stalling at random, the model's rules checker accepts every DL
flit and finds the TL flits in order. Unpacker: DL flits the model packs with TL flits present
at random decision points (patterns the RTL packer never makes among them), NOP flits left
out, give back the TL flits in order under random stalls; a fuzzer flips segment-header bits and the TL flits out, the malformed count
and the containment are the model's.
"""

import dataclasses
import os
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.config import BlockConfig
from scaleup_ip.dl import (
    BEATS_PER_FLIT,
    BEAT_BYTES,
    DlPack,
    DlUnpack,
    FH_BYTES,
    FH_OFFSET,
    SEGMENTS,
    SH_OFFSET,
    body_beat_layout,
    segment_header,
    unpack_beat_layout,
)
from scaleup_ip.model.dl import flit as model
from scaleup_ip.tl import flit_layout
from sim import harness
from sim.dl.env import random_tl_flits, tl_fields, tl_value
from sim.streams import LayoutSink, LayoutSource, random_pauses, reset

#: The payload bit of a flit header [Tables 6-14, 6-15].
_PAYLOAD_BIT = 1 << 20




def _whole(body, payload):
    """A 640-byte DL flit from the RTL's body bytes: the flit header only says payload or NOP
    (the LLR fills in the rest), and the CRC is the model's."""
    header = (_PAYLOAD_BIT if payload else 0).to_bytes(FH_BYTES, "little")
    flit = body[:FH_OFFSET] + header + body[SH_OFFSET:]
    return flit[:-4] + model.crc_field(flit[:-4] + bytes(4))


async def _start(dut):
    Clock(dut.clk, 10, unit="ns").start()
    await reset(dut)


# --- DlPack -----------------------------------------------------------------------------------

async def _pack(dut, rng, tl, idle, stall):
    """Send ``tl`` through the packer; return the DL flits (bytes, payload) it makes until the
    last TL flit is out and one more flit has passed."""
    source = LayoutSource(dut, "i", flit_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "o", body_beat_layout, dut.clk, dut.rst)
    source.set_idle(random_pauses(rng, idle))
    sink.set_backpressure(random_pauses(rng, stall))
    for flit in tl:
        source.send_nowait(**tl_fields(flit.value, int(flit.m0) | int(flit.m1) << 1))
    flits, beats, extra = [], [], None
    while extra is None or len(flits) < extra:
        beat = await sink.recv()
        beats.append(int(beat.data).to_bytes(BEAT_BYTES, "little"))
        if beat.last:
            assert len(beats) == BEATS_PER_FLIT, f"a DL flit of {len(beats)} beats"
            flits.append((b"".join(beats), int(beat.payload)))
            beats = []
            if extra is None and source.empty():
                extra = len(flits) + 2      # the last TL flit may carry over into the next
    assert source.empty() and sink.empty()
    return flits


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def tx_full_load(dut):
    """TL flits always there, ``o`` always ready: DL flits equal the model's byte for byte, at
    9.8125 TL flits per DL flit (157 in 16)."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    tl = random_tl_flits(rng, 16 * 12)              # 19.6 DL flits
    got = await _pack(dut, rng, tl, 0, 0)
    # The packer forms its first beat the clock after reset, before the source drives: its
    # first decision point (sector 0) finds no TL flit, every later one finds one.
    packer = model.Packer()
    source = model.ScriptedSource(tl, lambda d: d.dl_flit > 0 or d.sector >= 16)
    starts = 0
    for k, (flit, payload) in enumerate(got):
        want = packer.pack(source)
        starts += len(want.starts) if 0 < k <= 16 else 0
        assert payload == (not want.nop), f"DL flit {k}: payload flag"
        assert flit[:FH_OFFSET] == want.data, f"DL flit {k}: payload sectors differ"
        assert flit[SH_OFFSET:SH_OFFSET + SEGMENTS] == want.segment_headers, \
            f"DL flit {k}: segment headers {flit[SH_OFFSET:SH_OFFSET + 5].hex()} != " \
            f"{want.segment_headers.hex()}"
        assert not any(flit[FH_OFFSET:SH_OFFSET]) and not any(flit[SH_OFFSET + SEGMENTS:])
    assert model.check([_whole(f, p) for f, p in got], tl) == tl
    assert starts == 157, f"{starts} TL flits started in DL flits 1 .. 16, not 157"


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def tx_random(dut):
    """TL flits missing at random, ``o`` stalling at random: every DL flit keeps the packing
    rules and the TL flits come out in order, none lost."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    for idle, stall in ((0.5, 0.0), (0.2, 0.5), (0.9, 0.3), (0.05, 0.05)):
        tl = random_tl_flits(rng, 120)
        got = await _pack(dut, rng, tl, idle, stall)
        assert model.check([_whole(f, p) for f, p in got], tl) == tl, (idle, stall)
        await ClockCycles(dut.clk, 25)              # the packer runs on: NOP flits
        await reset(dut)


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """The DL framing blocks have no parameters: one build each."""


@pytest.mark.parametrize("test", ["tx_full_load", "tx_random"])
def test_dl_pack(test):
    harness.run(DlPack(), _Config(), toplevel="dl_pack", test_module=__name__,
                testcase=test)


# --- DlUnpack ---------------------------------------------------------------------------------

def _model_flits(tl, source):
    """The model packer's DL flits for ``tl`` (TL flits taken from ``source``), until all are
    packed and carried out."""
    packer, flits = model.Packer(), []
    while not source.empty or packer.carry:
        payload = packer.pack(source)
        header = 0 if payload.nop else _PAYLOAD_BIT
        flits.append(model.assemble(payload, header))
    return flits


async def _unpack(dut, rng, flits, idle, stall, expected):
    """Feed the payload flits of ``flits`` (NOPs left out, as the LLR does) under random idle
    clocks and stalls and check the TL flits that come out equal ``expected``; none is
    malformed."""
    source = LayoutSource(dut, "i", unpack_beat_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "o", flit_layout, dut.clk, dut.rst)
    source.set_idle(random_pauses(rng, idle))
    sink.set_backpressure(random_pauses(rng, stall))
    before = int(dut.malformed.value)
    await _feed(dut, source, sink, flits, expected, "")
    assert int(dut.malformed.value) == before


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def rx_random(dut):
    """Model DL flits with TL flits at random decision points (each decision point asked on its
    own, so also a start at sector 127 or 143 after an empty one in the same beat), under
    random stalls: the TL flits in order."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    # 180 TL flits: at full rate they run through 18 DL flits, and the TL flits' starts move by
    # 160 - 157 = 3 sectors (mod 16) from one DL flit to the next, so every start sector mod 16
    # occurs (among them a TL flit ending exactly at the payload's last sector, 141..156).
    for probability, idle, stall in ((1.0, 0, 0), (0.5, 0.3, 0.3), (0.2, 0, 0.6), (0.8, 0.5, 0)):
        tl = random_tl_flits(rng, 180)
        seed = rng.getrandbits(32)
        dut._log.info("model source: probability %s seed %d", probability, seed)
        flits = _model_flits(tl, model.RandomSource(tl, probability, seed))
        await _unpack(dut, rng, flits, idle, stall, tl)
        await reset(dut)


def _fuzzed(rng, count):
    """Model-packed DL flits for ``count`` random TL flits, one random segment-header bit of
    one payload flit flipped (CRC made good again): what the model's unpacker gives for them
    (TL flits, and whether it contained a malformed flit)."""
    tl = random_tl_flits(rng, count)
    flits = _model_flits(tl, model.RandomSource(tl, rng.choice((1.0, 0.7, 0.3)),
                                                rng.getrandbits(32)))
    payloads = [k for k, f in enumerate(flits) if not model.is_nop(f)]
    k, segment, bit = rng.choice(payloads), rng.randrange(SEGMENTS), rng.randrange(8)
    bad = bytearray(flits[k])
    bad[SH_OFFSET + segment] ^= 1 << bit
    bad[-4:] = model.crc_field(bytes(bad[:-4]) + bytes(4))
    flits[k] = bytes(bad)
    unpacker = model.Unpacker()
    expected = [t for f in flits for t in unpacker.feed(f)]
    headers = " ".join(f"{h:02x}" for h in bad[SH_OFFSET:SH_OFFSET + SEGMENTS])
    unpacker.mutation = f"DL flit {k} of {len(flits)}: SH{segment} bit {bit} (headers {headers})"
    return flits, expected, unpacker


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def rx_fuzz(dut):
    """``FUZZ_CASES`` cases, each model-packed DL flits with one segment-header bit flipped in
    one of them (the CRC good): the TL flits out are the model's, whatever the flipped bit
    made of them; a malformed flit is counted, ``fault`` pulses, and every later TL flit is
    dropped until ``restart``, after which fresh flits come through whole (README §1)."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    source = LayoutSource(dut, "i", unpack_beat_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "o", flit_layout, dut.clk, dut.rst)
    sink.set_backpressure(random_pauses(random.Random(rng.getrandbits(32)), 0.2))
    faults = []
    cocotb.start_soon(_watch(dut, dut.fault, faults))
    contained = cases = 0
    for case in range(int(os.environ["FUZZ_CASES"])):
        flits, expected, unpacker = _fuzzed(rng, rng.randrange(1, 40))
        more, error = [], unpacker.error
        if error is not None:                       # brought up again: a fresh stream
            contained += 1
            unpacker.restart()
            tl = random_tl_flits(rng, 12)
            more = _model_flits(tl, model.ListSource(tl))
        before = int(dut.malformed.value), len(faults)
        await _feed(dut, source, sink, flits, expected, f"{case} ({unpacker.mutation})")
        assert (int(dut.malformed.value) - before[0], len(faults) - before[1]) == \
            ((1, 1) if error else (0, 0)), f"case {case}: {unpacker.mutation}: model {error}"
        if more:
            dut.restart.value = 1
            await RisingEdge(dut.clk)
            dut.restart.value = 0
            await _feed(dut, source, sink, more, [t for f in more for t in unpacker.feed(f)],
                        case)
        await reset(dut)
        cases += 1
    dut._log.info("%d cases, %d contained", cases, contained)
    assert contained > 0


async def _watch(dut, signal, seen):
    while True:
        await RisingEdge(dut.clk)
        await ReadOnly()
        if int(signal.value):
            seen.append(1)


async def _feed(dut, source, sink, flits, expected, case):
    """The payload flits of ``flits`` into the unpacker (NOPs left out, as the LLR does); the
    TL flits out must be ``expected`` and no more."""
    for flit in flits:
        if model.is_nop(flit):
            continue
        headers = [segment_header.from_bits(b) for b in flit[SH_OFFSET:SH_OFFSET + SEGMENTS]]
        for b in range(BEATS_PER_FLIT):
            source.send_nowait(data=int.from_bytes(flit[b * BEAT_BYTES:(b + 1) * BEAT_BYTES],
                                                   "little"), headers=headers)
    for k, want in enumerate(expected):
        got = await sink.recv()
        assert tl_value(got) == want.value, f"case {case}: TL flit {k} differs"
        assert int(got.msg) == int(want.m0) | int(want.m1) << 1, f"case {case}: TL flit {k}"
    await source.wait()
    await ClockCycles(dut.clk, 4)
    assert source.empty() and sink.empty(), f"case {case}: TL flits beyond the model's"


@pytest.mark.parametrize("test", ["rx_random", "rx_fuzz"])
def test_dl_unpack(test):
    harness.run(DlUnpack(), _Config(), toplevel="dl_unpack", test_module=__name__,
                testcase=test, extra_env={"FUZZ_CASES": str(harness.long_form(1000, 20000))})
