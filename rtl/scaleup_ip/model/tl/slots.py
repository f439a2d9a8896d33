# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer: the transmit packing policy in slots and response units (README §3,
*Slot packer*) [ours].

A control half-flit is 4 *slots* of 2 sectors. A compressed request takes 1 slot, an
uncompressed one 2 aligned slots (0-1 or 2-3), so a compressed request followed by an
uncompressed one leaves slot 1 free: the *gap* [Table 5-2, §5.6.2], which only a Flow Control
field may take (so data follows requests, then responses [§5.1.1]). Responses are bundled into
1-slot *units* as they are queued: an uncompressed response is a unit; a compressed response
opens a unit that the next response joins if it is compressed too (two 1-sector fields in one
slot), and that stays alone otherwise. Units follow the requests.

The decision (:func:`decide`) sees what a hardware window sees: the sizes and data flags of the
first :data:`WINDOW` requests, whether more wait, the first :data:`WINDOW` units, the balance
count, the rate-limit allowances, the longest credit-feasible prefixes and whether a credit
return is pending. It weighs two candidates only, the two highest balanced request counts, by
the key of README §3 rule 3, so that it can be made in one clock. The benchmark's mixes pack
within 0.5 points of the best legal packing (:mod:`.bound`) with it. A control without data
that the rate limits cut short is followed by a pacing flit of NOPs (:func:`paces`), which
costs no flit and lets the hardware, two clocks a control, send one flit per clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .flit import (
    FAIR_LEAD_LIMIT,
    FIELD_SECTORS,
    HALF_SECTORS,
    LEAD_SLACK,
    MAX_REQUESTS,
    MSG_INIT_DONE,
    RESPONSE_LIMIT,
    Packer,
    ReadResponse,
    WriteResponse,
    _Half,
    _MANDATORY_NOP,
    response_ftype,
)

__all__ = ["SLOTS_PER_HALF", "SLOT_SECTORS", "WINDOW", "Window", "request_layout", "decide",
           "paces", "SlotPacker"]

SLOT_SECTORS = 2
SLOTS_PER_HALF = HALF_SECTORS // SLOT_SECTORS
#: Requests and response units the decision sees (a control takes at most 4 of either).
WINDOW = 4


def request_layout(sizes):
    """Requests of ``sizes`` slots (1 or 2) placed in order from slot 0, each at the next slot
    its footprint allows: their start slots, the slot after the last, and the gap slot (1
    when a 1-slot request at 0 is followed by a 2-slot one, else ``None``)."""
    starts, slot, gap = [], 0, None
    for size in sizes:
        if size == 2 and slot % 2:
            gap, slot = slot, slot + 1
        starts.append(slot)
        slot += size
    return starts, slot, gap


@dataclass(frozen=True)
class Window:
    """What one control's decision sees.

    Attributes
    ----------
    sizes, data : tuple
        Slots (1 or 2) and whether it carries data, of each request in the window, in order.
    waiting : int
        Requests queued in all (only whether it exceeds a count of the window matters).
    units : tuple of tuple of bool
        The window's response units, each as its responses' data flags (one or two).
    lead : int
        Requests minus responses issued so far (rule 4's balance count).
    allow_req, allow_rsp : int
        Requests and responses the rate limits allow this control [§5.7].
    req_credit, rsp_credit : int
        The longest request prefix and response prefix the credits cover (rule 6).
    reserve : bool
        A credit return is pending: one slot stays free for a Flow Control field (rule 2).
    swapped : bool
        The control shares its flit with an owed data half-flit.
    """

    sizes: tuple
    data: tuple
    waiting: int
    units: tuple
    lead: int
    allow_req: int
    allow_rsp: int
    req_credit: int
    rsp_credit: int
    reserve: bool
    swapped: bool


def _units_taken(units, slots, most):
    """The units a control takes in ``slots`` slots with at most ``most`` responses: ``(u, b,
    data)``, units (a unit cut to its first response counts), responses, any with data."""
    u = b = 0
    data = False
    for unit in units[:slots]:
        take = unit[:max(0, most - b)]
        if not take:
            break
        u, b, data = u + 1, b + len(take), data or any(take)
        if len(take) < len(unit):
            break
    return u, b, data


