# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer's placement: a decided control half-flit, slot by slot."""

import operator
from functools import reduce

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ...layout import (
    CREDIT_BITS,
    RSP_LIMIT,
    SECTORS_PER_HALF,
    SLOT_WINDOW,
    control_half,
    credit_array,
    slot_req_flags,
    unit_flags,
    unit_view,
)
from ..place import (
    flow_control_fields,
    place_flow_control,
    place_requests,
    request_footprints,
    schedule_layout,
    spend_and_schedule,
    tx_req_entry,
    unit_word,
)

__all__ = ["SlotPlacer"]

#: Sectors of a slot (README §3, *Slot packer*).
_SLOT = 2
#: Read beats of the responses of one control: 8 of 4 beats.
_RSP_BEATS = 6


class SlotPlacer(wiring.Component):
    """Builds the control half-flit the slot decision chose (README §3, *Slot packer*):
    requests from sector 0 at their footprints, then the units' slots, then Flow Control
    fields (in the gap before an aligned uncompressed request first); each sector an AND-OR
    of what may go there. Combinational.

    Members
    -------
    req : In(ArrayLayout(slot_req_flags, SLOT_WINDOW))
        What the placer needs of the request window, oldest first.
    req_banks, req_lane : In
        The request window's entries as read from its banks, unturned: request ``j`` is in
        bank ``(req_lane + j) mod 4`` (:class:`~scaleup_ip.tl.tx.slots.banks.BankQueue`
        ``reads``); only their fields are used. Turning them is folded into each sector's
        AND-OR.
    units : In(ArrayLayout(unit_flags, SLOT_WINDOW))
        The unit window, oldest first.
    unit_words, unit_lane : In
        The units' slot words by bank, likewise.
    pending : In(credit_array(CREDIT_BITS))
        Credits to return to the peer.
    a, u, cut, b : In
        The decision: requests, units touched, the last unit cut to its first response, and
        responses in all.
    req_pool, rsp_pool : In(1)
        The requests (responses) spend pool credits.
    req_beats, rsp_beats : In(5), In(6)
        Write data beats of the requests taken and read beats of the responses.
    half : Out(control_half)
    spent : Out(credit_array(CREDIT_BITS)), sent : Out(credit_array(5))
        Credits the fields spend and the Flow Control fields return.
    kept : Out(1)
        Some credit return stays pending once these fields are sent
        (:func:`~scaleup_ip.tl.tx.place.place_flow_control`).
    schedule : Out(schedule_layout)
        The data the half calls for.
    """

    def __init__(self):
        super().__init__({
            "req": In(data.ArrayLayout(slot_req_flags, SLOT_WINDOW)),
            "req_banks": In(data.ArrayLayout(tx_req_entry, SLOT_WINDOW)),
            "req_lane": In(range(SLOT_WINDOW)),
            "units": In(data.ArrayLayout(unit_flags, SLOT_WINDOW)),
            "unit_words": In(data.ArrayLayout(64, SLOT_WINDOW)),
            "unit_lane": In(range(SLOT_WINDOW)),
            "pending": In(credit_array(CREDIT_BITS)),
            "a": In(range(SLOT_WINDOW + 1)),
            "u": In(range(SLOT_WINDOW + 1)),
            "cut": In(1),
            "b": In(range(RSP_LIMIT + 1)),
            "req_pool": In(1),
            "rsp_pool": In(1),
            "req_beats": In(5),
            "rsp_beats": In(_RSP_BEATS),
            "half": Out(control_half),
            "spent": Out(credit_array(CREDIT_BITS)),
            "sent": Out(credit_array(5)),
            "kept": Out(1),
            "schedule": Out(schedule_layout),
        })

    def elaborate(self, platform):
        m = Module()
        starts, ends, used = request_footprints(m, [e.wide for e in self.req], "slot")
        end = Signal(range(2 * SECTORS_PER_HALF))
        gap = Signal()
        m.d.comb += [end.eq(Array(ends)[self.a]), gap.eq(end != Array(used)[self.a])]
        terms = [[] for _ in range(SECTORS_PER_HALF)]
        place_requests(m, terms, self.req_banks, self.a, self.req_pool, starts,
                       [self._place(m, "req", self.req_lane, b) for b in range(SLOT_WINDOW)])
        self._place_units(m, terms, end)
        m.d.comb += self.kept.eq(place_flow_control(
            m, terms, flow_control_fields(m, self.pending), end + _SLOT * self.u, self.sent, gap))
        for s, these in enumerate(terms):
            m.d.comb += self.half[s].eq(reduce(operator.or_, (Mux(c, v, 0) for c, v in these)))
        self._spend(m)
        return m

    @staticmethod
    def _place(m, name, lane, bank):
        """The place in its window of the entry in ``bank`` when the oldest is in ``lane``."""
        place = Signal(range(SLOT_WINDOW), name=f"{name}_bank{bank}_place")
        m.d.comb += place.eq(bank - lane)
        return place

    def _place_units(self, m, terms, end):
        """Unit ``k`` of the first ``u`` in the slot ``k`` after the requests (which end at
        sector ``end``, even); the last without its second response when ``cut``. Each bank's
        word goes to the slot of the unit it holds."""
        for b in range(SLOT_WINDOW):
            k = self._place(m, "unit", self.unit_lane, b)
            unit = Signal(unit_view, name=f"unit_bank{b}")
            flags = self.units[k]
            m.d.comb += [unit.word.eq(self.unit_words[b]), unit.wide.eq(flags.wide),
                         unit.pair.eq(flags.pair)]
            word = unit_word(m, unit, self.rsp_pool, ~(self.cut & (self.u == k + 1)),
                             f"unit_word{b}")
            at = Signal(range(4 * SECTORS_PER_HALF), name=f"unit_bank{b}_at")
            m.d.comb += at.eq(end + _SLOT * k)
            for s in range(0, SECTORS_PER_HALF, _SLOT):
                here = Signal(name=f"unit_bank{b}_at{s}")
                m.d.comb += here.eq((self.u > k) & (at == s))
                terms[s].append((here, word[:32]))
                terms[s + 1].append((here, word[32:]))

    def _spend(self, m):
        """Credits the fields spend, and the data they call for."""
        spend_and_schedule(m, self.spent, self.schedule, self.req, (
            (self.a, self.req_beats, self.req_pool, self.req[0].vc),
            (self.b, self.rsp_beats, self.rsp_pool, self.units[0].rsp[0].vc)))
