# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the UALink TL golden model rtl/scaleup_ip/model/tl/flit.py alone (no simulator).

Field layouts against hand-computed bit patterns; the spec's flit examples (Tables 5-5 .. 5-16)
built by hand and fed to the Unpacker; the Packer on the same transactions; rate limits
(Tables 5-24, 5-25); full-duplex random round trips; one test per receive error kind and the
kind counted when one flit shows several (README §4).
"""

import dataclasses
import itertools
import random
from fractions import Fraction

import pytest

from scaleup_ip.model.tl.addrcache import AddrCacheConfig, TxAddressCache
from scaleup_ip.model.tl import flit as tl
from scaleup_ip.model.tl.bound import best_packing
from scaleup_ip.model.tl.flit import (
    ATOMIC_NR,
    ATOMIC_R,
    CLASSES,
    OKAY,
    READ,
    SLOTS,
    WRITE,
    WRITE_FULL,
    Flit,
    FType,
    Packer,
    RateLimiter,
    ReadResponse,
    Request,
    Unpacker,
    credit_table,
    decode_credit,
    decode_field,
    efficiency,
    encode_field,
    fc_field,
    parse_control,
    place,
    request_field,
    response_field,
)
from sim import harness
from sim.tl import examples as ex
from sim.tl.examples import halves, poison
from sim.tl.traffic import (
    ALL_BYTES,
    as_received,
    make_read_response,
    make_request,
    make_write_response,
    random_request,
    random_response,
)

F = Flit.of
PLENTY = {cls: {"pool": 10_000} for cls in CLASSES}
REGION = 0x1_2345_6789      # ReqAddr[56:20] held by the test address cache


# --- Helpers --------------------------------------------------------------------------------------

class _Cache:
    """Test address cache for the examples that use compressed requests: every entry holds
    REGION (the examples never load one)."""
    index = "SRCACCID"

    def load(self, acc, way, tag):
        raise AssertionError("the examples send no CLOAD")

    def expand(self, acc, way, addr_19_6):
        return REGION << 20 | addr_19_6 << 6


cache = _Cache()


def compressed_request_field(r, cmd, pool, cway=0):
    """The 0x3 field of ``r`` (Table 5-31), by hand: the model's encoder is checked against it."""
    return encode_field(
        FType.COMPRESSED_REQUEST, CMD=cmd, VCHAN=r.vc, ASI=r.asi, TAG=r.tag, POOL=pool,
        LEN=(r.length + 1) // 16 - 1, METADATA=r.metadata, ADDR=(r.addr >> 6) & 0x3FFF,
        SRCACCID=r.src_acc, DSTACCID=r.dst_acc, CWAY=cway)


def compressible(rng, cmd, block, nbytes, metadata=5):
    """A request a compressed field can carry exactly (Table 5-32)."""
    r = make_request(rng, cmd, REGION << 20 | block, nbytes)
    return dataclasses.replace(r, attr=0xFF if cmd == READ else 0, metadata=metadata)


def be_half(r):
    """Byte-enable half-flit of ``r``, by hand: beat k at bits [64(A[7:6]+k)+63 : ...]."""
    return sum(be << 64 * ((r.addr >> 6 & 3) + k) for k, be in enumerate(r.byte_en))


def run(items, granted=PLENTY):
    """Drain a Packer holding ``items``; its flits after the init message and an Unpacker fed
    with all of them."""
    p = Packer({}, granted)
    for item in items:
        (p.push_request if isinstance(item, Request) else p.push_response)(item)
    flits = p.drain()
    u = Unpacker()
    for flit in flits:
        u.feed(flit)
    assert p.trace[0] == "MN" and u.peer_init_done
    return p, flits[1:], u


def assert_round_trip(items, u):
    assert u.error is None and u.idle()
    assert u.requests == [as_received(r) for r in items if isinstance(r, Request)]
    assert u.responses == [as_received(r) for r in items if not isinstance(r, Request)]


def feed(flits, **kwargs):
    u = Unpacker(**kwargs)
    for flit in flits:
        u.feed(flit)
    return u


# --- Field layouts --------------------------------------------------------------------------------

@pytest.mark.parametrize("ftype", list(FType))
def test_layout_tiles_its_sectors(ftype):
    layout = tl.LAYOUTS[ftype]
    assert layout[0][0] == "FTYPE" and layout[0][1] - layout[0][2] == 3
    assert layout[0][1] + 1 == 32 * tl.FIELD_SECTORS[ftype]
    for (_, _, lsb), (_, msb, _) in itertools.pairwise(layout):
        assert msb == lsb - 1                    # contiguous, from the top down to bit 0
    assert layout[-1][2] == 0


def test_field_sizes_and_footprints():
    assert tl.FIELD_SECTORS == {FType.FLOW_CONTROL: 1, FType.REQUEST: 4, FType.RESPONSE: 2,
                                FType.COMPRESSED_REQUEST: 2, FType.COMPRESSED_READ_RESPONSE: 1,
                                FType.COMPRESSED_RESPONSE: 1}


@pytest.mark.parametrize("ftype", list(FType))
def test_encode_decode_round_trip(ftype):
    rng = random.Random(int(ftype))
    for _ in range(50):
        values = {name: rng.randrange(1 << (msb - lsb + 1))
                  for name, msb, lsb in tl.LAYOUTS[ftype][1:]}
        assert decode_field(ftype, encode_field(ftype, **values)) == {"FTYPE": ftype, **values}


def test_encode_rejects_bad_values():
    with pytest.raises(ValueError):
        encode_field(FType.REQUEST, CMD=0x40)
    with pytest.raises(ValueError):
        encode_field(FType.RESPONSE, CMD=1)


def test_uncompressed_request_bits():
    """Table 5-29, sector by sector, computed by hand."""
    value = encode_field(FType.REQUEST, CMD=0x29, VCHAN=3, ASI=1, TAG=0x5A5, POOL=1, ATTR=0xC3,
                         LEN=63, METADATA=0x7E, ADDR=0x1_2345_6789_A154 >> 2, SRCACCID=0x2AA,
                         DSTACCID=0x155, NUMBEATS=3)
    assert [value >> 32 * s & 0xFFFF_FFFF for s in range(4)] == [
        0xAB55_2AA3, 0xA2B3_C4D0, 0xFF7E_0091, 0x1A76_D2F0]


