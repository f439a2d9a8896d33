# SPDX-License-Identifier: BSD-2-Clause
"""The DL flit unpacker: TL flits out of the payload sectors of accepted DL flits, as their
segment headers place them [UALink 1.0 §6.3.4]."""

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import Component, In, Out

from ..tl.layout import flit_stream
from .layout import BEATS_PER_FLIT, HALF_SEGMENT_STARTS, SEGMENTS, unpack_stream
from .logic import (
    BEAT_SECTORS,
    LAST_SECTORS,
    SECTOR_BITS,
    beat_count,
    next_cursor,
    rotate,
    sector_array,
    segment_of,
)

__all__ = ["DlUnpack"]

#: What a segment header says of one sector: whether its half segment announces a TL flit, and
#: the message bits.
_announce = data.StructLayout({"flit": 1, "msg": 2})


def _sizes(beat):
    """Payload sectors in beat ``beat``."""
    return LAST_SECTORS if beat == BEATS_PER_FLIT - 1 else BEAT_SECTORS


def _inner_point(beat):
    """The half-segment start after the first sector of beat ``beat``, as a sector of the beat,
    or ``None``."""
    base = beat * BEAT_SECTORS
    inner = [h - base for h in HALF_SEGMENT_STARTS if base < h < base + _sizes(beat)]
    return inner[0] if inner else None


def _has_inner(beat, below_last):
    """Whether beat ``beat`` has a decision point after the cursor: a half-segment start inside
    it, always its last sector (checked in :meth:`DlUnpack.elaborate`), with the cursor
    ``below_last``."""
    inner_beats = [b for b in range(BEATS_PER_FLIT) if _inner_point(b) is not None]
    return Cat(beat == b for b in inner_beats).any() & below_last


def _reached(beat, cursor, first):
    """The decision points (2 bits per segment: first, second half) that beat ``beat`` (a
    constant) reaches from ``cursor``: the cursor's own, and a half-segment start inside the
    beat after it when no TL flit starts at the cursor (``~first``; ``first`` may be None
    where the beat has no such start)."""
    base = beat * BEAT_SECTORS
    inner = _inner_point(beat)
    bits = [C(0, 1)] * (2 * SEGMENTS)
    for c in range(_sizes(beat)):
        at = cursor == c
        seg, second_half = segment_of(base + c)
        bits[2 * seg + second_half] = bits[2 * seg + second_half] | at
        if inner is not None and inner > c:
            seg, second_half = segment_of(base + inner)
            bits[2 * seg + second_half] = bits[2 * seg + second_half] | (at & ~first)
    return Cat(*bits)


def _turned(hot, n):
    """The one-hot form of (the value of one-hot ``hot``) + ``n`` (mod 16): wiring only."""
    return Cat(hot[(k - n) % BEAT_SECTORS] for k in range(BEAT_SECTORS))


def _thermo(hot):
    """Bit ``k`` set when the value of one-hot ``hot`` is below ``16 - k`` (bit 0 clear): the
    sectors of the pending TL flit (``below``)."""
    return Cat(C(0, 1), *(hot[:BEAT_SECTORS - k].any() for k in range(1, BEAT_SECTORS)))


def _one_hot(value):
    """The one-hot form of the constant ``value`` (mod 16)."""
    return C(1 << (value % BEAT_SECTORS), BEAT_SECTORS)


