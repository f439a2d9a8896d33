"""Picking logic of the TL packer: what goes into the next control half-flit."""

from functools import reduce

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .layout import (
    CMD_CREDIT_MAX,
    CREDIT_BITS,
    DATA_CREDIT_MAX,
    MAX_QUEUE_DEPTH,
    REQ_LIMIT,
    REQS_PER_CONTROL,
    RSP_LIMIT,
    SECTORS_PER_HALF,
    CreditClass,
    CreditSlot,
    control_half,
    credit_array,
    flow_control,
    single_beat_response,
    uncompressed_request,
    uncompressed_response,
    write_or_multi_response,
)
from .tx_decide import DECIDE_CREDIT_BITS, TxDecide, thermometer

__all__ = [
    "CREDIT_BITS",
    "ControlPicker",
    "credit_array",
    "schedule_layout",
    "tx_req_entry",
    "tx_rsp_entry",
]

#: Bit of the POOL flag in each field, from the layouts [Tables 5-29..5-36].
_REQ_POOL_BIT = uncompressed_request["pool"].offset
_RSP_POOL_BIT = {True: uncompressed_response["pool"].offset,
                 False: write_or_multi_response["pool"].offset}
assert write_or_multi_response["pool"].offset == single_beat_response["pool"].offset

#: A request waiting in the packer: its encoded field (POOL still 0) and what its data needs.
tx_req_entry = data.StructLayout({
    "field": uncompressed_request,
    "vc": 2,
    "beats": 3,        # data beats, 0 for reads
    "be": 1,           # a byte-enable half-flit follows the data
    "be_pos": 2,       # ReqAddr[7:6]: where beat 0's byte enables go in that half-flit
})

#: A response waiting in the packer: its encoded field (POOL still 0).
tx_rsp_entry = data.StructLayout({
    "field": 64,       # compressed fields use the low 32 bits
    "wide": 1,         # uncompressed, 2 sectors
    "vc": 2,
    "beats": 3,        # read data beats, 0 for write responses
})

#: The data half-flits a control half-flit calls for, in order.
schedule_layout = data.StructLayout({
    "req": data.ArrayLayout(data.StructLayout({"beats": 3, "be": 1, "be_pos": 2}),
                            REQS_PER_CONTROL),
    "rsp_beats": 6,
})


