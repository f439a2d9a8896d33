# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer's decision: the requests and responses of the next control half."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ...layout import FAIR_LEAD_LIMIT, LEAD_SLACK, RSP_LIMIT, SLOT_WINDOW, SLOTS_PER_HALF
from ...layout import slot_window_layout
from ...logic import above, and_all, or_all

__all__ = ["SlotDecide", "request_slots"]

LANES = SLOT_WINDOW + 1


def request_slots(two):
    """Requests whose footprints are ``two`` (``True``: two slots, uncompressed) placed in
    order from slot 0 (README §3, *Slot packer*): the slot after the last and whether slot 1
    is left as a gap (a one-slot request before a two-slot one)."""
    slot, gap = 0, False
    for wide in two:
        if wide and slot % 2:
            slot, gap = slot + 1, True
        slot += 2 if wide else 1
    return slot, gap


def _count(one_hot):
    """The position of the set bit of ``one_hot``, as a number (OR terms, no adder)."""
    width = max(1, (len(one_hot) - 1).bit_length())
    return Cat(*(or_all([Const(0)] + [bit for v, bit in enumerate(one_hot) if v >> i & 1])
                 for i in range(width)))


def _ends(therm):
    """One-hot of a thermometer's count: bit ``v`` when exactly ``v`` bits are set
    (``therm[k]``: the count is more than ``k``)."""
    bits = [Const(1), *therm, Const(0)]
    return [bits[v] & ~bits[v + 1] for v in range(len(therm) + 1)]


