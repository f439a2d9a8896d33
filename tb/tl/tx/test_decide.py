# SPDX-License-Identifier: BSD-2-Clause
"""The packer's decision (``rtl/scaleup_ip/tl/tx/decide.py``) against the golden model's choice of a control
half's requests and responses (README §3 rules 3, 4, 6), on random windows, credits, rate-limit
allowances, balance counts, positions and FC reservation."""

import dataclasses
import random
from collections import deque

import cocotb
import pytest
from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import data
from cocotb.triggers import Timer

from scaleup_ip.config import BlockConfig
from scaleup_ip.model.tl.flit import (
    FIELD_SECTORS,
    OKAY,
    SLOTS,
    FType,
    Packer,
    _request_starts,
    _response_sectors,
)
from scaleup_ip.tl import (
    CreditClass,
    CreditSlot,
    FAIR_LEAD_LIMIT,
    LEAD_SLACK,
    MAX_BEATS,
    REQS_PER_CONTROL,
    REQ_LIMIT,
    RSP_LIMIT,
    SECTORS_PER_HALF,
    credit_array,
)
from scaleup_ip.tl.tx import (
    DECIDE_CREDIT_BITS,
    TxDecide,
    decide_req_layout,
    decide_rsp_layout,
    response_offsets,
)
from sim import harness
from sim.prove import prove
from sim.tl.traffic import make_write_response, random_request, random_response

#: Random states tried per run.
CASES = 3000


def _credits(rng):
    """A credit table with zeros, scarce and plentiful counts."""
    return {cls.name.lower(): {slot: rng.choice([0, 0, rng.randint(1, 12), 4000])
                               for slot in SLOTS} for cls in CreditClass}


def _state(rng):
    vc_bias = rng.choice([None, rng.randrange(4)])         # often one VC, to make VC runs

    def vc():
        return vc_bias if vc_bias is not None and rng.random() < 0.8 else rng.randrange(4)
    narrow = rng.choice([0.0, 0.5, 1.0])   # the share of compressed request fields
    reqs = [(dataclasses.replace(random_request(rng), vc=vc()), rng.random() < narrow)
            for _ in range(rng.randint(0, 6))]
    rsps = [dataclasses.replace(random_response(rng), vc=vc()) for _ in range(rng.randint(0, 11))]
    state = {
        "reqs": reqs, "rsps": rsps, "credits": _credits(rng),
        "req_allow": rng.randint(0, REQ_LIMIT), "rsp_allow": rng.randint(0, RSP_LIMIT),
        "fc_pending": rng.random() < 0.3, "traffic": rng.random() < 0.95,
        "lead": rng.randint(-FAIR_LEAD_LIMIT, FAIR_LEAD_LIMIT - 1),
        "swap": rng.random() < 0.5,
    }
    if rng.random() < 0.1:              # room for a full control half of compressed responses
        state.update(reqs=[], rsp_allow=RSP_LIMIT, fc_pending=False, traffic=True,
                     rsps=[r for r in rsps if r.status == OKAY] * 4)
    return state


def _directed_states(rng):
    """States that reach every request and response count and both credit kinds on any seed:
    ``n`` write responses (compressed, no data) with room for all, on one VC whose credits are
    plentiful or absent (the pool then pays)."""
    for n_req in range(REQS_PER_CONTROL + 1):
        for n_rsp in range(RSP_LIMIT + 1):
            for vc_credit in (0, 4000):
                credits = {cls.name.lower(): {slot: 4000 if slot == "pool" else vc_credit
                                              for slot in SLOTS} for cls in CreditClass}
                reqs = [(dataclasses.replace(random_request(rng), vc=0), n_req > 2)
                        for _ in range(n_req)]
                rsps = [make_write_response(rng, OKAY, vc=0) for _ in range(n_rsp)]
                yield {"reqs": reqs, "rsps": rsps, "credits": credits, "req_allow": REQ_LIMIT,
                       "rsp_allow": RSP_LIMIT, "fc_pending": False, "traffic": True,
                       "lead": n_rsp - n_req, "swap": True}


def _model_choice(s):
    """``(n_req, n_rsp, req_pool, rsp_pool)`` as the golden model's packer chooses."""
    if not s["traffic"]:
        return 0, 0, None, None
    p = Packer({}, s["credits"])
    p._requests, p._responses = deque(r for r, _ in s["reqs"]), deque(s["rsps"])
    p._decisions = deque((FType.COMPRESSED_REQUEST if narrow else FType.REQUEST, False, 0)
                         for _, narrow in s["reqs"])
    p._rates["req"].outstanding = REQ_LIMIT - s["req_allow"]
    p._rates["rsp"].outstanding = RSP_LIMIT - s["rsp_allow"]
    p.lead = s["lead"]
    reqs, rsps = p._choose(int(s["fc_pending"]), s["swap"])
    return (len(reqs), len(rsps), reqs[0][1] if reqs else None, rsps[0][1] if rsps else None)


