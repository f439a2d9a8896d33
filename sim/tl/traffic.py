# SPDX-License-Identifier: BSD-2-Clause
"""Random UPLI traffic for the TL: requests, read and write responses as golden-model items,
and what the far side delivers for each. Shared by the TL tests, ``make bench`` and ``make sim``."""

import dataclasses
import math

from scaleup_ip.model.tl import flit as tl
from scaleup_ip.model.tl.flit import (
    ATOMIC_NR,
    ATOMIC_R,
    OKAY,
    READ,
    WRITE,
    WRITE_FULL,
    ReadResponse,
    Request,
    WriteResponse,
)

__all__ = [
    "ALL_BYTES",
    "CACHE_PATTERNS",
    "MIXES",
    "as_received",
    "by_kind",
    "cache_pattern",
    "cacheable",
    "cacheable_request",
    "make_read_response",
    "make_request",
    "make_write_response",
    "payload_bytes",
    "poisoned_beat",
    "rand_errors",
    "random_items",
    "random_request",
    "random_response",
    "upli_transfers",
]

ALL_BYTES = (1 << 64) - 1


def poisoned_beat(beat):
    return bytes([0x20]) + beat[1:32] + bytes([0x20]) + beat[33:]


def make_request(rng, cmd, addr, nbytes, num_beats=None, vc=0, error=None, byte_en=None):
    """A request of ``nbytes`` at ``addr`` with random payload and identifiers."""
    has_data = cmd & 0x20
    if num_beats is None:
        num_beats = math.ceil((addr % 64 + nbytes) / 64) - 1 if has_data else 0
    beats = num_beats + 1 if has_data else 0
    if byte_en is None:
        byte_en = [ALL_BYTES if cmd == WRITE_FULL else rng.getrandbits(64) for _ in range(beats)]
    return Request(
        cmd=cmd, vc=vc, asi=rng.randrange(4), tag=rng.randrange(1 << 11), attr=rng.randrange(256),
        length=nbytes // 4 - 1, metadata=rng.randrange(256), addr=addr,
        src_acc=rng.randrange(1024), dst_acc=rng.randrange(1024), num_beats=num_beats,
        data=tuple(rng.randbytes(64) for _ in range(beats)), byte_en=tuple(byte_en),
        error=tuple(bool(e) for e in error or [False] * beats))


def make_read_response(rng, num_beats, status=OKAY, error=None, offset=0, last=True, vc=0):
    return ReadResponse(
        vc=vc, tag=rng.randrange(1 << 11), src_acc=rng.randrange(1024),
        dst_acc=rng.randrange(1024), num_beats=num_beats, offset=offset, last=last,
        status=status, data=tuple(rng.randbytes(64) for _ in range(num_beats + 1)),
        error=tuple(bool(e) for e in error or [False] * (num_beats + 1)))


def make_write_response(rng, status=OKAY, vc=0):
    return WriteResponse(vc=vc, tag=rng.randrange(1 << 11), src_acc=rng.randrange(1024),
                         dst_acc=rng.randrange(1024), status=status)


def as_received(item):
    """What the far side delivers: poisoned beats as their messages, no SRCACCID in a
    compressed (OKAY) response."""
    changes = {}
    if not isinstance(item, WriteResponse):
        changes["data"] = tuple(poisoned_beat(b) if e else b for b, e in zip(item.data, item.error))
    if not isinstance(item, Request) and item.status == OKAY:
        changes["src_acc"] = 0
    return dataclasses.replace(item, **changes)


