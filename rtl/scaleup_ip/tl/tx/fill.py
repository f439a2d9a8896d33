# SPDX-License-Identifier: BSD-2-Clause
"""The TL packer's compact composer: a control half-flit filled from the queue heads, a request
and a response per clock."""

import operator
from functools import reduce

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In

from ...fifo import count_level
from ..layout import (
    CREDIT_BITS,
    FAIR_LEAD_LIMIT,
    LEAD_SLACK,
    MAX_BEATS,
    REQ_LIMIT,
    REQS_PER_CONTROL,
    RSP_LIMIT,
    SECTORS_PER_HALF,
    CreditClass,
    CreditSlot,
    MsgType,
    control_half,
    credit_array,
)
from ..logic import thermometer
from ..queue import WindowQueue
from .compose import (
    RECORDS_AHEAD,
    SCHEDULES_AHEAD,
    account_credits,
    composer_members,
    flits_to_next,
    outstanding_after,
    record_layout,
    released,
)
from .place import (
    flow_control_fields,
    place_flow_control,
    request_word,
    response_word,
    schedule_layout,
    tx_req_entry,
    tx_rsp_entry,
    wide_start,
)

__all__ = ["TxFill"]

#: Sectors of an uncompressed request field and of a compressed one [Table 5-2].
_WIDE, _NARROW = 4, 2
#: Sector counts and positions: up to 8, and a sum of two of them.
_SECTOR = range(2 * SECTORS_PER_HALF)


#: What of a record the emitter decides from (:data:`record_layout` but its half-flit).
_record_flags = data.StructLayout({name: record_layout[name].shape
                                   for name in ("msg", "halves", "pace")})


def _fits(m, name, req_end, rsp_span):
    """Whether the next fields fit after requests ending at ``req_end`` and responses spanning
    ``rsp_span`` (from ``req_end``), for each reserve ``r`` (0, 1) and field width: bit
    ``4r + w`` a request (``w`` = 1 uncompressed), ``4r + 2 + w`` a response, ``8 + 4r + 2wq +
    ws`` a request and a response together. Combinational: a table of the two sector counts
    (:func:`_fit_bits`), which synthesis makes a few LUTs of, not adders and compares."""
    bits = Signal(16, name=f"fits_{name}")
    table = Array(Const(_fit_bits(end, span), 16) for span in _SECTOR for end in _SECTOR)
    m.d.comb += bits.eq(table[Cat(req_end, rsp_span)])
    return bits


def _fit_bits(req_end, rsp_span):
    """:func:`_fits` for numbers."""
    wide = req_end + -req_end % _WIDE                  # wide_start for numbers
    end = [req_end + _NARROW, wide + _WIDE]
    span = [rsp_span + 1, rsp_span + (rsp_span & 1) + 2]
    bits = 0
    for r in (0, 1):
        limit = SECTORS_PER_HALF - r
        for w in (0, 1):
            bits |= (end[w] + rsp_span <= limit) << (4 * r + w)
            bits |= (req_end + span[w] <= limit) << (4 * r + 2 + w)
            for ws in (0, 1):
                bits |= (end[w] + span[ws] <= limit) << (8 + 4 * r + 2 * w + ws)
    return bits


def _at_least(therm, amount):
    """``value >= amount`` for a thermometer code of ``value`` (bit ``k``: ``value > k``)."""
    return Array([Const(1), *therm])[amount]


def _less(m, name, therm, amount, most):
    """The thermometer code of ``value - amount`` (``amount`` at most ``most``)."""
    out = Signal(len(therm), name=name)
    cases = [Cat(therm[k:], Const(0, k)) for k in range(most + 1)]
    m.d.comb += out.eq(Array(cases)[amount])
    return out


def _low_bits(width):
    """Bits of a credit count that a code of ``width`` bits is formed from (:func:`_code`)
    when at most ``width`` is taken from the count: beyond them it holds at least twice
    ``width``, and so at least ``width`` after."""
    return (2 * width - 1).bit_length()


def _code(plenty, low, width):
    """The thermometer code (``width`` bits) of a count that is ``low`` unless ``plenty``
    (then every bit is set), with no carry chain as wide as the credit counters."""
    return Cat(*(plenty | bit for bit in thermometer(low, width)))


