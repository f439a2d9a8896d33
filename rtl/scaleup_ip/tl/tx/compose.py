# SPDX-License-Identifier: BSD-2-Clause
"""The TL packer's composer: control half-flits decided ahead of the flit that carries them."""

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from ..layout import (
    CREDIT_BITS,
    FAIR_LEAD_LIMIT,
    REQ_LIMIT,
    REQS_PER_CONTROL,
    RSP_LIMIT,
    CreditClass,
    CreditSlot,
    MsgType,
    control_half,
    credit_array,
    credit_update_layout,
)
from ..logic import thermometer
from ..queue import WindowQueue
from .decide import DECIDE_CREDIT_BITS, TxDecide
from .place import (
    ControlPlacer,
    response_offsets,
    rsp_totals_layout,
    schedule_layout,
    tx_rsp_entry,
    window_members,
)

__all__ = ["RECORDS_AHEAD", "RateState", "SCHEDULES_AHEAD", "TxCompose", "account_credits",
           "capped_credits", "composer_members", "count_lead", "flits_to_next",
           "outstanding_after", "record_layout", "record_queue", "schedule_queue"]

#: Records composed ahead of the emitter: three, so that two control half-flits can go in
#: consecutive flits (a swapped control with no data, then the next) although each takes two
#: clocks to compose, and the data sequencer, which sees a record's schedule only the clock
#: after it is composed and shows its half-flits a clock later still, is never behind.
RECORDS_AHEAD = 3

#: Schedules waiting for the data sequencer: one per record with data in the record queue,
#: one for a record sent before the sequencer finished the one before it, and one spare.
SCHEDULES_AHEAD = RECORDS_AHEAD + 2

#: What the flit emitter needs of one control half-flit: the half itself (or the Initial
#: Credit Release Complete message) and how many data half-flits it calls for.
record_layout = data.StructLayout({
    "msg": 1,
    "half": control_half,
    "halves": 7,
})


