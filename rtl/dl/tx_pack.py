"""The DL flit packer: TL flits into the payload sectors and segment headers of 640-byte DL
flits [UALink 1.0 §6.3.4]."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import Component, In, Out

from ..tl.layout import flit_stream
from .layout import (
    BEATS_PER_FLIT,
    PAYLOAD_SECTORS,
    SECTOR_BYTES,
    SEGMENT_STARTS,
    SEGMENTS,
    SH_OFFSET,
    body_stream,
    segment_header,
)
from .logic import (
    BEAT_SECTORS,
    HALF_SECTORS,
    LAST_SECTORS,
    SECTOR_BITS,
    next_cursor,
    rotate,
    sector_array,
)

__all__ = ["DlPack"]


class DlPack(Component):
    """Packs TL flits into DL flit bodies, on the fly, one 64-byte beat per clock [§6.3.4].

    The packing follows the flow of Figure 6-5 sector by sector (README §1): a carried-over
    remainder first, then at each *decision point* a TL flit starts if one is on ``i`` in that
    clock, else the sectors up to the next half-segment start are zero-filled and the next
    half segment decides. A decision point is the first sector after the carry-over or after
    the previous TL flit, or a half-segment start after zero fill. A TL flit takes 16
    sectors, so at most one starts in a beat: the beat holds its decision point, and when no
    TL flit is there the later decision points of the same beat (sector 127 in beat 7, 143 in
    beat 8) see the same empty input and are zero-filled too. A TL flit that starts in the
    first half of its segment (right after the carry-over) is TL Flit[0] of the segment
    header, one in the second half TL Flit[1]; its message bits go with it. Up to two start
    per segment, as the sector counts allow no more. There are no DL alternative sectors
    (DLAltSector = 0).

    Each DL flit leaves as 10 beats on ``o``: the payload sectors in the logical layout of
    :mod:`rtl.dl.layout`, the segment headers in the last beat, the flit header and CRC bytes
    zero (filled in later), ``payload`` set on the last beat when any TL flit sector is in
    the flit (else it is a NOP flit). Once a flit's first beat is on ``o`` its other nine
    follow on consecutive clocks while ``o`` is ready: the packer never waits for TL flits.

    Latency: a TL flit taken in clock ``t`` (the clock its first sector's beat is formed) is
    on ``o`` from ``t + 1``. Throughput: one beat per clock; at most one TL flit per clock,
    628 / 64 = 9.8125 TL flits per DL flit when they are always there. ``i`` is taken only
    when a beat is formed (``o`` empty or ready); nothing is dropped.

    Members
    -------
    i : In(flit_stream())
        TL flits; ``msg`` bit 0 is M0 (the lower half-flit).
    o : Out(body_stream())
        DL flit bodies, beat by beat.
    """

    def __init__(self):
        super().__init__({"i": In(flit_stream()), "o": Out(body_stream())})

    def elaborate(self, platform):
        m = Module()
        beat = Signal(range(BEATS_PER_FLIT))         # the beat being formed
        cursor = Signal(range(BEAT_SECTORS))        # its decision point, if below its size
        held = Signal(range(BEAT_SECTORS))          # carried-over sectors at its start
        carry = Signal(sector_array)                     # ... sector i goes to sector i
        headers = Signal(data.ArrayLayout(segment_header, SEGMENTS))
        payload = Signal()                           # a TL flit sector in the flit so far
        last = beat == BEATS_PER_FLIT - 1
        size = Mux(last, LAST_SECTORS, BEAT_SECTORS)
        form = ~self.o.valid | self.o.ready
        decide = cursor < size
        take = Signal()
        m.d.comb += [take.eq(form & decide & self.i.valid), self.i.ready.eq(take)]
        tl = Cat(self.i.p.data[0], self.i.p.data[1])
        placed = rotate(tl, cursor)                 # the TL flit from the decision point on
        # The sectors that do not fit: after the beat, or after the payload of the last one.
        spill = rotate(tl, cursor + Mux(last, BEAT_SECTORS - LAST_SECTORS, 0))
        sectors = Signal(sector_array)
        for i in range(BEAT_SECTORS):
            # (No comparison with a 4-bit register is written where its result is constant.)
            held_here = i < held if i < BEAT_SECTORS - 1 else 0
            from_tl = take & (i < size)
            if i < BEAT_SECTORS - 1:
                from_tl &= cursor <= i
            m.d.comb += sectors[i].eq(Mux(held_here, carry[i], Mux(
                from_tl, placed.word_select(i, SECTOR_BITS), 0)))
        new_headers = self._headers(m, beat, cursor, take, headers)
        with m.If(form):
            m.d.sync += [
                self.o.valid.eq(1),
                self.o.p.data.eq(Mux(last, self._with_headers(sectors, new_headers), sectors)),
                self.o.p.last.eq(last),
                self.o.p.payload.eq(payload | take | (held != 0)),
                beat.eq(Mux(last, 0, beat + 1)),
                headers.eq(Mux(last, 0, new_headers)),
                payload.eq(~last & (payload | take | (held != 0))),
            ]
            self._advance(m, beat, last, size, decide, take, cursor, held, carry, spill)
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        return m

    def _advance(self, m, beat, last, size, decide, take, cursor, held, carry, spill):
        """The next beat's decision point and carry-over."""
        with m.If(take):
            # The TL flit's sectors after this beat carry over: as many as the sectors before
            # its start in a full beat, 3 more in the last.
            rest = cursor + Mux(last, BEAT_SECTORS - LAST_SECTORS, 0)
            m.d.sync += [cursor.eq(rest), held.eq(rest), carry.eq(spill)]
        with m.Elif(decide):
            m.d.sync += held.eq(0)
            for b in range(BEATS_PER_FLIT):
                with m.If(beat == b):
                    m.d.sync += cursor.eq(next_cursor(b))
        with m.Else():
            # No decision point in this beat (the last one, behind a long carry-over): what
            # does not fit goes on into the next flit's first beat.
            m.d.sync += [cursor.eq(cursor - size), held.eq(Mux(held > size, held - size, 0)),
                         carry.eq(carry.as_value() >> (LAST_SECTORS * SECTOR_BITS))]

    def _headers(self, m, beat, cursor, take, headers):
        """The segment headers with the TL flit that starts at the decision point, if one
        does."""
        new = Signal.like(headers)
        m.d.comb += new.eq(headers)
        position = Signal(range(PAYLOAD_SECTORS + BEAT_SECTORS))
        m.d.comb += position.eq(beat * BEAT_SECTORS + cursor)
        for s, start in enumerate(SEGMENT_STARTS):
            end = SEGMENT_STARTS[s + 1] if s + 1 < SEGMENTS else PAYLOAD_SECTORS
            inside = take & (position < end)
            if start:
                inside &= position >= start
            second = position >= start + HALF_SECTORS
            with m.If(inside & ~second):
                m.d.comb += [new[s].flit0.eq(1), new[s].msg0.eq(self.i.p.msg)]
            with m.If(inside & second):
                m.d.comb += [new[s].flit1.eq(1), new[s].msg1.eq(self.i.p.msg)]
        return new

    @staticmethod
    def _with_headers(sectors, headers):
        """The last beat: its payload sectors, then FH (zero), SH0..SH4, CRC (zero)."""
        payload_bits = LAST_SECTORS * SECTOR_BITS
        fh_bits = (SH_OFFSET % (BEAT_SECTORS * SECTOR_BYTES)) * 8 - payload_bits
        return Cat(sectors.as_value()[:payload_bits], Const(0, fh_bits), headers)