def _announcements(headers, beat):
    """What ``headers`` say of each sector of beat ``beat`` (none past the payload)."""
    out = []
    for c in range(BEAT_SECTORS):
        if c < _sizes(beat):
            seg, second = segment_of(beat * BEAT_SECTORS + c)
            h = headers[seg]
            out.append(Cat(h.flit1, h.msg1) if second else Cat(h.flit0, h.msg0))
        else:
            out.append(C(0, _announce.size))
    return Cat(out)


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
        DL flits with a malformed segment header, wrapping; counted the clock after the
        flit's last beat.
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
        step = Signal()
        beat, first, last = beat_count(m, step)     # ``first`` and ``last`` are registers
        cursor = Signal(range(BEAT_SECTORS))        # the beat's first decision point, if
                                                    # below its size
        hot = Signal(BEAT_SECTORS, init=1)          # the cursor one-hot, for the data path
        # Sector k of the beat is of the pending TL flit when k < 16 - cursor (bit k; bit 0
        # unused): a thermometer code of the cursor, written with ``hot``.
        below = Signal(BEAT_SECTORS, init=(1 << BEAT_SECTORS) - 2)     # cursor 0's
        pending = Signal()                          # a TL flit is under way: it has its
                                                    # sectors 0 .. 15 - cursor
        part = Signal(sector_array)                 # ... here
        part_msg = Signal(2)
        seen = Signal(2 * SEGMENTS)                 # decision points reached in the DL flit
        size = Mux(last, LAST_SECTORS, BEAT_SECTORS)
        contained, reopen = Signal(), Signal()
        resume = contained & reopen & first   # the next DL flit is read afresh
        m.d.comb += [self.i.ready.eq((~self.o.valid | self.o.ready | contained) & ~resume),
                     step.eq(self.i.valid & self.i.ready)]
        m.d.sync += self.fault.eq(0)
        # What the segment headers say of each sector of this beat (:meth:`_decide`).
        ahead = Signal(data.ArrayLayout(_announce, BEAT_SECTORS))
        coming = self._ahead(m, beat, step & ~last, ahead)
        start, start_at, at_cursor, start_msg, reached, after = self._decide(
            m, beat, cursor, ahead)
        # The data path's own copy of ``at_cursor`` for the beats after the first, formed
        # while the beat before is taken (``at_next``, below).
        at_reg = Signal()
        at_cursor_data, start_data = self._decide_data(m, beat, first, hot, ahead, at_reg)
        beat_in = self.i.p.data
        # The pending TL flit takes the beat's first ``cursor`` sectors; it completes when they
        # fit.
        # (``cursor <= size``: always in a full beat; in the last beat when the cursor is below
        # 14, which is ``below[2]``.)
        assert LAST_SECTORS == BEAT_SECTORS - 3
        completes = pending & (~last | below[BEAT_SECTORS - LAST_SECTORS - 1])
        filled = Signal(sector_array)
        # One rotator, by 16 - ``cursor`` (kept in a register): beat sector 0 -> 16 - cursor.
        amount = Signal(4)
        # A signal, not an expression: it has 17 readers. Kept as one rotator for them all
        # (``keep``): the LUT mapper otherwise builds it again into the cone of each register
        # it feeds, 2.5 k LUT4 more when the beat comes from a register stage.
        moved = Signal.like(beat_in, attrs={"keep": 1})
        m.d.comb += moved.eq(rotate(beat_in, amount))
        for k in range(BEAT_SECTORS):
            # Sector k was received already when k < 16 - cursor (always for k = 0: no
            # comparison with a constant result is written).
            held_here = pending & below[k] if k else pending
            m.d.comb += filled[k].eq(Mux(held_here, part[k], moved.word_select(k, SECTOR_BITS)))
        # Sector start_at -> 0: the same rotation when the TL flit starts at the cursor, else
        # it starts at sector 15 (the only later decision point in a beat, in beats 7 and 8).
        assert {h % BEAT_SECTORS for h in HALF_SEGMENT_STARTS} <= {0, BEAT_SECTORS - 1}
        opened = Mux(at_cursor_data, moved, beat_in.rotate_left(SECTOR_BITS))
        whole = at_cursor & hot[0] & ~last          # a TL flit in exactly this beat
        hot_next = Signal.like(hot)
        m.d.comb += hot_next.eq(hot)
        # ``below`` for ``hot_next``, chosen among the thermometer codes of its candidates
        # (each from registers or constants), not formed after the choice [ours]. Kept as a
        # signal (``keep``): without, the LUT mapper built about 4.8 k LUT4 more; with it,
        # 2.6 k more than forming it after the choice, for the clock (docs/figures.md).
        below_next = Signal.like(below, attrs={"keep": 1})
        kept = Mux(last, _thermo(_turned(hot, -LAST_SECTORS)), below)
        m.d.comb += below_next.eq(below)
        with m.If(step):
            m.d.sync += [at_reg.eq(self._at_next(coming, hot, start & ~whole, at_cursor, whole,
                                                 after))]
            m.d.sync += [hot.eq(hot_next), below.eq(below_next),
                         seen.eq(Mux(last, 0, seen | reached))]
            bad = self._malformed(m, last, seen, cursor, step)
            with m.If(bad):
                m.d.sync += [contained.eq(1), self.fault.eq(1)]
            # ``o`` is free when a beat is taken: it is loaded at every beat, a TL flit or not,
            # whatever the verdict (its 514 enables are the beat's handshake alone); only its
            # valid waits for a TL flit and the verdict.
            m.d.sync += [self.o.valid.eq((completes | whole) & ~bad),
                         self.o.p.data.eq(Mux(completes, filled, opened)),
                         self.o.p.msg.eq(Mux(completes, part_msg, start_msg))]
            # ``amount`` is -``cursor`` (mod 16), formed beside it from the same candidates,
            # not after it.
            size_less = Signal.like(cursor)
            m.d.comb += size_less.eq(size - cursor)
            with m.If(start & ~whole):
                # ``size - start_at`` sectors here, the rest from the next beat(s).
                m.d.sync += [part_msg.eq(start_msg), pending.eq(1),
                             cursor.eq(start_at + BEAT_SECTORS - size),
                             amount.eq(Mux(at_cursor, size_less, size - (BEAT_SECTORS - 1)))]
                m.d.comb += hot_next.eq(Mux(at_cursor,
                                            Mux(last, _turned(hot, -LAST_SECTORS), hot),
                                            Mux(last, _one_hot(-1 - LAST_SECTORS),
                                                _one_hot(-1))))
                m.d.comb += below_next.eq(Mux(at_cursor, kept,
                                              Mux(last, _thermo(_one_hot(-1 - LAST_SECTORS)),
                                                  _thermo(_one_hot(-1)))))
            with m.Elif(pending & ~completes):
                # Only in the last beat: the pending TL flit goes on into the next DL flit.
                m.d.sync += [cursor.eq(cursor - size), amount.eq(size_less)]
                m.d.comb += hot_next.eq(Mux(last, _turned(hot, -LAST_SECTORS), hot))
                m.d.comb += below_next.eq(kept)
            with m.Else():
                # Nothing pending: the next decision point follows a whole TL flit at once,
                # else it is the next half-segment start.
                m.d.sync += [pending.eq(0), cursor.eq(Mux(whole, 0, after)),
                             amount.eq(Mux(whole, 0, -after))]
                m.d.comb += hot_next.eq(Mux(whole, 1,
                                            Cat(after == k for k in range(BEAT_SECTORS))))
                m.d.comb += below_next.eq(Mux(whole, _thermo(_one_hot(0)),
                                              _thermo(Cat(after == k
                                                          for k in range(BEAT_SECTORS)))))
            # The sectors received of the pending TL flit (512 enables), as above but from
            # the data path's own copy of the decision.
            opens = start_data & ~(at_cursor_data & hot[0] & ~last)
            with m.If(opens | (pending & ~completes)):
                m.d.sync += part.eq(Mux(opens, opened, filled))
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(contained):
            self._contain(m, resume, reopen, contained, [pending, cursor, hot, below, amount])
        # ``malformed`` counts a clock after the verdict, so that the beat's handshake does
        # not reach its 32 enables; none while containing.
        counted = Signal()
        m.d.sync += counted.eq(step & bad & ~contained)
        with m.If(counted):
            m.d.sync += self.malformed.eq(self.malformed + 1)
        return m

    def _ahead(self, m, beat, write, ahead):
        """What the segment headers say of each sector of the next beat of the same DL flit
        (returned; none in the last beat), written into ``ahead`` when ``write`` (a beat but
        the last is taken)."""
        headers = self.i.p.headers
        coming = Signal.like(ahead)
        with m.Switch(beat):
            for b in range(BEATS_PER_FLIT - 1):
                with m.Case(b):
                    m.d.comb += coming.eq(_announcements(headers, b + 1))
        with m.If(write):
            m.d.sync += ahead.eq(coming)
        return coming

    @staticmethod
    def _at_next(coming, hot, opening, at_cursor, whole, after):
        """Whether a TL flit starts at the cursor of the next beat of the same DL flit
        (``coming`` says what its sectors announce), from this beat's decision: the next
        cursor (``hot`` turned, or a constant) picks one of four bits formed from ``coming``
        and registers. For the first beat of a DL flit it is not used."""
        flits = Cat(coming[k].flit for k in range(BEAT_SECTORS))
        return Mux(opening,
                   Mux(at_cursor, (flits & hot).any(), flits[BEAT_SECTORS - 1]),
                   Mux(whole, flits[0], flits.bit_select(after, 1)))

    def _decide(self, m, beat, cursor, ahead):
        """Where a TL flit starts in this beat, if one does: ``(start, start_at, whether that
        is the cursor, its message bits, the decision points reached (2 bits per segment:
        first, second half), the cursor in the next beat when none starts)``.

        The beat's first decision point is its cursor (when below its size); when its TL
        flit is absent, a half-segment start later in the same beat (sector 127 in beat 7,
        143 in beat 8) is the next one. What the segment headers say of each sector of the
        beat (whether its half segment announces a TL flit, and the message bits) is read from
        registers, written while the beat before was taken (the same DL flit's headers); beat
        0 lies in segment 0's first half, whose header bits it reads directly."""
        headers = self.i.p.headers
        assert all(segment_of(c) == (0, False) for c in range(BEAT_SECTORS))
        first_beat = beat == 0
        first = Signal()                            # a TL flit at the cursor
        first_msg = Signal(2)
        m.d.comb += [first.eq(Mux(first_beat, headers[0].flit0, ahead[cursor].flit)),
                     first_msg.eq(Mux(first_beat, headers[0].msg0, ahead[cursor].msg))]
        # A later decision point in a beat is its last sector (checked in elaborate).
        second = (_has_inner(beat, cursor < BEAT_SECTORS - 1) & ~first
                  & ahead[BEAT_SECTORS - 1].flit)
        start, start_at, msg = Signal(), Signal(range(BEAT_SECTORS)), Signal(2)
        m.d.comb += [start.eq(first | second),
                     start_at.eq(Mux(first, cursor, BEAT_SECTORS - 1)),
                     msg.eq(Mux(first, first_msg, ahead[BEAT_SECTORS - 1].msg))]
        reached, after = Signal(2 * SEGMENTS), Signal(range(BEAT_SECTORS))
        for b in range(BEATS_PER_FLIT):
            with m.If(beat == b):
                m.d.comb += [after.eq(next_cursor(b)), reached.eq(_reached(b, cursor, first))]
        return start, start_at, first, msg, reached, after

    def _decide_data(self, m, beat, first_beat, hot, ahead, at_reg):
        """For the beat's data path: whether a TL flit starts at the cursor and whether one
        starts in the beat, formed apart from :meth:`_decide`'s: after the first beat of a DL
        flit, the first is ``at_reg``, a register formed while the beat before was taken
        (:meth:`_at_next`), and the second adds the beat's last sector from registers, so
        that the 512-bit multiplexers and enables they steer are a gate or two from
        registers. (Formed from ``hot`` in the same clock, the placed design's worst path ran
        from ``hot`` through the 16-way AND-OR to the part-flit register's enables, 11.8 ns;
        from the decoded ``cursor``, through the decision's 16-way multiplexer.)"""
        flits = Cat(ahead[k].flit for k in range(BEAT_SECTORS))
        first, start = Signal(), Signal()
        m.d.comb += [
            first.eq(Mux(first_beat, self.i.p.headers[0].flit0, at_reg)),
            start.eq(first | (_has_inner(beat, ~hot[BEAT_SECTORS - 1])
                              & flits[BEAT_SECTORS - 1])),
        ]
        return first, start

    def _malformed(self, m, last, seen, cursor, step):
        """Whether the DL flit is malformed: at the last beat, a TL flit announced where no
        decision point was reached (``seen`` before it, or the last beat's own, from
        ``cursor``), or DLAltSector set. What the headers announce is registered while the
        beats before are taken (the same DL flit's headers). The last beat has no decision
        point after its cursor, so what it reaches needs no header (not the decision's
        ``first``): the verdict is a few levels of logic from registers."""
        headers = self.i.p.headers
        announced, alt = Signal(2 * SEGMENTS), Signal()
        with m.If(step):
            m.d.sync += [
                announced.eq(Cat(Cat(headers[s].flit0, headers[s].flit1)
                                 for s in range(SEGMENTS))),
                alt.eq(Cat(headers[s].alt_sector for s in range(SEGMENTS)).any())]
        assert _inner_point(BEATS_PER_FLIT - 1) is None
        reached = _reached(BEATS_PER_FLIT - 1, cursor, None)
        bad = last & ((announced & ~(seen | reached)).any() | alt)
        return bad

    def _contain(self, m, resume, reopen, contained, carry):
        """While containing, over the statements above: nothing delivered or counted (the beats
        still counted, so the DL flits' bounds are kept); after ``restart``, in a clock that
        takes no beat at the next DL flit's start, the carry-over (``carry``, registers) is back
        at its initial values and reading resumes."""
        m.d.sync += [self.o.valid.eq(self.o.valid & ~self.o.ready),
                     self.o.payload.eq(self.o.payload),     # one shown before stays as it was
                     self.fault.eq(0)]
        with m.If(self.restart):
            m.d.sync += reopen.eq(1)
        with m.If(resume):
            m.d.sync += [contained.eq(0), reopen.eq(0)] + [c.eq(c.init) for c in carry]
