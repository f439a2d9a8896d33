# SPDX-License-Identifier: BSD-2-Clause
"""The golden model's packer and receiver with address caches: compressed requests
through ``Packer(address_cache=TxAddressCache)`` and ``Unpacker(address_cache=RxAddressCache)``.

Every round trip checks that the receiver delivers the sender's requests, address for
address, and that the caches end in lock-step: each valid Tx entry equals the Rx entry of the
same row and way. Seeds are printed (``SEED=n`` reproduces one run).
"""

import dataclasses

import pytest

from scaleup_ip.model.tl.addrcache import AddrCacheConfig, RxAddressCache, TxAddressCache, tag_of
from scaleup_ip.model.tl.flit import (
    ATOMIC_R,
    CLASSES,
    FIELD_SECTORS,
    HALF_SECTORS,
    READ,
    WRITE_FULL,
    Flit,
    FType,
    Packer,
    Request,
    Unpacker,
    decode_field,
    parse_control,
    place,
    request_field,
)
from sim.tl.traffic import (
    CACHE_PATTERNS,
    as_received,
    cache_pattern,
    cacheable_request,
    make_request,
    random_response,
)

PLENTY = {cls: {"pool": 100_000} for cls in CLASSES}
SMALL = AddrCacheConfig(ways=2, rows=4, backoff_window=8, backoff_min_hits=2, backoff_length=16)


def link(config=None, policy="always", returns=None):
    config = AddrCacheConfig() if config is None else config
    tx = TxAddressCache(config, policy)
    rx = RxAddressCache(config, index="DSTACCID")
    return Packer(returns or {}, PLENTY, address_cache=tx), tx, Unpacker(address_cache=rx), rx


def push(p, items):
    for item in items:
        (p.push_request if isinstance(item, Request) else p.push_response)(item)


def deliver(p, u):
    flits = p.drain()
    for flit in flits:
        u.feed(flit)
    assert u.error is None, u.error
    return flits


def assert_lock_step(tx, rx, config):
    for acc in range(config.rows):
        for way in range(config.ways):
            if tx.entry(acc, way) is not None:
                assert rx.entry(acc, way) == tx.entry(acc, way), (acc, way)


def assert_delivered(u, items):
    assert u.idle()
    assert u.requests == [as_received(i) for i in items if isinstance(i, Request)]
    assert u.responses == [as_received(i) for i in items if not isinstance(i, Request)]


def request_fields(flit):
    """``(sector, ftype, fields)`` of the request fields of a control half-flit."""
    return [(s, ft, decode_field(ft, v)) for s, ft, v, problem in parse_control(flit.lower)
            if not problem and ft in (FType.REQUEST, FType.COMPRESSED_REQUEST)]


@pytest.mark.parametrize("policy", ["always", "adaptive", "never"])
@pytest.mark.parametrize("pattern", sorted(CACHE_PATTERNS))
def test_round_trip(rng, pattern, policy):
    """Each address pattern with responses and uncacheable requests mixed in."""
    config = AddrCacheConfig()
    p, tx, u, rx = link(config, policy)
    items = []
    for r in cache_pattern(rng, pattern, 300, uncacheable=0.1):
        items += [r] + ([random_response(rng)] if rng.random() < 0.5 else [])
    push(p, items)
    deliver(p, u)
    assert_delivered(u, items)
    assert_lock_step(tx, rx, config)
    assert p.compressed_sent == tx.compressed == rx.expansions
    assert rx.loads == tx.loads and rx.errors == 0
    if policy == "never":
        assert tx.compressed == tx.loads == 0
    elif pattern == "one_region":
        assert tx.misses == 1 and tx.compressed > 200


def test_thrashing_backs_off(rng):
    """Eight regions on four ways, round-robin: hits are rare and the adaptive rule backs off;
    the traffic is delivered whole either way."""
    config = AddrCacheConfig(backoff_window=16, backoff_min_hits=4, backoff_length=32)
    p, tx, u, rx = link(config, "adaptive")
    regions = [rng.randrange(1 << 37) for _ in range(8)]
    items = [cacheable_request(rng, regions[k % 8], 9) for k in range(400)]
    push(p, items)
    deliver(p, u)
    assert_delivered(u, items)
    assert tx.backoff_entries > 0 and tx.hits == 0
    assert tx.uncompressed == 400 and tx.loads < 400
    assert_lock_step(tx, rx, config)


def test_cload_then_use_in_one_control(rng):
    """A miss (CLOAD) and a hit on the entry it loads travel in one control half, the load
    below the use: the receiver's bypass must hand the new region to the compressed field."""
    p, _, u, rx = link(SMALL)
    region = rng.randrange(1 << 37)
    items = [cacheable_request(rng, region, 2, cmd=READ, nbytes=64) for _ in range(3)]
    push(p, items)
    flits = deliver(p, u)
    assert_delivered(u, items)
    fields = request_fields(flits[1])
    assert [(s, ft) for s, ft, _ in fields] == [(0, FType.REQUEST),
                                                 (4, FType.COMPRESSED_REQUEST),
                                                 (6, FType.COMPRESSED_REQUEST)]
    assert fields[0][2]["CLOAD"] == 1 and fields[0][2]["CWAY"] == fields[1][2]["CWAY"]
    assert rx.loads == 1 and rx.expansions == 2


