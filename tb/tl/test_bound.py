# SPDX-License-Identifier: BSD-2-Clause
"""The best legal packing (``model/tl/bound.py``): against an exhaustive search that plays the
flit rules half-flit by half-flit, against the spec's examples and against packings derived by
hand."""

import random
from fractions import Fraction

import pytest

from scaleup_ip.model.tl.bound import best_packing, item_shape
from scaleup_ip.model.tl.flit import READ, WRITE, WRITE_FULL
from sim.tl.traffic import make_read_response, make_request, make_write_response

# --- An exhaustive search, written from the rules without the bound's shortcuts --------------

_FOOTPRINTS = {4: (0, 4), 2: (0, 2, 4, 6), 1: tuple(range(8))}


def _fits(req_sizes, rsp_sizes):
    """Whether fields fit in one control half: requests in order from the low sectors up,
    responses anywhere, every field in a footprint of Table 5-2; tried placement by placement."""
    def place(fields, used, low):
        if not fields:
            return True
        (size, ordered), rest = fields[0], fields[1:]
        for start in _FOOTPRINTS[size]:
            span = set(range(start, start + size))
            if start + size <= 8 and not span & used and (not ordered or start >= low):
                if place(rest, used | span, start + size if ordered else low):
                    return True
        return False
    return place([(s, True) for s in req_sizes] + [(s, False) for s in rsp_sizes], set(), 0)


def _flits(controls, req, rsp):
    """Play ``controls`` flit by flit; the flits sent, or ``None`` when a rate limit [§5.7]
    or a footprint is broken."""
    owed, out_req, out_rsp, i, j, flits = 0, 0, 0, 0, 0, 0
    pending = list(controls)
    while pending or owed:
        if owed >= 2:
            owed -= 2
            issued = (0, 0)
        else:
            a, b = pending.pop(0) if pending else (0, 0)
            if a > 4 - out_req or b > 8 - out_rsp:
                return None
            if not _fits([s for s, _ in req[i:i + a]], [s for s, _ in rsp[j:j + b]]):
                return None
            halves = sum(h for _, h in req[i:i + a]) + sum(h for _, h in rsp[j:j + b])
            i, j, issued = i + a, j + b, (a, b)
            # the upper half: the swapped final half owed, else this control's first, or a
            # MANDATORY NOP
            owed = owed - 1 + halves if owed else max(0, halves - 1)
        out_req = max(0, out_req + issued[0] - 1)
        out_rsp = max(0, out_rsp + issued[1] - 1)
        flits += 1
    return flits


def _exhaustive(req, rsp):
    """The fewest flits over every legal control sequence: a breadth-first search that plays
    one flit at a time (state: items sent, half-flits owed, outstanding requests and
    responses)."""
    frontier, seen, flits = {(0, 0, 0, 0, 0)}, set(), 0
    while True:
        if any(i == len(req) and j == len(rsp) and owed == 0 for i, j, owed, _, _ in frontier):
            return flits
        seen |= frontier
        nxt = set()
        for i, j, owed, out_req, out_rsp in frontier:
            if owed >= 2:
                moves = [(i, j, owed - 2, 0, 0)]
            else:
                moves = []
                for a in range(min(4 - out_req, len(req) - i) + 1):
                    for b in range(min(8 - out_rsp, len(rsp) - j) + 1):
                        if not _fits([s for s, _ in req[i:i + a]], [s for s, _ in rsp[j:j + b]]):
                            continue
                        halves = sum(h for _, h in req[i:i + a]) + sum(h for _, h in rsp[j:j + b])
                        left = owed - 1 + halves if owed else max(0, halves - 1)
                        moves.append((i + a, j + b, left, a, b))
            for i2, j2, left, a, b in moves:
                state = (i2, j2, left, max(0, out_req + a - 1), max(0, out_rsp + b - 1))
                if state not in seen:
                    nxt.add(state)
        frontier, flits = nxt, flits + 1


def _random_items(rng):
    reqs = []
    for _ in range(rng.randint(0, 5)):
        cmd = rng.choice([READ, READ, WRITE, WRITE_FULL])
        nbytes = 64 * rng.randint(1, 2)
        reqs.append(make_request(rng, cmd, 256 * rng.randrange(1 << 20), nbytes))
    rsps = [make_write_response(rng, status=rng.choice([0, 0, 2])) if rng.random() < 0.5
            else make_read_response(rng, rng.randrange(2)) for _ in range(rng.randint(0, 9))]
    return reqs, rsps, [rng.random() < 0.5 for _ in reqs]