def _spent_code(held, own, amount, width):
    """The code of ``held[own] - amount``, where ``amount`` is at most ``width`` and at most
    ``held[own]``, from :func:`_low_bits` of the slot's credits."""
    cap = _low_bits(width)
    big = Array(held[s][cap:] != 0 for s in CreditSlot)[own]
    low = Array(held[s][:cap] for s in CreditSlot)[own]
    return _code(big, (low - amount)[:cap], width)


def _held_code(now, grant, spent, cls, slot, width):
    """The code of the credits of class ``cls`` on ``slot`` held in the next clock, ``now +
    grant - spent`` (``spent`` at most ``width`` and at most ``now``), likewise: plenty when
    beyond :func:`_low_bits` either is."""
    cap = _low_bits(width)
    held, granted = now[cls][slot], getattr(grant, cls.name.lower())[slot]
    big = held[cap:].any() | (granted[cap:].any() if len(granted) > cap else Const(0))
    return _code(big, (held[:cap] + granted[:cap] - spent[cls][slot])[:cap + 1], width)


class _Kind:
    """The fields of one kind (requests or responses) in the control being filled: how many,
    their data beats, and the credits they spend: ``pool``, else VC ``vc`` (README §3,
    *Compact packer*). Credits are thermometer codes, registered: of every slot's credits held
    (``slot_cmd``, ``slot_dat``), and of what is left on this control's slot once its fields
    are counted (``left_cmd``, ``left_dat``).

    Whether the head may join as far as credits go is a register (``verdict``, with the pool
    flag it then has, ``verdict_pool``), worked out in the clock before: for the head as it
    is when it does not join, for the entry behind it, against the control as it will be,
    when it does. ``known``: the verdict is of the head there is now (it is not while an
    entry has just come to the head without one behind it)."""

    def __init__(self, name, most, cmd, dat):
        self.name, self.cmd, self.dat, self.most = name, cmd, dat, most
        self.n = Signal(range(most + 1), name=f"{name}_n")
        self.beats = Signal(range(most * MAX_BEATS + 1), name=f"{name}_beats")
        self.pool = Signal(name=f"{name}_pool")
        self.vc = Signal(2, name=f"{name}_vc")
        self.img = Signal(control_half, name=f"{name}_img")
        self.slot_cmd = [Signal(most, name=f"{name}_cmd_{s.name.lower()}") for s in CreditSlot]
        self.slot_dat = [Signal(most * MAX_BEATS, name=f"{name}_dat_{s.name.lower()}")
                         for s in CreditSlot]
        self.left_cmd = Signal(most, name=f"{name}_left_cmd")
        self.left_dat = Signal(most * MAX_BEATS, name=f"{name}_left_dat")
        self.verdict = Signal(name=f"{name}_verdict")
        self.verdict_pool = Signal(name=f"{name}_verdict_pool")
        self.known = Signal(name=f"{name}_known")

    def credits(self, m, now, grant, spent, head, after, ok, went):
        """The verdict registers, for the head ``head`` (a stream) and the entry ``after``
        behind it; ``now``: the credits held (registers), to which ``grant`` is added and
        from which ``spent`` is taken for the next clock's; ``ok``: the head joins this
        clock; ``went``: the slot this kind's fields spent on, in the clock after a close
        (:meth:`spend`), whose codes (of the credits held before its spending) are then
        those of the credits it held less what the control spent, registered at the close.
        The first field takes its VC's credits when they cover it, else the pool's; later
        ones the same kind (on VC credits, the same VC) while they cover all. Keeps the
        thermometer codes."""
        for k, s in enumerate(CreditSlot):
            m.d.sync += [
                self.slot_cmd[k].eq(_held_code(now, grant, spent, self.cmd, s, self.most)),
                self.slot_dat[k].eq(_held_code(now, grant, spent, self.dat, s,
                                               self.most * MAX_BEATS)),
            ]
        # What the control's slot would hold were its fields spent, registered every clock:
        # in the clock after a close, the slot's credits less the control's spending.
        own = Mux(self.pool, CreditSlot.POOL, CreditSlot.VC0 + self.vc)
        spent_cmd = Signal(self.most, name=f"{self.name}_spent_cmd")
        spent_dat = Signal(self.most * MAX_BEATS, name=f"{self.name}_spent_dat")
        m.d.sync += [
            spent_cmd.eq(_spent_code(now[self.cmd], own, self.n, self.most)),
            spent_dat.eq(_spent_code(now[self.dat], own, self.beats, self.most * MAX_BEATS)),
        ]
        # The codes of the credits held of the head's VC and of the pool: in the clock after
        # a close, those of the slot it spent on are the ones above (the codes then are of
        # the credits before its spending).
        h = head.payload
        vc_cmd = Signal(self.most, name=f"{self.name}_vc_cmd")
        vc_dat = Signal(self.most * MAX_BEATS, name=f"{self.name}_vc_dat")
        pool_cmd = Signal(self.most, name=f"{self.name}_pool_cmd")
        pool_dat = Signal(self.most * MAX_BEATS, name=f"{self.name}_pool_dat")
        vc_went = Array(went[CreditSlot.VC0:])[h.vc]
        pool_went = went[CreditSlot.POOL]
        m.d.comb += [
            vc_cmd.eq(Mux(vc_went, spent_cmd, Array(self.slot_cmd[CreditSlot.VC0:])[h.vc])),
            vc_dat.eq(Mux(vc_went, spent_dat, Array(self.slot_dat[CreditSlot.VC0:])[h.vc])),
            pool_cmd.eq(Mux(pool_went, spent_cmd, self.slot_cmd[CreditSlot.POOL])),
            pool_dat.eq(Mux(pool_went, spent_dat, self.slot_dat[CreditSlot.POOL])),
        ]
        first = self.n == 0
        # The head, when it does not join.
        first_vc = Signal(name=f"{self.name}_first_vc")
        stay = Signal(name=f"{self.name}_stay")
        m.d.comb += [
            first_vc.eq(vc_cmd[0] & _at_least(vc_dat, h.beats)),
            stay.eq(Mux(first, first_vc | (pool_cmd[0] & _at_least(pool_dat, h.beats)),
                        (self.pool | (h.vc == self.vc)) & self.left_cmd[0]
                        & _at_least(self.left_dat, h.beats))),
        ]
        # The entry behind, when the head joins (on the slot its verdict chose): the codes
        # the head is counted from, less the head.
        base_cmd = Signal(self.most, name=f"{self.name}_base_cmd")
        base_dat = Signal(self.most * MAX_BEATS, name=f"{self.name}_base_dat")
        both = Signal(range(2 * MAX_BEATS + 1), name=f"{self.name}_both_beats")
        join = Signal(name=f"{self.name}_join")
        a = after.entry
        m.d.comb += [
            base_cmd.eq(Mux(first, Mux(self.verdict_pool, pool_cmd, vc_cmd), self.left_cmd)),
            base_dat.eq(Mux(first, Mux(self.verdict_pool, pool_dat, vc_dat), self.left_dat)),
            both.eq(h.beats + a.beats),
            join.eq(after.valid & (self.verdict_pool | (a.vc == Mux(first, h.vc, self.vc)))
                    & base_cmd[1] & _at_least(base_dat, both)),
        ]
        m.d.sync += [
            self.verdict.eq(Mux(ok, join, stay)),
            self.verdict_pool.eq(Mux(ok, self.verdict_pool, Mux(first, ~first_vc, self.pool))),
            self.known.eq(Mux(ok, after.valid, head.valid)),
        ]
        left_dat = _less(m, f"{self.name}_left_dat_less", base_dat, h.beats, MAX_BEATS)
        with m.If(ok):
            m.d.sync += [self.left_cmd.eq(base_cmd[1:]), self.left_dat.eq(left_dat)]

    def spend(self, m, close, spent):
        """What the fields spend, on their one slot, in the clock after ``close`` (``spent``
        is zero in every other): whether they spend on each slot is registered at the close,
        beside the count of fields (``beats`` is cleared only in the clock after a close).
        Returns those registers."""
        went = [Signal(name=f"{self.name}_went_{s.name.lower()}") for s in CreditSlot]
        n = Signal.like(self.n, name=f"{self.name}_n_was")
        m.d.sync += n.eq(self.n)
        for slot in CreditSlot:
            mine = self.pool if slot == CreditSlot.POOL else \
                ~self.pool & (self.vc == slot - CreditSlot.VC0)
            m.d.sync += went[slot].eq(close & mine & (self.n != 0))
            m.d.comb += [spent[self.cmd][slot].eq(Mux(went[slot], n, 0)),
                         spent[self.dat][slot].eq(Mux(went[slot], self.beats, 0))]
        return went


