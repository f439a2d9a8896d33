# SPDX-License-Identifier: BSD-2-Clause
"""Data half-flit producer of the TL packer: each control half-flit's schedule expanded into
ready-made data half-flits, ahead of the flit emitter."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
    BEAT_BYTES,
    HALF_BITS,
    REQS_PER_CONTROL,
    MsgType,
    byte_enable_half,
    half_pair,
    message_half,
)
from .halves import ITEM_HALVES, HalfAligner, half_layout
from .place import schedule_layout

__all__ = ["DataSequencer", "poison_half", "req_beat_layout", "rsp_beat_layout"]

#: A request data beat as queued: data, its byte enables and OrigDataError.
req_beat_layout = data.StructLayout({"data": 2 * HALF_BITS, "byte_en": BEAT_BYTES, "error": 1})
#: A read response data beat as queued.
rsp_beat_layout = data.StructLayout({"data": 2 * HALF_BITS, "error": 1})

#: The next beat of a schedule: from which queue, and whether the byte-enable half-flit of its
#: request follows it (none of them: the schedule is done).
_kind = data.StructLayout({"req": 1, "rsp": 1, "be": 1})


class _State:
    """What is left of a schedule: beats per request and of the responses, byte-enable halves
    still due, and the byte enables of the current request's beats so far (``acc``; left over
    from an earlier request until the current one's first beat)."""

    def __init__(self, name):
        self.sched = Signal(schedule_layout, name=f"{name}_sched")
        self.beats = [Signal(3, name=f"{name}_r{i}_beats") for i in range(REQS_PER_CONTROL)]
        self.be = [Signal(name=f"{name}_r{i}_be") for i in range(REQS_PER_CONTROL)]
        self.rsp_beats = Signal(6, name=f"{name}_rsp_beats")
        self.acc = Signal(byte_enable_half, name=f"{name}_acc")

    def signals(self):
        """Everything but ``acc``."""
        return [self.sched, *self.beats, *self.be, self.rsp_beats]

    def slot(self, m, name, fresh=False):
        """Of the first request with beats left: the 64-byte slot of its next beat in its
        byte-enable half-flit, and whether that beat is its first (``fresh``: no beat of the
        schedule has gone, so it is, and the slot is the request's ``be_pos``)."""
        pos, first = Signal(2, name=f"{name}_pos"), Signal(name=f"{name}_first")
        for i in range(REQS_PER_CONTROL):
            cond = self.beats[i] != 0
            with (m.If(cond) if i == 0 else m.Elif(cond)):
                entry = self.sched.req[i]
                sent = 0 if fresh else entry.beats - self.beats[i]
                m.d.comb += [pos.eq(entry.be_pos + sent),
                             first.eq(1 if fresh else self.beats[i] == entry.beats)]
        return pos, first

    def first_slot(self, m, name):
        """The 64-byte slot, in its byte-enable half-flit, of the first beat of the first
        request with beats (the request's ``be_pos``)."""
        pos = Signal(2, name=f"{name}_pos")
        for i in range(REQS_PER_CONTROL):
            cond = self.beats[i] != 0
            with (m.If(cond) if i == 0 else m.Elif(cond)):
                m.d.comb += pos.eq(self.sched.req[i].be_pos)
        return pos

    def slot_after(self, m, name, pos):
        """Of the beat after the next one (a request's, at ``pos``): its slot, the next of the
        same request or the first of the next request with beats, and whether it is its
        request's first."""
        after_pos, after_first = Signal(2, name=f"{name}_after_pos"), Signal(
            name=f"{name}_after_first")
        left = [b != 0 for b in self.beats]
        for i in range(REQS_PER_CONTROL):
            with (m.If(left[i]) if i == 0 else m.Elif(left[i])):
                nxt = Const(0, 2)
                for j in reversed(range(i + 1, REQS_PER_CONTROL)):
                    nxt = Mux(left[j], self.sched.req[j].be_pos, nxt)
                last = self.beats[i] == 1
                m.d.comb += [after_pos.eq(Mux(last, nxt, pos + 1)), after_first.eq(last)]
        return after_pos, after_first

    def kind(self, m, name):
        """What the next beat is, as a :data:`_kind` signal: from the request-data queue, from
        the response-data queue, and whether a byte-enable half-flit follows it."""
        kind = Signal(_kind, name=f"{name}_kind")
        req = [b != 0 for b in self.beats]
        be = 0                           # of the first request with beats left
        for i in reversed(range(REQS_PER_CONTROL)):
            be = Mux(req[i], self.be[i] & (self.beats[i] == 1), be)
        m.d.comb += [
            kind.req.eq(Cat(req).any()),
            kind.rsp.eq(~Cat(req).any() & (self.rsp_beats != 0)),
            kind.be.eq(be),
        ]
        return kind