def test_four_compressed_requests_per_control(rng):
    """Once loaded, a region's reads go four to a control half, sectors 1-0 .. 7-6."""
    p, _, u, _ = link(SMALL)
    region = rng.randrange(1 << 37)
    items = [cacheable_request(rng, region, 1, cmd=READ, nbytes=64) for _ in range(5)]
    push(p, items[:1])
    deliver(p, u)                       # loads the entry; the request rate limit recovers
    push(p, items[1:])
    flits = deliver(p, u)
    assert_delivered(u, items)
    assert [(s, ft) for s, ft, _ in request_fields(flits[0])] == \
        [(s, FType.COMPRESSED_REQUEST) for s in (0, 2, 4, 6)]
    assert len(flits) == 1 and flits[0].upper == 0      # reads: a MANDATORY NOP upper half


def test_uncompressed_after_compressed_aligns_and_fills_the_gap(rng):
    """A compressed request (sectors 1-0) followed by an uncompressed one, which may only sit
    at 7-4: sectors 3-2 take the pending Flow Control fields."""
    returns = {"req_cmd": {"pool": 1, "vc0": 1}}
    p, _, u, _ = link(SMALL, returns=returns)
    region = rng.randrange(1 << 37)
    first = cacheable_request(rng, region, 1, cmd=READ, nbytes=64)
    push(p, [first])
    deliver(p, u)                                   # loads the entry; returns and 0x01 sent
    p.return_credits("req_cmd", "pool", 1)
    p.return_credits("rsp_cmd", "vc1", 1)
    hit = cacheable_request(rng, region, 1, cmd=READ, nbytes=64)
    atomic = dataclasses.replace(make_request(rng, ATOMIC_R, hit.addr, 8, num_beats=0),
                                 dst_acc=1)                      # never compressed
    push(p, [hit, atomic])
    flits = deliver(p, u)
    assert_delivered(u, [first, hit, atomic])
    half = flits[0].lower
    kinds = [(s, ft) for s, ft, _, _ in parse_control(half)]
    assert kinds == [(0, FType.COMPRESSED_REQUEST), (2, FType.FLOW_CONTROL),
                     (3, FType.FLOW_CONTROL), (4, FType.REQUEST)]


def test_invalidate_and_clear_mid_stream(rng):
    """Tx invalidations and clears between pushes (at random, and a clear after the 300th
    push for certain), while compressed requests decided before them are still queued: the
    Rx keeps its entries, so those still expand correctly."""
    config = SMALL
    p, tx, u, rx = link(config)
    items = []
    regions = [[rng.randrange(1 << 37) for _ in range(3)] for _ in range(config.rows)]
    for step in range(600):
        acc = rng.randrange(config.rows)
        r = cacheable_request(rng, rng.choice(regions[acc]), acc)
        push(p, [r])
        items.append(r)
        if rng.random() < 0.05:
            tx.invalidate(rng.randrange(config.rows), rng.randrange(config.ways))
        if rng.random() < 0.01 or step == 299:
            tx.clear()
        if rng.random() < 0.3:
            for _ in range(rng.randrange(4)):
                flit = p.step()
                if flit is not None:
                    u.feed(flit)
    deliver(p, u)
    assert_delivered(u, items)
    assert tx.invalidations > 0 and tx.clears > 0 and tx.compressed > 0
    assert_lock_step(tx, rx, config)


def test_packer_without_cache_never_compresses(rng):
    p = Packer({}, PLENTY)
    items = cache_pattern(rng, "one_region", 50)
    push(p, items)
    u = Unpacker()
    for flit in p.drain():
        u.feed(flit)
    assert p.compressed_sent == 0 and u.error is None
    assert_delivered(u, items)


def test_receiver_rejects_a_compressed_request_to_an_unloaded_entry(rng):
    """A compressed request naming an entry the Rx never loaded yields no address: the error
    ``compressed_request``, the flit and all later ones dropped [§5.5]."""
    tx_side, _, _, _ = link(SMALL)
    region = rng.randrange(1 << 37)
    items = [cacheable_request(rng, region, 3, cmd=READ, nbytes=64) for _ in range(2)]
    push(tx_side, items)
    flits = tx_side.drain()
    u = Unpacker(address_cache=RxAddressCache(SMALL, index="DSTACCID"))
    u.feed(flits[0])                            # the 0x01 message
    control = flits[1].lower
    first = parse_control(control)[0]
    assert first[1] == FType.REQUEST
    cut = Flit.of(control & ~((1 << 32 * FIELD_SECTORS[FType.REQUEST]) - 1), flits[1].upper)
    u.feed(cut)                                 # the CLOAD request removed: nothing loaded
    assert u.error == "compressed_request" and u.requests == []


def test_request_field_carries_cload_and_cway(rng):
    r = cacheable_request(rng, 5, 1, cmd=WRITE_FULL, nbytes=256)
    f = decode_field(FType.REQUEST, request_field(r, 0, cload=True, cway=3))
    assert (f["CLOAD"], f["CWAY"], f["ADDR"] >> 18) == (1, 3, tag_of(r.addr))
    assert place(4, 0) == 0 and HALF_SECTORS == 8