def test_request_field_carries_the_request():
    rng = random.Random(1)
    r = make_request(rng, WRITE, 0x1_2345_6789_A154, 12, vc=2)
    f = decode_field(FType.REQUEST, request_field(r, pool=True))
    assert (f["CMD"], f["VCHAN"], f["POOL"], f["ADDR"] << 2, f["LEN"], f["NUMBEATS"]) == (
        WRITE, 2, 1, r.addr, 2, 0)
    assert (f["CLOAD"], f["CWAY"]) == (0, 0)


def test_uncompressed_response_bits():
    """Table 5-30."""
    value = encode_field(FType.RESPONSE, VCHAN=2, TAG=0x7FF, LEN=2, STATUS=8, RDWR=1, LAST=1,
                         SRCACCID=0x3FF, DSTACCID=1)
    assert (value >> 32, value & 0xFFFF_FFFF) == (0x2BFF_A23F, 0xFC01_0000)


def test_compressed_request_bits():
    """Table 5-31."""
    value = encode_field(FType.COMPRESSED_REQUEST, CMD=0b110, VCHAN=1, ASI=2, TAG=0x400, POOL=1,
                         LEN=3, METADATA=5, ADDR=0x3FFF, SRCACCID=0x200, DSTACCID=0x3FF, CWAY=2)
    assert (value >> 32, value & 0xFFFF_FFFF) == (0x3CD0_03DF, 0xFFE0_0FFE)


def test_compressed_response_bits():
    """Tables 5-34 and 5-36."""
    assert encode_field(FType.COMPRESSED_READ_RESPONSE, VCHAN=1, TAG=0x123, POOL=1,
                        DSTACCID=0x2AA, OFFSET=3, LAST=1) == 0x4491_EAAE
    assert encode_field(FType.COMPRESSED_RESPONSE, VCHAN=2, TAG=0x7FF, POOL=1, DSTACCID=0x155,
                        LEN=3, RDWR=1) == 0x5BFF_D55E


def test_flow_control_bits_and_t_polarity():
    """Table 5-38: subfields ``t vv c..c`` with t = 0 for pool credits."""
    assert fc_field("pool", {"req_cmd": 5, "rsp_cmd": 7, "req_data": 31, "rsp_data": 1}) \
        == 0x0147_1F01
    assert fc_field("vc2", {"rsp_data": 17}) == 0x0C30_C0D1     # every class t=1, vv=2
    assert decode_credit(0b1_00_011, 3) == ("vc0", 3)
    assert decode_credit(0b0_11_011, 3) == ("pool", 3)          # vv ignored when t = 0
    assert decode_credit(0b1_11_11111, 5) == ("vc3", 31)
    assert fc_field("pool", {}) == 0                            # the NOP field [§5.8]


def test_response_field_choice():
    """README §2: OKAY compressed, other status uncompressed, RD/WR = 1 for reads."""
    rng = random.Random(2)
    cases = [
        (make_read_response(rng, 0, offset=2, last=False), FType.COMPRESSED_READ_RESPONSE),
        (make_read_response(rng, 3), FType.COMPRESSED_RESPONSE),
        (make_write_response(rng), FType.COMPRESSED_RESPONSE),
        (make_read_response(rng, 2, status=8), FType.RESPONSE),
        (make_write_response(rng, status=0xF), FType.RESPONSE),
    ]
    for r, ftype in cases:
        got, value = response_field(r, pool=False)
        f = decode_field(got, value)
        assert got == ftype
        if "RDWR" in f:
            assert f["RDWR"] == isinstance(r, ReadResponse)
    f = decode_field(*response_field(cases[3][0], pool=True))
    assert (f["LEN"], f["OFFSET"], f["LAST"], f["STATUS"], f["POOL"]) == (2, 0, 1, 8, 1)
    f = decode_field(*response_field(cases[4][0], pool=False))
    assert (f["LEN"], f["OFFSET"], f["LAST"], f["STATUS"]) == (0, 0, 0, 0xF)


def test_placement_puts_ftype_in_the_top_sector():
    rng = random.Random(3)
    half = place(4, request_field(make_request(rng, READ, 0, 64), 0))
    assert half >> 252 == FType.REQUEST                         # sector 7, top nibble
    rsp = response_field(make_write_response(rng, status=2), 0)[1]
    assert place(2, rsp) >> 124 & 0xF == FType.RESPONSE         # sector 3, top nibble
    mixed = place(0, fc_field("pool", {"req_cmd": 1})) | place(2, rsp) | half
    assert [(s, t) for s, t, _, _ in parse_control(mixed)] == [
        (0, FType.FLOW_CONTROL), (1, FType.FLOW_CONTROL), (2, FType.RESPONSE),
        (4, FType.REQUEST)]


def test_items_validate_themselves():
    rng = random.Random(4)
    with pytest.raises(ValueError):
        make_request(rng, WRITE, 2, 4)                          # not a doubleword address
    with pytest.raises(ValueError):
        make_request(rng, WRITE, 0, 64, num_beats=1, byte_en=[1])
    with pytest.raises(ValueError):
        make_read_response(rng, 1, offset=1)
    with pytest.raises(ValueError):
        make_read_response(rng, 1, last=False)


# --- The spec's examples, built by hand, into the Unpacker ----------------------------------------

def test_table_5_5_read_and_mandatory_nop():
    flits, items = ex.table_5_5(random.Random(5), pool=0)
    u = feed(flits)
    assert u.requests == items and u.trace == ["CN"] and u.idle()
    assert u.consumed["req_cmd"]["vc2"] == 1


def test_table_5_6_writefull_then_flow_control():
    flits, items = ex.table_5_6(random.Random(6), pool=1)
    u = feed(flits)
    assert u.requests == items and u.idle()
    assert u.requests[0].byte_en == (ALL_BYTES,) * 4
    assert " ".join(u.trace) == "CD DD DD DD CD"
    assert (u.granted["req_cmd"]["pool"], u.granted["req_data"]["pool"]) == (2, 8)
    assert u.consumed["req_data"]["pool"] == 4


def test_table_5_7_write_with_byte_enables():
    flits, items = ex.table_5_7(random.Random(7), pool=0)
    u = feed(flits)
    assert u.requests == items and u.idle()
    assert " ".join(u.trace) == "CD DD DD DB"