class TxCompose(wiring.Component):
    """Decides each control half-flit (README §3 rules 1-7) and hands it on as a record.

    The decision takes two clocks: the picker's choice is registered from registered state,
    then applied (queue pops, credits spent and returned, rate limits, the position of the
    next control). Flits are counted *virtually*: from each control's data half-flits the
    composer knows how many flits the emitter will send before the next control and whether
    that one is swapped, so rate limits and the initialisation message follow the flit
    sequence exactly as if the choice were made as the flit leaves.

    Members
    -------
    req, req_count, rsp, rsp_count : In
        The queue windows (:class:`~scaleup_ip.tl.queue.WindowQueue`).
    rsp_next : In
        The response window as it will be in the next clock (``entries_next``): the read
        beats of its prefixes are registered beside it.
    req_pop, rsp_pop : Out
        Entries taken from the windows.
    grant, give : In(credit_update_layout), give_init : In(1)
        As on :class:`~scaleup_ip.tl.tx.packer.TlTx`.
    req_hidden : In(1)
        Requests wait behind the request window: while the rate limit would let the decision
        take more than the window shows, it waits for them (so every request the choice may
        take is seen, README §3).
    want : In(1)
        The emitter will soon need a control half-flit; a record is composed only then, so
        that it sees what has arrived by that time.
    record : Out(stream.Signature(record_layout))
        The next control half-flits (or message), up to :data:`RECORDS_AHEAD` composed ahead.
        When none is queued, the record is offered in the clock it is composed (``direct``; not
        registered).
    direct, first_req : Out(1)
        ``record`` is offered straight from its placement; its first data half-flit is from the
        request-data queue (else from the response-data queue).
    skip : In(1)
        The emitter takes the direct record and sends its first data half-flit itself, from
        the head of the data queue ``first_req`` names.
    schedule : Out(stream.Signature(schedule_layout))
        The data each record with data calls for, in record order, for the data sequencer:
        registered, from the clock after the record is composed (up to
        :data:`SCHEDULES_AHEAD` wait), with ``skip`` when the emitter sent the first data
        half-flit itself.
    credits, pending : Out(credit_array(CREDIT_BITS))
        Credits held and credits still to return, as of the records composed so far.
    """

    def __init__(self):
        super().__init__({
            **window_members(),
            "rsp_next": In(data.ArrayLayout(tx_rsp_entry, RSP_LIMIT)),
            "req_pop": Out(range(REQ_LIMIT + 1)),
            "rsp_pop": Out(range(RSP_LIMIT + 1)),
            "req_hidden": In(1),
            **composer_members(),
        })

    def elaborate(self, platform):
        m = Module()
        init = Signal()                  # the message is composed: traffic may follow
        swap = Signal()                  # the next control shares its flit with an owed half
        rates = RateState(m)
        req_out, rsp_out = rates.req_out, rates.rsp_out
        req_allowed, rsp_allowed = rates.req_allowed, rates.rsp_allowed
        # A credit return is pending: a register beside the counters, so that their OR is not
        # in front of the decision.
        fc_pending = Signal()
        # Requests minus responses issued, saturating (README §3 rule 4).
        lead = Signal(range(-FAIR_LEAD_LIMIT, FAIR_LEAD_LIMIT))
        total, span = self._totals(m)
        capped = Signal(credit_array(DECIDE_CREDIT_BITS))   # credits held, capped, registered
        dec = self._decide(m, init, fc_pending, req_allowed, rsp_allowed, lead, total, span,
                           capped, swap)

        # Clock A: the decision, registered. Clock B: placed and applied; the record written.
        # The windows' heads do not move between A and B (entries only join at the tail).
        chosen = Signal()                # a decision is registered (clock B next)
        msg = Signal()
        m.submodules.place = place = ControlPlacer()
        m.d.comb += [
            place.req.eq(self.req), place.req_count.eq(self.req_count),
            place.rsp.eq(self.rsp), place.rsp_count.eq(self.rsp_count),
            place.pending.eq(self.pending), place.rsp_total.eq(total),
        ]
        cands = self._candidates(m, swap, req_out, rsp_out, total)
        chosen_cand = cands[place.n_req][place.n_rsp]
        rec = Signal(record_layout)
        m.d.comb += [
            rec.msg.eq(msg), rec.halves.eq(Mux(msg, 0, chosen_cand.halves)),
            rec.half.eq(Mux(msg, MsgType.CREDIT_INIT_DONE.value, place.half)),
        ]
        queue = record_queue(m, self, chosen, rec, chosen_cand.first_req)
        room = schedule_queue(m, self, chosen & ~msg & (chosen_cand.halves != 0), place.schedule)
        hidden = Signal()                # a request the choice may take is not shown yet
        m.d.comb += hidden.eq(self.req_hidden & Array([*req_allowed, 0])[self.req_count])
        with m.If(chosen):
            m.d.sync += chosen.eq(0)
            m.d.comb += [self.req_pop.eq(place.n_req), self.rsp_pop.eq(place.n_rsp)]
            with m.If(msg):              # its own flit only; nothing owed after it
                m.d.sync += [init.eq(1), swap.eq(0)]
                rates.after_message(m)
            with m.Else():
                m.d.sync += swap.eq(chosen_cand.swap)
                m.d.comb += [rates.req_out_next.eq(chosen_cand.req_out),
                             rates.rsp_out_next.eq(chosen_cand.rsp_out)]
                count_lead(m, lead, place.n_req, place.n_rsp)
        with m.Elif(self.want & (queue.level < RECORDS_AHEAD) & room & ~(init & hidden)):
            msg_due = self.give_init & ~init & ~fc_pending & ~swap
            nonempty = (dec.n_req != 0) | (dec.n_rsp != 0) | fc_pending
            with m.If(msg_due | swap | nonempty):
                m.d.sync += [
                    chosen.eq(1), msg.eq(msg_due),
                    place.n_req.eq(Mux(msg_due, 0, dec.n_req)),
                    place.n_rsp.eq(Mux(msg_due, 0, dec.n_rsp)),
                    place.req_pool.eq(dec.req_pool), place.rsp_pool.eq(dec.rsp_pool),
                ]
        account_credits(m, self, chosen & ~msg, place.spent, place.sent, capped, fc_pending)
        return m

    def _totals(self, m):
        """Read beats and sectors spanned of each prefix of the response window, registered
        beside the window: ``run`` of each entry less that of the last response taken (``run``
        counts every response's read beats as it is queued, modulo 64); the spans as the
        window will be (README §3 rule 4)."""
        base = Signal.like(self.rsp[0].run)
        base_next = Signal.like(base)
        m.d.comb += base_next.eq(Array([base, *(e.run for e in self.rsp)])[self.rsp_pop])
        m.d.sync += base.eq(base_next)
        total = Signal(rsp_totals_layout)
        for j in range(RSP_LIMIT):
            m.d.sync += total[j].eq(self.rsp_next[j].run - base_next)
        _, spans_next = response_offsets(m, [e.wide for e in self.rsp_next], "next")
        spans = [Signal(5, name=f"rsp_span{k}") for k in range(RSP_LIMIT + 1)]
        m.d.sync += [span.eq(nxt) for span, nxt in zip(spans, spans_next)]
        return total, spans

    def _decide(self, m, init, fc_pending, req_allowed, rsp_allowed, lead, total, span, capped,
                swap):
        """:class:`~scaleup_ip.tl.tx.decide.TxDecide` on the windows and the composer's state."""
        m.submodules.decide = dec = TxDecide()
        for j, e in enumerate(self.rsp):
            m.d.comb += [
                dec.rsp[j].vc.eq(e.vc), dec.rsp[j].wide.eq(e.wide), dec.rsp[j].total.eq(total[j]),
                dec.rsp[j].span.eq(span[j + 1]),
                dec.rsp[j].one_vc.eq(Cat(1, *(x.same_vc for x in self.rsp[1:j + 1])).all()),
            ]
        for i in range(REQS_PER_CONTROL):
            m.d.comb += [dec.req[i].vc.eq(self.req[i].vc), dec.req[i].beats.eq(self.req[i].beats),
                         dec.req[i].wide.eq(self.req[i].wide)]
        m.d.comb += dec.credits.eq(capped)
        m.d.comb += [
            dec.req_valid.eq(thermometer(self.req_count, REQS_PER_CONTROL)),
            dec.rsp_valid.eq(thermometer(self.rsp_count, RSP_LIMIT)),
            dec.req_allowed.eq(req_allowed), dec.rsp_allowed.eq(rsp_allowed),
            dec.traffic.eq(init), dec.fc_pending.eq(fc_pending),
            dec.swap.eq(swap), dec.lead.eq(lead), dec.req_hidden.eq(self.req_hidden),
        ]
        return dec

    def _candidates(self, m, swap, req_out, rsp_out, total):
        """For every count the decision may take, what the record will stand for (README §3
        rule 7), computed beside the decision in clock A and registered; clock B only selects.

        Returns ``[n_req][n_rsp]`` records of ``(halves, swap after, req_out after, rsp_out
        after)``: the record's own flit and the data-only flits before the next control each
        retire one item of each rate limit.
        """
        shape = data.StructLayout({"halves": 7, "first_req": 1, "swap": 1,
                                   "req_out": range(REQ_LIMIT + 1),
                                   "rsp_out": range(RSP_LIMIT + 1)})
        rsp_halves = [0, *(2 * t for t in total)]
        req_halves = [0]
        for r in self.req[:REQS_PER_CONTROL]:
            req_halves.append(req_halves[-1] + 2 * r.beats + r.be)
        table = []
        for c, h_req in enumerate(req_halves):
            row = []
            for j, h_rsp in enumerate(rsp_halves):
                now = Signal(shape, name=f"cand_{c}_{j}")
                reg = Signal(shape, name=f"cand_{c}_{j}_r")
                halves, owed, flits = (Signal(7, name=f"cand_{c}_{j}_{x}")
                                       for x in ("halves", "owed", "flits"))
                m.d.comb += [
                    halves.eq(h_req + h_rsp),
                    *flits_to_next(swap, halves, owed, flits),
                    now.halves.eq(halves), now.swap.eq(owed[0]),
                    now.first_req.eq(Cat(*(r.beats != 0 for r in self.req[:c])).any()),
                    now.req_out.eq(outstanding_after(req_out, c, flits)),
                    now.rsp_out.eq(outstanding_after(rsp_out, j, flits)),
                ]
                m.d.sync += reg.eq(now)
                row.append(reg)
            table.append(Array(row))
        return Array(table)


