# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer's composer: control half-flits decided on the request and unit windows."""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ...layout import (
    FAIR_LEAD_LIMIT,
    REQS_PER_CONTROL,
    RSP_LIMIT,
    SLOT_WINDOW,
    CreditClass,
    MsgType,
    slot_req_flags,
    unit_flags,
)
from ...logic import or_all, thermometer
from ..compose import (
    RECORDS_AHEAD,
    RateState,
    account_credits,
    capped_credits,
    composer_members,
    count_lead,
    flits_to_next,
    outstanding_after,
    record_layout,
    record_queue,
    schedule_queue,
)
from ..place import tx_req_entry
from .credits import prefix_credits, request_prefixes
from .decide import SlotDecide
from .place import SlotPlacer

__all__ = ["SlotCompose"]

#: The decision as registered for the clock that applies it.
_choice = data.StructLayout({
    "a": range(SLOT_WINDOW + 1),
    "u": range(SLOT_WINDOW + 1),
    "cut": 1,
    "base": 6,                           # ``run`` of the last response it takes
    "b": range(RSP_LIMIT + 1),
    "req_pool": 1,
    "rsp_pool": 1,
    "req_beats": 5,
    "rsp_beats": 6,
    "halves": 7,                         # data half-flits the control calls for
    "first_req": 1,                      # its first data half-flit is a request's
    "pace": 1,                           # a pacing flit follows its own
})