def _drive(dut, s):
    """Present state ``s`` through the decision's own layouts."""
    reqs, rsps = s["reqs"], s["rsps"]
    shown = reqs[:REQS_PER_CONTROL]
    dut.req.value = data.ArrayLayout(decide_req_layout, REQS_PER_CONTROL).const(
        [{"vc": r.vc, "beats": r.beats, "wide": not narrow} for r, narrow in shown]
        + [{}] * (REQS_PER_CONTROL - len(shown))).as_bits()
    dut.req_valid.value = (1 << len(shown)) - 1
    dut.req_hidden.value = len(reqs) > REQS_PER_CONTROL
    window, total = [], 0
    for j, r in enumerate(rsps[:RSP_LIMIT]):
        total += r.beats
        window.append({"vc": r.vc, "wide": r.status != OKAY, "total": total,
                       "span": _response_sectors(rsps[:j + 1]),
                       "one_vc": all(x.vc == rsps[0].vc for x in rsps[:j + 1])})
    dut.rsp.value = data.ArrayLayout(decide_rsp_layout, RSP_LIMIT).const(
        window + [{}] * (RSP_LIMIT - len(window))).as_bits()
    dut.rsp_valid.value = (1 << len(window)) - 1
    top = (1 << DECIDE_CREDIT_BITS) - 1
    dut.credits.value = credit_array(DECIDE_CREDIT_BITS).const(
        [[min(s["credits"][cls.name.lower()][slot], top) for slot in SLOTS]
         for cls in CreditClass]).as_bits()
    dut.req_allowed.value = (1 << min(s["req_allow"], REQS_PER_CONTROL)) - 1
    dut.rsp_allowed.value = (1 << s["rsp_allow"]) - 1
    dut.traffic.value = s["traffic"]
    dut.swap.value = s["swap"]
    dut.lead.value = s["lead"]
    dut.fc_pending.value = s["fc_pending"]


@cocotb.test()
async def decide_matches_model(dut):
    """Every random state: the same counts and the same credit kind as the model."""
    rng = random.Random(cocotb.RANDOM_SEED)
    seen = set()
    directed = list(_directed_states(rng))
    for case in range(len(directed) + CASES):
        s = directed[case] if case < len(directed) else _state(rng)
        _drive(dut, s)
        await Timer(1, unit="ns")
        n_req, n_rsp, req_pool, rsp_pool = _model_choice(s)
        got = (int(dut.n_req.value), int(dut.n_rsp.value))
        assert got == (n_req, n_rsp), f"case {case}: counts {got}, model {(n_req, n_rsp)}"
        if n_req:
            assert int(dut.req_pool.value) == req_pool, f"case {case}: request credit kind"
        if n_rsp:
            assert int(dut.rsp_pool.value) == rsp_pool, f"case {case}: response credit kind"
        seen.add((n_req, n_rsp, req_pool, rsp_pool))
    # The states (the directed ones at least) reach every count and both credit kinds.
    assert {n for n, _, _, _ in seen} == set(range(REQS_PER_CONTROL + 1))
    assert {n for _, n, _, _ in seen} == set(range(RSP_LIMIT + 1))
    assert {p for _, _, p, _ in seen} >= {True, False}
    assert {p for _, _, _, p in seen} >= {True, False}


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """TxDecide has no parameters; one build."""


@pytest.mark.parametrize("config", [_Config()], ids=lambda c: c.slug() or "default")
def test_tl_decide(config):
    harness.run(TxDecide(), config, toplevel="tl_decide", test_module=__name__)


def _thermometer_ok(bits):
    """``bits`` is a thermometer: no bit set above a clear one."""
    return Cat(*(~bits[i + 1] | bits[i] for i in range(len(bits) - 1))).all()


def _within(count, thermometer):
    """``count`` items are no more than ``thermometer`` (bit ``i``: more than ``i``) admits."""
    return (count == 0) | Cat(*((count == i + 1) & thermometer[i]
                                for i in range(len(thermometer)))).any()


def _fits(credits, cmd_cls, data_cls, slot, cmd, beats):
    return (credits[cmd_cls][slot] >= cmd) & (credits[data_cls][slot] >= beats)


def _spends_within(m, dut, n, pool, vcs, beats, cmd_cls, data_cls):
    """A prefix of ``n`` items spends credits it holds: pool credits, or the VC credits of the
    one VC all its items share (README §3 rule 6)."""
    ok = Signal()
    vc0 = vcs[0]
    by_vc = Cat(*(Cat(*(v == vc0 for v in vcs[:k])).all() & _fits(
        dut.credits, cmd_cls, data_cls, CreditSlot.VC0 + vc0, k, beats[k - 1]) & (n == k)
        for k in range(1, len(vcs) + 1))).any()
    by_pool = Cat(*(_fits(dut.credits, cmd_cls, data_cls, CreditSlot.POOL, k, beats[k - 1])
                    & (n == k) for k in range(1, len(vcs) + 1))).any()
    m.d.comb += ok.eq((n == 0) | Mux(pool, by_pool, by_vc))
    return ok


