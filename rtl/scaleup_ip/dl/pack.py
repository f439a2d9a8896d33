# SPDX-License-Identifier: BSD-2-Clause
"""The DL flit packer: TL flits into the payload sectors and segment headers of 640-byte DL
flits [UALink 1.0 §6.3.4]."""

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import Component, In, Out

from ..tl.layout import flit_stream
from .layout import (
    BEATS_PER_FLIT,
    PAYLOAD_SECTORS,
    SEGMENT_STARTS,
    SEGMENTS,
    body_stream,
    last_beat_layout,
    segment_header,
)
from .logic import (
    BEAT_SECTORS,
    HALF_SECTORS,
    LAST_SECTORS,
    SECTOR_BITS,
    beat_count,
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
    :mod:`scaleup_ip.dl.layout`, the segment headers in the last beat, the flit header and CRC bytes
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
        form = ~self.o.valid | self.o.ready          # a beat is formed
        beat, _, last = beat_count(m, form)          # the beat being formed, and whether it
                                                     # is the last (a register)
        cursor = Signal(range(BEAT_SECTORS))         # its decision point, if below its size
        carrying = Signal()                          # sectors 0 .. cursor - 1 are carried over
        carry = Signal(sector_array)                 # ... sector i goes to sector i
        headers = Signal(data.ArrayLayout(segment_header, SEGMENTS))
        payload = Signal()                           # a TL flit sector in the flit so far
        # What the sector multiplexers and the headers need of ``beat`` and ``cursor`` is
        # written with them, from their next values, so that only ``i.valid`` and registers
        # reach the beat: ``reach`` (bit i: cursor <= i), and the half segment the decision
        # point is in (``where``: bit 2s + h for segment s, half h).
        reach = Signal(BEAT_SECTORS, init=(1 << BEAT_SECTORS) - 1)
        where = Signal(2 * SEGMENTS, init=1)
        size = Mux(last, LAST_SECTORS, BEAT_SECTORS)
        decide = ~last | reach[LAST_SECTORS - 1]    # cursor < size
        # A TL flit is offered at the decision point; it is taken when a beat is formed. The
        # registers load only when a beat is formed, so what they load follows from ``offer``:
        # the downstream ready reaches only their enables (``form``).
        offer = Signal()
        m.d.comb += [offer.eq(decide & self.i.valid), self.i.ready.eq(form & offer)]
        # One rotator: the TL flit moved so that its sectors that do not fit (after the beat,
        # or after the last beat's payload, 3 sectors earlier) land at the bottom, for the
        # carry-over; the beat takes the rest, 3 sectors up in the last beat.
        # Its amount, ``cursor`` (+ 3 in the last beat), is kept in a register.
        skip = BEAT_SECTORS - LAST_SECTORS
        amount = Signal(range(BEAT_SECTORS))
        rotated = Signal(sector_array, attrs={"keep": 1})     # one rotator for its readers
        m.d.comb += rotated.eq(rotate(Cat(self.i.p.data[0], self.i.p.data[1]), amount))
        sectors = Signal(sector_array)
        for i in range(BEAT_SECTORS):
            # (No comparison with a 4-bit register is written where its result is constant.)
            held_here = carrying & ~reach[i] if i < BEAT_SECTORS - 1 else 0
            from_tl = offer & (~last if i >= LAST_SECTORS else 1)
            if i < BEAT_SECTORS - 1:
                from_tl &= reach[i]
            placed = Mux(last, rotated[i + skip], rotated[i]) if i < LAST_SECTORS else rotated[i]
            m.d.comb += sectors[i].eq(Mux(held_here, carry[i], Mux(from_tl, placed, 0)))
        new_headers = self._headers(m, where, offer, headers)
        closing = Signal(last_beat_layout)           # the last beat, its headers filled in
        m.d.comb += [closing.payload.eq(sectors.as_value()), closing.headers.eq(new_headers)]
        ways = self._ways(m, beat, last, cursor, size)
        with m.If(form):
            m.d.sync += [
                self.o.valid.eq(1),
                self.o.p.data.eq(Mux(last, closing, sectors)),
                self.o.p.last.eq(last),
                self.o.p.payload.eq(payload | offer | carrying),
                headers.eq(Mux(last, 0, new_headers)),
                payload.eq(~last & (payload | offer | carrying)),
            ]
            self._advance(m, last, reach, decide, offer, ways[0], carrying, carry, rotated)
            # What the next beat needs of its cursor, formed for each of the three ways it can
            # go (from registers only); the TL flit's ``valid`` picks one.
            beat_next = Mux(last, 0, beat + 1)
            into_last = beat == BEATS_PER_FLIT - 2
            nxt = [Cat(
                following,
                *(following <= i for i in range(BEAT_SECTORS - 1)), C(1, 1),
                *(self._half_segment(Cat(following, beat_next), s, h)   # beat_next * 16 + ...
                  for s in range(SEGMENTS) for h in range(2)),
                (following + Mux(into_last, skip, 0))[:len(amount)],
            ) for following in ways]
            m.d.sync += Cat(cursor, reach, where, amount).eq(
                Mux(offer, nxt[0], Mux(decide, nxt[1], nxt[2])))
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        return m

    @staticmethod
    def _ways(m, beat, last, cursor, size):
        """The next beat's decision point in each case, from registers (outside any
        condition, so that no handshake reaches them): a TL flit taken, none at the decision
        point, no decision point in this beat."""
        # The TL flit's sectors after this beat carry over: as many as the sectors before its
        # start in a full beat, 3 more in the last.
        rest, point, beyond = (Signal.like(cursor, name=n) for n in ("rest", "point", "beyond"))
        m.d.comb += [rest.eq(cursor + Mux(last, BEAT_SECTORS - LAST_SECTORS, 0)),
                     beyond.eq(cursor - size)]
        for b in range(BEATS_PER_FLIT):
            with m.If(beat == b):
                m.d.comb += point.eq(next_cursor(b))
        return rest, point, beyond

    def _advance(self, m, last, reach, decide, offer, rest, carrying, carry, rotated):
        """The next beat's carry-over (when a beat is formed: a TL flit ``offer``-ed is
        taken; ``rest``: the next decision point then)."""
        with m.If(offer):
            m.d.sync += [carrying.eq(rest != 0), carry.eq(rotated)]
        with m.Elif(decide):
            m.d.sync += carrying.eq(0)
        with m.Else():
            # No decision point in this beat (the last one, behind a long carry-over, or past
            # the payload's end): what does not fit goes on into the next flit's first beat.
            m.d.sync += [carrying.eq(carrying & last & ~reach[LAST_SECTORS]),   # cursor > size
                         carry.eq(carry.as_value() >> (LAST_SECTORS * SECTOR_BITS))]

    @staticmethod
    def _half_segment(position, s, second):
        """Whether payload sector ``position`` is in segment ``s``'s first (``second`` 0) or
        second half."""
        start = SEGMENT_STARTS[s]
        end = SEGMENT_STARTS[s + 1] if s + 1 < SEGMENTS else PAYLOAD_SECTORS
        lo, hi = (start, start + HALF_SECTORS) if not second else (start + HALF_SECTORS, end)
        return (position >= lo) & (position < hi) if lo else position < hi

    def _headers(self, m, where, offer, headers):
        """The segment headers with the TL flit that starts at the decision point (in the
        half segment ``where`` says), if one is ``offer``-ed (taken when the beat is
        formed)."""
        new = Signal.like(headers)
        m.d.comb += new.eq(headers)
        for s in range(SEGMENTS):
            with m.If(offer & where[2 * s]):
                m.d.comb += [new[s].flit0.eq(1), new[s].msg0.eq(self.i.p.msg)]
            with m.If(offer & where[2 * s + 1]):
                m.d.comb += [new[s].flit1.eq(1), new[s].msg1.eq(self.i.p.msg)]
        return new