class RateState:
    """The source rate limits' state of a composer [§5.7]: the items outstanding at the peer's
    catch buffers (``req_out``, ``rsp_out``, registers driven through ``req_out_next`` and
    ``rsp_out_next``, which hold them unless assigned) and the allowances as a decision takes
    them (``req_allowed``, ``rsp_allowed``: thermometer codes, registered beside the counts;
    ``req_allowed_next``, ``rsp_allowed_next`` what they will be in the next clock)."""

    def __init__(self, m):
        self.req_out = Signal(range(REQ_LIMIT + 1))
        self.rsp_out = Signal(range(RSP_LIMIT + 1))
        self.req_out_next = Signal.like(self.req_out)
        self.rsp_out_next = Signal.like(self.rsp_out)
        self.req_allowed = Signal(REQS_PER_CONTROL, init=(1 << REQS_PER_CONTROL) - 1)
        self.rsp_allowed = Signal(RSP_LIMIT, init=(1 << RSP_LIMIT) - 1)
        self.req_allowed_next = Signal.like(self.req_allowed)
        self.rsp_allowed_next = Signal.like(self.rsp_allowed)
        m.d.comb += [
            self.req_out_next.eq(self.req_out), self.rsp_out_next.eq(self.rsp_out),
            self.req_allowed_next.eq(thermometer(REQ_LIMIT - self.req_out_next,
                                                 REQS_PER_CONTROL)),
            self.rsp_allowed_next.eq(thermometer(RSP_LIMIT - self.rsp_out_next, RSP_LIMIT)),
        ]
        m.d.sync += [
            self.req_out.eq(self.req_out_next), self.rsp_out.eq(self.rsp_out_next),
            self.req_allowed.eq(self.req_allowed_next), self.rsp_allowed.eq(self.rsp_allowed_next),
        ]

    def after_message(self, m):
        """The Initial Credit Release Complete message's own flit retires one of each."""
        m.d.comb += [self.req_out_next.eq(Mux(self.req_out != 0, self.req_out - 1, 0)),
                     self.rsp_out_next.eq(Mux(self.rsp_out != 0, self.rsp_out - 1, 0))]