def _table_5_8(rng, poisoned):
    """Req0: compressed 64-byte Write (sectors 1-0); NOP; FC; Req1: AtomicR (sectors 7-4)."""
    w = compressible(rng, WRITE, 0xC0, 64)
    a = make_request(rng, ATOMIC_R, 0x5_0088, 8, error=[poisoned])
    wd, ad = halves(w.data[0]), halves(a.data[0])
    c0 = (place(0, compressed_request_field(w, 0b100, 1, cway=2))
          | place(3, fc_field("vc1", {"rsp_cmd": 2})) | place(4, request_field(a, 0)))
    c1 = (place(2, fc_field("pool", {"req_cmd": 3})) | place(3, fc_field("vc1", {"rsp_data": 5}))
          | place(5, fc_field("vc2", {"req_data": 7})))
    ops = F(poison(ad[0]), poison(ad[1]), True, True) if poisoned else F(ad[0], ad[1])
    flits = [F(c0, wd[0]), F(wd[1], w.byte_en[0] << 192), ops,
             F(c1, a.byte_en[0] << 128)]               # 64-byte atomic at 128: bytes 16..23
    return w, a, flits


def test_table_5_8_write_flow_control_atomic():
    w, a, flits = _table_5_8(random.Random(8), poisoned=False)
    u = feed(flits, address_cache=cache)
    assert u.requests == [w, a] and u.idle()
    assert " ".join(u.trace) == "CD DB DD CB"
    assert (u.granted["req_cmd"]["pool"], u.granted["rsp_cmd"]["vc1"],
            u.granted["rsp_data"]["vc1"], u.granted["req_data"]["vc2"]) == (3, 2, 5, 7)


def test_table_5_8_without_an_address_cache():
    _, _, flits = _table_5_8(random.Random(8), poisoned=False)
    u = feed(flits)
    assert u.error == "compressed_request" and u.requests == [] and u.dropped_flits == 4


def test_table_5_9_two_atomics():
    rng = random.Random(9)
    nr = make_request(rng, ATOMIC_NR, 0x9_0010, 4)
    ar = make_request(rng, ATOMIC_R, 0x9_00C8, 8)
    n, a = halves(nr.data[0]), halves(ar.data[0])
    u = feed([F(place(0, request_field(nr, 0)) | place(4, request_field(ar, 1)), n[0]),
              F(n[1], nr.byte_en[0]), F(a[0], a[1]), F(0, ar.byte_en[0] << 192)])
    assert u.requests == [nr, ar] and u.idle()
    assert " ".join(u.trace) == "CD DB DD CB"


def test_table_5_10_three_requests_one_control():
    rng = random.Random(10)
    w = compressible(rng, WRITE, 0x100, 256)
    wf = compressible(rng, WRITE_FULL, 0x200, 256, metadata=0)
    nr = make_request(rng, ATOMIC_NR, 0x3_0040, 8)
    h = ([x for b in w.data for x in halves(b)] + [be_half(w)]
         + [x for b in wf.data for x in halves(b)] + halves(nr.data[0]) + [be_half(nr)])
    assert len(h) == 20
    c0 = (place(0, compressed_request_field(w, 0b100, 0)) | place(2,
          compressed_request_field(wf, 0b110, 0)) | place(4, request_field(nr, 0)))
    c1 = place(7, fc_field("vc0", {"req_cmd": 1}))
    u = feed([F(c0, h[0])] + [F(h[i], h[i + 1]) for i in range(1, 19, 2)] + [F(c1, h[19])],
             address_cache=cache)
    assert u.requests == [w, wf, nr] and u.idle()
    assert " ".join(u.trace) == "CD DD DD DD DB DD DD DD DD DD CB"


def test_table_5_12_read_responses_rx():
    """CRR0 (compressed, 2 beats) at sector 2, RdRsp2 at 5-4, RdRsp1 at 7-6 (uncompressed
    OKAY fields, legal though not what our packer sends); data in sector order."""
    flits, items = ex.table_5_12(random.Random(12), pool=0)
    u = feed(flits)
    assert u.responses == items and u.idle()
    assert " ".join(u.trace) == "CD DD DD DD DD DD CD"


def test_table_5_13_poisoned_writefull_beat():
    flits, items = ex.table_5_13(random.Random(13), pool=0)
    u = feed(flits)
    assert u.requests == items and u.requests[0].error == (False, True, False, False)
    assert u.poisoned_halves == 2 and u.idle()
    assert " ".join(u.trace) == "CD DP PD DD CD"


def test_table_5_14_poisoned_atomic_operands():
    w, a, flits = _table_5_8(random.Random(14), poisoned=True)
    u = feed(flits, address_cache=cache)
    assert u.requests == [w, as_received(a)] and u.requests[1].error == (True,)
    assert u.requests[1].byte_en == a.byte_en                   # byte enables never poisoned
    assert u.poisoned_halves == 2 and u.idle()
    assert " ".join(u.trace) == "CD DB PP CB"


def test_table_5_15_writefull_and_write_response_efficiency():
    flits, items = ex.table_5_15(random.Random(15), pool=0)
    u = feed(flits)
    assert u.requests == items[0::2] and u.responses == items[1::2] and u.idle()
    assert len(flits) == 9 and efficiency(u.data_halves, u.flits) == Fraction(512, 576)


def test_table_5_16_three_writefulls_three_cwr_efficiency():
    flits, items = ex.table_5_16(random.Random(16), pool=0)
    u = feed(flits)
    assert u.requests == items[:3] and u.responses == items[3:] and u.idle()
    assert len(flits) == 13 and efficiency(u.data_halves, u.flits) == Fraction(768, 832)


def test_messages_delay_the_sequence():
    """[§5.1.2]: NOP and Initial Credit Release Complete messages delay the data; a message in
    the control position does not push the control into the upper half."""
    flits, items = ex.messages_delay(random.Random(17), pool=0)
    u = feed(flits)
    assert u.requests == items and u.peer_init_done and u.idle()
    assert " ".join(u.trace) == "CD MD DM MD MN"


# --- The Packer on the same transactions ----------------------------------------------------------

def test_packer_table_5_5_shape():
    r = make_request(random.Random(5), READ, 0x4000, 256)
    p, flits, u = run([r])
    assert p.trace[1:] == ["CN"] and flits[0].lower == place(0, request_field(r, pool=1))
    assert_round_trip([r], u)


def test_packer_table_5_6_shape_with_flow_control():
    r = make_request(random.Random(6), WRITE_FULL, 0x1_0000_0100, 256)
    p = Packer({}, PLENTY)
    p.push_request(r)
    flits = [p.step(), p.step()]                 # init message, then the request's control
    p.return_credits("req_cmd", "vc1", 1)
    flits += p.drain()
    assert " ".join(p.trace[1:]) == "CD DD DD DD CD"
    assert flits[-1].lower == place(0, fc_field("vc1", {"req_cmd": 1}))
    assert_round_trip([r], feed(flits))


