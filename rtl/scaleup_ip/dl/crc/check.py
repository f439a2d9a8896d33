# SPDX-License-Identifier: BSD-2-Clause
"""The DL receiver's CRC stage: each 640-byte DL flit checked, and held until it is
[UALink 1.0 §6.3.7, §6.6.1]."""

from amaranth import Cat, Module, Signal
from amaranth.lib import data
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import Component, In, Out

from .insert import beat_queue, crc_engine, dl_crc, feed_crc, release
from ..layout import (
    BEAT_BYTES,
    BEATS_PER_FLIT,
    CRC_BYTES,
    FH_BYTES,
    FH_OFFSET,
    SEGMENTS,
    SH_OFFSET,
    WIRE_POSITION,
    checked_stream,
    last_beat_layout,
    phy_stream,
    segment_header,
)

__all__ = ["DlCrcCheck"]

#: What the last beat tells about its flit.
_verdict = data.StructLayout({
    "field": CRC_BYTES * 8,         # the CRC received
    "header": FH_BYTES * 8,
    "headers": data.ArrayLayout(segment_header, SEGMENTS),
})


class DlCrcCheck(Component):
    """Checks the CRC of each received DL flit (802.3 CRC-32 over all 640 bytes as they are on
    the wire, with the CRC bytes zero, compared with the CRC bytes, x0 first [§6.3.7]) and
    releases the flit's beats once the verdict is known, each with the verdict and the flit's
    headers, gathered from their places in the wire order (Figure 6-4).

    Latency: a flit's first beat leaves about 25 clocks after it arrives (its 10 beats, the
    engine's 11, its result's register, the queues). Throughput: one beat per clock.
    ``i.ready`` falls only when the beat queue fills because ``o`` stalls; nothing is lost,
    and the verdict of a flit is never mixed with another's.

    Members
    -------
    i : In(phy_stream())
        DL flits from the PHY side.
    o : Out(checked_stream())
        The same beats, with ``crc_ok``, ``header`` and ``headers`` of their flit.
    """

    def __init__(self):
        super().__init__({"i": In(phy_stream()), "o": Out(checked_stream())})

    def elaborate(self, platform):
        m = Module()
        crc, result = crc_engine(m)
        # The verdicts wait in a queue read without a register: its read enable (``go`` at a
        # last beat) moves only its read pointer and level, not a 96-bit output register.
        m.submodules.verdicts = verdicts = SyncFIFO(width=_verdict.size, depth=4)
        beat = self.i.p
        take = self.i.valid & self.i.ready
        feed_crc(m, crc, beat, take)
        beats = beat_queue(m, take, beat.data, beat.last)
        closing = last_beat_layout(beat.data)
        verdict = Signal(_verdict)
        m.d.comb += [
            verdict.field.eq(closing.crc),
            Cat(verdict.header, verdict.headers).eq(_gather(m, beat, take)),
            verdicts.w_en.eq(take & beat.last),
            verdicts.w_data.eq(verdict),
            self.i.ready.eq(crc.i.ready & beats.w_rdy & verdicts.w_rdy),
        ]
        # A flit's beats leave once its CRC result is out of the engine; the result and the
        # verdict are held (not taken) until the flit's last beat leaves.
        known = _verdict(verdicts.r_data)
        go, ready_out, last = release(m, beats, result, self.o, verdicts.r_rdy)
        m.d.comb += verdicts.r_en.eq(go & last)
        with m.If(ready_out):
            m.d.sync += [
                self.o.p.data.eq(beats.r.payload.data),
                self.o.p.crc_ok.eq(dl_crc(result.o.p.crc) == known.field),
                self.o.p.header.eq(known.header),
                self.o.p.headers.eq(known.headers),
            ]
        return m


def _gather(m, beat, take):
    """The flit header and segment headers of the flit whose beats ``beat`` are, in wire order
    (Figure 6-4), valid with its last beat: bytes of earlier beats are kept as they pass."""
    index = Signal(range(BEATS_PER_FLIT))
    with m.If(take):
        m.d.sync += index.eq(index + 1)
        with m.If(beat.last):
            m.d.sync += index.eq(0)
    words = data.ArrayLayout(8, BEAT_BYTES)(beat.data)
    out = []
    for logical in [*range(FH_OFFSET, FH_OFFSET + FH_BYTES),
                    *range(SH_OFFSET, SH_OFFSET + SEGMENTS)]:
        src, byte = divmod(WIRE_POSITION[logical], BEAT_BYTES)
        if src == BEATS_PER_FLIT - 1:
            out.append(words[byte])
            continue
        kept = Signal(8, name=f"kept_{logical}")
        with m.If(take & (index == src)):
            m.d.sync += kept.eq(words[byte])
        out.append(kept)
    return Cat(out)