def flits_to_next(swap, halves, owed, flits):
    """Assignments of ``owed``, the data half-flits a control calling for ``halves`` leaves
    owed after its own flit (``swap``: it shares that flit with the final half owed before
    it), and ``flits``, the flits from it to the next control (README §3, the flit rule);
    ``owed[0]`` is whether the next control is swapped."""
    return [owed.eq(Mux(swap, halves, Mux(halves != 0, halves - 1, 0))),
            flits.eq(1 + (owed >> 1))]


def outstanding_after(out, issued, flits):
    """Items outstanding under a source rate limit after ``issued`` more and ``flits`` flits,
    one retired per flit [§5.7]."""
    return Mux(out + issued > flits, out + issued - flits, 0)


def composer_members():
    """The members a composer shows the flit emitter and the credit ports (as on
    :class:`TxCompose`, which documents them)."""
    return {
        "grant": In(credit_update_layout),
        "give": In(credit_update_layout),
        "give_init": In(1),
        "want": In(1),
        "record": Out(stream.Signature(record_layout)),
        "direct": Out(1),
        "first_req": Out(1),
        "skip": In(1),
        "schedule": Out(stream.Signature(schedule_layout)),
        "credits": Out(credit_array(CREDIT_BITS)),
        "pending": Out(credit_array(CREDIT_BITS)),
    }


def record_queue(m, comp, chosen, rec, first_req):
    """The record queue of composer ``comp``, bypassed when empty: a record composed in the
    clock ``chosen`` is high is offered at once (``direct``), its control half-flit going into
    the flit presented the clock after. Every record is written; one taken on the bypass is
    dropped from the queue in the next clock (``stale``), so that the write never waits on
    the emitter. ``first_req``: the record's first data half-flit is a request's."""
    m.submodules.queue = queue = SyncFIFO(width=record_layout.size, depth=RECORDS_AHEAD)
    direct = Signal()
    stale = Signal()
    head = Signal()
    m.d.comb += [
        head.eq(queue.r_rdy & ~stale),
        direct.eq(chosen & ~queue.r_rdy),
        comp.direct.eq(direct), comp.first_req.eq(first_req),
        comp.record.valid.eq(head | direct),
        comp.record.payload.eq(queue.r_data),
        queue.r_en.eq((comp.record.ready & head) | stale),
        queue.w_data.eq(rec), queue.w_en.eq(chosen),
    ]
    m.d.sync += stale.eq(direct & comp.record.ready)
    with m.If(~queue.r_rdy):
        m.d.comb += comp.record.payload.eq(rec)
    return queue