class SlotCompose(wiring.Component):
    """Decides each control half-flit by the slot packer's rules (README §3, *Slot packer*;
    :class:`~scaleup_ip.tl.tx.slots.decide.SlotDecide` with rule 6 beside it) and hands it on
    as a record.

    A control takes two clocks: the decision is registered from registered state, then
    placed by :class:`~scaleup_ip.tl.tx.slots.place.SlotPlacer` and applied (queue pops,
    credits spent and returned, rate limits, the position of the next control). Flits are
    counted *virtually*: from each control's data half-flits and its pacing flit
    (:func:`~scaleup_ip.model.tl.slots.paces`) the composer knows how many flits the emitter
    will send before the next control and whether that one is swapped, so rate
    limits and the initialisation message follow the flit sequence exactly as if the choice
    were made as the flit leaves. The members it shows the emitter and the credit ports are
    :func:`~scaleup_ip.tl.tx.compose.composer_members`; the windows:

    Members
    -------
    req_flags, req_count, req_more : In
        The request window (:class:`~scaleup_ip.tl.tx.slots.banks.BankQueue`, registered):
        what the composer needs of the oldest requests, how many are valid, and whether more
        wait behind them.
    req_banks, req_lane : In
        Their entries as read from the banks, unturned, for the placer
        (:class:`~scaleup_ip.tl.tx.slots.place.SlotPlacer`).
    unit_flags, unit_count, unit_words, unit_lane : In
        The unit window (:class:`~scaleup_ip.tl.tx.slots.units.UnitQueue`), likewise.
    req_flags_next, unit_flags_next, unit_count_next : In
        What the windows will show in the next clock (the queues' ``*_next``).
    req_pop : Out
        Requests taken.
    unit_take, unit_cut : Out
        Units taken, and whether the oldest unit left loses its first response.
    freeze : Out(1)
        A decision may be registered, or units are taken, this clock: no response may join a
        unit of the window.
    """

    def __init__(self):
        super().__init__({
            "req_flags": In(data.ArrayLayout(slot_req_flags, SLOT_WINDOW)),
            "req_flags_next": In(data.ArrayLayout(slot_req_flags, SLOT_WINDOW)),
            "req_banks": In(data.ArrayLayout(tx_req_entry, SLOT_WINDOW)),
            "req_lane": In(range(SLOT_WINDOW)),
            "req_count": In(range(SLOT_WINDOW + 1)),
            "req_more": In(1),
            "unit_flags": In(data.ArrayLayout(unit_flags, SLOT_WINDOW)),
            "unit_flags_next": In(data.ArrayLayout(unit_flags, SLOT_WINDOW)),
            "unit_count_next": In(range(SLOT_WINDOW + 1)),
            "unit_words": In(data.ArrayLayout(64, SLOT_WINDOW)),
            "unit_lane": In(range(SLOT_WINDOW)),
            "unit_count": In(range(SLOT_WINDOW + 1)),
            "req_pop": Out(range(SLOT_WINDOW + 1)),
            "unit_take": Out(range(SLOT_WINDOW + 1)),
            "unit_cut": Out(1),
            "freeze": Out(1),
            **composer_members(),
        })

    def elaborate(self, platform):
        m = Module()
        init = Signal()                  # the message is composed: traffic may follow
        swap = Signal()                  # the next control shares its flit with an owed half
        rates = RateState(m)
        fc_pending = Signal()            # a credit return is pending (registered)
        lead = Signal(range(-FAIR_LEAD_LIMIT, FAIR_LEAD_LIMIT))     # rule 4's balance count
        init_next = Signal()
        base = Signal(6)                 # ``run`` of the last response taken
        base_next = Signal(6)
        m.d.comb += [init_next.eq(init), base_next.eq(base)]
        m.d.sync += [init.eq(init_next), base.eq(base_next)]

        # Clock A: the decision, registered. Clock B: placed and applied; the record written.
        # The windows do not change between A and B but for entries added behind them.
        chosen = Signal()
        msg = Signal()
        pick = Signal(_choice)
        # No response joins a unit of the window while a decision may be registered or is
        # applied (``freeze``), so the units a decision saw are the ones it takes and
        # ``pick.cut`` stands as decided.
        m.submodules.place = place = SlotPlacer()
        m.d.comb += [
            place.req.eq(self.req_flags), place.req_banks.eq(self.req_banks),
            place.req_lane.eq(self.req_lane), place.units.eq(self.unit_flags),
            place.unit_words.eq(self.unit_words), place.unit_lane.eq(self.unit_lane),
            place.pending.eq(self.pending),
            place.a.eq(pick.a), place.u.eq(pick.u), place.cut.eq(pick.cut), place.b.eq(pick.b),
            place.req_pool.eq(pick.req_pool), place.rsp_pool.eq(pick.rsp_pool),
            place.req_beats.eq(pick.req_beats), place.rsp_beats.eq(pick.rsp_beats),
        ]
        owed = Signal(7)
        flits = Signal(7)
        m.d.comb += flits_to_next(swap, pick.halves, owed, flits, pick.pace)
        rec = Signal(record_layout)
        m.d.comb += [
            rec.msg.eq(msg), rec.halves.eq(Mux(msg, 0, pick.halves)),
            rec.pace.eq(~msg & pick.pace),
            rec.half.eq(Mux(msg, MsgType.CREDIT_INIT_DONE.value, place.half)),
        ]
        queue = record_queue(m, self, chosen, rec, pick.first_req)
        room = schedule_queue(m, self, chosen & ~msg & (pick.halves != 0), place.schedule)
        may = Signal()                   # a decision may be registered this clock
        m.d.comb += [may.eq(self.want & (queue.level < RECORDS_AHEAD) & room),
                     self.freeze.eq(chosen | self.may_want)]
        held, _ = account_credits(m, self, chosen & ~msg, place.spent, place.sent, fc_pending,
                                  place.kept)
        dec = self._decide(m, self._ahead(m, capped_credits(m, held), rates, init_next,
                                          base_next), rates, fc_pending, lead, swap)
        with m.If(chosen):
            m.d.sync += chosen.eq(0)
            m.d.comb += [self.req_pop.eq(pick.a), self.unit_take.eq(pick.u - pick.cut),
                         self.unit_cut.eq(pick.cut)]
            with m.If(pick.u != 0):
                m.d.comb += base_next.eq(pick.base)
            with m.If(msg):              # its own flit only; nothing owed after it
                m.d.comb += init_next.eq(1)
                m.d.sync += swap.eq(0)
                rates.after_message(m)
            with m.Else():
                m.d.sync += swap.eq(owed[0])
                m.d.comb += [
                    rates.req_out_next.eq(outstanding_after(rates.req_out, pick.a, flits)),
                    rates.rsp_out_next.eq(outstanding_after(rates.rsp_out, pick.b, flits)),
                ]
                count_lead(m, lead, pick.a, pick.b)
        with m.Elif(may):
            msg_due = self.give_init & ~init & ~fc_pending & ~swap
            with m.If(msg_due | swap | (dec.a != 0) | (dec.b != 0) | fc_pending):
                m.d.sync += [chosen.eq(1), msg.eq(msg_due), pick.eq(Mux(msg_due, 0, dec))]
        return m

    def _ahead(self, m, capped, rates, init, base):
        """Rule 6 and the rate limits for every prefix of the windows as they will be in the
        next clock (the credits, allowances, windows and ``base`` of the next clock), formed a
        clock ahead and registered, so that the decision starts from registers: the requests
        and responses that may go (``req_most``, ``rsp_most``, thermometers), whether each
        request prefix spends its VC's credits (``req_vc``), and ``(by VC, read beats)`` of
        each unit prefix (``units``, as :meth:`_unit_credits`)."""
        req_ok, req_vc = prefix_credits(m, "slot_req", capped, CreditClass.REQ_CMD,
                                        CreditClass.REQ_DATA, self.req_flags_next[0].vc,
                                        request_prefixes(m, self.req_flags_next))
        rsp_ok, by_units = self._unit_credits(
            m, capped, thermometer(self.unit_count_next, SLOT_WINDOW), base,
            self.unit_flags_next)
        out = {"req_most": Signal(REQS_PER_CONTROL, name="req_most"),
               "rsp_most": Signal(RSP_LIMIT, name="rsp_most"),
               "req_vc": [Signal(name=f"req_p{i + 1}_vc_r") for i in range(REQS_PER_CONTROL)],
               "units": [(Signal(name=f"unit_p{k}_vc_r"), Signal(6, name=f"unit_p{k}_beats_r"))
                         for k in range(len(by_units))]}
        m.d.sync += [
            out["req_most"].eq(Cat(*(init & rates.req_allowed_next[i] & req_ok[i]
                                     for i in range(REQS_PER_CONTROL)))),
            out["rsp_most"].eq(Cat(*(init & rates.rsp_allowed_next[j] & rsp_ok[j]
                                     for j in range(RSP_LIMIT)))),
            *(r.eq(v) for r, v in zip(out["req_vc"], req_vc)),
            *(r.eq(v) for pair, now in zip(out["units"], by_units) for r, v in zip(pair, now)),
        ]
        return out

    def _decide(self, m, ahead, rates, fc_pending, lead, swap):
        """:class:`~scaleup_ip.tl.tx.slots.decide.SlotDecide` on the windows, the composer's
        state and rule 6 formed a clock ahead (:meth:`_ahead`): the decision as
        :data:`_choice`."""
        m.submodules.decide = dec = SlotDecide()
        w = dec.w
        for i, e in enumerate(self.req_flags):
            m.d.comb += [w.req[i].two.eq(e.wide), w.req[i].data.eq(e.beats != 0)]
        for j, u in enumerate(self.unit_flags):
            m.d.comb += [w.unit[j].pair.eq(u.pair), w.unit[j].data[0].eq(u.rsp[0].beats != 0),
                         w.unit[j].data[1].eq(u.rsp[1].beats != 0)]
        m.d.comb += [
            w.req_valid.eq(thermometer(self.req_count, REQS_PER_CONTROL)),
            w.more.eq(self.req_more), w.unit_valid.eq(thermometer(self.unit_count, SLOT_WINDOW)),
            w.req_most.eq(ahead["req_most"]), w.rsp_most.eq(ahead["rsp_most"]),
            w.req_allowed.eq(rates.req_allowed), w.rsp_allowed.eq(rates.rsp_allowed),
            w.lead.eq(lead), w.reserve.eq(fc_pending), w.swapped.eq(swap),
        ]
        return self._choice(m, dec, ahead["req_vc"], ahead["units"])

    def _choice(self, m, dec, req_vc, by_units):
        """The decision as :data:`_choice`: what the control calls for is formed for every
        lane (request count) beside the weighing of the lanes, from each lane's units, and the
        chosen lane's is selected by an AND-OR (no sum after the decision)."""
        req_beats, req_halves, first_req = [Const(0, 5)], [Const(0, 7)], [Const(0)]
        for e in self.req_flags:
            req_beats.append(req_beats[-1] + e.beats)
            req_halves.append(req_halves[-1] + 2 * e.beats + e.be)
            first_req.append(first_req[-1] | (e.beats != 0))
        lanes = []
        for a in range(SLOT_WINDOW + 1):
            u, cut = dec.lane_u[a], dec.lane_cut[a]
            ends = [u[j] & ~(u[j + 1] if j + 1 < SLOT_WINDOW else 0) for j in range(SLOT_WINDOW)]
            beats = Signal(6, name=f"lane{a}_rsp_beats")
            by_vc = Signal(name=f"lane{a}_rsp_vc")
            halves = Signal(7, name=f"lane{a}_halves")
            run = Signal(6, name=f"lane{a}_base")
            m.d.comb += [
                beats.eq(or_all([Mux(e, Mux(cut, by_units[2 * j + 1][1], by_units[2 * j][1]), 0)
                                 for j, e in enumerate(ends)])),
                by_vc.eq(or_all([e & Mux(cut, by_units[2 * j + 1][0], by_units[2 * j][0])
                                 for j, e in enumerate(ends)])),
                halves.eq(req_halves[a] + Cat(Const(0, 1), beats)),
                run.eq(or_all([Mux(e, Mux(cut, self.unit_flags[j].rsp[0].run,
                                          self.unit_flags[j].rsp[1].run), 0)
                               for j, e in enumerate(ends)])),
            ]
            lanes.append({"rsp_beats": beats, "rsp_pool": ~by_vc & (u != 0),
                          "halves": halves, "base": run, "req_beats": req_beats[a],
                          "first_req": first_req[a],
                          "req_pool": ~req_vc[a - 1] if a else Const(0)})
        out = Signal(_choice, name="slot_decision")
        m.d.comb += [out.a.eq(dec.a), out.u.eq(dec.u), out.cut.eq(dec.cut), out.b.eq(dec.b),
                     out.pace.eq(dec.pace)]
        for name, shape in (("rsp_beats", 6), ("rsp_pool", 1), ("halves", 7), ("base", 6),
                            ("req_beats", 5), ("first_req", 1), ("req_pool", 1)):
            m.d.comb += getattr(out, name).eq(or_all([
                Mux(dec.chosen[a], lane[name], Const(0, shape)) for a, lane in enumerate(lanes)]))
        return out

    def _unit_credits(self, m, capped, unit_valid, base, units):
        """Rule 6 for the responses of the unit window: for each count ``b`` of responses
        (1 to 8), whether the credits cover the first ``b``; and for each unit ``k`` whole
        and cut (index ``2k``, ``2k + 1``), ``(by VC, read beats)`` of the responses up to it.
        Each prefix's beats are its last response's ``run`` less ``base`` (that of the last
        response taken), and its count a function of the units' ``pair`` bits: no carry chain
        runs through the window."""
        vc0 = units[0].rsp[0].vc
        pairs = [u.pair for u in units]
        prefixes, counts = [], []
        one = Const(1)
        for k, u in enumerate(units):
            cut_one = Signal(name=f"unit{k}_cut_one_vc")
            full_one = Signal(name=f"unit{k}_full_one_vc")
            m.d.comb += [cut_one.eq(one & (u.rsp[0].vc == vc0)),
                         full_one.eq(cut_one & (~u.pair | (u.rsp[1].vc == vc0)))]
            for name, run, ones, extra in (("full", u.rsp[1].run, full_one, 1),
                                           ("cut", u.rsp[0].run, cut_one, 0)):
                beats = Signal(6, name=f"unit{k}_{name}_beats")
                n = Signal(4, name=f"unit{k}_{name}_n")
                table = [k + 1 + sum(bits >> i & 1 for i in range(k + extra))
                         for bits in range(1 << (k + extra))]
                m.d.comb += [beats.eq(run - base),
                             n.eq(Array(table)[Cat(*pairs[:k + extra])] if k + extra else 1)]
                prefixes.append((beats, ones))
                counts.append(n)
            one = full_one
        ok, by_vc = prefix_credits(m, "slot_rsp", capped, CreditClass.RSP_CMD,
                                   CreditClass.RSP_DATA, vc0, prefixes, counts)
        rsp_ok = []
        for b in range(1, RSP_LIMIT + 1):
            terms = [unit_valid[i // 2] & ok[i] & (counts[i] == b) for i in range(len(counts))]
            rsp_ok.append(Cat(*terms).any())
        return rsp_ok, [(by_vc[i], prefixes[i][0]) for i in range(len(prefixes))]