class ControlPicker(wiring.Component):
    """Chooses the fields of the next control half-flit (README §3 rules 2-6). Combinational.

    Members
    -------
    req, req_count : In
        The request queue window (:data:`tx_req_entry`, oldest first) and its valid entries.
    rsp, rsp_count : In
        The response queue window (:data:`tx_rsp_entry`) and its valid entries.
    credits : In(credit_array(CREDIT_BITS))
        Credits held, granted by the peer.
    pending : In(credit_array(CREDIT_BITS))
        Credits to return to the peer.
    req_allow, rsp_allow : In
        Source rate-limit allowances [§5.7].
    traffic : In(1)
        Requests and responses may be sent (initialisation complete).
    req_level, rsp_level : In(range(MAX_QUEUE_DEPTH + 1))
        Entries in the request and response queues (fairness: at most one request while the
        response queue is not empty and holds at least as many).
    half : Out(control_half)
        The control half-flit.
    n_req, n_rsp : Out
        Requests and responses taken from the windows.
    nonempty : Out(1)
        The half holds a request, a response or a flow-control field.
    spent : Out(credit_array(CREDIT_BITS))
        Credits the chosen fields consume.
    sent : Out(credit_array(5))
        Credits returned by the flow-control fields.
    schedule : Out(schedule_layout)
        The data the half calls for.
    """

    def __init__(self):
        super().__init__({
            "req": In(data.ArrayLayout(tx_req_entry, REQ_LIMIT)),
            "req_count": In(range(REQ_LIMIT + 1)),
            "rsp": In(data.ArrayLayout(tx_rsp_entry, RSP_LIMIT)),
            "rsp_count": In(range(RSP_LIMIT + 1)),
            "credits": In(credit_array(CREDIT_BITS)),
            "pending": In(credit_array(CREDIT_BITS)),
            "req_allow": In(range(REQ_LIMIT + 1)),
            "rsp_allow": In(range(RSP_LIMIT + 1)),
            "traffic": In(1),
            "req_level": In(range(MAX_QUEUE_DEPTH + 1)),
            "rsp_level": In(range(MAX_QUEUE_DEPTH + 1)),
            "half": Out(control_half),
            "n_req": Out(range(REQS_PER_CONTROL + 1)),
            "n_rsp": Out(range(RSP_LIMIT + 1)),
            "nonempty": Out(1),
            "spent": Out(credit_array(CREDIT_BITS)),
            "sent": Out(credit_array(5)),
            "schedule": Out(schedule_layout),
        })

    def elaborate(self, platform):
        m = Module()
        fc_pending = Signal()
        m.d.comb += fc_pending.eq(reduce(
            lambda a, b: a | b, (self.pending[c][s] != 0 for c in CreditClass for s in CreditSlot)))
        req_pool, rsp_pool = self._decide(m, fc_pending)
        rsp_start = Signal(range(SECTORS_PER_HALF + 1))
        fc_start = Signal(range(SECTORS_PER_HALF + 1))
        m.d.comb += [
            rsp_start.eq(4 * self.n_req),
            fc_start.eq(rsp_start + Mux(self.n_rsp != 0, self.n_rsp + self.rsp[0].wide, 0)),
        ]
        fields = self._flow_control(m)
        self._place(m, req_pool, rsp_start, rsp_pool, fc_start, fields)
        return m

    def _decide(self, m, fc_pending):
        """The counts and credit kinds (:class:`~rtl.tl.tx_decide.TxDecide`), and the spend."""
        m.submodules.decide = dec = TxDecide()
        total = 0
        for j, e in enumerate(self.rsp):
            total = total + e.beats
            m.d.comb += [
                dec.rsp[j].vc.eq(e.vc), dec.rsp[j].wide.eq(e.wide), dec.rsp[j].total.eq(total),
                dec.rsp[j].one_vc.eq(reduce(lambda a, b: a & b,
                                            (x.vc == self.rsp[0].vc for x in self.rsp[:j + 1]))),
            ]
        for i in range(REQS_PER_CONTROL):
            m.d.comb += [dec.req[i].vc.eq(self.req[i].vc), dec.req[i].beats.eq(self.req[i].beats)]
        top = (1 << DECIDE_CREDIT_BITS) - 1
        for c in CreditClass:
            for slot in CreditSlot:
                have = self.credits[c][slot]
                m.d.comb += dec.credits[c][slot].eq(Mux(have > top, top, have))
        m.d.comb += [
            dec.req_valid.eq(thermometer(self.req_count, REQS_PER_CONTROL)),
            dec.rsp_valid.eq(thermometer(self.rsp_count, RSP_LIMIT)),
            dec.req_allowed.eq(thermometer(self.req_allow, REQS_PER_CONTROL)),
            dec.rsp_allowed.eq(thermometer(self.rsp_allow, RSP_LIMIT)),
            dec.traffic.eq(self.traffic), dec.fc_pending.eq(fc_pending),
            dec.fair.eq((self.rsp_level != 0) & (self.rsp_level >= self.req_level)),
            self.n_req.eq(dec.n_req), self.n_rsp.eq(dec.n_rsp),
        ]
        req_beats = Array([0, self.req[0].beats, self.req[0].beats + self.req[1].beats])
        rsp_beats = Array([0, *(e.total for e in dec.rsp)])
        for (cmd, dat), n, beats, pool, vc0 in (
                ((CreditClass.REQ_CMD, CreditClass.REQ_DATA), dec.n_req, req_beats[dec.n_req],
                 dec.req_pool, self.req[0].vc),
                ((CreditClass.RSP_CMD, CreditClass.RSP_DATA), dec.n_rsp, rsp_beats[dec.n_rsp],
                 dec.rsp_pool, self.rsp[0].vc)):
            for slot in CreditSlot:
                mine = pool if slot == CreditSlot.POOL else ~pool & (vc0 == slot - CreditSlot.VC0)
                m.d.comb += [self.spent[cmd][slot].eq(Mux(mine, n, 0)),
                             self.spent[dat][slot].eq(Mux(mine, beats, 0))]
        for i in range(REQS_PER_CONTROL):
            with m.If(self.n_req > i):
                m.d.comb += [
                    self.schedule.req[i].beats.eq(self.req[i].beats),
                    self.schedule.req[i].be.eq(self.req[i].be),
                    self.schedule.req[i].be_pos.eq(self.req[i].be_pos),
                ]
        m.d.comb += self.schedule.rsp_beats.eq(rsp_beats[dec.n_rsp])
        return dec.req_pool, dec.rsp_pool

    def _flow_control(self, m):
        """One FC field per slot with credits pending, in slot order [README §3 rule 5]."""
        fields = []
        for slot in CreditSlot:
            field = Signal(flow_control, name=f"fc_{slot.name.lower()}")
            for cls in CreditClass:
                sub = getattr(field, cls.name.lower())
                top = CMD_CREDIT_MAX if cls in (CreditClass.REQ_CMD, CreditClass.RSP_CMD) \
                    else DATA_CREDIT_MAX
                pending = self.pending[cls][slot]
                m.d.comb += [
                    sub.count.eq(Mux(pending > top, top, pending)),
                    sub.t.eq(slot != CreditSlot.POOL),
                    sub.vc.eq(max(slot - CreditSlot.VC0, 0)),
                ]
            live = Signal(name=f"fc_{slot.name.lower()}_live")
            m.d.comb += live.eq(reduce(lambda a, b: a | b,
                                       (self.pending[c][slot] != 0 for c in CreditClass)))
            fields.append((slot, field, live))
        return fields

    def _place(self, m, req_pool, rsp_start, rsp_pool, fc_start, fields):
        sectors = [Signal(32, name=f"sector{s}") for s in range(SECTORS_PER_HALF)]
        for i in range(REQS_PER_CONTROL):
            with m.If(i < self.n_req):
                word = Signal(uncompressed_request.size, name=f"req_word{i}")
                m.d.comb += word.eq(self.req[i].field.as_value() | (req_pool << _REQ_POOL_BIT))
                for part in range(4):
                    m.d.comb += sectors[4 * i + part].eq(word[32 * part:32 * part + 32])
        for j in range(RSP_LIMIT):
            entry = self.rsp[j]
            word = Signal(64, name=f"rsp_word{j}")
            bit = Mux(entry.wide, _RSP_POOL_BIT[True], _RSP_POOL_BIT[False])
            m.d.comb += word.eq(entry.field | (rsp_pool << bit))
            pos = Signal(range(2 * SECTORS_PER_HALF), name=f"rsp_pos{j}")
            m.d.comb += pos.eq(rsp_start + (j + self.rsp[0].wide if j else 0))
            with m.If(j < self.n_rsp):
                for s in range(SECTORS_PER_HALF):
                    with m.If(pos == s):
                        m.d.comb += sectors[s].eq(word[:32])
                    if j == 0 and s:
                        with m.If(entry.wide & (pos == s - 1)):
                            m.d.comb += sectors[s].eq(word[32:])
        placed = Signal(range(len(CreditSlot) + 1))
        rank = Const(0, range(len(CreditSlot) + 1))
        for slot, field, live in fields:
            pos = Signal(range(2 * SECTORS_PER_HALF), name=f"fc_pos_{slot.name.lower()}")
            put = Signal(name=f"fc_put_{slot.name.lower()}")
            m.d.comb += [pos.eq(fc_start + rank), put.eq(live & (pos < SECTORS_PER_HALF))]
            rank = rank + live
            with m.If(put):
                for s in range(SECTORS_PER_HALF):
                    with m.If(pos == s):
                        m.d.comb += sectors[s].eq(field.as_value())
                for cls in CreditClass:
                    m.d.comb += self.sent[cls][slot].eq(getattr(field, cls.name.lower()).count)
            placed = placed + put
        m.d.comb += [self.half[s].eq(sectors[s]) for s in range(SECTORS_PER_HALF)]
        m.d.comb += self.nonempty.eq((self.n_req != 0) | (self.n_rsp != 0) | (placed != 0))
        return m