class TxFill(wiring.Component):
    """The compact composer (README §3, *Compact packer*): each control half-flit filled from
    the heads of the request and response queues, in rounds of one clock: the next request
    joins when it fits, then the next response; a clock in which nothing joins closes the
    control.

    Every condition a round tests is a register, prepared in the clock before for each outcome
    of that clock (nothing, a request, a response or both joined; closed) and chosen by it,
    the credit verdicts included (:class:`_Kind`: for the head, and for the entry behind it
    against the control as it will be), so that a round is a few LUTs deep. A head whose
    verdict is not known yet holds the round: nothing joins or closes (a verdict a clock late
    never closes a control early). Fields are written into two images in the clock after
    they join, the requests' from sector 0 and the responses' from sector 0 of their own; the
    clock after a control closes ORs the responses' image in after the requests (whose end is
    always even, so every footprint holds) and the Flow Control fields after both, and writes
    the record. Rate limits, the initialisation message and the records are those of the slot
    packer's :class:`~scaleup_ip.tl.tx.slots.compose.SlotCompose`; its members are
    :func:`~scaleup_ip.tl.tx.compose.composer_members` and the queue heads:

    Members
    -------
    req, rsp : In(stream.Signature(tx_req_entry)), In(stream.Signature(tx_rsp_entry))
        The heads of the request and response queues, registered; ``ready`` takes the head in
        the clock it joins the control.
    req_next, rsp_next : In(StructLayout({"valid": 1, "entry": ...}))
        The entries behind the heads, registered.
    direct, first_req : Out(1)
        Always 0: every record goes through the record queue.

    Credits granted in one clock are seen by the rounds two clocks later (the credit codes are
    registered beside the credits held, and the verdicts from them); those a control spends,
    and the returns its Flow Control fields send, are accounted in the clock after it closes,
    in which the verdicts take its slot's credits less its spending from a register.

    Latency: a field joins in the clock after its entry comes to the head of an empty queue,
    or in the clock after the head before it joined; the control closes in the
    clock after the last field joined and its record is offered two clocks after that.
    Throughput: one request and one response a clock; a control of ``k`` rounds takes ``k + 2``
    clocks (its rounds, the clock that closes it, and the clock after, in which nothing joins
    or closes), so controls without data leave at one flit per ``k + 2`` clocks.
    """

    def __init__(self):
        super().__init__({
            "req": In(stream.Signature(tx_req_entry)),
            "rsp": In(stream.Signature(tx_rsp_entry)),
            "req_next": In(_behind(tx_req_entry)),
            "rsp_next": In(_behind(tx_rsp_entry)),
            **composer_members(),
        })

    def elaborate(self, platform):
        m = Module()
        init = Signal()                  # the message is composed: traffic may follow
        swap = Signal()                  # the next control shares its flit with an owed half
        fc_pending = Signal()
        req_out = Signal(range(REQ_LIMIT + 1))
        rsp_out = Signal(range(RSP_LIMIT + 1))
        # Bit i: the control may take more than i requests (responses).
        req_allowed = Signal(REQS_PER_CONTROL + 1, init=(1 << REQS_PER_CONTROL) - 1)
        rsp_allowed = Signal(RSP_LIMIT + 1, init=(1 << RSP_LIMIT) - 1)
        # Responses minus requests taken, less the balance count ``lead`` of rule 4 (which
        # closing makes ``-diff``, saturating): the balance as a round tests it.
        diff = Signal(range(-FAIR_LEAD_LIMIT - REQS_PER_CONTROL, FAIR_LEAD_LIMIT + RSP_LIMIT + 1))
        # ``diff`` past the slack, and at it, registered beside it for the round.
        lead = Signal(_lead_layout)
        req = _Kind("req", REQS_PER_CONTROL, CreditClass.REQ_CMD, CreditClass.REQ_DATA)
        rsp = _Kind("rsp", RSP_LIMIT, CreditClass.RSP_CMD, CreditClass.RSP_DATA)
        req_end = Signal(_SECTOR)        # the sector after the requests
        rsp_span = Signal(_SECTOR)       # sectors the responses span
        fc_start = Signal(5)             # req_end + rsp_span, a register of its own
        halves = Signal(7)               # data half-flits the fields call for
        sched_req = Signal(schedule_layout["req"].shape)   # the requests' data, as they join
        # The round's conditions, registered: the fields' fits (_fits) and the allowances.
        fits = Signal(16, init=(1 << 16) - 1)               # everything fits an empty half
        allow_req = Signal(init=1)
        allow_rsp = Signal(init=1)

        # A record's control half-flit waits in distributed RAM, its flags beside it in a queue
        # whose head is a register: what the emitter decides from (whether a record is there,
        # a message, its data half-flits, pacing) leaves a flop [ours].
        m.submodules.records = records = SyncFIFO(width=record_layout["half"].shape.size,
                                                  depth=RECORDS_AHEAD + 1)
        m.submodules.record_flags = flags = WindowQueue(_record_flags, RECORDS_AHEAD + 1, 1)
        # Written in the clock after a close (from registers), readable in the clock after that;
        # its head is a register, which the data sequencer decides from [ours]. Room is
        # counted here (``sched_room``, a register), so no handshake of the sequencer reaches
        # the close.
        m.submodules.sched_q = sched_q = WindowQueue(schedule_layout, SCHEDULES_AHEAD, 1)
        sched_level = Signal(range(SCHEDULES_AHEAD + 1))
        sched_room = Signal(init=1)
        sched_out = Signal()
        m.d.comb += sched_out.eq(self.schedule.valid & self.schedule.ready)
        count_level(m, sched_q.i.valid, sched_out, sched_level, SCHEDULES_AHEAD,
                    notfull=sched_room)
        closed = Signal()                # the record of the control closed is being written
        # Room for a record, counted here beside the record queue's own level.
        record_level = Signal(range(RECORDS_AHEAD + 1))
        record_room = Signal(init=1)
        count_level(m, closed, self.record.valid & self.record.ready, record_level,
                    RECORDS_AHEAD, notfull=record_room)
        run = Signal()
        want = Signal()                  # the emitter's, registered
        m.d.sync += want.eq(self.want)
        m.d.comb += [
            run.eq(want & init & record_room & sched_room),
            self.record.valid.eq(flags.count != 0), self.record.payload.half.eq(records.r_data),
            *(getattr(self.record.payload, name).eq(getattr(flags.entries[0], name))
              for name in _record_flags.members),
            records.r_en.eq(self.record.ready), flags.pop.eq(self.record.ready & self.record.valid),
            self.schedule.valid.eq(sched_q.count != 0),
            self.schedule.payload.eq(sched_q.entries[0]), sched_q.pop.eq(sched_out),
        ]

        # The round.
        rh, sh = self.req.payload, self.rsp.payload
        r = fc_pending
        fit_req = Mux(r, Mux(rh.wide, fits[5], fits[4]), Mux(rh.wide, fits[1], fits[0]))
        fit_rsp = Mux(r, Mux(sh.wide, fits[7], fits[6]), Mux(sh.wide, fits[3], fits[2]))
        fit_both = Array(fits[8:])[Cat(sh.wide, rh.wide, r)]
        req_may = Signal()
        req_ok = Signal()
        rsp_ok = Signal()
        close = Signal()
        msg = Signal()
        # Credits are spent in the clock after a close, so in that clock nothing joins and
        # nothing closes.
        req_credit, req_pool = req.verdict, req.verdict_pool
        rsp_credit, rsp_pool = rsp.verdict, rsp.verdict_pool
        # A head without its verdict yet holds the round: nothing joins or closes.
        hold = Signal()
        rsp_may = Signal()
        rsp_with = Signal()
        rsp_alone = Signal()
        m.d.comb += [
            hold.eq((self.req.valid & ~req.known) | (self.rsp.valid & ~rsp.known)),
            req_may.eq(run & ~closed & ~hold & self.req.valid & allow_req),
            req_ok.eq(req_may & req_credit & fit_req),
            rsp_may.eq(run & ~closed & ~hold & self.rsp.valid & allow_rsp & rsp_credit
                       & fit_rsp),
            rsp_with.eq(rsp_may & ~((rh.beats == 0) & lead.over) & fit_both),
            rsp_alone.eq(rsp_may & ~(req_may & (rh.beats == 0) & lead.at)),
            rsp_ok.eq(Mux(req_ok, rsp_with, rsp_alone)),
            self.req.ready.eq(req_ok), self.rsp.ready.eq(rsp_ok),
            msg.eq(self.give_init & ~init & ~fc_pending & ~swap),
            close.eq(want & ~closed & ~hold & record_room & sched_room
                     & ~req_ok & ~rsp_alone
                     & (msg | swap | (req.n != 0) | (rsp.n != 0) | fc_pending)),
        ]
        start = Signal(_SECTOR)
        end_new = Signal(_SECTOR)
        off = Signal(_SECTOR)
        span_new = Signal(_SECTOR)
        m.d.comb += [
            start.eq(Mux(rh.wide, wide_start(req_end), req_end)),
            end_new.eq(start + Mux(rh.wide, _WIDE, _NARROW)),
            off.eq(rsp_span + (sh.wide & rsp_span[0])),
            span_new.eq(off + 1 + sh.wide),
        ]

        # What closing does to the rate limits, the swap and the balance, in the clock after
        # (nothing joins or closes in it), from what the control was: the flits until the next
        # control, and the items outstanding under each rate limit before those flits retire
        # them, are registered at the close.
        closed_msg = Signal()
        closed_halves = Signal(7)
        closed_end = Signal(_SECTOR)
        closed_swap = Signal()           # the next control is swapped
        closed_flits = Signal(7)
        req_sum = Signal(range(REQ_LIMIT + REQS_PER_CONTROL + 1))
        rsp_sum = Signal(range(2 * RSP_LIMIT + 1))
        owed = Signal(7)
        flits = Signal(7)
        m.d.comb += flits_to_next(swap, halves, owed, flits)
        m.d.sync += [closed.eq(close), closed_msg.eq(msg), closed_halves.eq(halves),
                     closed_end.eq(req_end), closed_swap.eq(~msg & owed[0]),
                     closed_flits.eq(Mux(msg, 1, flits)),
                     req_sum.eq(req_out + Mux(msg, 0, req.n)),
                     rsp_sum.eq(rsp_out + Mux(msg, 0, rsp.n))]
        req_out_after = Signal.like(req_out)
        rsp_out_after = Signal.like(rsp_out)
        m.d.comb += [req_out_after.eq(outstanding_after(req_sum, 0, closed_flits)),
                     rsp_out_after.eq(outstanding_after(rsp_sum, 0, closed_flits))]
        req_allowed_after = thermometer(REQ_LIMIT - req_out_after, REQS_PER_CONTROL)
        rsp_allowed_after = thermometer(RSP_LIMIT - rsp_out_after, RSP_LIMIT)
        with m.If(closed):
            m.d.sync += [req_out.eq(req_out_after), rsp_out.eq(rsp_out_after),
                         req_allowed.eq(req_allowed_after), rsp_allowed.eq(rsp_allowed_after),
                         swap.eq(closed_swap), init.eq(init | closed_msg)]
        spent = Signal(credit_array(CREDIT_BITS))
        sent = Signal(credit_array(5))
        # The slots credits were spent on are registered at the close, and what was spent
        # and returned is accounted in the clock after it.
        req_went = req.spend(m, close & ~msg, spent)
        rsp_went = rsp.spend(m, close & ~msg, spent)
        returned = Signal.like(sent)
        # What the Flow Control fields return is registered every clock and subtracted only
        # in the clock after a close (``fc_apply``, a register of its own), so that ``close``
        # drives none of these registers.
        fc_apply = Signal()
        m.d.sync += [sent.eq(returned), fc_apply.eq(close & ~msg)]
        # Whether a return stays pending after them, likewise: the fields were placed on the
        # counts of the clock before, to which only that clock's releases were added (no
        # control closed then), so some return stays pending when one was ``kept`` or
        # released then; no subtraction of the counters is in front of ``fc_pending``.
        kept_r = Signal()
        given_r = Signal()
        _, ahead = account_credits(m, self, Const(1), spent, sent, fc_pending,
                                   Mux(closed & ~closed_msg, kept_r | given_r, fc_pending),
                                   sent_applied=fc_apply)
        fc_img, kept = self._flow_control(m, fc_start, returned, ahead)
        m.d.sync += [kept_r.eq(kept), given_r.eq(released(self.give))]
        req.credits(m, self.credits, self.grant, spent, self.req, self.req_next, req_ok,
                    req_went)
        rsp.credits(m, self.credits, self.grant, spent, self.rsp, self.rsp_next, rsp_ok,
                    rsp_went)

        # The next state.
        outcome = Cat(rsp_ok, req_ok)
        # A close clears the counts (the next verdicts are of first fields); the rest is
        # cleared in the clock after it, in which nothing joins (so ``close`` drives few
        # registers).
        with m.If(close):
            m.d.sync += [req.n.eq(0), rsp.n.eq(0)]
        with m.If(closed):
            m.d.sync += [req.beats.eq(0), rsp.beats.eq(0), req_end.eq(0), rsp_span.eq(0),
                         halves.eq(0), sched_req.eq(0)]
        with m.If(req_ok):
            m.d.sync += [req.n.eq(req.n + 1), req.beats.eq(req.beats + rh.beats),
                         req.pool.eq(req_pool), req.vc.eq(Mux(req.n == 0, rh.vc, req.vc)),
                         req_end.eq(end_new)]
            for i in range(REQS_PER_CONTROL):
                with m.If(req.n == i):
                    m.d.sync += [sched_req[i].beats.eq(rh.beats), sched_req[i].be.eq(rh.be),
                                 sched_req[i].be_pos.eq(rh.be_pos)]
        # The half-flits called for after each outcome, summed beside the round.
        req_halves = Signal(4)
        rsp_halves = Signal(4)
        m.d.comb += [req_halves.eq(2 * rh.beats + rh.be), rsp_halves.eq(2 * sh.beats)]
        halves_after = Array(_outcomes(m, halves, halves, halves + rsp_halves,
                                       halves + req_halves, halves + req_halves + rsp_halves))
        with m.If(~closed):
            m.d.sync += halves.eq(halves_after[outcome])
        with m.If(rsp_ok):
            m.d.sync += [rsp.n.eq(rsp.n + 1), rsp.beats.eq(rsp.beats + sh.beats),
                         rsp.pool.eq(rsp_pool), rsp.vc.eq(Mux(rsp.n == 0, sh.vc, rsp.vc)),
                         rsp_span.eq(span_new)]

        # The round's conditions for the next clock, for each outcome.
        stay = _fits(m, "stay", req_end, rsp_span)
        choices = Array([stay, _fits(m, "rsp", req_end, span_new),
                         _fits(m, "req", end_new, rsp_span), _fits(m, "both", end_new, span_new)])
        m.d.sync += fits.eq(Mux(closed, (1 << 16) - 1, choices[outcome]))
        starts = Array(_outcomes(m, fc_start, req_end + rsp_span, req_end + span_new,
                                 end_new + rsp_span, end_new + span_new))
        m.d.sync += fc_start.eq(Mux(closed, 0, starts[outcome]))
        m.d.sync += [
            allow_req.eq(Mux(closed, req_allowed_after[0],
                             Mux(req_ok, Array(req_allowed)[req.n + 1],
                                 Array(req_allowed)[req.n]))),
            allow_rsp.eq(Mux(closed, rsp_allowed_after[0],
                             Mux(rsp_ok, Array(rsp_allowed)[rsp.n + 1],
                                 Array(rsp_allowed)[rsp.n]))),
        ]
        diffs = Array(_outcomes(m, diff, diff, diff + 1, diff - 1, diff))
        m.d.sync += diff.eq(Mux(closed, _saturated(diff), diffs[outcome]))
        leads = Array([_lead(diff), _lead(diff + 1), _lead(diff - 1), _lead(diff)])
        m.d.sync += lead.eq(Mux(closed, _lead(_saturated(diff)), leads[outcome]))
        # Fields into the images in the clock after they join; the record the clock after
        # the control closed.
        self._images(m, req, rsp, req_ok, rsp_ok, req_pool, rsp_pool, start, off)
        with m.If(closed):
            m.d.sync += [req.img.eq(0), rsp.img.eq(0)]
        rec = Signal(record_layout)
        closed_sched = Signal(schedule_layout)
        m.d.sync += closed_sched.eq(Cat(sched_req, rsp.beats, Const(0, 1)))
        terms = [[(Const(1), req.img[s]), (Const(1), fc_img[s])]
                 for s in range(SECTORS_PER_HALF)]
        for e in range(0, SECTORS_PER_HALF + 1, _NARROW):
            for s in range(e, SECTORS_PER_HALF):
                terms[s].append((closed_end == e, rsp.img[s - e]))
        half = Signal(control_half)
        for s, these in enumerate(terms):
            m.d.comb += half[s].eq(reduce(operator.or_, (Mux(c, v, 0) for c, v in these)))
        m.d.comb += [
            rec.msg.eq(closed_msg), rec.halves.eq(Mux(closed_msg, 0, closed_halves)),
            rec.half.eq(Mux(closed_msg, MsgType.CREDIT_INIT_DONE.value, half)),
            records.w_data.eq(rec.half), records.w_en.eq(closed),
            flags.i.valid.eq(closed),
            *(getattr(flags.i.payload, name).eq(getattr(rec, name))
              for name in _record_flags.members),
            sched_q.i.payload.eq(closed_sched),
            sched_q.i.valid.eq(closed & ~closed_msg & (closed_halves != 0)),
        ]
        return m

    def _images(self, m, req, rsp, req_ok, rsp_ok, req_pool, rsp_pool, start, off):
        """Each field joined, with its POOL bit, registered; written into its image in the
        next clock at its sector (the request's start, the response's offset)."""
        rh, sh = self.req.payload, self.rsp.payload
        req_word = Signal(len(rh.field), name="req_word_r")
        rsp_word = Signal(64, name="rsp_word_r")
        req_at = Signal(SECTORS_PER_HALF)          # one-hot: the request field's start
        rsp_at = Signal(SECTORS_PER_HALF)          # one-hot: the response field's first sector
        req_wide = Signal()
        rsp_wide = Signal()
        m.d.sync += [
            req_word.eq(request_word(m, rh, req_pool, "req_word")),
            rsp_word.eq(response_word(m, sh, rsp_pool, "rsp_word")),
            req_at.eq(Mux(req_ok, 1 << start, 0)), rsp_at.eq(Mux(rsp_ok, 1 << off, 0)),
            req_wide.eq(rh.wide), rsp_wide.eq(sh.wide),
        ]
        for s in range(SECTORS_PER_HALF):
            terms = []
            for st in range(0, s + 1, _NARROW):
                part = s - st
                if part < _NARROW:
                    terms.append((req_at[st], req_word[32 * part:32 * part + 32]))
                elif part < _WIDE and st % _WIDE == 0:
                    terms.append((req_at[st] & req_wide, req_word[32 * part:32 * part + 32]))
            with m.If(reduce(operator.or_, (c for c, _ in terms))):
                m.d.sync += req.img[s].eq(reduce(operator.or_, (Mux(c, v, 0) for c, v in terms)))
            low = rsp_at[s]
            high = rsp_at[s - 1] & rsp_wide if s else Const(0)
            with m.If(low | high):
                m.d.sync += rsp.img[s].eq(Mux(low, rsp_word[:32], rsp_word[32:]))

    def _flow_control(self, m, fc_start, sent, ahead):
        """Flow Control fields from ``fc_start`` on, one per slot with credits pending while
        sectors last (README §3 rule 5, without the gap), registered: the sectors they fill
        (all others 0), and ``sent`` what they return; with whether a return stays pending
        after them (:func:`~scaleup_ip.tl.tx.place.place_flow_control`'s ``kept``). Whether
        each slot has a return pending, and more than its field carries, are registers,
        worked out from ``ahead`` (:func:`~scaleup_ip.tl.tx.compose.account_credits`')."""
        img = Signal(control_half, name="fc_img")
        terms = [[] for _ in range(SECTORS_PER_HALF)]
        kept = place_flow_control(m, terms, flow_control_fields(m, self.pending, ahead),
                                  fc_start, sent)
        for s, these in enumerate(terms):
            m.d.sync += img[s].eq(reduce(operator.or_, (Mux(c, v, 0) for c, v in these)))
        return img, kept