def decide(w: Window):
    """The control's ``(a, b)``: requests and responses it takes, ``(0, 0)`` for none.

    ``A``, the most requests that may go, is the longest window prefix, at most 4, that fits
    the slots (with ``reserve``, the last one left free unless there is a gap), within the
    allowance and the credits.
    For each count ``a`` of them the responses follow: the units that fit the slots after the
    requests, as many responses as the allowance, the credits and, while a request may go and
    more wait than ``a``, the balance cap ``a + lead + LEAD_SLACK`` allow; the last unit
    may be cut to its first response when one more is not allowed. Count ``a`` is *balanced*
    when ``lead + a − b ≤ LEAD_SLACK`` or its ``b`` is every response the control could take
    were the half theirs, and holds an item. Of the two highest balanced counts the control
    takes the greater by (data or swapped, slots spanned, −|lead + a − b|, −a).
    """
    def room(a):
        """Slots left after ``a`` requests (negative: they do not fit); with ``reserve`` the
        last one is kept free unless the gap is there for the Flow Control field."""
        _, end, gap = request_layout(w.sizes[:a])
        return SLOTS_PER_HALF - int(w.reserve and gap is None) - end

    most_req = min(MAX_REQUESTS, w.allow_req, w.req_credit, len(w.sizes))
    top = 0
    for a in range(1, most_req + 1):
        if room(a) < 0:
            break
        top = a
    allowed = min(RESPONSE_LIMIT, w.allow_rsp, w.rsp_credit)
    most_b = _units_taken(w.units, room(0), allowed)[1]
    lanes = []
    for a in range(top + 1):
        cap = allowed
        if top and a < w.waiting:                                   # rule 4's balance cap
            cap = min(cap, max(0, a + w.lead + LEAD_SLACK))
        u, b, data = _units_taken(w.units, room(a), cap)
        lead = w.lead + a - b
        if a + b and (lead <= LEAD_SLACK or b == most_b):
            span = request_layout(w.sizes[:a])[1] + u
            lanes.append(((any(w.data[:a]) or data or w.swapped, span, -abs(lead), -a), a, b))
    if not lanes:
        return 0, 0
    _, a, b = max(lanes[-2:])
    return a, b


def paces(w: Window, a, b):
    """Whether the control ``(a, b)`` decided on ``w`` is followed by a *pacing flit*, all NOP
    (README §3, *Slot packer*) [ours]: it holds an item and calls for no data, is not swapped
    (its flit is the control and a MANDATORY NOP), and the rate limits, not the slots, hold
    back what waits. That is: at least one kind (requests, responses) has 2 or more left in
    the window beyond the control (requests counted up to one past the window, as the
    hardware's ``more``), and every such kind took its whole allowance. The next flit could
    then take at most one of each kind; after the pacing flit the next control may take two,
    as the spec's rate-limit flow shows [§5.7, Table 5-24 flit 3], so a burst of controls
    without data costs no flits more and its controls are one per two flits."""
    units = [d for unit in w.units for d in unit]
    if not (a or b) or w.swapped or any(w.data[:a]) or any(units[:b]):
        return False
    more_req = min(w.waiting, WINDOW + 1) - a >= 2
    more_rsp = len(units) - b >= 2
    return ((more_req or more_rsp) and (not more_req or a == w.allow_req)
            and (not more_rsp or b == w.allow_rsp))


