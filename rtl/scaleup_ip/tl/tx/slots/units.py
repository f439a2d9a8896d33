# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer's response queue: responses bundled into units as they are queued."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...layout import SLOT_WINDOW, unit_flags, unit_response
from ..place import tx_rsp_entry
from .banks import BankQueue

__all__ = ["UnitQueue"]

#: A unit's first response, kept when the unit is queued: its field and what the decision needs.
_first = data.StructLayout({"field": 64})
_first_flags = data.StructLayout({"wide": 1, "rsp": unit_response})
#: A unit's second response, written when a compressed response joins the unit.
_second = data.StructLayout({"field": 32})
_second_flags = data.StructLayout({"pair": 1, "rsp": unit_response})


class UnitQueue(wiring.Component):
    """Responses queued as slot units (README §3, *Slot packer*) [ours]: an uncompressed
    response is a unit; a compressed response joins the newest unit when that is a compressed
    response alone (``open``) that is not leaving, else starts a unit.

    Two :class:`~scaleup_ip.tl.tx.slots.banks.BankQueue` of units in step, one of the fields
    and one of what the decision needs (registered): each with the first response of a unit,
    the second in memories of its own written when it joins.

    Parameters
    ----------
    depth : int
        Units held (at least the responses that may wait: each unit holds one or two).

    Members
    -------
    i : In(stream.Signature(tx_rsp_entry))
        Responses in (``run`` is not used). ``ready`` is low only
        while ``depth`` units are held.
    flags : Out(ArrayLayout(unit_flags, SLOT_WINDOW))
        The oldest units, oldest first, from registers; ``count`` valid. The oldest shows only
        its second response once the first was taken (``cut``).
    flags_next, count_next : Out
        What ``flags`` and ``count`` will show in the next clock (combinational).
    words, lane : Out
        The same units' slot words (:data:`~scaleup_ip.tl.layout.unit_view`), bank by bank as
        read (combinational): unit ``j`` is in bank ``(lane + j) mod 4``.
    count : Out(range(SLOT_WINDOW + 1))
    take : In(range(SLOT_WINDOW + 1))
        Units removed this clock.
    cut : In(1)
        The oldest unit left after ``take`` loses its first response this clock (a decision
        took it alone); it must hold two.
    freeze : In(1)
        Units of the window may be decided on or are taken this clock: a response does not
        join a unit in the window (so that a response never joins a unit a decision has seen
        without it, or as it leaves).

    Latency: a response accepted at clock ``t`` is in ``units`` from ``t + 1``.
    """

    def __init__(self, depth):
        self._depth = depth
        super().__init__({
            "i": In(stream.Signature(tx_rsp_entry)),
            "flags": Out(data.ArrayLayout(unit_flags, SLOT_WINDOW)),
            "flags_next": Out(data.ArrayLayout(unit_flags, SLOT_WINDOW)),
            "count_next": Out(range(SLOT_WINDOW + 1)),
            "words": Out(data.ArrayLayout(64, SLOT_WINDOW)),
            "lane": Out(range(SLOT_WINDOW)),
            "count": Out(range(SLOT_WINDOW + 1)),
            "take": In(range(SLOT_WINDOW + 1)),
            "cut": In(1),
            "freeze": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = q = BankQueue(_first, self._depth, SLOT_WINDOW, amend=_second)
        m.submodules.qf = qf = BankQueue(_first_flags, self._depth, SLOT_WINDOW,
                                         amend=_second_flags, registered=True)
        entry = self.i.payload
        is_open = Signal()               # the newest unit is a compressed response alone
        join = Signal()
        run = Signal(6)                  # read beats of every response queued, modulo 64
        run_next = Signal(6)
        m.d.comb += run_next.eq(run + entry.beats)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += run.eq(run_next)
        m.d.comb += [
            join.eq(~entry.wide & is_open & ~(self.freeze & (q.level <= SLOT_WINDOW))),
            self.i.ready.eq(q.i.ready | join),
            q.i.payload.field.eq(entry.field), qf.i.payload.wide.eq(entry.wide),
            q.amend.payload.field.eq(entry.field[:32]), qf.amend.payload.pair.eq(1),
            self.count.eq(q.count),
        ]
        for part in (q, qf):
            m.d.comb += [part.i.valid.eq(self.i.valid & ~join), part.i_amend.eq(0),
                         part.amend.valid.eq(self.i.valid & join), part.pop.eq(self.take)]
        for rsp in (qf.i.payload.rsp, qf.amend.payload.rsp):
            m.d.comb += [rsp.vc.eq(entry.vc), rsp.beats.eq(entry.beats), rsp.run.eq(run_next)]
        # A unit alone keeps its run in the second part too (the run of the whole unit).
        m.d.comb += qf.i_amend.rsp.run.eq(run_next)
        with m.If(q.i.valid & q.i.ready):
            m.d.sync += is_open.eq(~entry.wide)
        with m.Elif(q.amend.valid | (self.take == q.level)):
            m.d.sync += is_open.eq(0)
        head_cut = Signal()              # the oldest unit's first response is gone
        head_cut_next = Signal()
        m.d.comb += head_cut_next.eq(Mux(self.take != 0, self.cut, head_cut | self.cut))
        m.d.sync += head_cut.eq(head_cut_next)
        m.d.comb += self.count_next.eq(qf.count_next)
        for j in range(SLOT_WINDOW):
            self._view(m, self.flags[j], qf.entries[j], qf.amends[j],
                       head_cut if j == 0 else Const(0))
            self._view(m, self.flags_next[j], qf.entries_next[j], qf.amends_next[j],
                       head_cut_next if j == 0 else Const(0))
        m.d.comb += self.lane.eq(q.lane)
        for b in range(SLOT_WINDOW):
            first, second = q.reads[b], q.amend_reads[b]
            flags = qf.amends[(b - q.lane)[:2]]
            word = Mux(qf.entries[(b - q.lane)[:2]].wide, first.field,
                       Cat(first.field[:32], Mux(flags.pair, second.field, 0)))
            m.d.comb += self.words[b].eq(Mux(head_cut & (q.lane == b),
                                             Cat(second.field, Const(0, 32)), word))
        return m

    @staticmethod
    def _view(m, view, first, second, cut):
        """``view``'s flags from a unit's two parts; ``cut``: its first response is gone."""
        m.d.comb += [
            view.wide.eq(first.wide & ~cut), view.pair.eq(second.pair & ~cut),
            view.rsp[0].eq(Mux(cut, second.rsp, first.rsp)),
            view.rsp[1].run.eq(second.rsp.run),
            view.rsp[1].vc.eq(Mux(second.pair & ~cut, second.rsp.vc, 0)),
            view.rsp[1].beats.eq(Mux(second.pair & ~cut, second.rsp.beats, 0)),
        ]