def _dataless_items(rng):
    """Mostly items without data, so that the rate limits and MANDATORY NOPs decide."""
    reqs = [make_request(rng, READ, 64 * k, 64) if rng.random() < 0.8
            else make_request(rng, WRITE_FULL, 64 * k, 64) for k in range(rng.randint(3, 8))]
    rsps = [make_write_response(rng) if rng.random() < 0.8 else make_read_response(rng, 0)
            for _ in range(rng.randint(0, 12))]
    return reqs, rsps, [rng.random() < 0.7 for _ in reqs]


@pytest.mark.parametrize("draw, seed", [*((_random_items, s) for s in range(40)),
                                        *((_dataless_items, s) for s in range(20))])
def test_against_exhaustive_search(draw, seed):
    rng = random.Random(seed)
    reqs, rsps, compressed = draw(rng)
    print(f"seed {seed}: {len(reqs)} requests, {len(rsps)} responses")
    req = [item_shape(r, c)[:2] for r, c in zip(reqs, compressed)]
    rsp = [item_shape(r)[:2] for r in rsps]
    got = best_packing(reqs, rsps, compressed)
    assert got.flits == _exhaustive(req, rsp)
    assert _flits(list(got.controls), req, rsp) == got.flits     # a packing that exists


def test_rate_limits_bind_without_data():
    """Dataless runs go at one request and one response per flit once the first burst of 4
    and 8 is spent [§5.7]."""
    rng = random.Random(1)
    reads = [make_request(rng, READ, 64 * k, 64) for k in range(20)]
    assert best_packing(reads, []).flits == 17                  # 4 at once, then 1 a flit
    wr = [make_write_response(rng) for _ in range(20)]
    assert best_packing([], wr).flits == 13                     # 8 at once, then 1 a flit


def test_spec_table_5_16():
    """Three 256-byte WriteFulls and three write responses: 13 flits, 768 of 832 bytes."""
    rng = random.Random(16)
    wf = [make_request(rng, WRITE_FULL, 0x100 * k, 256) for k in range(3)]
    got = best_packing(wf, [make_write_response(rng) for _ in range(3)])
    assert got.flits == 13 and Fraction(got.data_halves, 2 * got.flits) == Fraction(768, 832)


def test_spec_table_5_15():
    """Two 256-byte WriteFulls and two uncompressed write responses: 9 flits, as the example."""
    rng = random.Random(15)
    wf = [make_request(rng, WRITE_FULL, 0x100 * k, 256) for k in range(2)]
    got = best_packing(wf, [make_write_response(rng, status=2) for _ in range(2)])
    assert got.flits == 9


def test_writefull_compressed_reaches_the_spec_reference():
    """[§5.4]: compressed 256-byte WriteFulls with compressed write responses reach 1280/1344
    at least (the best packing gives 4 requests of 2 sectors per control, 8 data halves
    each)."""
    rng = random.Random(54)
    n = 60
    wf = [make_request(rng, WRITE_FULL, 0x100 * k, 256) for k in range(n)]
    got = best_packing(wf, [make_write_response(rng) for _ in range(n)], [True] * n)
    assert got.efficiency >= 1280 / 1344


@pytest.mark.parametrize("compressed, per_pair", [
    # 1 read + 3 responses, then 2 reads at the swap: 3 pairs in 4 flits
    (False, Fraction(4, 3)),
    # full controls of 2-sector reads and 1-sector responses, none dataless where a MANDATORY
    # NOP would follow: 2 + 3/8 half-flits a pair
    (True, Fraction(19, 16)),
])
def test_reads_long_run(compressed, per_pair):
    """64-byte reads and their one-beat responses: the packing derived by hand, up to the
    first and last controls."""
    rng = random.Random(64)
    n = 48
    reads = [make_request(rng, READ, 64 * k, 64) for k in range(n)]
    got = best_packing(reads, [make_read_response(rng, 0) for _ in range(n)],
                       [compressed] * n)
    assert n * per_pair <= got.flits <= n * per_pair + 2
