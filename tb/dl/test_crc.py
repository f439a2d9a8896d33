# SPDX-License-Identifier: BSD-2-Clause
"""The DL CRC stages (``rtl/scaleup_ip/dl/crc/insert.py``, ``rtl/scaleup_ip/dl/crc/check.py``) against the golden
model's CRC (``rtl/scaleup_ip/model/dl/flit.py``, itself checked against a bit-by-bit long
division).

Both see flits in the wire order and compute the CRC over the bytes in that order. Insert:
every flit leaves with the model's CRC field (inverted when killed), its other bytes untouched,
in order, under random gaps and stalls, one beat per clock when neither. Check: good flits pass
with ``crc_ok``, flits with bit errors fail it, every beat carries its flit's header and segment
headers, found where the wire order of Figure 6-4 puts them (the model's ``from_wire``).
"""

import dataclasses
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.config import BlockConfig
from scaleup_ip.dl.crc import DlCrcCheck, DlCrcInsert
from scaleup_ip.dl import (
    BEATS_PER_FLIT,
    BEAT_BYTES,
    CRC_OFFSET,
    DL_FLIT_BYTES,
    FH_OFFSET,
    SEGMENTS,
    SH_OFFSET,
    checked_beat_layout,
    phy_beat_layout,
)
from scaleup_ip.model.dl import flit as model
from sim import harness
from sim.streams import LayoutSink, LayoutSource, random_pauses, reset


def _flit(rng):
    return bytes(rng.getrandbits(8) for _ in range(DL_FLIT_BYTES))


def _send(source, flit):
    for b in range(BEATS_PER_FLIT):
        source.send_nowait(data=int.from_bytes(flit[b * BEAT_BYTES:(b + 1) * BEAT_BYTES],
                                               "little"), last=int(b == BEATS_PER_FLIT - 1))


async def _start(dut):
    Clock(dut.clk, 10, unit="ns").start()
    if hasattr(dut, "kill"):
        dut.kill.value = 0
    await reset(dut)


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def insert(dut):
    """The model's CRC in the last 4 bytes, or its complement for the flits killed (about 30 %,
    at least one and not all, chosen before); under random gaps and stalls, then back to
    back: one beat per clock, and the latency."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    source = LayoutSource(dut, "i", phy_beat_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "o", phy_beat_layout, dut.clk, dut.rst)
    kills = []
    chosen = [rng.random() < 0.3 for _ in range(24)]
    killed, spared = rng.sample(range(len(chosen)), 2)
    chosen[killed], chosen[spared] = True, False

    async def kill_on_last():                       # ``kill`` as chosen for the flit whose
        taken = 0                                   # last beat ``i`` takes next
        while True:
            await RisingEdge(dut.clk)
            dut.kill.value = int(chosen[taken % len(chosen)])
            await ReadOnly()                        # what the next edge samples
            if int(dut.i__valid.value) and int(dut.i__ready.value) and \
                    phy_beat_layout.from_bits(dut.i__payload.value.to_unsigned()).last:
                taken += 1

    cocotb.start_soon(kill_on_last())
    for idle, stall, n in ((0.3, 0.3, 12), (0, 0, 12)):
        source.set_idle(random_pauses(rng, idle))
        sink.set_backpressure(random_pauses(rng, stall))
        flits = [_flit(rng) for _ in range(n)]
        for flit in flits:
            _send(source, flit)
        started = cocotb.utils.get_sim_time("ns") // 10
        first = last = None
        for k, flit in enumerate(flits):
            beats = []
            for b in range(BEATS_PER_FLIT):
                beat = await sink.recv()
                now = cocotb.utils.get_sim_time("ns") // 10
                first = now if first is None else first
                last = now
                beats.append(int(beat.data).to_bytes(BEAT_BYTES, "little"))
                assert int(beat.last) == (b == BEATS_PER_FLIT - 1)
            got = b"".join(beats)
            assert got[:CRC_OFFSET] == flit[:CRC_OFFSET], f"flit {k}: bytes changed"
            want = model.crc_field(flit[:CRC_OFFSET] + bytes(4))
            inverted = bytes(x ^ 0xFF for x in want)
            assert got[CRC_OFFSET:] in (want, inverted), f"flit {k}: CRC field"
            kills.append(got[CRC_OFFSET:] == inverted)
            assert model.crc_ok(got) != kills[-1]
        if not idle and not stall:
            assert last - first + 1 == n * BEATS_PER_FLIT, "not one beat per clock"
            dut._log.info("%d flits back to back: first beat out %d clocks after the first "
                          "in", n, first - started)
    assert kills == chosen and any(kills) and not all(kills)
    await ClockCycles(dut.clk, 4)
    assert source.empty() and sink.empty()


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def check(dut):
    """Random wire-order flits with their CRC, some with one to three flipped bits anywhere (the
    CRC field too): ``crc_ok`` as the model says, the beats unchanged, each with its flit's
    header and segment headers."""
    await _start(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    source = LayoutSource(dut, "i", phy_beat_layout, dut.clk, dut.rst)
    sink = LayoutSink(dut, "o", checked_beat_layout, dut.clk, dut.rst)
    for idle, stall, n in ((0.3, 0.3, 16), (0, 0, 16), (0, 0.6, 8)):
        source.set_idle(random_pauses(rng, idle))
        sink.set_backpressure(random_pauses(rng, stall))
        flits = []
        for _ in range(n):
            flit = bytearray(_flit(rng)[:CRC_OFFSET] + bytes(4))
            flit[CRC_OFFSET:] = model.crc_field(bytes(flit))
            if rng.random() < 0.4:
                for _ in range(rng.randint(1, 3)):
                    bit = rng.randrange(8 * DL_FLIT_BYTES)
                    flit[bit // 8] ^= 1 << bit % 8
            flits.append(bytes(flit))
            _send(source, flits[-1])
        for k, flit in enumerate(flits):
            logical = model.from_wire(flit)             # where the headers are
            for b in range(BEATS_PER_FLIT):
                beat = await sink.recv()
                assert int(beat.data).to_bytes(BEAT_BYTES, "little") == \
                    flit[b * BEAT_BYTES:(b + 1) * BEAT_BYTES]
                assert int(beat.crc_ok) == model.crc_ok(flit), f"flit {k}: crc_ok"
                assert int(beat.header) == \
                    int.from_bytes(logical[FH_OFFSET:SH_OFFSET], "little")
                assert [beat.headers[s].as_bits() for s in range(SEGMENTS)] == \
                    list(logical[SH_OFFSET:SH_OFFSET + SEGMENTS])
    await ClockCycles(dut.clk, 4)
    assert source.empty() and sink.empty()


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """The CRC stages have no parameters: one build each."""


def test_dl_crc_insert():
    harness.run(DlCrcInsert(), _Config(), toplevel="dl_crc_insert",
                test_module=__name__, testcase="insert")


def test_dl_crc_check():
    harness.run(DlCrcCheck(), _Config(), toplevel="dl_crc_check",
                test_module=__name__, testcase="check")