def _behind(entry):
    """The entry behind a queue's head, and whether there is one."""
    return data.StructLayout({"valid": 1, "entry": entry})


#: What a round tests of the balance while a request without data may go: ``over``, ``diff``
#: above :data:`LEAD_SLACK`, holds back a response that would join beside that request;
#: ``at``, ``diff`` at :data:`LEAD_SLACK` or above, one that would join while it waits.
_lead_layout = data.StructLayout({"over": 1, "at": 1})


def _outcomes(m, like, *values):
    """``values`` (one per outcome of a round: nothing, a response, a request, both joined)
    as signals like ``like``, so that the round's outcome only chooses among them."""
    out = [Signal.like(like, name=f"{like.name}_{k}") for k in range(len(values))]
    m.d.comb += [o.eq(v) for o, v in zip(out, values)]
    return out


def _lead(diff):
    """The :data:`_lead_layout` flags of a value of ``diff``."""
    return Cat(diff > LEAD_SLACK, diff >= LEAD_SLACK)


def _saturated(diff):
    """``diff`` as ``-lead`` with ``lead`` within the balance count's range (README §3
    rule 4)."""
    return Mux(diff > FAIR_LEAD_LIMIT, FAIR_LEAD_LIMIT,
               Mux(diff <= -FAIR_LEAD_LIMIT, -FAIR_LEAD_LIMIT + 1, diff))
