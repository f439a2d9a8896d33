# SPDX-License-Identifier: BSD-2-Clause
"""The TL packer's decision: how many requests and responses the next control half takes."""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
    FAIR_LEAD_LIMIT,
    LEAD_SLACK,
    MAX_BEATS,
    REQS_PER_CONTROL,
    RSP_LIMIT,
    SECTORS_PER_HALF,
    CreditClass,
    CreditSlot,
    credit_array,
)
from .place import request_footprints

__all__ = ["DECIDE_CREDIT_BITS", "TxDecide", "decide_req_layout", "decide_rsp_layout",
           "prefix_credits", "prefix_pool", "request_prefixes"]

#: Width of the capped credit counters the decision compares: 127 covers the most one control
#: half can spend of any class (8 responses of 4 beats).
DECIDE_CREDIT_BITS = 7

#: Beats a prefix of the response window can need: 8 responses of 4 beats.
_PREFIX_BEATS = RSP_LIMIT * MAX_BEATS

#: What the decision needs of a request at the head of the request window: its VC, data beats
#: and whether its field is uncompressed (4 sectors, else 2).
decide_req_layout = data.StructLayout({"vc": 2, "beats": range(MAX_BEATS + 1), "wide": 1})

#: What the decision needs of response ``j`` of the response window: its VC, whether its field
#: is uncompressed, the read beats of responses ``0..j`` together, the sectors responses
#: ``0..j`` span (README §3 rule 4), and whether responses ``0..j`` all share response 0's VC.
#: The composer keeps the last three as it fills the window.
decide_rsp_layout = data.StructLayout({
    "vc": 2, "wide": 1, "total": range(_PREFIX_BEATS + 1), "span": 5, "one_vc": 1,
})


def _at_least(counter, value, width):
    """``counter >= value`` for a wide counter and a ``width``-bit value."""
    return counter[width:].any() | (counter[:width] >= value)


def _ends(take):
    """One-hot end of a prefix: ``take`` (a thermometer, bit ``j`` = prefix of ``j + 1`` taken)
    ends at bit ``j``."""
    return [take[j] & ~take[j + 1] if j + 1 < len(take) else take[j] for j in range(len(take))]


def _count(m, take, name):
    """The length of the prefix ``take`` describes, from its one-hot end (no adder)."""
    count = Signal(range(len(take) + 1), name=name)
    ends = _ends(take)
    m.d.comb += count.eq(
        Cat(*(Cat(*(e for j, e in enumerate(ends) if (j + 1) >> b & 1)).any()
              for b in range(len(count)))))
    return count


def prefix_pool(take, by_vc):
    """Whether the prefix ``take`` describes spends pool credits."""
    return Cat(*(e & ~v for e, v in zip(_ends(take), by_vc))).any()


def request_prefixes(m, req):
    """``(total beats, one VC run)`` of each prefix of the requests ``req``
    (:data:`decide_req_layout`)."""
    prefixes = [(req[0].beats, 1)]
    for i in range(1, REQS_PER_CONTROL):
        total = Signal(range((i + 1) * MAX_BEATS + 1), name=f"req_p{i + 1}_beats")
        m.d.comb += total.eq(prefixes[-1][0] + req[i].beats)
        prefixes.append((total, prefixes[-1][1] & (req[i].vc == req[0].vc)))
    return prefixes


def prefix_credits(m, name, credits, cmd_cls, data_cls, vc0, prefixes, counts=None):
    """Rule 6 for each prefix (``(total beats, one VC run)``, the first's VC ``vc0``) against
    ``credits`` (:func:`~scaleup_ip.tl.layout.credit_array` of :data:`DECIDE_CREDIT_BITS`):
    ``(ok, by_vc)`` lists, by_vc when the prefix spends its VC's credits. Prefix ``k`` holds
    ``k + 1`` fields, or ``counts[k]`` (a signal) when ``counts`` is given."""
    cmd, dat = credits[cmd_cls], credits[data_cls]
    oks, by_vcs = [], []
    def cmd_fit(counter, k):
        """The command credits cover prefix ``k``: against a constant, or against each count
        it may hold, selected by it (no compare of two signals)."""
        if counts is None:
            return _at_least(counter, k + 1, len(prefixes[k][0]))
        n = counts[k]
        return Cat(*((n == v) & _at_least(counter, v, len(n))
                     for v in range(1, len(prefixes) + 1))).any()

    for k, (total, one_vc) in enumerate(prefixes):
        width = len(total)
        vc_fit = Array(cmd_fit(cmd[CreditSlot.VC0 + v], k)
                       & _at_least(dat[CreditSlot.VC0 + v], total, width) for v in range(4))
        by_vc, ok = Signal(name=f"{name}_p{k + 1}_vc"), Signal(name=f"{name}_p{k + 1}_ok")
        m.d.comb += [
            by_vc.eq(one_vc & vc_fit[vc0]),
            ok.eq(by_vc | (cmd_fit(cmd[CreditSlot.POOL], k)
                           & _at_least(dat[CreditSlot.POOL], total, width))),
        ]
        oks.append(ok)
        by_vcs.append(by_vc)
    return oks, by_vcs