@pytest.mark.parametrize("name, make, shape", [
    ("5-7", lambda rng: [make_request(rng, WRITE, 0x7_0040, 192)], "CD DD DD DB"),
    ("5-9", lambda rng: [make_request(rng, ATOMIC_NR, 0x9_0010, 4),
                         make_request(rng, ATOMIC_R, 0x9_00C8, 8)], "CD DB DD CB"),
    ("5-12", lambda rng: [make_read_response(rng, 1) for _ in range(3)],
     "CD DD DD DD DD DD CD"),
    ("5-13", lambda rng: [make_request(rng, WRITE_FULL, 0x8_0000, 256, error=[0, 1, 0, 0])],
     "CD DP PD DD CD"),
    ("5-14", lambda rng: [make_request(rng, WRITE, 0xC0, 64),
                          make_request(rng, ATOMIC_R, 0x5_0088, 8, error=[1])], "CD DB PP CB"),
    # Different from the example: two uncompressed requests at most per control half.
    ("5-10", lambda rng: [make_request(rng, WRITE, 0x100, 256),
                          make_request(rng, WRITE_FULL, 0x200, 256),
                          make_request(rng, ATOMIC_NR, 0x3_0040, 8)],
     "CD DD DD DD DB DD DD DD DD CD DB"),
])
def test_packer_example_shapes(name, make, shape):
    items = make(random.Random(name))
    p, flits, u = run(items)
    assert " ".join(p.trace[1:]) == shape
    assert_round_trip(items, u)
    for flit, kinds in zip(flits, p.trace[1:]):
        assert (flit.m0, flit.m1) == (kinds[0] == "P", kinds[1] == "P")


def test_packer_table_5_16_shape_and_efficiency():
    rng = random.Random(16)
    items = ([make_request(rng, WRITE_FULL, 0x100 * k, 256) for k in range(3)]
             + [make_write_response(rng) for _ in range(3)])
    p, flits, u = run(items)
    # two WriteFulls span the half; the third and the responses at the swap
    assert " ".join(p.trace[1:]) == " ".join(["CD"] + ["DD"] * 7 + ["CD"] + ["DD"] * 4)
    assert p.issued[1:] == [(2, 0)] + [(0, 0)] * 7 + [(1, 3)] + [(0, 0)] * 4
    assert efficiency(p.data_halves, len(flits)) == Fraction(768, 832)
    assert_round_trip(items, u)


def test_packer_table_5_15_transactions():
    """One WriteFull and both write responses, then the other WriteFull in the swapped flit:
    the example's 9 flits (fields placed differently)."""
    rng = random.Random(15)
    items = ([make_request(rng, WRITE_FULL, 0x100 * k, 256) for k in (1, 2)]
             + [make_write_response(rng, status=2), make_write_response(rng, status=3)])
    p, _, u = run(items)
    assert " ".join(p.trace[1:]) == " ".join(["CD"] + ["DD"] * 3 + ["CD"] + ["DD"] * 4)
    assert_round_trip(items, u)


def assert_at_bound(p, flits, items):
    """The packer sent ``items`` in as few flits as the best legal packing."""
    requests = [i for i in items if isinstance(i, Request)]
    best = best_packing(requests, [i for i in items if not isinstance(i, Request)])
    assert len(flits) == best.flits
    assert p.data_halves == best.data_halves


def test_saturated_writefull_and_cwr_efficiency():
    """Rules 3 and 4: two WriteFulls span a control half; 1 WriteFull + 4 CWRs when the
    balance would go past LEAD_SLACK; 24 data halves in 13 flits (Table 5-16's 92.31 %), the
    best packing of the run."""
    rng = random.Random(30)
    items = ([make_request(rng, WRITE_FULL, 0x100 * k, 256) for k in range(30)]
             + [make_write_response(rng) for _ in range(40)])
    p, flits, u = run(items)
    assert len(flits) == 130 and efficiency(p.data_halves, len(flits)) == Fraction(12, 13)
    controls = [i for i in p.issued[1:] if i != (0, 0)]
    assert controls[:5] == [(2, 0), (1, 4), (2, 0), (1, 4), (2, 0)]
    assert_at_bound(p, flits, items)
    assert_round_trip(items, u)


def test_reads_and_responses_best_packing():
    """Rules 3 and 4 with 64 B reads and 1-beat read responses: 1 read + 3 responses, then 2
    reads in the swapped flit's control (no MANDATORY NOP), 3 and 3 in 4 flits: 75 %, the best
    legal packing."""
    rng = random.Random(5)
    items = ([make_request(rng, READ, 0x40 * k, 64) for k in range(30)]
             + [make_read_response(rng, 0) for _ in range(30)])
    p, flits, u = run(items)
    assert [i for i in p.issued[1:] if i != (0, 0)][4:14] == [(1, 3), (2, 0)] * 5
    assert efficiency(p.data_halves, len(flits)) == Fraction(3, 4)
    assert_at_bound(p, flits, items)
    assert_round_trip(items, u)


def test_compressed_reads_best_packing():
    """With every read compressed (2 sectors), full controls of reads and responses, none
    without data where a MANDATORY NOP would follow: the best legal packing (84 % for the run;
    2 + 3/8 half-flits a pair at length)."""
    rng = random.Random(6)
    cache = TxAddressCache(AddrCacheConfig(), "always")
    reads = [dataclasses.replace(make_request(rng, READ, (5 << 20) + 0x40 * k, 64), attr=0xFF,
                                 metadata=0, dst_acc=1) for k in range(40)]
    items = reads + [make_read_response(rng, 0) for _ in range(40)]
    p = Packer({}, PLENTY, address_cache=cache)
    for item in items:
        (p.push_request if isinstance(item, Request) else p.push_response)(item)
    flits = p.drain()[1:]
    assert p.compressed_sent == 39 and p.mandatory_nops == 1        # the init message's
    compressed = [False] + [True] * 39
    best = best_packing(reads, items[40:], compressed)
    assert len(flits) == best.flits and best.efficiency > 0.83


