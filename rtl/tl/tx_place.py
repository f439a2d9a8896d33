"""Placement of a decided control half-flit: its sectors, the credits it spends and returns, and
the data it calls for."""

from functools import reduce

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .layout import (
    CMD_CREDIT_MAX,
    CREDIT_BITS,
    DATA_CREDIT_MAX,
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

__all__ = [
    "ControlPlacer",
    "rsp_totals_layout",
    "schedule_layout",
    "tx_req_entry",
    "tx_rsp_entry",
    "window_members",
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
    "run": 6,          # read beats of every response queued so far, this one included, mod 64
    "same_vc": 1,      # same VC as the response queued before it
})

#: Read beats of responses ``0..j`` of the response window together, for each ``j`` (at most
#: 8 responses of 4 beats: 32; the width of ``run``).
rsp_totals_layout = data.ArrayLayout(tx_rsp_entry["run"].shape, RSP_LIMIT)

#: The data half-flits a control half-flit calls for, in order.
schedule_layout = data.StructLayout({
    "req": data.ArrayLayout(data.StructLayout({"beats": 3, "be": 1, "be_pos": 2}),
                            REQS_PER_CONTROL),
    "rsp_beats": 6,
    "skip": 1,         # the first data half-flit went with the control, from the data queue [ours]
})


def window_members():
    """The queue windows a control half-flit is made from (:class:`~rtl.tl.queue.WindowQueue`
    ``entries`` and ``count``), as component members ``req``, ``req_count``, ``rsp`` and
    ``rsp_count``."""
    return {
        "req": In(data.ArrayLayout(tx_req_entry, REQ_LIMIT)),
        "req_count": In(range(REQ_LIMIT + 1)),
        "rsp": In(data.ArrayLayout(tx_rsp_entry, RSP_LIMIT)),
        "rsp_count": In(range(RSP_LIMIT + 1)),
    }


class ControlPlacer(wiring.Component):
    """Builds the control half-flit :class:`~rtl.tl.tx_decide.TxDecide` decided (README §3
    rules 3-5): requests from sector 0, responses after them, Flow Control fields in the
    sectors left, one per credit slot with something pending. Combinational.

    Members
    -------
    req, req_count : In
        The request queue window (:data:`tx_req_entry`, oldest first) and its valid entries.
    rsp, rsp_count : In
        The response queue window (:data:`tx_rsp_entry`) and its valid entries.
    rsp_total : In(rsp_totals_layout)
        Read beats of each prefix of the response window.
    pending : In(credit_array(CREDIT_BITS))
        Credits to return to the peer.
    n_req, n_rsp, req_pool, rsp_pool : In
        The decision: how many requests and responses, and whether they spend pool credits.
    half : Out(control_half)
        The control half-flit, every field's POOL bit set from the decision.
    spent : Out(credit_array(CREDIT_BITS))
        Credits the chosen fields consume.
    sent : Out(credit_array(5))
        Credits returned by the flow-control fields.
    schedule : Out(schedule_layout)
        The data the half calls for.
    """

    def __init__(self):
        super().__init__({
            **window_members(),
            "rsp_total": In(rsp_totals_layout),
            "pending": In(credit_array(CREDIT_BITS)),
            "n_req": In(range(REQS_PER_CONTROL + 1)),
            "n_rsp": In(range(RSP_LIMIT + 1)),
            "req_pool": In(1),
            "rsp_pool": In(1),
            "half": Out(control_half),
            "spent": Out(credit_array(CREDIT_BITS)),
            "sent": Out(credit_array(5)),
            "schedule": Out(schedule_layout),
        })

    def elaborate(self, platform):
        m = Module()
        self._spend(m)
        rsp_start = Signal(range(SECTORS_PER_HALF + 1))
        fc_start = Signal(range(SECTORS_PER_HALF + 1))
        m.d.comb += [
            rsp_start.eq(4 * self.n_req),
            fc_start.eq(rsp_start + Mux(self.n_rsp != 0, self.n_rsp + self.rsp[0].wide, 0)),
        ]
        fields = self._flow_control(m)
        self._place(m, self.req_pool, rsp_start, self.rsp_pool, fc_start, fields)
        return m

    def _spend(self, m):
        """Credits the chosen fields spend, and the data they call for."""
        rsp_total = Array([0, *self.rsp_total])
        req_beats = Array([0, self.req[0].beats, self.req[0].beats + self.req[1].beats])
        rsp_beats = rsp_total
        for (cmd, dat), n, beats, pool, vc0 in (
                ((CreditClass.REQ_CMD, CreditClass.REQ_DATA), self.n_req, req_beats[self.n_req],
                 self.req_pool, self.req[0].vc),
                ((CreditClass.RSP_CMD, CreditClass.RSP_DATA), self.n_rsp, rsp_beats[self.n_rsp],
                 self.rsp_pool, self.rsp[0].vc)):
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
        m.d.comb += self.schedule.rsp_beats.eq(rsp_beats[self.n_rsp])

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
        return m