def random_request(rng):
    cmd = rng.choice([READ, READ, *range(0x08, 0x10), WRITE, WRITE, WRITE_FULL, WRITE_FULL,
                      tl.WRITE_MESSAGE, *range(0x2C, 0x30), ATOMIC_R, ATOMIC_NR,
                      *range(0x3C, 0x40)])
    num_beats = None                    # from the address and length
    if cmd == WRITE_FULL:
        offset = 64 * rng.randrange(4)
        nbytes = 64 * rng.randint(1, 4 - offset // 64)
    else:
        offset = 4 * rng.randrange(64)
        nbytes = 4 * rng.randint(1, 64 - offset // 4)
    if cmd in (ATOMIC_R, ATOMIC_NR):
        nbytes, num_beats = 4 * rng.randint(1, 16 - offset % 64 // 4), 0
    elif 0x08 <= cmd < 0x10 or cmd >= 0x3C:         # vendor read / atomic: no length check
        num_beats = rng.randrange(4)
    r = make_request(rng, cmd, rng.getrandbits(49) << 8 | offset, nbytes, num_beats,
                     vc=rng.randrange(4))
    return dataclasses.replace(r, error=rand_errors(rng, r.beats))


def rand_errors(rng, beats):
    return tuple(rng.random() < 0.08 for _ in range(beats))


def random_response(rng):
    vc = rng.randrange(4)
    if rng.random() < 0.4:
        return make_write_response(rng, OKAY if rng.random() < 0.7 else rng.choice(
            sorted(tl.WRITE_STATUSES)), vc=vc)
    num_beats = rng.randrange(4)
    status = OKAY if rng.random() < 0.7 else rng.choice(sorted(tl.READ_STATUSES))
    single = {} if num_beats else {"offset": rng.randrange(4), "last": rng.random() < 0.5}
    r = make_read_response(rng, num_beats, status, vc=vc, **single)
    return dataclasses.replace(r, error=rand_errors(rng, num_beats + 1))


def random_items(rng, n):
    """``n`` random requests and responses, about half of each."""
    return [random_request(rng) if rng.random() < 0.5 else random_response(rng)
            for _ in range(n)]


def by_kind(items):
    """``(requests, read responses, write responses)`` as the far side delivers ``items``."""
    got = [as_received(i) for i in items]
    return tuple([i for i in got if isinstance(i, kind)]
                 for kind in (Request, ReadResponse, WriteResponse))


def upli_transfers(items):
    """UPLI transfers that carry ``items``: a request and each of its data beats, each read
    response beat, each write response."""
    return sum(1 + i.beats if isinstance(i, Request) else max(i.beats, 1) for i in items)


# --- Benchmark traffic mixes ------------------------------------------------------------------
# Symmetric load/store traffic as in [UALink 1.0 §5.4]: one link direction carries this TL's
# requests and its responses to the peer's equal stream of requests.

def _pair_writefull_256(rng):
    return [make_request(rng, WRITE_FULL, 256 * rng.randrange(1 << 40), 256),
            make_write_response(rng)]


def _pair_read_64(rng):
    return [make_request(rng, READ, 64 * rng.randrange(1 << 40), 64),
            make_read_response(rng, 0)]


def _pair_read_256(rng):
    return [make_request(rng, READ, 256 * rng.randrange(1 << 40), 256),
            make_read_response(rng, 3)]


def _pair_mixed(rng):
    nbytes = 64 * rng.randint(1, 4)
    addr = 256 * rng.randrange(1 << 40) + 64 * rng.randrange(5 - nbytes // 64)
    if rng.random() < 0.5:
        return [make_request(rng, READ, addr, nbytes), make_read_response(rng, nbytes // 64 - 1)]
    return [make_request(rng, WRITE_FULL, addr, nbytes), make_write_response(rng)]


def _pair_partial_write(rng):
    nbytes = 4 * rng.randint(1, 16)
    addr = 64 * rng.randrange(1 << 42) + 4 * rng.randrange(17 - nbytes // 4)
    return [make_request(rng, WRITE, addr, nbytes), make_write_response(rng)]


def _pair_atomic(rng):
    addr = 64 * rng.randrange(1 << 42)
    return [make_request(rng, ATOMIC_R, addr, 64, num_beats=0), make_read_response(rng, 0)]


def _write_response(rng):
    return [make_write_response(rng)]


def _read_request(rng):
    return [make_request(rng, READ, 64 * rng.randrange(1 << 40), 64)]


def _pair_random(rng):
    return [random_request(rng), random_response(rng)]


#: Benchmark mixes: name -> function returning one request and the response to a peer request
#: (or, for the bursts of one kind, one item).
MIXES = {
    "writefull_256": _pair_writefull_256,
    "read_64": _pair_read_64,
    "read_256": _pair_read_256,
    "mixed_64_256": _pair_mixed,
    "partial_write_4_64": _pair_partial_write,
    "atomic_r": _pair_atomic,
    "write_responses": _write_response,
    "read_requests": _read_request,
    "random": _pair_random,
}


def cacheable(rng, item, dst_acc=7):
    """``item`` as the address cache can compress it when it is a Read, Write or WriteFull of
    whole beats: in one 1 MB region of ``dst_acc``, with the ATTR and ReqMetaData Table 5-32
    allows; other items unchanged."""
    if not isinstance(item, Request) or item.cmd not in (READ, WRITE, WRITE_FULL):
        return item
    region = 0x5A5A << 20
    return dataclasses.replace(item, addr=region | item.addr % REGION_BYTES, dst_acc=dst_acc,
                               attr=0xFF if item.cmd == READ else 0x00,
                               metadata=item.metadata % 8)


def payload_bytes(item):
    """Data bytes the TL carries for ``item``: 64 per beat."""
    return 64 * item.beats


# --- Address cache traffic --------------------------------------------------------------------
# Requests that Table 5-32 lets the Tx compress when their 1 MB region hits, drawn from a few
# regions per destination.

REGION_BYTES = 1 << 20


def cacheable_request(rng, region, dst_acc, cmd=None, nbytes=None):
    """A Read, Write or WriteFull of 64..256 bytes, 64-byte aligned within a 256-byte block of
    the 1 MB ``region`` (ReqAddr[56:20]), with the ATTR and ReqMetaData a compressed request can
    carry [Table 5-32]."""
    cmd = rng.choice([READ, WRITE, WRITE_FULL]) if cmd is None else cmd
    nbytes = 64 * rng.randint(1, 4) if nbytes is None else nbytes
    addr = region * REGION_BYTES + 256 * rng.randrange(REGION_BYTES // 256) \
        + 64 * rng.randrange(5 - nbytes // 64)
    r = make_request(rng, cmd, addr, nbytes)
    return dataclasses.replace(r, attr=0xFF if cmd == READ else 0x00,
                               metadata=rng.randrange(8), dst_acc=dst_acc)


def _streams(rng, n, dsts, per_dst):
    """``n`` requests over ``per_dst`` regions for each of ``dsts``, picked at random."""
    regions = {d: [rng.randrange(1 << 37) for _ in range(per_dst)] for d in dsts}
    out = []
    for _ in range(n):
        d = rng.choice(dsts)
        out.append(cacheable_request(rng, rng.choice(regions[d]), d))
    return out


#: Address patterns of the address cache tests and benchmark: name -> f(rng, n)
#: returning ``n`` cacheable requests.
CACHE_PATTERNS = {
    "one_region": lambda rng, n: _streams(rng, n, [7], 1),
    "four_streams": lambda rng, n: _streams(rng, n, [1, 2], 4),
    "eight_streams": lambda rng, n: _streams(rng, n, [1], 8),
    "random_1g": lambda rng, n: [cacheable_request(rng, (3 << 10) + rng.randrange(1024), 5)
                                 for _ in range(n)],
    "all_destinations": lambda rng, n: _streams(rng, n, list(range(1024)), 1),
}


def cache_pattern(rng, name, n, uncacheable=0.0):
    """``n`` requests of pattern ``name``; a fraction ``uncacheable`` of them replaced by
    random requests that Table 5-32 mostly forbids compressing (atomics, vendor commands,
    partial writes, any ATTR and metadata)."""
    return [random_request(rng) if rng.random() < uncacheable else r
            for r in CACHE_PATTERNS[name](rng, n)]