def test_packer_initialisation():
    """README §3 rule 1: the advertised credits in FC fields, then [0x01 | MANDATORY NOP]."""
    advertise = {"req_cmd": {"pool": 10, "vc1": 3}, "req_data": {"pool": 40},
                 "rsp_cmd": {"vc3": 1}, "rsp_data": {"pool": 31, "vc0": 2}}
    p = Packer(advertise, PLENTY)
    p.push_request(make_request(random.Random(1), READ, 0, 4))
    flits = p.drain()
    assert p.trace == ["CN", "CN", "MN", "CN"]
    assert flits[0].lower == (place(0, fc_field("pool", {"req_cmd": 7, "req_data": 31,
                                                         "rsp_data": 31}))
                              | place(1, fc_field("vc0", {"rsp_data": 2}))
                              | place(2, fc_field("vc1", {"req_cmd": 3}))
                              | place(3, fc_field("vc3", {"rsp_cmd": 1})))
    assert flits[1].lower == place(0, fc_field("pool", {"req_cmd": 3, "req_data": 9}))
    assert (flits[2].data, flits[2].m0, flits[2].m1) == (tl.MSG_INIT_DONE, True, False)
    u = Unpacker()
    for k, flit in enumerate(flits):
        u.feed(flit)
        assert u.peer_init_done == (k >= 2)
    assert u.granted == credit_table(advertise)


def test_flow_control_reserves_sector_7():
    rng = random.Random(2)
    reads = [make_request(rng, READ, 0, 4) for _ in range(2)]
    cwrs = [make_write_response(rng) for _ in range(5)]
    p = Packer({}, PLENTY)
    p.step()
    for item in reads:
        p.push_request(item)
    for item in cwrs:
        p.push_response(item)
    p.return_credits("rsp_data", "vc2", 40)
    flit = p.step()
    fields = [(s, t) for s, t, _, _ in parse_control(flit.lower)]
    assert fields == [(0, FType.REQUEST)] + [(s, FType.COMPRESSED_RESPONSE) for s in (4, 5, 6)] \
        + [(7, FType.FLOW_CONTROL)]
    assert flit.lower >> 224 == fc_field("vc2", {"rsp_data": 31})
    flit = p.step()                              # the rest: 9 credits, 1 read, 2 CWRs
    assert [t for _, t, _, _ in parse_control(flit.lower)][:4] == [
        FType.REQUEST, FType.COMPRESSED_RESPONSE, FType.COMPRESSED_RESPONSE, FType.FLOW_CONTROL]


def test_balance_and_aligned_uncompressed_responses():
    """Rule 3 and 4 with reads and write responses, none with data: the control that spans
    the most sectors, then the balance nearest zero; an uncompressed response at the next even
    sector (a NOP sector before it)."""
    rng = random.Random(3)
    reads = [make_request(rng, READ, 0, 4) for _ in range(4)]
    rsps = [make_write_response(rng, status=s) for s in (2, OKAY, 3, OKAY, OKAY)]
    p, flits, u = run(reads + rsps)
    # 2 reads span 8 sectors (1 read + 2 responses 7); then 5 responses (balance -3) beat
    # 2 reads (+4), both spanning 8.
    assert p.issued[1:] == [(2, 0), (0, 5), (2, 0)]
    assert [(s, t) for s, t, _, _ in parse_control(flits[1].lower)] == [
        (0, FType.RESPONSE), (2, FType.COMPRESSED_RESPONSE), (3, FType.FLOW_CONTROL),
        (4, FType.RESPONSE), (6, FType.COMPRESSED_RESPONSE), (7, FType.COMPRESSED_RESPONSE)]
    assert flits[1].lower >> 96 & 0xFFFFFFFF == 0                   # sector 3: a NOP
    assert_round_trip(reads + rsps, u)


def test_credit_choice_vc_or_pool():
    """README §3 rule 6: a VC's own credits when they cover its demand, else the pool."""
    rng = random.Random(4)
    reads = [make_request(rng, READ, 0, 4, vc=1) for _ in range(2)]
    granted = {"req_cmd": {"vc1": 1, "pool": 2}, "req_data": {"pool": 1}}
    p, flits, _ = run(reads, granted=granted)
    f = [decode_field(FType.REQUEST, v)["POOL"] for _, _, v, _ in parse_control(flits[0].lower)]
    assert f == [1, 1]
    assert p.credits["req_cmd"] == {"pool": 0, "vc0": 0, "vc1": 1, "vc2": 0, "vc3": 0}
    p, flits, _ = run(reads[:1], granted=granted)
    assert decode_field(FType.REQUEST, parse_control(flits[0].lower)[0][2])["POOL"] == 0


def test_credit_choice_never_mixes_vc_and_pool():
    """README §3 rule 6: VC credits only for a run of fields of one VC; a prefix of two VCs
    needs the pool."""
    rng = random.Random(14)
    reads = [make_request(rng, READ, 0, 4, vc=v) for v in (1, 2)]
    granted = {"req_cmd": {"vc1": 1, "vc2": 1}}
    p, flits, u = run(reads, granted=granted)
    assert p.issued[1:] == [(1, 0), (1, 0)]               # one per control, each by its VC
    for flit in flits:
        assert [decode_field(t, v)["POOL"] for _, t, v, _ in parse_control(flit.lower)
                if t == FType.REQUEST] == [0]
    assert_round_trip(reads, u)
    p, flits, _ = run(reads, granted={**granted, "req_cmd": {"vc1": 1, "vc2": 1, "pool": 2}})
    assert p.issued[1:] == [(2, 0)]                       # together, by the pool
    assert p.credits["req_cmd"] == {"pool": 0, "vc0": 0, "vc1": 1, "vc2": 1, "vc3": 0}


def test_credits_block_until_granted():
    w = make_request(random.Random(5), WRITE, 0, 128, vc=2)             # two beats
    p = Packer({}, {"req_cmd": {"vc2": 1}, "req_data": {"vc2": 1}})
    p.push_request(w)
    assert len(p.drain()) == 1 and p.trace == ["MN"]                    # the init message only
    assert p.step() is None and p.backlog == 1
    p.grant("req_data", "pool", 1)
    assert p.step() is None             # VC2 lacks a data credit, the pool a command credit
    p.grant("req_data", "vc2", 1)
    flit = p.step()
    assert decode_field(FType.REQUEST, parse_control(flit.lower)[0][2])["POOL"] == 0
    assert p.credits["req_cmd"]["vc2"] == p.credits["req_data"]["vc2"] == 0


def test_rate_limiter_tables_5_24_and_5_25():
    for issued, allowed in (([4, 1, 1, 0, 2, 1], [4, 1, 1, 1, 2, 1]),
                            ([4, 0, 0, 0, 0, 0], [4, 1, 2, 3, 4, 4])):
        rate, seen = RateLimiter(4), []
        for n in issued:
            seen.append(rate.allowance)
            assert n <= rate.allowance
            rate.flit(n)
        assert seen == allowed


