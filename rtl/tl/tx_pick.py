"""Picking logic of the TL packer: what goes into the next control half-flit."""

from functools import reduce

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .layout import (
    CMD_CREDIT_MAX,
    DATA_CREDIT_MAX,
    MAX_QUEUE_DEPTH,
    REQ_LIMIT,
    RSP_LIMIT,
    SECTORS_PER_HALF,
    CreditClass,
    CreditSlot,
    control_half,
    flow_control,
    single_beat_response,
    uncompressed_request,
    uncompressed_response,
    write_or_multi_response,
)

__all__ = ["ControlPicker", "tx_req_entry", "tx_rsp_entry", "schedule_layout", "credit_array",
           "CREDIT_BITS"]

#: Width of every credit counter in the packer: up to 4095 credits of one class and slot [ours].
CREDIT_BITS = 12
#: Uncompressed requests in one control half [§5.7 footprints: sectors 3-0 and 7-4].
REQS_PER_CONTROL = 2
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


def credit_array(width):
    """``[class][slot]`` counters, one ``width``-bit count per :class:`CreditClass` and slot."""
    return data.ArrayLayout(data.ArrayLayout(width, len(CreditSlot)), len(CreditClass))


def _tree_sum(values):
    """Sum with a balanced adder tree."""
    values = list(values)
    while len(values) > 1:
        values = [values[i] + values[i + 1] if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0] if values else Const(0)