class TxDecide(wiring.Component):
    """How many requests and responses the next control half-flit takes (README §3 rules 3, 4
    and 6), from registered state, within one clock. Combinational.

    Members
    -------
    req : In(ArrayLayout(decide_req_layout, 4)), req_valid : In(4)
        The four oldest requests; bit ``i`` of ``req_valid`` set when request ``i`` is there
        (a thermometer).
    req_hidden : In(1)
        More requests wait behind the four.
    rsp : In(ArrayLayout(decide_rsp_layout, 8)), rsp_valid : In(8)
        The eight oldest responses, likewise.
    credits : In(credit_array(DECIDE_CREDIT_BITS))
        Credits held, each counter capped at 127 (no control half can spend more than 32 of
        one class).
    req_allowed, rsp_allowed : In
        Source rate limits [§5.7] as thermometers: bit ``i`` set when the allowance is more
        than ``i``.
    traffic : In(1)
        Requests and responses may be sent.
    swap : In(1)
        The control shares its flit with the final data half-flit owed to the one before, so
        a control without data costs no MANDATORY NOP (rule 3).
    lead : In(signed)
        Requests minus responses issued so far, saturating (rule 4).
    fc_pending : In(1)
        A credit return is pending: a sector is kept free for a Flow Control field (rule 2).
    n_req, n_rsp : Out
        Requests and responses taken.
    req_pool, rsp_pool : Out(1)
        The taken requests (responses) spend pool credits (POOL = 1), else their VC's.

    Every condition of a prefix is computed for every prefix length in parallel, the
    responses' for each of the five request counts; each count is then a candidate, and the
    best candidate by rule 3's order is a comparison of five keys. Credits are compared with
    the counters directly (rule 6 needs only a prefix's total beats and whether it is one VC
    run).
    """

    def __init__(self):
        super().__init__({
            "req": In(data.ArrayLayout(decide_req_layout, REQS_PER_CONTROL)),
            "req_valid": In(REQS_PER_CONTROL),
            "req_hidden": In(1),
            "rsp": In(data.ArrayLayout(decide_rsp_layout, RSP_LIMIT)),
            "rsp_valid": In(RSP_LIMIT),
            "credits": In(credit_array(DECIDE_CREDIT_BITS)),
            "req_allowed": In(REQS_PER_CONTROL),
            "rsp_allowed": In(RSP_LIMIT),
            "traffic": In(1),
            "swap": In(1),
            "lead": In(range(-FAIR_LEAD_LIMIT, FAIR_LEAD_LIMIT)),
            "fc_pending": In(1),
            "n_req": Out(range(REQS_PER_CONTROL + 1)),
            "n_rsp": Out(range(RSP_LIMIT + 1)),
            "req_pool": Out(1),
            "rsp_pool": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        req_ok, req_vc = prefix_credits(m, "req", self.credits, CreditClass.REQ_CMD,
                                        CreditClass.REQ_DATA, self.req[0].vc,
                                        request_prefixes(m, self.req))
        _, ends, used = request_footprints(m, [r.wide for r in self.req], "decide")
        take = Signal(REQS_PER_CONTROL)
        for i in range(REQS_PER_CONTROL):
            # The fields end within the half and leave a sector free for FC when one is due.
            room = (ends[i + 1] <= SECTORS_PER_HALF) & \
                (used[i + 1] <= SECTORS_PER_HALF - self.fc_pending)
            cond = self.traffic & self.req_valid[i] & self.req_allowed[i] & req_ok[i] & room
            m.d.comb += take[i].eq(cond & take[i - 1] if i else cond)
        req_data = [Const(0)]
        for i in range(REQS_PER_CONTROL):
            req_data.append(req_data[-1] | (self.req[i].beats != 0))
        cands = self._responses(m, take, ends, used)
        best, valid = self._best(m, take, cands, req_data)
        m.d.comb += [
            self.n_req.eq(Mux(valid, best, 0)),
            self.n_rsp.eq(Mux(valid, Array(c["n"] for c in cands)[best], 0)),
            self.req_pool.eq(Array(prefix_pool(Cat(take[:a], Const(0, REQS_PER_CONTROL - a)),
                                         req_vc) if a else 0
                                   for a in range(REQS_PER_CONTROL + 1))[best]),
            self.rsp_pool.eq(Array(c["pool"] for c in cands)[best]),
        ]
        return m

    def _responses(self, m, take, ends, used):
        """For each request count ``a`` (a candidate): the longest response prefix that fits
        after the requests, within the balance cap while a request could go and more than
        ``a`` wait (rule 4); its count ``n``, credit kind ``pool``, the sectors it ``span``s,
        and whether it carries ``data``; plus ``all``: it is every response this control
        could take were the half the responses' (rule 3's exception to balance)."""
        rsp = self.rsp
        ok, by_vc = prefix_credits(m, "rsp", self.credits, CreditClass.RSP_CMD,
                                   CreditClass.RSP_DATA, rsp[0].vc,
                                 [(e.total, e.one_vc) for e in rsp])
        spans = [Const(0, 5), *(e.span for e in rsp)]
        common = Signal(RSP_LIMIT)       # every condition but room and the balance cap
        for j in range(RSP_LIMIT):
            cond = self.traffic & self.rsp_valid[j] & self.rsp_allowed[j] & ok[j]
            m.d.comb += common[j].eq(cond & common[j - 1] if j else cond)
        most = Signal(RSP_LIMIT, name="rsp_most")
        for j in range(RSP_LIMIT):
            m.d.comb += most[j].eq(common[j] & (spans[j + 1] <= SECTORS_PER_HALF
                                                - self.fc_pending))
        most_n = _count(m, most, "rsp_most_n")
        cands = []
        for a in range(REQS_PER_CONTROL + 1):
            rsp_take = Signal(RSP_LIMIT, name=f"rsp_take_{a}req")
            limit = Signal(range(-FAIR_LEAD_LIMIT, FAIR_LEAD_LIMIT + REQS_PER_CONTROL + LEAD_SLACK),
                           name=f"rsp_cap_{a}req")
            m.d.comb += limit.eq(self.lead + a + LEAD_SLACK)
            more = self.req_valid[a] if a < REQS_PER_CONTROL else self.req_hidden
            for j in range(RSP_LIMIT):
                room = (ends[a] + spans[j + 1] <= SECTORS_PER_HALF) & \
                    (used[a] + spans[j + 1] <= SECTORS_PER_HALF - self.fc_pending)
                capped = ~(take[0] & more) | (limit > j)
                m.d.comb += rsp_take[j].eq(common[j] & room & capped)
            n = _count(m, rsp_take, f"rsp_n_{a}req")
            has_data = Signal(name=f"rsp_data_{a}req")
            m.d.comb += has_data.eq(Array([0, *(e.total != 0 for e in rsp)])[n])
            cands.append({"n": n, "pool": prefix_pool(rsp_take, by_vc), "data": has_data,
                          "span": Array(spans)[n], "end": ends[a], "all": n == most_n})
        return cands

    def _best(self, m, take, cands, req_data):
        """Rule 3: the candidate with the highest key (no MANDATORY NOP, then the sectors it
        spans, then the balance nearest zero), the fewest requests on a tie; 0 when none is
        balanced and non-empty."""
        keys = []
        for a, c in enumerate(cands):
            lead = Signal(range(-FAIR_LEAD_LIMIT - RSP_LIMIT, FAIR_LEAD_LIMIT + REQS_PER_CONTROL),
                          name=f"cand{a}_lead")
            m.d.comb += lead.eq(self.lead + a - c["n"])
            valid = Signal(name=f"cand{a}_valid")
            taken = take[a - 1] if a else 1
            m.d.comb += valid.eq(taken & ((a != 0) | (c["n"] != 0))
                                 & ((lead <= LEAD_SLACK) | c["all"]))
            near = Signal(5, name=f"cand{a}_near")      # 31 - |lead|, |lead| <= 24
            spanned = Signal(5, name=f"cand{a}_spanned")
            m.d.comb += [near.eq(31 - Mux(lead < 0, -lead, lead)),
                         spanned.eq(c["end"] + c["span"])]
            key = Signal(12, name=f"cand{a}_key")
            m.d.comb += key.eq(Cat(near, spanned, req_data[a] | c["data"] | self.swap, valid))
            keys.append(key)
        # Every pair compared at once (no chain through the five): a candidate wins when its
        # key is above every lower count's and not below any higher count's.
        wins = []
        for a in range(REQS_PER_CONTROL + 1):
            beats = [keys[a] > keys[b] if b < a else keys[a] >= keys[b]
                     for b in range(REQS_PER_CONTROL + 1) if b != a]
            wins.append(Cat(*beats).all())
        chosen = Signal(range(REQS_PER_CONTROL + 1), name="chosen")
        valid = Signal(name="chosen_valid")
        for a in reversed(range(REQS_PER_CONTROL + 1)):
            with m.If(wins[a]):
                m.d.comb += [chosen.eq(a), valid.eq(keys[a][-1])]
        return chosen, valid