def test_packer_rate_limits():
    rng = random.Random(6)
    reads = [make_request(rng, READ, 0, 4) for _ in range(10)]
    p, _, u = run(reads)
    assert [n for n, _ in p.issued[1:]] == [2, 2, 2, 1, 1, 1, 1]
    assert_round_trip(reads, u)
    cwrs = [make_write_response(rng) for _ in range(12)]
    p, _, u = run(cwrs)
    assert [n for _, n in p.issued[1:]] == [8, 1, 1, 1, 1]
    assert_round_trip(cwrs, u)
    table_5_25 = [make_request(rng, WRITE_FULL, 0, 64), make_request(rng, WRITE_FULL, 64, 64),
                  make_request(rng, WRITE, 128, 64), make_request(rng, WRITE, 192, 64)]
    p, _, u = run(table_5_25)
    assert " ".join(p.trace[1:]) == "CD DD CD DD BD DB"
    assert [n for n, _ in p.issued[1:]] == [2, 0, 2, 0, 0, 0]
    assert_round_trip(table_5_25, u)


# --- Random full-duplex round trips ---------------------------------------------------------------

def random_buffers(rng):
    """Receive buffers: enough pool for any one item, random VC buffers."""
    table = {}
    for cls in CLASSES:
        data = cls.endswith("data")
        table[cls] = {"pool": rng.randint(4, 40) if data else rng.randint(1, 10)}
        table[cls].update({f"vc{v}": rng.randint(0, 8 if data else 3) for v in range(4)})
    return table


class End:
    """One TL: a Packer, an Unpacker and the wiring of credits between them."""

    def __init__(self, rng, buffers, packer=Packer):
        self.rng = rng
        self.buffers = buffers
        self.packer = packer(buffers)
        self.unpacker = Unpacker(buffers=buffers)
        self.passed = credit_table()        # grants already handed to the packer
        self.freed = credit_table()         # consumed buffers already freed and returned
        self.sent = []

    def push(self, item):
        self.sent.append(item)
        (self.packer.push_request if isinstance(item, Request) else self.packer.push_response)(item)

    def housekeeping(self):
        """Hand received grants to the packer; free consumed buffers now and then."""
        for cls in CLASSES:
            for slot in SLOTS:
                grant = self.unpacker.granted[cls][slot] - self.passed[cls][slot]
                if grant:
                    self.packer.grant(cls, slot, grant)
                    self.passed[cls][slot] += grant
                used = self.unpacker.consumed[cls][slot] - self.freed[cls][slot]
                if used and self.rng.random() < 0.3:
                    self.unpacker.release(cls, slot, used)
                    self.packer.return_credits(cls, slot, used)
                    self.freed[cls][slot] += used

    def settled(self):
        return (self.unpacker.consumed == self.freed and self.unpacker.granted == self.passed
                and self.packer.backlog == 0 and self.packer.pending_returns == 0
                and self.unpacker.idle())


@pytest.mark.parametrize("run_index", range(4))
def test_random_full_duplex_round_trip(run_index):
    seed = harness.seed() + run_index
    print(f"seed {seed} (SEED={seed - run_index})")
    full_duplex(random.Random(seed))


def full_duplex(rng, packer=Packer):
    """Two ends with ``packer``s, random items of every kind both ways, short and VC credits,
    credit returns pending at random: everything delivered in order, every credit back."""
    ends = [End(rng, random_buffers(rng), packer) for _ in range(2)]
    todo = [[random_request(rng) if rng.random() < 0.5 else random_response(rng)
             for _ in range(300)] for _ in ends]
    quiet = 0
    for _ in range(20_000):
        for end, items in zip(ends, todo):
            for _ in range(min(len(items), rng.choice([0, 0, 1, 3]))):
                end.push(items.pop(0))
        flits = [end.packer.step() for end in ends]
        for flit, far in zip(flits, reversed(ends)):
            if flit is not None:
                far.unpacker.feed(flit)
        for end in ends:
            end.housekeeping()
        quiet = quiet + 1 if flits == [None, None] and not any(todo) else 0
        if quiet > 2 and all(end.settled() for end in ends):
            break
    else:
        pytest.fail("no quiescence")
    for end, far in (ends, ends[::-1]):
        assert far.unpacker.error is None
        assert far.unpacker.requests == [as_received(r) for r in end.sent if isinstance(r, Request)]
        assert far.unpacker.responses == [as_received(r) for r in end.sent
                                          if not isinstance(r, Request)]
        # Credits conserved: everything spent came back, and the far side consumed exactly
        # what this side's items need.
        assert end.packer.credits == credit_table(far.buffers)
        returned = credit_table(far.buffers)
        for cls in CLASSES:
            for slot in SLOTS:
                returned[cls][slot] += far.unpacker.consumed[cls][slot]
        assert end.unpacker.granted == returned
        spent = {c: sum(far.unpacker.consumed[c].values()) for c in CLASSES}
        reqs = [r for r in end.sent if isinstance(r, Request)]
        rsps = [r for r in end.sent if not isinstance(r, Request)]
        assert spent == {"req_cmd": len(reqs), "req_data": sum(r.beats for r in reqs),
                         "rsp_cmd": len(rsps), "rsp_data": sum(r.beats for r in rsps)}


# --- Malformed input: one error kind each ---------------------------------------------------------

def _read(vc=0, addr=0x100):
    return make_request(random.Random(40 + vc), READ, addr, 64, vc=vc)


def _control_flits(*fields):
    return [F(sum(place(s, v) for s, v in fields), 0)]


def _bad_request(**changes):
    f = decode_field(FType.REQUEST, request_field(_read(), 0))
    f.update(changes)
    del f["FTYPE"]
    return _control_flits((0, encode_field(FType.REQUEST, **f)))


def _write64_flits(be_poisoned):
    w = make_request(random.Random(41), WRITE, 0x40, 64)
    d = halves(w.data[0])
    be = be_half(w)
    return [F(place(0, request_field(w, 0)), d[0]),
            F(d[1], poison(be) if be_poisoned else be, m1=be_poisoned)]


def _catch_overrun():
    two_reads = _control_flits((0, request_field(_read(), 0)), (4, request_field(_read(), 0)))
    return two_reads * 4                    # allowances 4, 3, 2, then 1 < 2