def _prefix_credit(m, name, vcs, beats, cmd, dat):
    """Credit feasibility of each prefix of a field list [README §3 rule 6].

    A prefix whose fields all share the first field's VC uses that VC's credits when its VC
    counters of both classes cover the prefix; otherwise it uses pool credits, if the pool
    counters cover it. Returns, for prefixes of length 1..len(vcs): ``ok``, per VC whether its
    fields use pool credits, per VC ``(pool, cmd, data)`` demand, and the pool demand
    ``(cmd, data)``.
    """
    vc_cmd = Signal(CREDIT_BITS, name=f"{name}_vc_cmd")        # the first field's VC counters
    vc_dat = Signal(CREDIT_BITS, name=f"{name}_vc_dat")
    m.d.comb += [
        vc_cmd.eq(Array(cmd[CreditSlot.VC0 + v] for v in range(4))[vcs[0]]),
        vc_dat.eq(Array(dat[CreditSlot.VC0 + v] for v in range(4))[vcs[0]]),
    ]
    prefixes = []
    one_vc = Const(1)
    for n in range(1, len(vcs) + 1):
        if n > 1:
            one_vc = one_vc & (vcs[n - 1] == vcs[0])
        by_vc = Signal(name=f"{name}_p{n}_vc")
        total = Signal(range(4 * n + 1), name=f"{name}_p{n}_beats")
        ok = Signal(name=f"{name}_p{n}_ok")
        m.d.comb += [
            total.eq(_tree_sum(beats[:n])),
            by_vc.eq(one_vc & (vc_cmd >= n) & (vc_dat >= total)),
            ok.eq(by_vc | ((cmd[CreditSlot.POOL] >= n) & (dat[CreditSlot.POOL] >= total))),
        ]
        spent = [(~by_vc, Mux(vcs[0] == v, n, 0), Mux(vcs[0] == v, total, 0)) for v in range(4)]
        prefixes.append((ok, [~by_vc] * 4, spent, Mux(by_vc, 0, n), Mux(by_vc, 0, total)))
    return prefixes


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
        limit = Signal(range(SECTORS_PER_HALF + 1))
        m.d.comb += limit.eq(Mux(fc_pending, SECTORS_PER_HALF - 1, SECTORS_PER_HALF))
        req_pool = self._pick_requests(m, limit)
        rsp_start, rsp_sectors, rsp_pool = self._pick_responses(m, limit)
        fc_start = Signal(range(SECTORS_PER_HALF + 1))
        m.d.comb += fc_start.eq(rsp_start + rsp_sectors)
        fields = self._flow_control(m)
        self._place(m, req_pool, rsp_start, rsp_pool, fc_start, fields)
        return m

    def _pick_requests(self, m, limit):
        cc, dc = CreditClass.REQ_CMD, CreditClass.REQ_DATA
        prefixes = _prefix_credit(m, "req", [e.vc for e in self.req[:REQS_PER_CONTROL]],
                                  [e.beats for e in self.req[:REQS_PER_CONTROL]],
                                  self.credits[cc], self.credits[dc])
        take = Signal(REQS_PER_CONTROL)
        for i, (ok, _, _, _, _) in enumerate(prefixes):
            cond = (self.traffic & (i < self.req_count) & (4 * (i + 1) <= limit)
                    & (i < self.req_allow) & ok)
            if i:
                cond &= take[i - 1] & ~((self.rsp_level != 0)
                                         & (self.rsp_level >= self.req_level))
            m.d.comb += take[i].eq(cond)
        m.d.comb += self.n_req.eq(take[0] + take[1])
        self._spend(m, prefixes, self.n_req, cc, dc)
        pool = [Signal(name=f"req_pool{i}") for i in range(REQS_PER_CONTROL)]
        for n, (_, use_pool, _, _, _) in enumerate(prefixes, 1):
            with m.If(self.n_req == n):
                for i in range(REQS_PER_CONTROL):
                    m.d.comb += pool[i].eq(Mux(self.req[i].vc == 0, use_pool[0],
                                           Mux(self.req[i].vc == 1, use_pool[1],
                                           Mux(self.req[i].vc == 2, use_pool[2], use_pool[3]))))
        for i in range(REQS_PER_CONTROL):
            with m.If(take[i]):
                m.d.comb += [
                    self.schedule.req[i].beats.eq(self.req[i].beats),
                    self.schedule.req[i].be.eq(self.req[i].be),
                    self.schedule.req[i].be_pos.eq(self.req[i].be_pos),
                ]
        return pool

    def _pick_responses(self, m, limit):
        cc, dc = CreditClass.RSP_CMD, CreditClass.RSP_DATA
        prefixes = _prefix_credit(m, "rsp", [e.vc for e in self.rsp], [e.beats for e in self.rsp],
                                  self.credits[cc], self.credits[dc])
        start = Signal(range(SECTORS_PER_HALF + 1))
        wide0 = Signal()
        m.d.comb += [start.eq(4 * self.n_req), wide0.eq(self.rsp[0].wide)]
        take = Signal(RSP_LIMIT)
        for j, (ok, _, _, _, _) in enumerate(prefixes):
            cond = (self.traffic & (j < self.rsp_count) & (j < self.rsp_allow) & ok
                    & (start + wide0 + j + 1 <= limit))
            if j:
                cond &= take[j - 1] & ~self.rsp[j].wide
            m.d.comb += take[j].eq(cond)
        n_rsp = Signal(range(RSP_LIMIT + 1))
        m.d.comb += n_rsp.eq(_tree_sum(take[j] for j in range(RSP_LIMIT)))
        m.d.comb += self.n_rsp.eq(n_rsp)
        self._spend(m, prefixes, n_rsp, cc, dc)
        pool = [Signal(name=f"rsp_pool{v}") for v in range(4)]
        beats = Signal(6)
        for n, (_, use_pool, _, _, _) in enumerate(prefixes, 1):
            with m.If(n_rsp == n):
                m.d.comb += [pool[v].eq(use_pool[v]) for v in range(4)]
                m.d.comb += beats.eq(_tree_sum(e.beats for e in self.rsp[:n]))
        m.d.comb += self.schedule.rsp_beats.eq(beats)
        sectors = Signal(range(SECTORS_PER_HALF + 1))
        m.d.comb += sectors.eq(Mux(n_rsp != 0, n_rsp + wide0, 0))
        return start, sectors, pool

    def _spend(self, m, prefixes, n_taken, cc, dc):
        for n, (_, _, spent, pc, pd) in enumerate(prefixes, 1):
            with m.If(n_taken == n):
                m.d.comb += [
                    self.spent[cc][CreditSlot.POOL].eq(pc),
                    self.spent[dc][CreditSlot.POOL].eq(pd),
                ]
                for vc, (pool, c, d) in enumerate(spent):
                    m.d.comb += [
                        self.spent[cc][CreditSlot.VC0 + vc].eq(Mux(pool, 0, c)),
                        self.spent[dc][CreditSlot.VC0 + vc].eq(Mux(pool, 0, d)),
                    ]

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
                m.d.comb += word.eq(self.req[i].field.as_value() | (req_pool[i] << _REQ_POOL_BIT))
                for part in range(4):
                    m.d.comb += sectors[4 * i + part].eq(word[32 * part:32 * part + 32])
        for j in range(RSP_LIMIT):
            entry = self.rsp[j]
            vc_pool = Mux(entry.vc == 0, rsp_pool[0], Mux(entry.vc == 1, rsp_pool[1],
                          Mux(entry.vc == 2, rsp_pool[2], rsp_pool[3])))
            word = Signal(64, name=f"rsp_word{j}")
            bit = Mux(entry.wide, _RSP_POOL_BIT[True], _RSP_POOL_BIT[False])
            m.d.comb += word.eq(entry.field | (vc_pool.as_unsigned() << bit))
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
