# SPDX-License-Identifier: BSD-2-Clause
"""The DL flit unpacker: TL flits out of the payload sectors of accepted DL flits, as their
segment headers place them [UALink 1.0 §6.3.4]."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib.wiring import Component, In, Out

from ..tl.layout import flit_stream
from .layout import BEATS_PER_FLIT, HALF_SEGMENT_STARTS, SEGMENTS, unpack_stream
from .logic import (
    BEAT_SECTORS,
    LAST_SECTORS,
    SECTOR_BITS,
    next_cursor,
    rotate,
    sector_array,
    segment_of,
)

__all__ = ["DlUnpack"]


class DlUnpack(Component):
    """Unpacks the TL flits of accepted DL flits, in order, one beat per clock.

    The segment headers say at which decision points a TL flit starts; the decision points
    themselves follow from the packing rules (:class:`scaleup_ip.dl.pack.DlPack`, README §1): the
    first sector after the carry-over or after the previous TL flit, or a half-segment start
    after an empty one. A point in the first half of its segment reads TL Flit[0] of the
    segment's header, one in the second half TL Flit[1]. Sectors where no TL flit runs are
    ignored. A TL flit that runs past the end of a DL flit is completed from the next one.

    A segment header that announces a TL flit where the packing rules have no decision point
    (or sets DLAltSector, which we never send) makes its DL flit malformed, which is known at
    its last beat: it is counted in ``malformed`` and contained [§6.7.4.2, ours: README §1].
    The TL flits it completed in its first nine beats have gone (the extra bits are ignored);
    one it completes in its last beat, and every TL flit after, are dropped: ``fault`` is set
    for a clock and every beat is taken and dropped until ``restart``, after which the
    unpacker starts afresh (no carry-over) at the next DL flit.

    Latency: a TL flit is on ``o`` the clock after the beat that completes it is taken.
    Throughput: one beat per clock, and so at most one TL flit per clock. ``i`` waits while
    ``o`` holds a TL flit that is not taken; nothing else is dropped.

    Members
    -------
    i : In(unpack_stream())
        The beats of accepted payload DL flits (NOP flits are not given), each with its
        flit's segment headers.
    o : Out(flit_stream())
        TL flits.
    malformed : Out(32)
        DL flits with a malformed segment header, wrapping.
    fault : Out(1)
        The clock after a malformed DL flit's last beat: the unpacker is containing it.
    restart : In(1)
        The link is being brought up again: containment ends at the next DL flit.
    """

    def __init__(self):
        super().__init__({"i": In(unpack_stream()), "o": Out(flit_stream()),
                          "malformed": Out(32), "fault": Out(1), "restart": In(1)})

    def elaborate(self, platform):
        m = Module()
        beat = Signal(range(BEATS_PER_FLIT))
        cursor = Signal(range(BEAT_SECTORS))        # the beat's first decision point, if
                                                    # below its size
        pending = Signal()                          # a TL flit is under way: it has its
                                                    # sectors 0 .. 15 - cursor
        part = Signal(sector_array)                 # ... here
        part_msg = Signal(2)
        seen = Signal(2 * SEGMENTS)                 # decision points reached in the DL flit
        last = beat == BEATS_PER_FLIT - 1
        size = Mux(last, LAST_SECTORS, BEAT_SECTORS)
        step = Signal()
        contained, reopen = Signal(), Signal()
        resume = contained & reopen & (beat == 0)   # the next DL flit is read afresh
        m.d.comb += [self.i.ready.eq((~self.o.valid | self.o.ready | contained) & ~resume),
                     step.eq(self.i.valid & self.i.ready)]
        m.d.sync += self.fault.eq(0)
        start, start_at, at_cursor, start_msg, reached, after = self._decide(m, beat, cursor,
                                                                              size)
        beat_in = self.i.p.data
        # The pending TL flit takes the beat's first ``cursor`` sectors; it completes when they
        # fit.
        completes = pending & (cursor <= size)
        filled = Signal(sector_array)
        # One rotator, by 16 - ``cursor`` (kept in a register): beat sector 0 -> 16 - cursor.
        amount = Signal(4)
        moved = rotate(beat_in, amount)
        for k in range(BEAT_SECTORS):
            # Sector k was received already when k < 16 - cursor (always for k = 0: no
            # comparison with a constant result is written).
            held_here = pending & (cursor < BEAT_SECTORS - k) if k else pending
            m.d.comb += filled[k].eq(Mux(held_here, part[k], moved.word_select(k, SECTOR_BITS)))
        # Sector start_at -> 0: the same rotation when the TL flit starts at the cursor, else
        # it starts at sector 15 (the only later decision point in a beat, in beats 7 and 8).
        assert {h % BEAT_SECTORS for h in HALF_SEGMENT_STARTS} <= {0, BEAT_SECTORS - 1}
        opened = Mux(at_cursor, moved, beat_in.rotate_left(SECTOR_BITS))
        whole = start & (start_at == 0) & ~last     # a TL flit in exactly this beat
        with m.If(step):
            m.d.sync += [beat.eq(Mux(last, 0, beat + 1)),
                         seen.eq(Mux(last, 0, seen | reached))]
            bad = self._count(m, last, seen | reached)
            with m.If(bad):
                m.d.sync += [contained.eq(1), self.fault.eq(1)]
            with m.If((completes | whole) & ~bad):
                m.d.sync += [self.o.valid.eq(1),
                             self.o.p.data.eq(Mux(completes, filled, opened)),
                             self.o.p.msg.eq(Mux(completes, part_msg, start_msg))]
            with m.Else():
                m.d.sync += self.o.valid.eq(0)
            following = Signal.like(cursor)
            m.d.sync += [cursor.eq(following), amount.eq(-following)]
            with m.If(start & ~whole):
                # ``size - start_at`` sectors here, the rest from the next beat(s).
                m.d.sync += [part.eq(opened), part_msg.eq(start_msg), pending.eq(1)]
                m.d.comb += following.eq(start_at + BEAT_SECTORS - size)
            with m.Elif(pending & ~completes):
                # Only in the last beat: the pending TL flit goes on into the next DL flit.
                m.d.sync += part.eq(filled)
                m.d.comb += following.eq(cursor - size)
            with m.Else():
                # Nothing pending: the next decision point follows a whole TL flit at once,
                # else it is the next half-segment start.
                m.d.sync += pending.eq(0)
                m.d.comb += following.eq(Mux(whole, 0, after))
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(contained):
            self._contain(m, resume, reopen, contained, [pending, cursor, amount])
        return m

    def _decide(self, m, beat, cursor, size):
        """Where a TL flit starts in this beat, if one does: ``(start, start_at, whether that
        is the cursor, its message bits, the decision points reached (2 bits per segment:
        first, second half), the cursor in the next beat when none starts)``.

        The beat's first decision point is its cursor (when below its size); when its TL
        flit is absent, a half-segment start later in the same beat (sector 127 in beat 7,
        143 in beat 8) is the next one."""
        headers = self.i.p.headers
        start, start_at, msg = Signal(), Signal(range(BEAT_SECTORS)), Signal(2)
        at_cursor = Signal()
        reached, after = Signal(2 * SEGMENTS), Signal(range(BEAT_SECTORS))
        for b in range(BEATS_PER_FLIT):
            base = b * BEAT_SECTORS
            beat_size = LAST_SECTORS if b == BEATS_PER_FLIT - 1 else BEAT_SECTORS
            inner = [h - base for h in HALF_SEGMENT_STARTS if base < h < base + beat_size]
            with m.If(beat == b):
                m.d.comb += after.eq(next_cursor(b))
                # The first point: the cursor; its segment and half depend on its value.
                for c in range(beat_size):
                    seg, second = segment_of(base + c)
                    flit = headers[seg].flit1 if second else headers[seg].flit0
                    bit = 2 * seg + second
                    with m.If(cursor == c):
                        m.d.comb += reached[bit].eq(1)
                        with m.If(flit):
                            m.d.comb += [start.eq(1), start_at.eq(c), at_cursor.eq(1), msg.eq(
                                headers[seg].msg1 if second else headers[seg].msg0)]
                        for h in inner:
                            if h > c:
                                self._second_point(m, headers, base + h, h, start, start_at,
                                                   msg, reached, flit)
                                break
        return start, start_at, at_cursor, msg, reached, after

    @staticmethod
    def _second_point(m, headers, position, offset, start, start_at, msg, reached, first):
        """The decision point at ``offset`` of the beat, reached when the first had no TL
        flit."""
        seg, second = segment_of(position)
        flit = headers[seg].flit1 if second else headers[seg].flit0
        with m.If(~first):
            m.d.comb += reached[2 * seg + second].eq(1)
            with m.If(flit):
                m.d.comb += [start.eq(1), start_at.eq(offset),
                             msg.eq(headers[seg].msg1 if second else headers[seg].msg0)]

    def _count(self, m, last, seen):
        """``malformed``: at the last beat, a TL flit announced where no decision point was
        reached, or DLAltSector set."""
        headers = self.i.p.headers
        announced = Cat(Cat(headers[s].flit0, headers[s].flit1) for s in range(SEGMENTS))
        alt = Cat(headers[s].alt_sector for s in range(SEGMENTS)).any()
        bad = last & ((announced & ~seen).any() | alt)
        with m.If(bad):
            m.d.sync += self.malformed.eq(self.malformed + 1)
        return bad

    def _contain(self, m, resume, reopen, contained, carry):
        """While containing, over the statements above: nothing delivered or counted (the beats
        still counted, so the DL flits' bounds are kept); after ``restart``, in a clock that
        takes no beat at the next DL flit's start, the carry-over is cleared and reading
        resumes."""
        m.d.sync += [self.o.valid.eq(self.o.valid & ~self.o.ready),
                     self.o.payload.eq(self.o.payload),     # one shown before stays as it was
                     self.malformed.eq(self.malformed), self.fault.eq(0)]
        with m.If(self.restart):
            m.d.sync += reopen.eq(1)
        with m.If(resume):
            m.d.sync += [contained.eq(0), reopen.eq(0)] + [c.eq(0) for c in carry]