MALFORMED = {
    "reserved_ftype": _control_flits((1, 0x6 << 28)),
    # sectors 2..5: the top at 5 breaks the footprint; sectors 2 and 3 are then read on their
    # own, as Flow Control fields here (ReqAddr[8:5] and [40:37] are 0)
    "footprint/request": _control_flits((2, request_field(_read(addr=0x200), 0))),
    "footprint/response": _control_flits((1, encode_field(FType.RESPONSE, STATUS=2))),
    "reserved_command": _bad_request(CMD=0x01),
    "impossible_length/read across 256": _bad_request(ADDR=0xF0 >> 2, LEN=7),
    "impossible_length/write beats": _bad_request(CMD=WRITE, ADDR=0x30 >> 2, LEN=7, NUMBEATS=0),
    "impossible_length/writefull misaligned": _bad_request(CMD=WRITE_FULL, ADDR=0x20 >> 2,
                                                           LEN=15, NUMBEATS=0),
    "impossible_length/writefull partial": _bad_request(CMD=WRITE_FULL, ADDR=0, LEN=7),
    "impossible_length/multi-beat atomic": _bad_request(CMD=ATOMIC_R, NUMBEATS=1),
    "reserved_status/write": _control_flits((0, encode_field(FType.RESPONSE, STATUS=1))),
    "reserved_status/read": _control_flits((0, encode_field(FType.RESPONSE, STATUS=0xF, RDWR=1))),
    "misplaced_poison/control": [F(tl.MSG_POISON, 0, m0=True)],
    "misplaced_poison/mandatory nop": [F(place(0, request_field(_read(), 0)), tl.MSG_POISON,
                                         m1=True)],
    "misplaced_poison/byte enables": _write64_flits(be_poisoned=True),
    "unknown_message": [F(0x02, 0, m0=True)],
    "mandatory_nop": [F(place(0, request_field(_read(), 0)), 1)],
    "catch_overrun": _catch_overrun(),
    "buffer_overrun": _control_flits((0, request_field(_read(vc=1), 0)),
                                     (4, request_field(_read(vc=1), 0))),
    "compressed_request": _control_flits((0, encode_field(FType.COMPRESSED_REQUEST))),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_is_fatal(case):
    kind = case.split("/")[0]
    assert kind in tl.ERROR_KINDS
    buffers = {cls: dict.fromkeys(SLOTS, 10_000) for cls in CLASSES}
    buffers["req_cmd"]["vc1"] = 1
    u = Unpacker(buffers=buffers)
    flits = MALFORMED[case]
    for flit in flits:
        u.feed(flit)
    assert u.error == kind and u.errors == {kind: 1}
    delivered = len(u.requests), len(u.responses)
    u.feed(_control_flits((0, request_field(_read(), 0)))[0])   # a good flit, dropped
    u.feed(F(tl.MSG_INIT_DONE, 0, m0=True))
    assert (len(u.requests), len(u.responses)) == delivered and not u.peer_init_done
    assert u.errors == {kind: 1} and u.dropped_flits == 3
    assert u.flits == len(flits) + 2


def test_error_drops_its_whole_flit():
    """The swapped final data half completes a request in the flit whose control is bad:
    nothing of that flit is delivered."""
    r = make_request(random.Random(42), WRITE_FULL, 0, 64)
    d = halves(r.data[0])
    u = feed([F(place(0, request_field(r, 0)), d[0]), F(place(0, 0x7 << 28), d[1])])
    assert u.error == "reserved_ftype" and u.requests == []


def test_buffers_freed_by_release():
    u = Unpacker(buffers={"req_cmd": {"vc1": 1}})
    for _ in range(3):
        u.feed(_control_flits((0, request_field(_read(vc=1), 0)))[0])
        u.release("req_cmd", "vc1", 1)
    assert u.error is None and len(u.requests) == 3
    with pytest.raises(ValueError):
        u.release("req_cmd", "vc1", 1)


# --- Several errors in one flit (README §4) ------------------------------------------------------

def test_parse_control_reads_past_malformed_tops():
    """A malformed top stands for its pair of sectors; reading goes on below it, and each group
    of four sectors is read whatever the other holds."""
    fc = fc_field("pool", {"req_cmd": 1})
    half = (place(7, 0x7 << 28) | place(5, fc) | place(4, fc)      # reserved FTYPE at 7
            | place(2, FType.COMPRESSED_REQUEST << 28)             # two sectors topped at 2
            | place(1, fc) | place(0, fc))
    assert [(s, t, p) for s, t, _, p in parse_control(half)] == [
        (0, FType.FLOW_CONTROL, None), (1, FType.FLOW_CONTROL, None), (2, None, "footprint"),
        (3, FType.FLOW_CONTROL, None), (4, FType.FLOW_CONTROL, None),
        (5, FType.FLOW_CONTROL, None), (7, None, "reserved_ftype")]
    # a request topped at sector 5 is malformed; sector 4 belongs to its pair, sector 3 is the
    # lower group's top and sector 2 (below a one-sector field) is a top again
    half = place(2, request_field(_read(addr=0x100), 0))
    assert [(s, p) for s, _, _, p in parse_control(half)] == [
        (0, None), (1, None), (2, "reserved_ftype"), (3, None), (5, "footprint"), (6, None),
        (7, None)]


_RESERVED_COMMAND = encode_field(FType.REQUEST, CMD=0x01, POOL=1)
_IMPOSSIBLE_LENGTH = encode_field(FType.REQUEST, CMD=READ, ADDR=63, LEN=1, POOL=1)
_RESERVED_STATUS = encode_field(FType.RESPONSE, STATUS=1, POOL=1)
_COMPRESSED_REQUEST = encode_field(FType.COMPRESSED_REQUEST, POOL=1)
_VC_READ = request_field(_read(vc=2), 0)        # POOL = 0: VC credits, none advertised

#: One flit, two or more malformations, and the kind counted: within the lower half the kind
#: listed first in ERROR_KINDS, whatever the sector order; an upper-half error only when the
#: lower half shows none.
SEVERAL = {
    # in one control half, the kind order against the sector order
    "status_then_command": (F(place(0, _RESERVED_STATUS) | place(4, _RESERVED_COMMAND), 0),
                            "reserved_command"),
    "compressed_then_status": (F(place(0, _COMPRESSED_REQUEST) | place(2, _RESERVED_STATUS), 0),
                               "reserved_status"),
    "compressed_then_overrun": (F(place(0, _COMPRESSED_REQUEST) | place(4, _VC_READ), 0),
                                "buffer_overrun"),
    "length_then_command": (F(place(0, _IMPOSSIBLE_LENGTH) | place(4, _RESERVED_COMMAND), 0),
                            "reserved_command"),
    "command_then_ftype": (F(place(0, _RESERVED_COMMAND) | place(7, 0x7 << 28), 0),
                           "reserved_ftype"),
    "footprint_then_ftype": (F(place(2, request_field(_read(addr=0x100), 0)), 0),
                             "reserved_ftype"),
    "footprint_and_status": (F(place(6, FType.RESPONSE << 28) | place(0, _RESERVED_STATUS), 0),
                             "footprint"),
    "three_kinds": (F(place(0, _COMPRESSED_REQUEST) | place(2, _RESERVED_STATUS)
                      | place(4, _IMPOSSIBLE_LENGTH), 0), "impossible_length"),
    # lower half against upper half: the lower half's error, though listed later
    "lower_message_upper_poison": (F(0x55, tl.MSG_POISON, m0=True, m1=True), "unknown_message"),
    "lower_overrun_upper_poison": (F(place(0, _VC_READ), tl.MSG_POISON, m1=True),
                                   "buffer_overrun"),
    "lower_compressed_upper_nop": (F(place(0, _COMPRESSED_REQUEST), 1 << 100),
                                   "compressed_request"),
    # the same kind in both halves: counted once
    "poison_tie": (F(tl.MSG_POISON, tl.MSG_POISON, m0=True, m1=True), "misplaced_poison"),
    "message_tie": (F(0x55, 0x66, m0=True, m1=True), "unknown_message"),
}


@pytest.mark.parametrize("case", sorted(SEVERAL))
def test_several_errors_count_one_kind(case):
    flit, kind = SEVERAL[case]
    u = Unpacker(buffers=PLENTY)
    u.feed(F(tl.MSG_INIT_DONE, 0, m0=True))
    u.feed(flit)
    assert u.error == kind and u.errors == {kind: 1}
    assert u.requests == u.responses == [] and u.granted == credit_table()
    assert u.consumed == credit_table() and u.trace == ["MN"]
    u.feed(_control_flits((0, request_field(_read(), 0)))[0])      # a good flit, dropped
    assert u.errors == {kind: 1} and u.dropped_flits == 2 and u.requests == []


def test_each_error_alone_in_the_several_cases():
    """Every malformation used above is an error on its own (so each case really shows two)."""
    alone = {
        "reserved_command": F(place(4, _RESERVED_COMMAND), 0),
        "impossible_length": F(place(0, _IMPOSSIBLE_LENGTH), 0),
        "reserved_status": F(place(2, _RESERVED_STATUS), 0),
        "compressed_request": F(place(0, _COMPRESSED_REQUEST), 0),
        "buffer_overrun": F(place(4, _VC_READ), 0),
        "footprint": F(place(6, FType.RESPONSE << 28), 0),
        "misplaced_poison": F(0, tl.MSG_POISON, m1=True),
        "mandatory_nop": F(0, 1 << 100),
        "unknown_message": F(0, 0x66, m1=True),
    }
    for kind, flit in alone.items():
        assert feed([flit], buffers=PLENTY).error == kind, kind


# --- The compact packer's policy (README §3, *Compact packer*), worked by hand ----------------

def _compact(requests, responses, granted=PLENTY, advertise=None):
    p = Packer(advertise or {}, granted, compact=True)
    for r in requests:
        p.push_request(r)
    for r in responses:
        p.push_response(r)
    return p, p.drain()


def test_compact_fills_a_request_then_responses():
    """Round 1: a read (sectors 3-0) and a write response (4); round 2: a second read would
    end at 8 and pass the response, so only responses join (5, 6, 7); round 5 adds nothing."""
    rng = random.Random(21)
    reads = [make_request(rng, READ, 0x100 * k, 64) for k in range(2)]
    writes = [make_write_response(rng) for _ in range(5)]
    p, flits = _compact(reads, writes)
    assert p.issued[1:] == [(1, 4), (1, 1)]
    assert p.trace[1:] == ["CN", "CN"]
    half = flits[1].lower
    assert half == (place(0, request_field(reads[0], pool=1))
                    | sum(place(4 + k, response_field(w, pool=1)[1])
                          for k, w in enumerate(writes[:4])))
    assert_round_trip(reads + writes, feed(flits))


def test_compact_balance_caps_responses_while_reads_wait():
    """Six reads and eight 64-byte read responses: while a read waits, the responses of a
    control stay within ``a + lead + LEAD_SLACK`` (4): lead 0 gives 1 read + 4 responses (the
    half is full), lead -3 then 1 + 2, lead -4 then 1 + 1 twice; the responses gone, the last
    two reads share a control."""
    rng = random.Random(22)
    reads = [make_request(rng, READ, 0x100 * k, 64) for k in range(6)]
    data = [make_read_response(rng, 0) for _ in range(8)]
    p, flits = _compact(reads, data)
    assert [i for i in p.issued if i != (0, 0)] == [(1, 4), (1, 2), (1, 1), (1, 1), (2, 0)]
    assert p.lead == -4 + 2
    assert_round_trip(reads + data, feed(flits))


def test_compact_writes_are_not_capped():
    """A write (with data) does not hold responses back: 1 WriteFull + 4 write responses."""
    rng = random.Random(23)
    writes = [make_request(rng, WRITE_FULL, 0x100 * k, 256) for k in range(2)]
    done = [make_write_response(rng) for _ in range(8)]
    p, flits = _compact(writes, done)
    assert [i for i in p.issued if i != (0, 0)][:2] == [(1, 4), (1, 4)]
    assert_round_trip(writes + done, feed(flits))


def test_compact_credit_kind_is_the_first_fields():
    """The first response finds VC1 credits for itself and takes them; the next, of VC1 too,
    would need two: it waits for the next control, which (VC1 empty) goes to the pool, and
    the response of VC2 joins it there."""
    rng = random.Random(24)
    done = [make_write_response(rng, vc=1), make_write_response(rng, vc=1),
            make_write_response(rng, vc=2)]
    granted = {"rsp_cmd": {"vc1": 1, "pool": 2}, "rsp_data": {}}
    p, flits = _compact([], done, granted)
    assert [i for i in p.issued if i != (0, 0)] == [(0, 1), (0, 2)]
    assert p.credits["rsp_cmd"] == {"pool": 0, "vc0": 0, "vc1": 0, "vc2": 0, "vc3": 0}
    assert_round_trip(done, feed(flits))
