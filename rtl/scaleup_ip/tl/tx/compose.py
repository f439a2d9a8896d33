# SPDX-License-Identifier: BSD-2-Clause
"""What the TL packer's composers share: the records and schedules they hand on, the credits,
rate limits and balance they keep, and the flits they count ahead of the emitter."""

from amaranth import Cat, Mux, Signal
from amaranth.lib import data, stream
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
    control_half,
    credit_array,
    credit_update_layout,
)
from ..logic import thermometer
from ..queue import WindowQueue
from .place import schedule_layout

__all__ = ["DECIDE_CREDIT_BITS", "RECORDS_AHEAD", "RateState", "SCHEDULES_AHEAD",
           "account_credits", "capped_credits", "composer_members", "count_lead",
           "flits_to_next", "outstanding_after", "record_layout", "record_queue", "released",
           "schedule_queue"]

#: Width of the capped credit counters a decision compares: 127 covers the most one control
#: half can spend of any class (8 responses of 4 beats).
DECIDE_CREDIT_BITS = 7

#: Records composed ahead of the emitter: three, so that two control half-flits can go in
#: consecutive flits (a swapped control with no data, then the next) although each takes two
#: clocks to compose, and the data sequencer, which sees a record's schedule only the clock
#: after it is composed and shows its half-flits a clock later still, is never behind.
RECORDS_AHEAD = 3

#: Schedules waiting for the data sequencer: one per record with data in the record queue,
#: one for a record sent before the sequencer finished the one before it, and one spare.
SCHEDULES_AHEAD = RECORDS_AHEAD + 2

#: What the flit emitter needs of one control half-flit: the half itself (or the Initial
#: Credit Release Complete message), how many data half-flits it calls for and whether a
#: pacing flit, all NOP, follows its own (the slot packer's, README §3).
record_layout = data.StructLayout({
    "msg": 1,
    "half": control_half,
    "halves": 7,
    "pace": 1,
})


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


def flits_to_next(swap, halves, owed, flits, pace=0):
    """Assignments of ``owed``, the data half-flits a control calling for ``halves`` leaves
    owed after its own flit (``swap``: it shares that flit with the final half owed before
    it), and ``flits``, the flits from it to the next control (README §3, the flit rule),
    one more with ``pace`` (a pacing flit follows); ``owed[0]`` is whether the next control
    is swapped."""
    return [owed.eq(Mux(swap, halves, Mux(halves != 0, halves - 1, 0))),
            flits.eq(1 + (owed >> 1) + pace)]


def outstanding_after(out, issued, flits):
    """Items outstanding under a source rate limit after ``issued`` more and ``flits`` flits,
    one retired per flit [§5.7]."""
    return Mux(out + issued > flits, out + issued - flits, 0)


def composer_members():
    """The members a composer (:class:`~scaleup_ip.tl.tx.slots.compose.SlotCompose`,
    :class:`~scaleup_ip.tl.tx.fill.TxFill`) shows the flit emitter and the credit ports.

    Members
    -------
    grant, give : In(credit_update_layout), give_init : In(1)
        As on :class:`~scaleup_ip.tl.tx.packer.TlTx`.
    want : In(1)
        The emitter will soon need a control half-flit; a record is composed only then, so
        that it sees what has arrived by that time.
    may_want : In(1)
        ``want`` may be high this clock: high whenever it is, from fewer gates (the link's
        ready and registers).
    record : Out(stream.Signature(record_layout))
        The next control half-flits (or message), up to :data:`RECORDS_AHEAD` composed ahead.
        When none is queued, the record may be offered in the clock it is composed
        (``direct``; not registered).
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
    return {
        "grant": In(credit_update_layout),
        "give": In(credit_update_layout),
        "give_init": In(1),
        "want": In(1),
        "may_want": In(1),
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


def released(give):
    """Whether the local receiver releases any credit this clock (``give``,
    :data:`~scaleup_ip.tl.layout.credit_update_layout`)."""
    return Cat(*(getattr(give, c.name.lower())[s].any()
                 for c in CreditClass for s in CreditSlot)).any()


def account_credits(m, comp, applied, spent, sent, fc_pending, kept, sent_applied=None):
    """Credits of composer ``comp``: spent (``spent`` while ``applied``) and granted; credit
    returns sent (``sent`` while ``sent_applied``, by default ``applied``) and released; and
    whether any return is pending (``fc_pending``). The grants and releases are added first,
    so that ``applied`` is one subtraction from the registers. Returns ``(held, ahead)``: the
    credits held as of the next clock (``held[class][slot]``, combinational), and, with
    ``sent_applied``, ``(sent_applied, base, less)``: the returns pending of the next clock
    without and with ``sent`` subtracted, chosen by ``sent_applied`` last (for
    :func:`~scaleup_ip.tl.tx.place.flow_control_fields`' ``ahead``; else ``None``).

    ``fc_pending`` follows from ``kept`` (:func:`~scaleup_ip.tl.tx.place.place_flow_control`'s:
    some return stays pending once ``sent`` is), from the releases and from itself, not from
    the counters' subtraction: a count left over is either never sent or released this
    clock."""
    nxt = {c: {} for c in CreditClass}
    base = {c: {} for c in CreditClass}
    less = {c: {} for c in CreditClass}
    for c in CreditClass:
        for s in CreditSlot:
            name, slot = c.name.lower(), s.name.lower()
            held = nxt[c][s] = Signal(CREDIT_BITS, name=f"held_{name}_{slot}")
            left = Signal(CREDIT_BITS, name=f"pending_{name}_{slot}")
            m.d.comb += held.eq(comp.credits[c][s] + getattr(comp.grant, name)[s]
                                - Mux(applied, spent[c][s], 0))
            if sent_applied is None:
                m.d.comb += left.eq(comp.pending[c][s] + getattr(comp.give, name)[s]
                                    - Mux(applied, sent[c][s], 0))
            else:
                base[c][s] = Signal(CREDIT_BITS, name=f"pending_{name}_{slot}_base")
                less[c][s] = Signal(CREDIT_BITS, name=f"pending_{name}_{slot}_less")
                m.d.comb += [base[c][s].eq(comp.pending[c][s] + getattr(comp.give, name)[s]),
                             less[c][s].eq(base[c][s] - sent[c][s]),
                             left.eq(Mux(sent_applied, less[c][s], base[c][s]))]
            m.d.sync += [comp.credits[c][s].eq(held), comp.pending[c][s].eq(left)]
    m.d.sync += fc_pending.eq(released(comp.give) | Mux(applied, kept, fc_pending))
    return nxt, None if sent_applied is None else (sent_applied, base, less)


def capped_credits(m, held, name="capped_next"):
    """``held`` (:func:`account_credits`' credits of the next clock) capped at
    :data:`DECIDE_CREDIT_BITS` bits, as the decisions compare them."""
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
