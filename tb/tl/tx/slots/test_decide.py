# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer's decision in RTL (``rtl/scaleup_ip/tl/tx/slots/decide.py``) against the
golden model's (:func:`scaleup_ip.model.tl.slots.decide`) on random windows: requests of both
footprints with and without data, units of one and two responses, every balance count,
allowance, credit prefix, pending return and swap; and whether a pacing flit follows
(:func:`~scaleup_ip.model.tl.slots.paces`). Amaranth's simulator, no build. Seeds are
printed (``SEED=n`` reproduces a run)."""

import dataclasses

from amaranth import Array, Cat, Const, Module, Signal
from amaranth.sim import Simulator

from scaleup_ip.model.tl.slots import Window, decide, paces, request_layout
from scaleup_ip.tl import LEAD_SLACK, SLOT_WINDOW
from scaleup_ip.tl.tx.slots import SlotDecide, request_slots
from sim import harness
from sim.prove import prove

#: Random windows per run (the long form's at ``make soak``).
CASES = harness.long_form(1000, 20_000)


def _thermometer_ok(bits):
    """``bits`` is a thermometer: no bit set above a clear one."""
    return Cat(*(~bits[i + 1] | bits[i] for i in range(len(bits) - 1))).all()


def _within(count, thermometer):
    """``count`` items are no more than ``thermometer`` (bit ``i``: more than ``i``) admits."""
    return (count == 0) | Cat(*((count == i + 1) & thermometer[i]
                                for i in range(len(thermometer)))).any()


def random_window(rng):
    n_req = rng.choice([0, 1, 2, 3, 4, 4, 4])
    n_unit = rng.choice([0, 1, 2, 3, 4, 4, 4])
    sizes = tuple(rng.choice((1, 2)) for _ in range(n_req))
    return Window(
        sizes=sizes, data=tuple(rng.random() < 0.4 for _ in sizes),
        waiting=n_req + (rng.randint(1, 9) if n_req == 4 and rng.random() < 0.6 else 0),
        units=tuple(tuple(rng.random() < 0.4 for _ in range(rng.choice((1, 2))))
                    for _ in range(n_unit)),
        lead=rng.randint(-16, 15), allow_req=rng.choice([0, 1, 2, 3, 4, 4, 4]),
        allow_rsp=rng.choice([0, 1, 3, 5, 7, 8, 8, 8]),
        req_credit=rng.choice([0, 1, 2, 3, 4, 4, 4]),
        rsp_credit=rng.choice([0, 1, 2, 4, 6, 8, 8, 8]),
        reserve=rng.random() < 0.3, swapped=rng.random() < 0.4)


def units_of(w, b):
    """Units touched by ``b`` responses and whether the last is cut (the model's units)."""
    u = taken = 0
    while taken < b:
        taken += len(w.units[u])
        u += 1
    return u, taken != b


def _therm(n, width):
    return (1 << min(n, width)) - 1


def drive(ctx, port, w, rng):
    """Window ``w`` on the RTL's ``slot_window_layout``; entries not shown hold random bits."""
    ctx.set(port, {
        "req": [{"two": size == 2, "data": d} for size, d in zip(w.sizes, w.data)]
        + [{"two": rng.getrandbits(1), "data": rng.getrandbits(1)}
           for _ in range(4 - len(w.sizes))],
        "req_valid": _therm(len(w.sizes), 4), "more": w.waiting > 4,
        "unit": [{"pair": len(unit) == 2, "data": unit[0] | (len(unit) == 2 and unit[1]) << 1}
                 for unit in w.units]
        + [{"pair": rng.getrandbits(1), "data": rng.getrandbits(2)}
           for _ in range(4 - len(w.units))],
        "unit_valid": _therm(len(w.units), 4),
        "req_most": _therm(min(w.allow_req, w.req_credit), 4),
        "rsp_most": _therm(min(w.allow_rsp, w.rsp_credit), 8),
        "req_allowed": _therm(w.allow_req, 4), "rsp_allowed": _therm(w.allow_rsp, 8),
        "lead": w.lead, "reserve": w.reserve, "swapped": w.swapped,
    })


def test_request_slots_as_the_model():
    for pattern in range(16):
        for a in range(5):
            sizes = [2 if pattern >> i & 1 else 1 for i in range(a)]
            _, end, gap = request_layout(sizes)
            assert request_slots([s == 2 for s in sizes]) == (end, gap is not None)


def test_decide_as_the_model(rng):
    dut = SlotDecide()
    windows = [random_window(rng) for _ in range(CASES)]
    # the hand-worked windows of tb/tl/test_slots.py: the gap, the balance cap, the two
    # highest lanes only
    base = Window((), (), 0, (), 0, 4, 8, 4, 8, False, False)
    windows += [
        dataclasses.replace(base, sizes=(1, 2), data=(False, True), waiting=2,
                            units=((True,),) * 3),
        dataclasses.replace(base, sizes=(2, 2, 2, 2), data=(False,) * 4, waiting=5,
                            units=((True,),) * 4, lead=-4),
        dataclasses.replace(base, sizes=(1, 1, 1, 1), data=(False,) * 4, waiting=4,
                            units=((True,),) * 4),
    ]
    # every count of requests, and of responses (units of two cut by the allowance)
    windows += [dataclasses.replace(base, sizes=(1,) * 4, data=(True,) * 4, waiting=4,
                                    allow_req=a) for a in range(5)]
    windows += [dataclasses.replace(base, units=((False, False),) * 4, allow_rsp=b)
                for b in range(9)]
    # pacing flits: responses or requests held back by the allowance alone
    windows += [dataclasses.replace(base, units=((False,),) * 4, allow_rsp=b) for b in (1, 2)]
    windows += [dataclasses.replace(base, sizes=(2,) * n, data=(False,) * n, waiting=n,
                                    allow_req=2) for n in (3, 4)]
    seen = {"a": set(), "b": set(), "cut": 0, "pace": 0}
    wrong = []

    async def bench(ctx):
        for w in windows:
            drive(ctx, dut.w, w, rng)
            a, b = decide(w)
            u, cut = units_of(w, b)
            pace = paces(w, a, b)
            got = (ctx.get(dut.a), ctx.get(dut.b), ctx.get(dut.u), ctx.get(dut.cut),
                   ctx.get(dut.pace))
            if got != (a, b, u, cut, pace):
                wrong.append((w, got, (a, b, u, cut, pace)))
            seen["pace"] += pace
            seen["a"].add(a)
            seen["b"].add(b)
            seen["cut"] += cut

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, f"{len(wrong)} of {len(windows)} differ, first: {wrong[:3]}"
    assert seen["a"] == set(range(5)) and seen["b"] == set(range(9)) and seen["cut"] > 0
    assert 0 < seen["pace"] < len(windows)


# --- Proved for every input -----------------------------------------------------------------------

def _decide_proof(slack=LEAD_SLACK):
    """SlotDecide and what it must meet for every input; a ``slack`` below LEAD_SLACK is a
    false claim (to show the proof can fail)."""
    m = Module()
    m.submodules.dut = dut = SlotDecide()
    w, a, b, u = dut.w, dut.a, dut.b, dut.u
    assumed = Cat(*(_thermometer_ok(t) for t in (w.req_valid, w.unit_valid, w.req_most,
                                                 w.rsp_most))).all()
    # the requests' end slot and the slot kept for a pending return, as the model places them
    end, last = Signal(range(8)), Signal(range(5))
    with m.Switch(Cat(*(r.two for r in w.req), a)):
        for pattern in range(16):
            for count in range(5):
                e, gap = request_slots([pattern >> i & 1 for i in range(count)])
                with m.Case(pattern | count << 4):
                    m.d.comb += [end.eq(e), last.eq(4 if gap else 4 - w.reserve)]
    # responses in the first u units, and whether unit u - 1 holds two
    held = [Const(0, 4)]
    for j in range(SLOT_WINDOW):
        held.append(held[-1] + 1 + w.unit[j].pair)
    in_units = Signal(range(9))
    last_pair = Signal()
    with m.Switch(u):
        for k in range(SLOT_WINDOW + 1):
            with m.Case(k):
                m.d.comb += [in_units.eq(held[k]),
                             last_pair.eq(w.unit[k - 1].pair if k else 0)]
    waiting = Array([*w.req_valid, w.more])[a]
    capping = w.req_valid[0] & w.req_most[0] & waiting
    claims = Cat(
        _within(a, w.req_valid & w.req_most),
        _within(b, w.rsp_most),
        _within(u, w.unit_valid),
        end + u <= last,                                    # the units fit after the requests
        b == in_units - dut.cut,
        ~dut.cut | last_pair,
        (u != 0) | (b == 0),
        ~capping | (b == 0) | (w.lead + a - b >= -slack),   # rule 4's cap
    )
    holds = Signal()
    m.d.comb += holds.eq(~assumed | claims.all())
    return m, [w.as_value()], holds


def test_decide_proof(tmp_path):
    """For every input (thermometers well formed): the decision takes no more requests than
    the window shows and the allowance and credits let go, and no more responses than those
    let go; its requests and units fit the half (the last slot kept for a pending return
    unless the gap is there); its responses are those of the units it touches, the last cut
    only when it holds two; and while a request may go and more wait, responses stay within
    LEAD_SLACK of requests. Yosys proves it."""
    m, inputs, holds = _decide_proof()
    proved, log = prove(m, inputs, holds, tmp_path)
    assert proved, log[-3000:]


def test_decide_proof_can_fail(tmp_path):
    """The same proof with rule 4's slack one lower finds a counterexample."""
    m, inputs, holds = _decide_proof(slack=LEAD_SLACK - 1)
    proved, _ = prove(m, inputs, holds, tmp_path)
    assert not proved