def _response_span(m, dut, k):
    """Sectors the first ``k`` responses span, placed as the golden model places them (an
    uncompressed field at the next even sector)."""
    span = Signal(6)
    wides = Cat(*(r.wide for r in dut.rsp))
    with m.Switch(Cat(wides, k)):
        for pattern in range(1 << RSP_LIMIT):
            for count in range(RSP_LIMIT + 1):
                fields = [_ResponseShape(pattern >> j & 1) for j in range(count)]
                with m.Case(pattern | count << RSP_LIMIT):
                    m.d.comb += span.eq(_response_sectors(fields))
    return span


@dataclasses.dataclass
class _ResponseShape:
    """Stands for a response whose field is uncompressed (``wide``) or not."""
    wide: int

    @property
    def status(self):
        return 2 if self.wide else OKAY


def _decide_proof(wrong_cap=False):
    """TxDecide and the claims it must meet for every input; ``wrong_cap`` claims one
    response fewer than rule 4's balance allows (a false claim, to show the proof can
    fail)."""
    m = Module()
    m.submodules.dut = dut = TxDecide()
    n, k = dut.n_req, dut.n_rsp
    req_beats = [dut.req[0].beats]
    for r in dut.req[1:]:
        req_beats.append(req_beats[-1] + r.beats)
    one_vc = [dut.rsp[j].one_vc == Cat(*(dut.rsp[i].vc == dut.rsp[0].vc
                                         for i in range(j + 1))).all() for j in range(RSP_LIMIT)]
    assumed = Cat(
        _thermometer_ok(dut.req_valid), _thermometer_ok(dut.rsp_valid),
        _thermometer_ok(dut.req_allowed), _thermometer_ok(dut.rsp_allowed),
        *(r.beats <= MAX_BEATS for r in dut.req), *one_vc,
        # the spans as the composer registers them (the claims check the model's placement)
        *(r.span == s for r, s in zip(dut.rsp, response_offsets(
            m, [r.wide for r in dut.rsp], "assumed")[1][1:]))).all()
    span = _response_span(m, dut, k)
    # Where the golden model puts n requests of each field size: the sector after them and the
    # sectors they cover; the responses follow, and the FC reservation may use the gap.
    fits = Signal()
    wides = Cat(*(r.wide for r in dut.req))
    with m.Switch(Cat(wides, n)):
        for pattern in range(1 << REQS_PER_CONTROL):
            for count in range(REQS_PER_CONTROL + 1):
                sizes = [FIELD_SECTORS[FType.REQUEST if pattern >> i & 1 else
                                       FType.COMPRESSED_REQUEST] for i in range(count)]
                end = _request_starts(sizes)[1]
                with m.Case(pattern | count << REQS_PER_CONTROL):
                    m.d.comb += fits.eq((end + span <= SECTORS_PER_HALF)
                                        & (sum(sizes) + span + dut.fc_pending
                                           <= SECTORS_PER_HALF))
    slack = LEAD_SLACK - (1 if wrong_cap else 0)
    more = Array([*dut.req_valid, dut.req_hidden])[n]
    claims = Cat(
        dut.traffic | ((n == 0) & (k == 0)),
        n <= REQS_PER_CONTROL,
        _within(n, dut.req_valid & dut.req_allowed),
        _within(k, dut.rsp_valid & dut.rsp_allowed),
        fits,
        # a control that takes a request, while more wait, takes no response that puts
        # responses more than LEAD_SLACK ahead
        (n == 0) | (k == 0) | ~more | (dut.lead + n - k >= -slack),
        _spends_within(m, dut, n, dut.req_pool, [r.vc for r in dut.req], req_beats,
                       CreditClass.REQ_CMD, CreditClass.REQ_DATA),
        _spends_within(m, dut, k, dut.rsp_pool, [r.vc for r in dut.rsp],
                       [r.total for r in dut.rsp], CreditClass.RSP_CMD, CreditClass.RSP_DATA),
    )
    holds = Signal()
    m.d.comb += holds.eq(~assumed | claims.all())
    inputs = [dut.req, dut.req_valid, dut.req_hidden, dut.rsp, dut.rsp_valid, dut.credits, dut.req_allowed,
              dut.rsp_allowed, dut.traffic, dut.swap, dut.lead, dut.fc_pending]
    return m, [i.as_value() if hasattr(i, "as_value") else i for i in inputs], holds


def test_decide_proof(tmp_path):
    """For every input (thermometers well formed, VC runs flagged truly): the decision never
    spends credits it does not hold (pool, or the one shared VC's), never exceeds the windows,
    the rate limits, the half-flit's sectors (responses placed at their footprints) or the FC
    reservation, and never lets responses run more than LEAD_SLACK ahead of requests in a
    control that takes a request while more wait. Yosys proves it."""
    m, inputs, holds = _decide_proof()
    proved, log = prove(m, inputs, holds, tmp_path)
    assert proved, log[-3000:]


def test_decide_proof_can_fail(tmp_path):
    """The same proof with one false claim (rule 4's slack one lower) finds a counterexample."""
    m, inputs, holds = _decide_proof(wrong_cap=True)
    proved, _ = prove(m, inputs, holds, tmp_path)
    assert not proved
