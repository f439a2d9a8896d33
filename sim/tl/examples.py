# SPDX-License-Identifier: BSD-2-Clause
"""The UALink 1.0 §5.2-5.4 flit sequences, built by hand in the spec's own sector layouts.

They use field layouts and placements our packer never produces (responses below requests,
uncompressed OKAY responses, Flow Control fields in low sectors, messages in data positions),
so they test a receiver's general decoding. Each builder returns ``(flits, items)``: the flits
and the items a receiver must deliver (as :func:`~sim.tl.traffic.as_received` gives them).
``pool`` is the POOL bit of every field: 1 for a receiver that advertised pool credits only.
"""

import random

from scaleup_ip.model.tl import flit as tl
from scaleup_ip.model.tl.flit import (
    READ,
    WRITE,
    WRITE_FULL,
    Flit,
    FType,
    encode_field,
    fc_field,
    place,
    request_field,
    response_field,
)
from sim.tl.traffic import as_received, make_read_response, make_request, make_write_response

__all__ = ["EXAMPLES", "halves", "poison"]

F = Flit.of


def halves(beat):
    """A 64-byte beat as its two data half-flits, lanes 0..31 first [§5.1.1]."""
    return [int.from_bytes(beat[:32], "little"), int.from_bytes(beat[32:], "little")]


def poison(half):
    """A Poisoned Data message replacing ``half`` (bytes 1..31 kept, README §1)."""
    return half & ~0xFF | tl.MSG_POISON


def _data(item):
    return [h for beat in item.data for h in halves(beat)]


def table_5_5(rng, pool):
    """A read request at sectors 7-4, then a MANDATORY NOP upper half."""
    r = make_request(rng, READ, 0x4000, 256, vc=2)
    return [F(place(4, request_field(r, pool)), 0)], [r]


def table_5_6(rng, pool):
    """A 256-byte WriteFull at 7-4; the last data half swapped up beside an FC control."""
    r = make_request(rng, WRITE_FULL, 0x1_0000_0100, 256)
    d = _data(r)
    fc = fc_field("pool", {"req_cmd": 2, "req_data": 8})
    return [F(place(4, request_field(r, pool)), d[0]), F(d[1], d[2]), F(d[3], d[4]),
            F(d[5], d[6]), F(place(3, fc), d[7])], [r]


def table_5_7(rng, pool):
    """A 192-byte Write at 3-0 and its byte-enable half-flit (A[7:6] = 1)."""
    r = make_request(rng, WRITE, 0x7_0040, 192)
    d = _data(r)
    be = r.byte_en[0] << 64 | r.byte_en[1] << 128 | r.byte_en[2] << 192
    return [F(place(0, request_field(r, pool)), d[0]), F(d[1], d[2]), F(d[3], d[4]),
            F(d[5], be)], [r]


def table_5_12(rng, pool):
    """Rx side: a compressed 2-beat read response at sector 2, uncompressed OKAY ones at 5-4
    and 7-6; data in sector order."""
    r0, r1, r2 = (make_read_response(rng, 1) for _ in range(3))

    def uncompressed(r):
        return encode_field(FType.RESPONSE, VCHAN=r.vc, TAG=r.tag, POOL=pool, LEN=1, RDWR=1,
                            LAST=1, SRCACCID=r.src_acc, DSTACCID=r.dst_acc)
    a, b, c = (_data(r) for r in (r0, r1, r2))
    ctrl = (place(2, response_field(r0, pool)[1]) | place(4, uncompressed(r2))
            | place(6, uncompressed(r1)))
    flits = [F(ctrl, a[0]), F(a[1], a[2]), F(a[3], c[0]), F(c[1], c[2]), F(c[3], b[0]),
             F(b[1], b[2]), F(0, b[3])]
    return flits, [as_received(r0), r2, r1]


def table_5_13(rng, pool):
    """A 256-byte WriteFull whose second beat is replaced by two Poisoned Data messages."""
    r = make_request(rng, WRITE_FULL, 0x8_0000, 256, error=[0, 1, 0, 0])
    d = _data(r)
    return [F(place(4, request_field(r, pool)), d[0]), F(d[1], poison(d[2]), m1=True),
            F(poison(d[3]), d[4], m0=True), F(d[5], d[6]),
            F(place(3, fc_field("pool", {"req_data": 4})), d[7])], [as_received(r)]


def table_5_15(rng, pool):
    """Two WriteFulls at 7-4, each with an uncompressed write response at 3-2 and an FC field
    at sector 0; the second control sits in a swapped flit."""
    r0, r1 = (make_request(rng, WRITE_FULL, 0x100 * k, 256) for k in (1, 2))
    ra, rb = make_write_response(rng, status=2), make_write_response(rng, status=3)
    d0, d1 = _data(r0), _data(r1)
    fc = place(0, fc_field("pool", {"rsp_cmd": 1}))

    def ctrl(r, rsp):
        return fc | place(2, response_field(rsp, pool)[1]) | place(4, request_field(r, pool))
    flits = ([F(ctrl(r0, ra), d0[0])] + [F(d0[i], d0[i + 1]) for i in (1, 3, 5)]
             + [F(ctrl(r1, rb), d0[7])] + [F(d1[i], d1[i + 1]) for i in (0, 2, 4, 6)])
    return flits, [r0, ra, r1, rb]


def table_5_16(rng, pool):
    """Three WriteFulls and three compressed write responses in two control half-flits."""
    reqs = [make_request(rng, WRITE_FULL, 0x100 * k, 256) for k in range(3)]
    cwrs = [make_write_response(rng) for _ in range(3)]
    h = [x for r in reqs for x in _data(r)]
    c0 = place(0, request_field(reqs[0], pool)) | place(4, request_field(reqs[1], pool))
    c1 = (place(0, fc_field("vc3", {"req_cmd": 3})) | place(4, request_field(reqs[2], pool))
          | sum(place(1 + k, response_field(r, pool)[1]) for k, r in enumerate(cwrs)))
    flits = ([F(c0, h[0])] + [F(h[i], h[i + 1]) for i in range(1, 15, 2)] + [F(c1, h[15])]
             + [F(h[i], h[i + 1]) for i in range(16, 24, 2)])
    return flits, reqs + [as_received(r) for r in cwrs]


def messages_delay(rng, pool):
    """[§5.1.2] NOP and Initial Credit Release Complete messages in data and control positions
    delay the sequence; a message in the control position does not push the control up."""
    r = make_request(rng, WRITE_FULL, 0x40, 128)
    d = _data(r)
    return [F(place(0, request_field(r, pool)), d[0]), F(tl.MSG_NOP, d[1], m0=True),
            F(d[2], tl.MSG_INIT_DONE, m1=True), F(tl.MSG_NOP, d[3], m0=True),
            F(tl.MSG_INIT_DONE, 0, m0=True)], [r]


#: name -> builder(rng, pool) -> (flits, items)
EXAMPLES = {
    "table_5_5": table_5_5, "table_5_6": table_5_6, "table_5_7": table_5_7,
    "table_5_12": table_5_12, "table_5_13": table_5_13, "table_5_15": table_5_15,
    "table_5_16": table_5_16, "messages_delay": messages_delay,
}


def build(name, seed, pool):
    """The flits and items of example ``name`` with a fixed random payload."""
    return EXAMPLES[name](random.Random(seed), pool)