class SlotPacker(Packer):
    """The golden model's packer with the slot policy (:func:`decide`) for rules 3 and 4;
    rules 1, 2, 5, 6 and 7 as :class:`~.flit.Packer`. Flow Control fields take the gap's
    sectors, then those after the units, in ascending order.

    Attributes
    ----------
    layouts : list of str
        Per control half with items, its sectors (``Q``/``q`` uncompressed/compressed request,
        ``R``/``r`` response, the first sector of each field with its beats, ``.`` free).
    """

    def __init__(self, advertise: dict, granted: dict | None = None, address_cache=None,
                 cache_index: str = "DSTACCID"):
        super().__init__(advertise, granted, address_cache, cache_index)
        self._units = deque()           # [responses, open]
        self.layouts = []
        self._pace = False              # the next flit is a pacing flit

    def push_response(self, r: ReadResponse | WriteResponse):
        """Queue a response: it joins the last unit if both are compressed and that unit is
        open (a compressed response alone, not yet taken), else starts a unit."""
        super().push_response(r)
        compressed = FIELD_SECTORS[response_ftype(r)] == 1
        last = self._units[-1] if self._units else None
        if compressed and last is not None and last[1]:
            last[0].append(r)
            last[1] = False
            return
        if last is not None:
            last[1] = False
        self._units.append([[r], compressed])

    def step(self):
        """One flit time (:meth:`~.flit.Packer.step`); after a control that :func:`paces`,
        the all-NOP pacing flit."""
        if self._pace:
            self._pace = False
            self.pace_flits += 1
            return self._emit(_Half(0, False, "C"), _MANDATORY_NOP, (0, 0))
        return super().step()

    def window(self, reserve, swapped) -> Window:
        """The decision's view of the queues, credits and limits."""
        sizes = tuple(FIELD_SECTORS[ftype] // SLOT_SECTORS
                      for ftype, _, _ in list(self._decisions)[:WINDOW])
        requests = list(self._requests)[:WINDOW]
        units = list(self._units)[:WINDOW]
        responses = [r for unit, _ in units for r in unit][:RESPONSE_LIMIT]
        return Window(
            sizes=sizes, data=tuple(bool(r.beats) for r in requests),
            waiting=len(self._requests),
            units=tuple(tuple(bool(r.beats) for r in unit) for unit, _ in units),
            lead=self.lead, allow_req=self._rates["req"].allowance,
            allow_rsp=self._rates["rsp"].allowance,
            req_credit=self._feasible(requests), rsp_credit=self._feasible(responses),
            reserve=bool(reserve), swapped=bool(swapped))

    def _feasible(self, items):
        """The longest prefix of ``items`` the credits cover (rule 6)."""
        n = 0
        while n < len(items) and self._pools(items[:n + 1]) is not None:
            n += 1
        return n

    def _control(self, required):
        pending = self.pending_returns > 0
        if not self.init_sent and not pending:
            self.init_sent = True                                   # rule 1
            return _Half(MSG_INIT_DONE, True, "M"), (0, 0)
        a = b = 0
        if self.init_sent:
            w = self.window(pending, required)
            a, b = decide(w)
            self._pace = paces(w, a, b)
        if not (a or b or pending or required):
            return None
        requests = [(self._requests[k], self._decisions[k]) for k in range(a)]
        units = self._take_units(b)
        req_pools = self._pools([r for r, _ in requests]) if a else {}
        rsp_pools = self._pools([r for unit in units for r in unit]) if b else {}
        starts, end, gap = request_layout(
            [FIELD_SECTORS[ftype] // SLOT_SECTORS for _, (ftype, _, _) in requests])
        unit_slots = range(end, SLOTS_PER_HALF)
        fields = [(SLOT_SECTORS * s, item, decision) for (item, decision), s in zip(requests,
                                                                                    starts)]
        for unit, slot in zip(units, unit_slots):
            sector = SLOT_SECTORS * slot
            for r in unit:
                fields.append((sector, r, None))
                sector += FIELD_SECTORS[response_ftype(r)]
        half, used = 0, set()
        for sector, item, decision in fields:                   # data in sector order
            if decision is None:
                half, after = self._place(item, rsp_pools[item.vc], half, sector)
            else:
                half |= self._place_request(item, req_pools[item.vc], decision, sector)
                after = sector + FIELD_SECTORS[decision[0]]
            used.update(range(sector, after))
        for _ in range(a):
            self._requests.popleft()
            self._decisions.popleft()
        self.lead = max(-FAIR_LEAD_LIMIT, min(FAIR_LEAD_LIMIT - 1, self.lead + a - b))
        # Flow Control fields: the gap, then the slots after the units (not the sector a lone
        # compressed response leaves in its slot)
        free = ([SLOT_SECTORS * gap, SLOT_SECTORS * gap + 1] if gap is not None else []) + list(
            range(SLOT_SECTORS * (end + len(units)), HALF_SECTORS))
        half, fc = self._place_flow_control(half, free)
        self.nop_sectors += HALF_SECTORS - len(used) - fc
        if fields:
            self.layouts.append(_layout(fields))
        return _Half(half, False, "C"), (a, b)

    def _take_units(self, b):
        """Take ``b`` responses off the queue, unit by unit (the last cut to its first response
        when ``b`` ends inside it); the units taken, each a list of responses."""
        taken = []
        while b:
            unit = self._units[0][0]
            if len(unit) <= b:
                self._units.popleft()
                taken.append(unit)
            else:
                taken.append(unit[:b])
                del unit[:b]
            b -= len(taken[-1])
        for _ in range(sum(map(len, taken))):
            self._responses.popleft()
        return taken


def _layout(fields):
    cells = ["."] * HALF_SECTORS
    for sector, item, decision in fields:
        if decision is None:
            size, tag = FIELD_SECTORS[response_ftype(item)], "r"
        else:
            size, tag = FIELD_SECTORS[decision[0]], "q"
        tag = tag.upper() if size == 4 or (tag == "r" and size == 2) else tag
        cells[sector:sector + size] = [tag] * size
        cells[sector] = tag + str(item.beats)
    return "|".join(c.ljust(2) for c in cells)
