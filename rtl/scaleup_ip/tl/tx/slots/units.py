# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer's response queue: responses bundled into units as they are queued."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...layout import SLOT_WINDOW, unit_response, unit_view
from ..place import tx_rsp_entry
from .banks import BankQueue

__all__ = ["UnitQueue"]

#: A unit's first response, kept when the unit is queued.
_first = data.StructLayout({"field": 64, "wide": 1, "rsp": unit_response})
#: A unit's second response, written when a compressed response joins the unit.
_second = data.StructLayout({"pair": 1, "field": 32, "rsp": unit_response})


class UnitQueue(wiring.Component):
    """Responses queued as slot units (README §3, *Slot packer*) [ours]: an uncompressed
    response is a unit; a compressed response joins the newest unit when that is a compressed
    response alone (``open``) that is not leaving, else starts a unit.

    A :class:`~scaleup_ip.tl.tx.slots.banks.BankQueue` of units: the first response with the
    unit, the second in memories of its own written when it joins.

    Parameters
    ----------
    depth : int
        Units held (at least the responses that may wait: each unit holds one or two).

    Members
    -------
    i : In(stream.Signature(tx_rsp_entry))
        Responses in (``run`` and ``same_vc`` are not used). ``ready`` is low only
        while ``depth`` units are held.
    units : Out(ArrayLayout(unit_view, SLOT_WINDOW))
        The oldest units, oldest first; ``count`` valid. The oldest shows only its second
        response once the first was taken (``cut``).
    count : Out(range(SLOT_WINDOW + 1))
    take : In(range(SLOT_WINDOW + 1))
        Units removed this clock.
    cut : In(1)
        The oldest unit left after ``take`` loses its first response this clock (a decision
        took it alone); it must hold two.
    freeze : In(1)
        Units of the window are taken this clock: a response does not join a unit in the
        window (so that a response never joins a unit as it leaves).

    Latency: a response accepted at clock ``t`` is in ``units`` from ``t + 1``.
    """

    def __init__(self, depth):
        self._depth = depth
        super().__init__({
            "i": In(stream.Signature(tx_rsp_entry)),
            "units": Out(data.ArrayLayout(unit_view, SLOT_WINDOW)),
            "count": Out(range(SLOT_WINDOW + 1)),
            "take": In(range(SLOT_WINDOW + 1)),
            "cut": In(1),
            "freeze": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = q = BankQueue(_first, self._depth, SLOT_WINDOW, amend=_second)
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
            q.i.valid.eq(self.i.valid & ~join),
            self.i.ready.eq(q.i.ready | join),
            q.i.payload.field.eq(entry.field), q.i.payload.wide.eq(entry.wide),
            q.i_amend.eq(0),
            q.amend.valid.eq(self.i.valid & join),
            q.amend.payload.pair.eq(1), q.amend.payload.field.eq(entry.field[:32]),
            q.pop.eq(self.take), self.count.eq(q.count),
        ]
        for rsp in (q.i.payload.rsp, q.amend.payload.rsp):
            m.d.comb += [rsp.vc.eq(entry.vc), rsp.beats.eq(entry.beats), rsp.run.eq(run_next)]
        # A unit alone keeps its run in the second part too (the run of the whole unit).
        m.d.comb += q.i_amend.rsp.run.eq(run_next)
        with m.If(q.i.valid & q.i.ready):
            m.d.sync += is_open.eq(~entry.wide)
        with m.Elif(q.amend.valid | (self.take == q.level)):
            m.d.sync += is_open.eq(0)
        head_cut = Signal()              # the oldest unit's first response is gone
        with m.If(self.take != 0):
            m.d.sync += head_cut.eq(self.cut)
        with m.Elif(self.cut):
            m.d.sync += head_cut.eq(1)
        for j in range(SLOT_WINDOW):
            first, second, view = q.entries[j], q.amends[j], self.units[j]
            m.d.comb += [
                view.wide.eq(first.wide), view.pair.eq(second.pair),
                view.word.eq(Mux(first.wide, first.field,
                                 Cat(first.field[:32], Mux(second.pair, second.field, 0)))),
                view.rsp[0].eq(first.rsp), view.rsp[1].run.eq(second.rsp.run),
                view.rsp[1].vc.eq(Mux(second.pair, second.rsp.vc, 0)),
                view.rsp[1].beats.eq(Mux(second.pair, second.rsp.beats, 0)),
            ]
            if j == 0:
                with m.If(head_cut):
                    m.d.comb += [view.wide.eq(0), view.pair.eq(0),
                                 view.word.eq(Cat(second.field, Const(0, 32))),
                                 view.rsp[0].eq(second.rsp), view.rsp[1].vc.eq(0),
                                 view.rsp[1].beats.eq(0)]
        return m