def poison_half(half, error):
    """A data half, or the Poisoned Data message replacing it (bytes 1..31 kept) [§5.3]."""
    msg = data.View(message_half, half)
    return Mux(error, Cat(MsgType.POISONED_DATA, msg.rest), half)


class DataSequencer(wiring.Component):
    """Turns the schedules of control half-flits into data half-flits, one beat per clock,
    ahead of the flit emitter.

    Parameters
    ----------
    skips : bool
        Whether a schedule may have ``skip`` set; without, ``skip`` is ignored and the logic
        that leaves out a first half-flit is not built.
    strobe : bool
        ``avail`` a register of its own and reads strobed by ``go`` (:class:`HalfAligner`'s
        ``strobe``).
    slot_register : bool
        Where the next beat goes in its request's byte-enable half-flit, and whether it is
        the request's first, from registers of their own, worked out as the beat before goes
        (the compact packer's; the slot packer forms them from its state, which ABC maps
        2.3 k LUT4 smaller there, at a clock its decision sets).

    Members
    -------
    schedule : In(stream.Signature(schedule_layout))
        The data each control half-flit calls for, in control order. ``ready`` (registered)
        is set once every beat of the schedule before it is written. With ``skip`` the first
        data half-flit is not written (the emitter sent it from the head of its data queue).
    req_data, rsp_data : In(stream)
        Heads of the request-data and response-data queues, one 64-byte beat each.
    halves : Out(ArrayLayout(half_layout, 2))
        The next two data half-flits in sequence order (valid as ``avail`` says).
    avail : Out(range(3))
        Half-flits available now (the aligner's: from registers through a few gates, or
        with ``strobe`` a register).
    take : In(range(3))
        Half-flits consumed this clock (at most ``avail``); with ``strobe``, those a read
        consumes.
    go : In(1)
        With ``strobe`` only: a read this clock.

    A beat leaves its queue when its two half-flits, and after a request's last beat the
    request's byte-enable half-flit (README §1), go as one item into a :class:`HalfAligner`; a
    beat with ``error`` set becomes two Poisoned Data messages. The decision to write depends
    only on registers (this block's state, the queue heads' ``valid``, the aligner's registered
    ``ready``, the head schedule), never on ``take``.

    Latency: the first half-flit of a schedule is in ``halves`` the clock after its schedule is
    accepted when its beat is at the head of its queue. Throughput: one beat (two or three
    half-flits) per clock, so two half-flits per clock while beats are queued. Overflow: none;
    the beat waits while the aligner holds two items.
    """

    def __init__(self, skips=True, slot_register=False, strobe=False):
        self._skips, self._slot_register, self._strobe = skips, slot_register, strobe
        ports = {
            "schedule": In(stream.Signature(schedule_layout)),
            "req_data": In(stream.Signature(req_beat_layout)),
            "rsp_data": In(stream.Signature(rsp_beat_layout)),
            "halves": Out(data.ArrayLayout(half_layout, 2)),
            "avail": Out(range(3)),
            "take": In(range(3)),
        }
        if strobe:
            ports["go"] = In(1)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        m.submodules.align = align = HalfAligner(self._strobe)
        m.d.comb += [self.halves.eq(align.halves), self.avail.eq(align.avail),
                     align.take.eq(self.take)]
        if self._strobe:
            m.d.comb += align.go.eq(self.go)
        reg = _State("reg")
        reg_kind = Signal(_kind)                        # reg.kind(), registered
        fresh = _State("fresh")                         # the offered schedule, nothing sent yet
        sched = self.schedule.payload
        m.d.comb += [
            fresh.sched.eq(sched),
            *(fresh.beats[i].eq(sched.req[i].beats) for i in range(REQS_PER_CONTROL)),
            *(fresh.be[i].eq(sched.req[i].be) for i in range(REQS_PER_CONTROL)),
            fresh.rsp_beats.eq(sched.rsp_beats),
        ]
        idle = Signal()                                 # nothing left of the schedule
        start = Signal()                                # ... so begin the offered one
        m.d.comb += [idle.eq(~reg_kind.req & ~reg_kind.rsp),
                     start.eq(idle & self.schedule.valid)]
        cur = _State("cur")
        cur_kind = Signal(_kind)
        m.d.comb += [a.eq(Mux(start, b, c))
                     for a, b, c in zip(cur.signals(), fresh.signals(), reg.signals())]
        m.d.comb += [cur.acc.eq(reg.acc),
                     cur_kind.eq(Mux(start, fresh.kind(m, "fresh"), reg_kind))]
        # Where the beat goes in its request's byte-enable half-flit, and whether it is the
        # request's first beat, from the registered state (or, with ``slot_register``, from
        # registers of their own) or (a schedule's first beat) the offered schedule, each
        # formed from registers: ``start`` only picks one.
        if self._slot_register:
            reg_pos, reg_first = Signal(2), Signal()
            fresh_pos = fresh.first_slot(m, "fresh")
        else:
            reg_pos, reg_first = reg.slot(m, "reg")
            fresh_pos, _ = fresh.slot(m, "fresh", fresh=True)
        pos, first = Signal(2), Signal()
        m.d.comb += [pos.eq(Mux(start, fresh_pos, reg_pos)), first.eq(start | reg_first)]
        after, moved, pop_req, pop_rsp = self._step(m, cur, cur_kind, align.i, pos, first)
        if self._slot_register:
            # Where the beat after goes, formed beside them for each, from registers.
            reg_after = reg.slot_after(m, "reg", reg_pos)
            fresh_after = fresh.slot_after(m, "fresh", fresh_pos)
            with m.If(moved):
                m.d.sync += [reg_pos.eq(Mux(start, fresh_after[0], reg_after[0])),
                             reg_first.eq(Mux(start, fresh_after[1], reg_after[1]))]
            with m.Elif(start):
                m.d.sync += [reg_pos.eq(fresh_pos), reg_first.eq(1)]
        m.d.comb += [
            self.schedule.ready.eq(idle),
            self.req_data.ready.eq(pop_req), self.rsp_data.ready.eq(pop_rsp),
        ]
        nxt = _State("next")
        m.d.comb += [a.eq(Mux(moved, b, c))
                     for a, b, c in zip(nxt.signals(), after.signals(), cur.signals())]
        m.d.sync += [a.eq(b) for a, b in zip(reg.signals(), nxt.signals())]
        m.d.sync += reg_kind.eq(nxt.kind(m, "next"))
        # The byte enables follow the request-data queue's head whether or not its beat goes
        # now (gathering a beat twice changes nothing), so they wait only on registers.
        with m.If(cur_kind.req & self.req_data.valid):
            m.d.sync += reg.acc.eq(after.acc)
        return m

    def _step(self, m, cur, kind, items, pos, first):
        """One beat from state ``cur`` (whose next beat is ``kind``, at ``pos`` in its
        request's byte-enable half-flit, ``first``: its request's first beat) into the
        aligner's ``items`` stream. Returns the state after it, whether the beat went (it is
        there and the aligner has room) and which data queue (request, response) it pops."""
        after = _State("after")
        m.d.comb += [a.eq(b) for a, b in zip(after.signals(), cur.signals())]
        req, rsp = self.req_data, self.rsp_data
        from_req, from_rsp, be_now = kind.req, kind.rsp, kind.be
        beat = data.View(half_pair, Mux(from_req, req.payload.data, rsp.payload.data))
        error = Mux(from_req, req.payload.error, rsp.payload.error)
        be_half = Signal(byte_enable_half)
        # The beat's first half-flit was sent already.
        skip = cur.sched.skip if self._skips else Const(0)
        halves = [poison_half(beat[k], error) for k in range(2)]
        out = items.payload.halves
        m.d.comb += [
            out[0].data.eq(Mux(skip, halves[1], halves[0])),
            out[1].data.eq(Mux(skip, be_half, halves[1])),
            out[0].msg.eq(error), out[1].msg.eq(~skip & error),
            out[ITEM_HALVES - 1].data.eq(be_half),
            after.sched.skip.eq(0),
        ]
        # The byte-enable half-flit is formed once from ``pos`` and ``first`` (not once per
        # request).
        for i in range(REQS_PER_CONTROL):
            cond = cur.beats[i] != 0
            with (m.If(cond) if i == 0 else m.Elif(cond)):
                m.d.comb += [
                    after.beats[i].eq(cur.beats[i] - 1),
                    after.acc.eq(be_half),
                    after.be[i].eq(cur.be[i] & ~be_now),
                ]
        with m.Elif(from_rsp):
            m.d.comb += after.rsp_beats.eq(cur.rsp_beats - 1)
        m.d.comb += [be_half[s].eq(Mux(first, 0, cur.acc[s])
                                   | Mux(pos == s, req.payload.byte_en, 0))
                     for s in range(byte_enable_half.length)]
        ok = Signal()
        m.d.comb += [
            items.valid.eq((from_req & req.valid) | (from_rsp & rsp.valid)),
            items.payload.count.eq(2 + be_now - skip),
            ok.eq(items.valid & items.ready),
        ]
        return after, ok, ok & from_req, ok & from_rsp