class SlotDecide(wiring.Component):
    """How many requests and responses the next control half takes (README §3, *Slot
    packer*), from what the window shows; combinational. The golden model is
    :func:`scaleup_ip.model.tl.slots.decide`.

    Every count is a thermometer code and every compare is of a count against a constant or of
    two thermometers, so no carry chain is built. For each request count ``a`` (0 to 4, a
    *lane*) the decision forms the responses the slots after the requests hold (units, the
    last one cut to its first response where the count allows one fewer), whether the lane is
    balanced, and its key; every pair of lanes is compared beside it (the balance term from
    the sign of ``(d_lo − d_hi) · (2 lead + d_lo + d_hi)``, ``d = a − b``, a compare of the
    balance count with a constant), and the two highest balanced lanes pick the pair's
    verdict.

    Members
    -------
    w : In(slot_window_layout)
        What the window shows.
    a : Out(range(5))
        Requests taken: the first ``a`` of the window.
    b : Out(range(9))
        Responses taken: those of the first ``u`` units, the last unit cut to its first
        response when ``cut``.
    u : Out(range(5))
        Units touched.
    cut : Out(1)
    chosen : Out(5)
        The lane taken, one-hot (none: nothing taken); bit ``a`` for ``a`` requests.
    lane_u, lane_cut : Out
        Each lane's units touched (a thermometer) and whether its last is cut, formed before
        the lanes are weighed: a user forms what each lane would call for beside the weighing
        and selects it with ``chosen``.
    pace : Out(1)
        A pacing flit follows the control (:func:`scaleup_ip.model.tl.slots.paces`), formed
        for each lane beside the weighing.
    """

    w: In(slot_window_layout)
    a: Out(range(SLOT_WINDOW + 1))
    b: Out(range(RSP_LIMIT + 1))
    u: Out(range(SLOT_WINDOW + 1))
    cut: Out(1)
    chosen: Out(LANES)
    lane_u: Out(data.ArrayLayout(SLOT_WINDOW, LANES))
    lane_cut: Out(LANES)
    pace: Out(1)

    def elaborate(self, platform):
        m = Module()
        self._lead = {}
        held = self._held(m)
        lanes = [self._lane(m, a, held) for a in range(LANES)]
        for a, lane in enumerate(lanes):
            m.d.comb += [self.lane_u[a].eq(lane["u"]), self.lane_cut[a].eq(lane["cut"])]
        most = [lanes[0]["room"][k] & self.w.rsp_most[k] for k in range(RSP_LIMIT)]
        for a, lane in enumerate(lanes):
            self._balanced(m, a, lane, most)
            self._paces(m, a, lane, held[SLOT_WINDOW])
        self._choose(m, lanes)
        return m

    def _paces(self, m, a, lane, shown):
        """Lane ``a`` is followed by a pacing flit: it calls for no data and is not swapped
        (``data``), and of the kinds with two or more left in the window (``shown``: the
        window's units hold more than ``k`` responses) each took its whole allowance."""
        w, b = self.w, lane["b"]
        if a + 1 < SLOT_WINDOW:
            more_req = w.req_valid[a + 1]
        else:
            more_req = w.more if a + 1 == SLOT_WINDOW else Const(0)
        more_rsp = or_all([e & shown[v + 1] for v, e in enumerate(_ends(b))
                           if v + 1 < RSP_LIMIT])
        req_all = and_all([w.req_allowed[k] == (k < a) for k in range(len(w.req_allowed))])
        rsp_all = and_all([w.rsp_allowed[k] == b[k] for k in range(RSP_LIMIT)])
        pace = Signal(name=f"pace{a}")
        m.d.comb += pace.eq(~lane["data"] & (more_req | more_rsp) & (~more_req | req_all)
                            & (~more_rsp | rsp_all))
        lane["pace"] = pace

    def _lead_ge(self, t):
        """``lead >= t`` (AND and OR terms of the balance count's bits, memoised)."""
        if t not in self._lead:
            lead = self.w.lead
            offset = Cat(lead[:-1], ~lead[-1])            # lead + FAIR_LEAD_LIMIT, unsigned
            self._lead[t] = above(offset, t + FAIR_LEAD_LIMIT - 1)
        return self._lead[t]

    def _held(self, m):
        """``held[s][k]``: the first ``s`` units of the window hold more than ``k``
        responses."""
        w = self.w
        held = []
        for s in range(SLOT_WINDOW + 1):
            therm = Signal(RSP_LIMIT, name=f"held{s}")
            sel = Cat(w.unit_valid[:s], *(u.pair & w.unit_valid[j]
                                          for j, u in enumerate(w.unit[:s])))
            if s:
                with m.Switch(sel):
                    for n in range(s + 1):
                        for pairs in range(1 << n):
                            total = n + bin(pairs).count("1")
                            with m.Case(((1 << n) - 1) | pairs << s):
                                m.d.comb += therm.eq((1 << total) - 1)
            held.append(therm)
        return held

    def _lane(self, m, a, held):
        """Lane ``a``: whether its requests may go, its responses ``b`` (a thermometer: what
        its slots hold, within the allowance and, while a request may go and more wait, rule
        4's cap), units touched, cut, data and span."""
        w = self.w
        room = Signal(RSP_LIMIT, name=f"room{a}")       # responses the lane's slots hold
        fit = Signal(name=f"fit{a}")
        u = Signal(SLOT_WINDOW, name=f"u{a}")           # units touched, a thermometer
        span = Signal(2 * SLOTS_PER_HALF, name=f"span{a}")   # slots spanned, end + u
        with m.Switch(Cat(*(r.two for r in w.req[:a]), w.reserve)):
            for pattern in range(1 << (a + 1)):
                end, gap = request_slots([pattern >> i & 1 for i in range(a)])
                last = SLOTS_PER_HALF - (pattern >> a & 1 and not gap)
                with m.Case(pattern):
                    top = min(end, SLOTS_PER_HALF)    # past the half: never taken
                    m.d.comb += [fit.eq(end <= last),
                                 span.eq(Cat(Const((1 << top) - 1, top), u))]
                    if end <= last:
                        m.d.comb += room.eq(held[last - end])
        ok = and_all([Const(1), *(w.req_valid[i] & w.req_most[i] for i in range(a))]) & fit
        waiting = w.req_valid[a] if a < SLOT_WINDOW else w.more
        capping = w.req_valid[0] & w.req_most[0] & waiting
        b = Signal(RSP_LIMIT, name=f"b{a}")
        m.d.comb += b.eq(Cat(*(
            room[k] & w.rsp_most[k] & (~capping | self._lead_ge(k + 1 - a - LEAD_SLACK))
            for k in range(RSP_LIMIT))))
        touched, second = [], []
        for j in range(SLOT_WINDOW):
            before = _ends(held[j])         # exactly v responses in the units before unit j
            touched.append(or_all([e & b[v] for v, e in enumerate(before) if v < RSP_LIMIT]))
            second.append(or_all([Const(0)] + [e & b[v + 1] for v, e in enumerate(before)
                                               if v + 1 < RSP_LIMIT]))
        m.d.comb += u.eq(Cat(*touched))
        last = _ends(u)[1:]                 # unit j is the last touched
        cut = or_all([last[j] & w.unit[j].pair & ~second[j] for j in range(SLOT_WINDOW)])
        data = or_all([w.swapped, *(r.data for r in w.req[:a]),
                       *(touched[j] & w.unit[j].data[0] for j in range(SLOT_WINDOW)),
                       *(second[j] & w.unit[j].pair & w.unit[j].data[1]
                         for j in range(SLOT_WINDOW))])
        return {"ok": ok, "room": room, "b": b, "u": u, "cut": cut, "data": data,
                "span": span}

    def _balanced(self, m, a, lane, most):
        """Lane ``a`` is balanced: it may go, holds an item, and leaves ``lead + a − b`` at
        most LEAD_SLACK or takes every response the control could take."""
        b = lane["b"]
        # lead + a - b <= LEAD_SLACK: for each count v, lead >= LEAD_SLACK + 1 - a + v means
        # b > v
        slack = and_all([~self._lead_ge(LEAD_SLACK + 1 - a + v) | (b[v] if v < RSP_LIMIT
                                                                    else Const(0))
                         for v in range(RSP_LIMIT + 1)])
        every = and_all([b[k] == most[k] for k in range(RSP_LIMIT)])
        balanced = Signal(name=f"balanced{a}")
        m.d.comb += balanced.eq(lane["ok"] & ((a != 0) | b[0]) & (slack | every))
        lane["balanced"] = balanced

    def _nearer(self, lo, hi, b_lo, b_hi):
        """``|lead + lo − b_lo| <= |lead + hi − b_hi|`` for lanes ``lo`` < ``hi``: with
        ``d = a − b``, the sign of ``(d_lo − d_hi) · (2 lead + d_lo + d_hi)`` (nearer when not
        positive), a compare of the balance count with a constant for each pair of counts."""
        terms = []
        for v_lo, e_lo in enumerate(_ends(b_lo)):
            for v_hi, e_hi in enumerate(_ends(b_hi)):
                d_lo, d_hi = lo - v_lo, hi - v_hi
                total = d_lo + d_hi
                if d_lo == d_hi:
                    holds = Const(1)
                elif d_lo > d_hi:                  # 2 lead <= -total
                    holds = ~self._lead_ge((-total) // 2 + 1)
                else:                              # 2 lead >= -total
                    holds = self._lead_ge(-((total) // 2))
                terms.append(e_lo & e_hi & holds)
        return or_all(terms)

    def _choose(self, m, lanes):
        """The two highest balanced lanes, ``hi`` above ``lo``; ``lo`` wins when its key is at
        least ``hi``'s (at equal keys, fewer requests). Each pair's verdict is formed beside
        the balance bits."""
        bal = [lane["balanced"] for lane in lanes]
        hi = [bal[x] & ~or_all([Const(0), *bal[x + 1:]]) for x in range(LANES)]
        lo = []
        for y in range(LANES):
            above_y = bal[y + 1:]
            one = or_all([Const(0)] + [above_y[i] & ~or_all([Const(0), *above_y[:i],
                                                             *above_y[i + 1:]])
                                       for i in range(len(above_y))])
            lo.append(bal[y] & one)
        verdicts = []
        for x in range(LANES):
            for y in range(x):
                lx, ly = lanes[x], lanes[y]
                wider = or_all([ly["span"][t] & ~lx["span"][t] for t in range(8)])
                same = and_all([ly["span"][t] == lx["span"][t] for t in range(8)])
                wins = Signal(name=f"wins_{y}_over_{x}")
                m.d.comb += wins.eq(
                    (ly["data"] & ~lx["data"])
                    | ((ly["data"] == lx["data"])
                       & (wider | (same & self._nearer(y, x, ly["b"], lx["b"])))))
                verdicts.append(hi[x] & lo[y] & wins)
        lo_wins = Signal()
        m.d.comb += lo_wins.eq(or_all(verdicts))
        chosen = [Signal(name=f"chosen{a}") for a in range(LANES)]
        m.d.comb += [c.eq(Mux(lo_wins, lo[a], hi[a])) for a, c in enumerate(chosen)]
        pick = {k: or_all([lanes[a][k] & chosen[a].replicate(len(lanes[a][k]))
                           for a in range(LANES)])
                for k in ("b", "u")}
        m.d.comb += [
            self.chosen.eq(Cat(*chosen)),
            self.a.eq(_count(chosen)),
            self.b.eq(_count(_ends(pick["b"]))),
            self.u.eq(_count(_ends(pick["u"]))),
            self.cut.eq(or_all([chosen[a] & lanes[a]["cut"] for a in range(LANES)])),
            self.pace.eq(or_all([chosen[a] & lanes[a]["pace"] for a in range(LANES)])),
        ]
