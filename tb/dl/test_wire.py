# SPDX-License-Identifier: BSD-2-Clause
"""The wire-order stages (``rtl/scaleup_ip/dl/to_wire.py``, ``rtl/scaleup_ip/dl/from_wire.py``) against the golden
model's reading of Figure 6-4 (``rtl/scaleup_ip/model/dl/flit.py`` ``to_wire``/``from_wire``,
transcribed from the figure apart from the RTL's table).

To the wire: random logical flits leave with their bytes where the model puts them, in order,
under random gaps and stalls, then back to back at one beat per clock. From the wire: random
wire-order flits, each beat with its flit's verdict and headers, leave in the logical order
(the segment headers from ``headers``), the verdict and headers kept, the last beat of a flit
without waiting for the next flit.
"""

import dataclasses
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles

from scaleup_ip.config import BlockConfig
from scaleup_ip.dl import (
    BEATS_PER_FLIT,
    BEAT_BYTES,
    DL_FLIT_BYTES,
    DlFromWire,
    DlToWire,
    FH_OFFSET,
    SEGMENTS,
    SH_OFFSET,
    checked_beat_layout,
    phy_beat_layout,
    segment_header,
)
from scaleup_ip.model.dl import flit as model
from sim import harness
from sim.streams import LayoutSink, LayoutSource, random_pauses, reset

#: (idle, stall, flits) of each round.
ROUNDS = ((0.3, 0.3, 12), (0, 0, 12), (0.5, 0, 6), (0, 0.6, 6))


def _beats(flit):
    return [int.from_bytes(flit[b * BEAT_BYTES:(b + 1) * BEAT_BYTES], "little")
            for b in range(BEATS_PER_FLIT)]


async def _received(sink, n):
    """``n`` flits from ``sink``: (bytes, beats)."""
    flits = []
    for _ in range(n):
        beats = [await sink.recv() for _ in range(BEATS_PER_FLIT)]
        assert [int(beat.last) for beat in beats] == [0] * (BEATS_PER_FLIT - 1) + [1]
        flits.append((b"".join(int(beat.data).to_bytes(BEAT_BYTES, "little")
                               for beat in beats), beats))
    return flits


def _rounds(rng, source, sink):
    """Per round of :data:`ROUNDS`, with its idle cycles and stalls set: (idle, stall, random
    flits)."""
    for idle, stall, n in ROUNDS:
        source.set_idle(random_pauses(rng, idle))
        sink.set_backpressure(random_pauses(rng, stall))
        yield idle, stall, [rng.randbytes(DL_FLIT_BYTES) for _ in range(n)]


async def _start(dut):
    Clock(dut.clk, 10, unit="ns").start()
    await reset(dut)
    return random.Random(cocotb.RANDOM_SEED)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def to_wire(dut):
    rng = await _start(dut)
    source = LayoutSource(dut, "i", phy_beat_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "o", phy_beat_layout, dut.clk, dut.rst)
    for idle, stall, flits in _rounds(rng, source, sink):
        for flit in flits:
            for b, beat in enumerate(_beats(flit)):
                source.send_nowait(data=beat, last=int(b == BEATS_PER_FLIT - 1))
        started = cocotb.utils.get_sim_time("ns") // 10
        got = await _received(sink, len(flits))
        took = cocotb.utils.get_sim_time("ns") // 10 - started
        for k, (flit, (wire, _)) in enumerate(zip(flits, got, strict=True)):
            assert wire == model.to_wire(flit), f"flit {k}: not the wire order"
        if not idle and not stall:
            dut._log.info("%d flits back to back in %d clocks", len(flits), took)
            assert took <= (len(flits) + 2) * BEATS_PER_FLIT, "not one beat per clock"
    await ClockCycles(dut.clk, 4)
    assert source.empty() and sink.empty()


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def from_wire(dut):
    rng = await _start(dut)
    source = LayoutSource(dut, "i", checked_beat_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "o", checked_beat_layout, dut.clk, dut.rst)
    for idle, stall, flits in _rounds(rng, source, sink):
        sides = []
        for flit in flits:
            logical = model.from_wire(flit)
            side = {"crc_ok": rng.getrandbits(1),
                    "header": int.from_bytes(logical[FH_OFFSET:SH_OFFSET], "little"),
                    "headers": list(logical[SH_OFFSET:SH_OFFSET + SEGMENTS])}
            sides.append(side)
            for b, beat in enumerate(_beats(flit)):
                source.send_nowait(data=beat, last=int(b == BEATS_PER_FLIT - 1),
                                   crc_ok=side["crc_ok"], header=side["header"],
                                   headers=[segment_header.from_bits(h) for h in side["headers"]])
        got = await _received(sink, len(flits))
        for k, (flit, side, (logical, beats)) in enumerate(zip(flits, sides, got, strict=True)):
            assert logical == model.from_wire(flit), f"flit {k}: not the logical order"
            for beat in beats:
                assert int(beat.crc_ok) == side["crc_ok"] and int(beat.header) == side["header"]
                assert [beat.headers[s].as_bits() for s in range(SEGMENTS)] == side["headers"]
    await ClockCycles(dut.clk, 4)
    assert source.empty() and sink.empty()


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """The wire-order stages have no parameters: one build each."""


def test_dl_to_wire():
    harness.run(DlToWire(), _Config(), toplevel="dl_to_wire", test_module=__name__,
                testcase="to_wire")


def test_dl_from_wire():
    harness.run(DlFromWire(), _Config(), toplevel="dl_from_wire",
                test_module=__name__, testcase="from_wire")
