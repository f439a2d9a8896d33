# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer of the golden model (``scaleup_ip.model.tl.slots``, README §3 *Slot
packer*): its decision worked by hand, its response units, round trips both ways with short
credits and pending returns, with address caches, and its packing of every benchmark mix
against the best legal packing. Seeds are printed (``SEED=n`` reproduces a run)."""

import dataclasses
import math
import random

import pytest

from scaleup_ip.model.tl.addrcache import AddrCacheConfig, RxAddressCache, TxAddressCache
from scaleup_ip.model.tl.flit import (
    ATOMIC_R,
    CLASSES,
    READ,
    Flit,
    FType,
    Packer,
    Request,
    Unpacker,
    parse_control,
)
from scaleup_ip.model.tl.slots import SlotPacker, Window, decide, paces, request_layout
from sim.tl import policy
from sim.tl.traffic import (
    MIXES,
    as_received,
    cache_pattern,
    cacheable_request,
    make_read_response,
    make_request,
    make_write_response,
    random_response,
)
from tb.tl.test_model import full_duplex

PLENTY = {cls: {"pool": 100_000} for cls in CLASSES}


def window(sizes=(), data=None, units=(), **kw):
    """A decision's view: requests of ``sizes`` slots (without data unless ``data``), all of
    them waiting, every allowance and credit plenty."""
    values = dict(sizes=tuple(sizes), data=tuple(data or (False,) * len(sizes)),
                  waiting=len(sizes), units=tuple(units), lead=0, allow_req=4, allow_rsp=8,
                  req_credit=4, rsp_credit=8, reserve=False, swapped=False)
    values.update(kw)
    return Window(**values)


# --- The decision by hand -------------------------------------------------------------------------

def test_request_layout_and_its_gap():
    assert request_layout([2, 2]) == ([0, 2], 4, None)
    assert request_layout([1, 2]) == ([0, 2], 4, 1)
    assert request_layout([1, 1, 2]) == ([0, 1, 2], 4, None)
    assert request_layout([1, 1, 1, 1]) == ([0, 1, 2, 3], 4, None)
    assert request_layout([2, 1, 2]) == ([0, 2, 4], 6, 3)     # past the half: never taken


def test_nothing_queued_is_no_control():
    assert decide(window()) == (0, 0)


def test_responses_alone_fill_the_slots():
    """Four units of one write response each; a pending return keeps slot 3 free; the rate
    limit and the credits cut the count."""
    units = [(False,)] * 6
    assert decide(window(units=units)) == (0, 4)
    assert decide(window(units=units, reserve=True)) == (0, 3)
    assert decide(window(units=units, allow_rsp=2)) == (0, 2)
    assert decide(window(units=units, rsp_credit=1)) == (0, 1)


def test_a_unit_of_two_is_cut_to_its_first_response():
    """Four units of two compressed responses carry 8; with 7 allowed the last unit goes with
    its first response only."""
    units = [(False, False)] * 5
    assert decide(window(units=units)) == (0, 8)
    assert decide(window(units=units, allow_rsp=7)) == (0, 7)


def test_the_gap_takes_no_response():
    """A compressed read, then an uncompressed write with data (at slots 2-3), leave slot 1
    free, for a Flow Control field only. a = 1 with three responses after it spans all 4 slots
    as a = 2 does, with the same balance, and takes fewer requests."""
    w = window(sizes=(1, 2), data=(False, True), units=[(True,)] * 3)
    assert decide(w) == (1, 3)
    assert decide(dataclasses.replace(w, units=())) == (2, 0)


def test_a_pending_return_takes_the_gap_or_the_last_slot():
    w = window(sizes=(1, 2), data=(False, True), reserve=True)
    assert decide(w) == (2, 0)
    assert decide(dataclasses.replace(w, sizes=(2, 2))) == (1, 0)
    assert decide(dataclasses.replace(w, sizes=(1, 1, 2))) == (2, 0)


def test_the_balance_cap_holds_responses_back_while_reads_wait():
    """Responses 4 ahead (lead −4) and reads waiting: with no read, no response may go; with
    one read, one response (with data) beats two reads without data, unless the control is
    swapped (no MANDATORY NOP to save)."""
    w = window(sizes=(2, 2, 2, 2, 2), units=[(True,)] * 4, lead=-4)
    assert decide(w) == (1, 1)
    assert decide(dataclasses.replace(w, swapped=True)) == (2, 0)


def test_only_the_two_highest_balanced_counts_are_weighed():
    """Four compressed reads and read responses: every count spans all 4 slots with data
    except a = 4 (no data); of a = 3 and a = 4 the control takes 3 reads and a response, though
    2 and 2 would balance better."""
    w = window(sizes=(1, 1, 1, 1), units=[(True,)] * 4)
    assert decide(w) == (3, 1)
    assert decide(dataclasses.replace(w, sizes=(1, 1))) == (2, 2)


def test_limits_and_credits_cut_the_requests():
    w = window(sizes=(1, 1, 1, 1), data=(True,) * 4)
    assert decide(w) == (4, 0)
    assert decide(dataclasses.replace(w, allow_req=2)) == (2, 0)
    assert decide(dataclasses.replace(w, req_credit=1)) == (1, 0)
    assert decide(dataclasses.replace(w, allow_req=0)) == (0, 0)
    assert decide(dataclasses.replace(w, reserve=True)) == (3, 0)


def test_paces_when_the_rate_limit_holds_items_back():
    """A pacing flit follows a control without data that took its kind's whole allowance with
    2 or more left; not with 1 left, not below the allowance, not with data, not swapped."""
    w = window(sizes=(2,) * 4, waiting=6, allow_req=2)
    assert decide(w) == (2, 0) and paces(w, 2, 0)
    assert not paces(dataclasses.replace(w, sizes=(2,) * 3, waiting=3), 2, 0)   # 1 left
    assert not paces(dataclasses.replace(w, allow_req=3), 2, 0)                 # slots held it
    assert not paces(dataclasses.replace(w, data=(True,) * 4), 2, 0)
    assert not paces(dataclasses.replace(w, swapped=True), 2, 0)
    # responses: 4 write responses left beyond the 2 the allowance let go; but requests also
    # wait and were not held by their allowance
    r = window(units=((False,),) * 4, allow_rsp=2)
    assert decide(r) == (0, 2) and paces(r, 0, 2)
    assert not paces(dataclasses.replace(r, sizes=(2, 2), waiting=2), 0, 2)


def test_pacing_flits_cost_no_flit_in_a_burst_of_read_requests(rng):
    """12 read requests (2 slots each, no data): the first two controls take 2 of an
    allowance of 4 and of 3; the third takes the whole allowance of 2 with 6 left, so a NOP
    flit follows, and each control after it takes the 2 that its flit and the NOP flit
    retired, until none is left. The burst takes as many flits as the packer of every
    candidate, which sends no pacing flit and takes one request a flit after the third."""
    reads = [make_request(rng, READ, 64 * rng.randrange(1 << 20), 64) for _ in range(12)]
    p, best = SlotPacker({}, PLENTY), Packer({}, PLENTY)
    flits = []
    for packer in (p, best):
        for r in reads:
            packer.push_request(r)
        flits.append(packer.drain())
    assert p.issued == [(0, 0), (2, 0), (2, 0), (2, 0), (0, 0), (2, 0), (0, 0), (2, 0), (0, 0),
                        (2, 0)]
    assert p.pace_flits == 3 and best.pace_flits == 0
    assert [flits[0][k] for k in (4, 6, 8)] == [Flit.of(0, 0, False, False)] * 3
    assert len(flits[0]) == len(flits[1])
    u = Unpacker()
    for flit in flits[0]:
        u.feed(flit)
    assert u.error is None and u.idle() and u.requests == [as_received(r) for r in reads]


# --- The packer -----------------------------------------------------------------------------------

def test_units_form_as_responses_are_queued(rng):
    """Two compressed responses share a unit; one before an uncompressed response stays alone;
    the last one stays open for the next."""
    p = SlotPacker({}, PLENTY)
    writes = [make_write_response(rng) for _ in range(4)]          # compressed (0x5)
    failed = make_read_response(rng, 1, status=0x2)               # uncompressed (0x2)
    for r in writes[:2] + [failed] + writes[2:3]:
        p.push_response(r)
    assert [len(unit) for unit, _ in p._units] == [2, 1, 1]
    p.push_response(writes[3])
    assert [len(unit) for unit, _ in p._units] == [2, 1, 2]


def test_flow_control_in_the_gap(rng):
    """A compressed read, then an atomic (never compressed, at sectors 7-4), with credit
    returns pending: the Flow Control fields take the gap (sectors 2 and 3), so the atomic
    still goes; the read response queued beside them waits for the next control."""
    config = AddrCacheConfig(ways=2, rows=4)
    p = SlotPacker({}, PLENTY, address_cache=TxAddressCache(config, "always"))
    u = Unpacker(address_cache=RxAddressCache(config, index="DSTACCID"))
    region = rng.randrange(1 << 37)
    first = cacheable_request(rng, region, 1, cmd=READ, nbytes=64)
    p.push_request(first)
    flits = p.drain()                               # loads the entry
    p.return_credits("req_cmd", "pool", 1)
    p.return_credits("rsp_cmd", "vc1", 1)
    hit = cacheable_request(rng, region, 1, cmd=READ, nbytes=64)
    atomic = dataclasses.replace(make_request(rng, ATOMIC_R, hit.addr, 8, num_beats=0),
                                 dst_acc=1)
    response = make_read_response(rng, 0)
    p.push_request(hit)
    p.push_request(atomic)
    p.push_response(response)
    flits += p.drain()
    for flit in flits:
        u.feed(flit)
    assert u.error is None and u.idle()
    assert u.requests == [as_received(r) for r in (first, hit, atomic)]
    assert u.responses == [as_received(response)]
    assert p.trace == ["MN", "CN", "CD", "DB", "CD", "CD"]       # the atomic's byte enables: B
    kinds = [(s, ft) for s, ft, _, _ in parse_control(flits[2].lower)]
    assert kinds == [(0, FType.COMPRESSED_REQUEST), (2, FType.FLOW_CONTROL),
                     (3, FType.FLOW_CONTROL), (4, FType.REQUEST)]
    assert p.layouts[-2:] == ["q0|q |. |. |Q1|Q |Q |Q ", "r1|. |. |. |. |. |. |. "]


@pytest.mark.parametrize("run_index", range(3))
def test_random_full_duplex_round_trip(rng, run_index):
    """Two ends, random items of every kind, short and VC credits, credit returns pending at
    random: everything delivered in order and every credit back (``test_model``'s round trip
    with the slot packer)."""
    full_duplex(rng, SlotPacker)


@pytest.mark.parametrize("pattern", ["one_region", "four_streams", "eight_streams"])
def test_round_trip_with_address_caches(rng, pattern):
    """Compressed and uncompressed requests and responses of every kind: delivered address for
    address, and controls with four compressed requests seen."""
    config = AddrCacheConfig()
    tx = TxAddressCache(config, "adaptive")
    p = SlotPacker({}, PLENTY, address_cache=tx)
    u = Unpacker(address_cache=RxAddressCache(config, index="DSTACCID"))
    items = []
    for r in cache_pattern(rng, pattern, 400, uncacheable=0.2):
        items += [r] + [random_response(rng) for _ in range(rng.choice([0, 1, 1, 2]))]
    for item in items:
        (p.push_request if isinstance(item, Request) else p.push_response)(item)
    for flit in p.drain():
        u.feed(flit)
    assert u.error is None and u.idle()
    assert u.requests == [as_received(i) for i in items if isinstance(i, Request)]
    assert u.responses == [as_received(i) for i in items if not isinstance(i, Request)]
    assert p.compressed_sent == tx.compressed > 0
    if pattern == "one_region":
        assert any(layout.count("q") == 4 for layout in p.layouts)


# --- Against the best legal packing ---------------------------------------------------------------

#: Pairs per mix of README's figures (``python -m sim.bench tl_policy``: seed 1) and of the
#: random runs here.
BENCH_PAIRS, PAIRS = 200, 60
#: Flits a short random run may take beyond 0.5 % over the bound. Its losses do not grow with
#: the run: over 600 seeds of each of ``random`` and ``mixed_64_256``, cache off and on, 60
#: pairs took 0 to 4 flits over the bound (4 once, 3 in 15 runs); 60 seeds of ``random`` at
#: 180 pairs took 1 to 3.
ENDS = 4


def _near_the_bound(items, mix, cached, ends):
    """The benchmark's way (the first item alone into the idle packer, then the rest as a
    backlog): every item delivered, in at most 0.5 % more flits than the best legal packing
    of the same items, plus ``ends``; pacing flits only where a mix has no data."""
    sent, compressed, pacing = policy.pack("slots", items, cached)
    best = policy.bound(items, cached)
    print(f"{mix} cache={cached}: {sent} flits, bound {best.flits}, {compressed} compressed, "
          f"{pacing} pacing flits")
    assert sent <= math.ceil(best.flits * 1.005) + ends
    assert (pacing > 0) == (mix in ("write_responses", "read_requests"))


@pytest.mark.parametrize("cached", [False, True], ids=["plain", "cache"])
@pytest.mark.parametrize("mix", sorted(MIXES))
def test_figures_within_half_a_point_of_the_bound(mix, cached):
    """README's figures, the items of ``python -m sim.bench tl_policy``: within 0.5 % of the
    bound, plus one flit for the run's ends."""
    _near_the_bound(policy.mix_items(random.Random(1), mix, BENCH_PAIRS, cached), mix, cached,
                    ends=1)


@pytest.mark.parametrize("cached", [False, True], ids=["plain", "cache"])
@pytest.mark.parametrize("mix", sorted(MIXES))
def test_mix_near_the_bound(rng, mix, cached):
    """Random items of every mix: within 0.5 % of the bound, plus ``ENDS``."""
    _near_the_bound(policy.mix_items(rng, mix, PAIRS, cached), mix, cached, ends=ENDS)