def schedule_queue(m, comp, write, schedule):
    """The schedule queue of composer ``comp`` toward the data sequencer, in registers: a
    schedule written in one clock is offered from the next. Returns whether a schedule can
    be written in the clock after next (the decision's gate)."""
    m.submodules.sched_q = sched_q = WindowQueue(schedule_layout, SCHEDULES_AHEAD, 1,
                                                 held=SCHEDULES_AHEAD)
    m.d.comb += [
        sched_q.i.valid.eq(write), sched_q.i.payload.eq(schedule),
        sched_q.i.payload.skip.eq(comp.skip),
        comp.schedule.valid.eq(sched_q.count != 0),
        comp.schedule.payload.eq(sched_q.entries[0]),
        sched_q.pop.eq(comp.schedule.valid & comp.schedule.ready),
    ]
    return sched_q.i.ready


def account_credits(m, comp, applied, spent, sent, capped, fc_pending, kept=None):
    """Credits of composer ``comp``: spent (``spent`` while ``applied``) and granted; credit
    returns sent (``sent``) and released. The credits held are also kept ``capped`` for the
    decision (unless ``None``), and whether any return is pending (``fc_pending``). The grants
    and releases are
    added first, so that ``applied`` is one subtraction from the registers. Returns the credits
    held as of the next clock (``held[class][slot]``, combinational).

    With ``kept`` (:func:`~scaleup_ip.tl.tx.place.place_flow_control`'s: some return stays
    pending once ``sent`` is), ``fc_pending`` follows from it, from the releases and from
    itself, not from the counters' subtraction: a count left over is either never sent or
    released this clock."""
    owed = []
    given = []
    nxt = {c: {} for c in CreditClass}
    for c in CreditClass:
        for s in CreditSlot:
            name, slot = c.name.lower(), s.name.lower()
            held = nxt[c][s] = Signal(CREDIT_BITS, name=f"held_{name}_{slot}")
            left = Signal(CREDIT_BITS, name=f"pending_{name}_{slot}")
            m.d.comb += [
                held.eq(comp.credits[c][s] + getattr(comp.grant, name)[s]
                        - Mux(applied, spent[c][s], 0)),
                left.eq(comp.pending[c][s] + getattr(comp.give, name)[s]
                        - Mux(applied, sent[c][s], 0)),
            ]
            m.d.sync += [comp.credits[c][s].eq(held), comp.pending[c][s].eq(left)]
            owed.append(left.any())
            given.append(getattr(comp.give, name)[s].any())
    if capped is not None:
        m.d.sync += capped.eq(capped_credits(m, nxt))
    if kept is None:
        m.d.sync += fc_pending.eq(Cat(*owed).any())
    else:
        m.d.sync += fc_pending.eq(Cat(*given).any() | Mux(applied, kept, fc_pending))
    return nxt


def capped_credits(m, held, name="capped_next"):
    """``held`` (:func:`account_credits`' credits of the next clock) capped at
    :data:`~scaleup_ip.tl.tx.decide.DECIDE_CREDIT_BITS` bits, as the decisions compare them."""
    top = (1 << DECIDE_CREDIT_BITS) - 1
    capped = Signal(credit_array(DECIDE_CREDIT_BITS), name=name)
    for c in CreditClass:
        for s in CreditSlot:
            value = held[c][s]
            m.d.comb += capped[c][s].eq(Mux(value[DECIDE_CREDIT_BITS:].any(), top, value))
    return capped


def count_lead(m, lead, n_req, n_rsp):
    """``lead`` plus the requests minus the responses issued, saturating."""
    nxt = Signal(range(-FAIR_LEAD_LIMIT - RSP_LIMIT, FAIR_LEAD_LIMIT + REQ_LIMIT))
    m.d.comb += nxt.eq(lead + n_req - n_rsp)
    m.d.sync += lead.eq(Mux(nxt < -FAIR_LEAD_LIMIT, -FAIR_LEAD_LIMIT,
                            Mux(nxt >= FAIR_LEAD_LIMIT, FAIR_LEAD_LIMIT - 1, nxt)))
