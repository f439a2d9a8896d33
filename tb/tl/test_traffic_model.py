# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the UPLI traffic golden model rtl/scaleup_ip/model/tl/traffic.py alone (pure Python).

The random words against known values; lane starts and the zero-start rule; every field within
the ranges of rtl/scaleup_ip/tl/traffic/README.md §2-4 over thousands of items for three seeds; the
streams drawn once per item or beat as §1 says; the items legal for the TL golden model
(``request_error`` and a Packer -> Unpacker round trip that delivers ``as_delivered``); the
channels independent of each other. The ``cacheable`` mode of §2 ("Cacheable requests"): its
fields by hand, its share and ranges, the other requests unchanged, every cacheable request
compressible, and a run through the packer and unpacker with the address-cache golden models.
"""

import collections
import dataclasses
import itertools

import pytest

from scaleup_ip.model.tl import flit as tl
from scaleup_ip.model.tl.addrcache import (
    AddrCacheConfig,
    RxAddressCache,
    TxAddressCache,
    compressible,
)
from scaleup_ip.model.tl import traffic as ut
from scaleup_ip.model.tl.flit import (
    CLASSES,
    OKAY,
    READ_STATUSES,
    WRITE_FULL,
    WRITE_STATUSES,
    Packer,
    ReadResponse,
    Request,
    Unpacker,
    WriteResponse,
)
from scaleup_ip.model.tl.traffic import (
    CACHEABLE_CMDS,
    CMDS,
    Lanes,
    UpliTraffic,
    as_delivered,
    beat_data,
    beat_error,
    bits,
    cacheable_region,
    cacheable_request_fields,
    channel_transfers,
    is_cacheable_draw,
    lane_start,
    request_fields,
    request_shape,
    splitmix64,
    take,
    transfers,
    xorshift64,
)

SEEDS = [0x0123_4567_89AB_CDEF, 0, 0xFFFF_FFFF_FFFF_FFFF]
N = 3000                    # items per channel and seed for the range checks
PLENTY = {cls: {"pool": 100_000} for cls in CLASSES}
M64 = (1 << 64) - 1


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: f"seed{s:#x}")
def sequences(request):
    seed = request.param
    print(f"upli_traffic seed {seed:#018x}")
    t = UpliTraffic(seed)
    return seed, t.first_requests(N), t.first_read_responses(N), t.first_write_responses(N)


# --- Random words [§1] ------------------------------------------------------------------------

def test_splitmix64_known_values():
    assert splitmix64(0) == 0xE220A8397B1DCDAF          # first output of SplitMix64 seeded 0
    # again step by step from the README formula, to show the increment comes first
    z = 0x9E3779B97F4A7C15
    z = ((z ^ z >> 30) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ z >> 27) * 0x94D049BB133111EB) % 2**64
    assert splitmix64(0) == z ^ z >> 31
    assert splitmix64(0x9E3779B97F4A7C15) == 0x6E789E6AA1B965F4     # its second output
    assert splitmix64(1) == 0x910A2DEC89025CC1          # first output of SplitMix64 seeded 1


def test_xorshift64_by_hand():
    # x = 1: x ^= x << 13 -> 0x2001; x ^= x >> 7 -> 0x2001 ^ 0x40 = 0x2041;
    # x ^= x << 17 -> 0x2041 ^ 0x4082_0000 = 0x4082_2041
    assert xorshift64(1) == 0x4082_2041
    # the top bits are dropped (modulo 2^64): bit 63 shifted left vanishes, then >> 7
    assert xorshift64(1 << 63) == (1 << 63) ^ (1 << 56)
    assert xorshift64(0) == 0
    x = 0xDEAD_BEEF_0BAD_F00D
    for _ in range(100):
        x = xorshift64(x)
        assert 0 < x <= M64


def test_bits():
    w = 0xF0F0_1234_5678_9ABC
    assert bits(w, 0, 4) == 0xC and bits(w, 4, 12) == 0xAB and bits(w, 60, 64) == 0xF
    assert bits(w, 63, 64) == 1 and bits(w, 0, 64) == w


@pytest.mark.parametrize("seed", SEEDS)
def test_lane_starts_and_steps(seed):
    print(f"upli_traffic seed {seed:#018x}")
    for stream, n in ut.LANES.items():
        lanes = Lanes(seed, stream, n)
        start = [seed ^ splitmix64(16 * stream + k) for k in range(n)]
        assert lanes.words == start == [lane_start(seed, stream, k) for k in range(n)]
        assert lanes.draw() == tuple(start)
        assert lanes.words == [xorshift64(w) for w in start]
        assert lanes.draw() == tuple(xorshift64(w) for w in start)
    # streams and lanes start apart
    all_starts = [lane_start(seed, s, k) for s, n in ut.LANES.items() for k in range(n)]
    assert len(set(all_starts)) == len(all_starts)


@pytest.mark.parametrize("stream, k", [(0, 0), (0, 2), (1, 9), (2, 0), (3, 4), (4, 0)])
def test_zero_start_becomes_one(stream, k):
    seed = splitmix64(16 * stream + k)
    print(f"upli_traffic seed {seed:#018x}")
    assert seed ^ splitmix64(16 * stream + k) == 0
    lanes = Lanes(seed, stream, ut.LANES[stream])
    assert lanes.words[k] == 1
    assert all(w for w in lanes.words)
    assert lanes.draw()[k] == 1 and lanes.draw()[k] == 0x4082_2041
    # the sequences of that seed are still well formed
    t = UpliTraffic(seed)
    assert len(t.first_requests(50) + t.first_read_responses(50) + t.first_write_responses(50)) \
        == 150


def test_seed_range():
    with pytest.raises(ValueError):
        UpliTraffic(1 << 64)
    with pytest.raises(ValueError):
        UpliTraffic(-1)


def test_beat_helpers():
    words = [0x0706_0504_0302_0100 + 0x0808_0808_0808_0808 * i for i in range(8)]
    beat = beat_data(words)
    assert beat == bytes(range(64))                     # byte j = bits 8j .. 8j+7
    assert int.from_bytes(beat, "little") == sum(w << 64 * i for i, w in enumerate(words))
    assert beat_data([0] * 7 + [0xFF << 56])[63] == 0xFF
    with pytest.raises(ValueError):
        beat_data(words[:7])
    assert [beat_error(m) for m in (0, 9, 10, 127, 128, 128 + 9, M64 & ~0x7F)] == [
        True, True, False, False, True, True, True]     # only misc[0:7] counts


def test_cmds_table():
    assert len(CMDS) == 32
    assert collections.Counter(CMDS)[0x03] == 5
    assert collections.Counter(CMDS)[0x28] == collections.Counter(CMDS)[0x29] == 4
    assert set(CMDS) == tl.LEGAL_COMMANDS
    assert ut.RD_ERROR_STATUS == [0x2, 0x3, 0x6, 0x8]
    assert ut.WR_ERROR_STATUS == [0x2, 0x3, 0x6, 0x8, 0xF, 0x2, 0x3, 0x6]


# --- Request shapes [§2], by hand ---------------------------------------------------------------

def h0_of(cmd_index, o, n, nb=0):
    return cmd_index | o << 5 | n << 11 | nb << 50


@pytest.mark.parametrize("h0, shape", [
    (h0_of(0, 0, 0), (0x03, 0, 4, 0)),                      # Read, scale(64) = 1
    (h0_of(4, 63, 255), (0x03, 252, 4, 0)),                 # scale(1) = 1 + 0
    (h0_of(0, 0, 255), (0x03, 0, 256, 0)),                  # scale(64) = 1 + 63
    (h0_of(5, 10, 128, 3), (0x08, 40, 4 * 28, 3)),          # vendor read: 1 + (128*54 >> 8)
    (h0_of(13, 15, 255), (0x28, 60, 4 * 49, 4 - 1)),        # Write 60 + 196 bytes: 4 beats
    (h0_of(13, 15, 0), (0x28, 60, 4, 0)),
    (h0_of(13, 16, 0), (0x28, 64, 4, 0)),                   # offset % 64 = 0
    (h0_of(17, 0b111110, 255), (0x29, 128, 128, 1)),        # WriteFull: o[0:2] = 2, scale(2)
    (h0_of(17, 0b000011, 0), (0x29, 192, 64, 0)),
    (h0_of(20, 0, 255), (0x29, 0, 256, 3)),
    (h0_of(22, 17, 255), (0x2C, 68, 4 * 47, 2)),            # 68 + 188 = 256: beats 1..3
    (h0_of(26, 31, 255), (0x30, 124, 4, 0)),                # atomic: scale(16 - 15) = 1
    (h0_of(27, 16, 255), (0x32, 64, 64, 0)),                # scale(16) = 16
    (h0_of(31, 63, 255, 2), (0x3F, 252, 4, 2)),             # vendor atomic: h0[50:52]
])
def test_request_shape_by_hand(h0, shape):
    assert request_shape(h0) == shape
    cmd, offset, nbytes, num_beats = shape
    assert tl.request_error(cmd, (1 << 40) | offset, nbytes // 4 - 1, num_beats) is None


def test_request_shape_every_header_legal():
    """All 2^19 values of h0[0:19] (cmd, o, n), with each vendor num_beats: legal for the TL."""
    for low in range(1 << 19):
        for nb in (0, 3):
            cmd, offset, nbytes, num_beats = request_shape(low | nb << 50)
            assert offset + nbytes <= 256 and nbytes % 4 == 0 and 4 <= nbytes
            err = tl.request_error(cmd, 0x1234_5600 | offset, nbytes // 4 - 1, num_beats)
            assert err is None, (hex(low), cmd, offset, nbytes, num_beats)
            if 0x08 <= cmd <= 0x0F or cmd >= 0x3C:
                assert num_beats == nb
            if nb:
                break


def test_first_items_by_hand():
    """The first write response and read response header of a seed, decoded from the words."""
    seed = 0x5555_AAAA_1234_8765
    w = lane_start(seed, ut.WR, 0)
    wr = UpliTraffic(seed).first_write_responses(1)[0]
    status = 0 if (w >> 33) & 0xF < 11 else ut.WR_ERROR_STATUS[(w >> 37) & 7]
    assert (wr.vc, wr.tag, wr.src_acc, wr.dst_acc, wr.status) == (
        w & 3, (w >> 2) & 0x7FF, (w >> 13) & 0x3FF, (w >> 23) & 0x3FF, status)
    r = lane_start(seed, ut.RD_HEADER, 0)
    rd = UpliTraffic(seed).first_read_responses(1)[0]
    assert (rd.vc, rd.tag, rd.src_acc, rd.dst_acc, rd.num_beats) == (
        r & 3, (r >> 2) & 0x7FF, (r >> 13) & 0x3FF, (r >> 23) & 0x3FF, (r >> 33) & 3)
    h0, h1, h2 = (lane_start(seed, ut.REQ_HEADER, k) for k in range(3))
    rq = UpliTraffic(seed).first_requests(1)[0]
    assert (rq.vc, rq.asi, rq.tag, rq.attr, rq.metadata) == (
        (h0 >> 19) & 3, (h0 >> 21) & 3, (h0 >> 23) & 0x7FF, (h0 >> 34) & 0xFF,
        (h0 >> 42) & 0xFF)
    assert (rq.addr >> 8, rq.src_acc, rq.dst_acc) == (
        h1 & ((1 << 49) - 1), (h1 >> 49) & 0x3FF, h2 & 0x3FF)


# --- Streams drawn once per item / beat [§1] ----------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_request_data_draws(seed):
    """Stream 1 is drawn once per OrigData beat of data commands, in order, and no more."""
    print(f"upli_traffic seed {seed:#018x}")
    header = Lanes(seed, ut.REQ_HEADER, 3)
    data = Lanes(seed, ut.REQ_DATA, 10)
    for r in UpliTraffic(seed).first_requests(500):
        h = header.draw()
        assert request_shape(h[0]) == (r.cmd, r.addr % 256, 4 * (r.length + 1), r.num_beats)
        for k in range(r.beats):
            d = data.draw()
            assert r.data[k] == beat_data(d[:8])
            assert r.byte_en[k] == (M64 if r.cmd == WRITE_FULL else d[8])
            assert r.error[k] == beat_error(d[9])


@pytest.mark.parametrize("seed", SEEDS)
def test_read_data_draws(seed):
    """Stream 2 once per read response, stream 3 once per beat."""
    print(f"upli_traffic seed {seed:#018x}")
    header = Lanes(seed, ut.RD_HEADER, 1)
    data = Lanes(seed, ut.RD_DATA, 9)
    for r in UpliTraffic(seed).first_read_responses(500):
        (w,) = header.draw()
        assert r.num_beats == bits(w, 33, 35)
        for k in range(r.num_beats + 1):
            d = data.draw()
            assert (r.data[k], r.error[k]) == (beat_data(d[:8]), beat_error(d[8]))


# --- Ranges over thousands of items [§2-4] ----------------------------------------------------

def test_request_ranges(sequences):
    seed, requests, _, _ = sequences
    cmds = collections.Counter(r.cmd for r in requests)
    assert set(cmds) == set(CMDS), f"seed {seed:#x}: missing {set(CMDS) - set(cmds)}"
    beats = errors = 0
    num_beats_seen = collections.defaultdict(set)
    for r in requests:
        assert isinstance(r, Request) and r.cmd in CMDS
        nbytes, offset = 4 * (r.length + 1), r.addr % 256
        assert r.addr < 1 << 57 and r.addr % 4 == 0
        assert offset + nbytes <= 256                       # within an aligned 256-byte block
        assert 0 <= r.num_beats <= 3
        num_beats_seen[r.cmd].add(r.num_beats)
        if r.cmd == WRITE_FULL:
            assert offset % 64 == 0 and nbytes % 64 == 0 and r.num_beats == nbytes // 64 - 1
            assert all(be == M64 for be in r.byte_en)
        elif r.cmd in (tl.ATOMIC_R, tl.ATOMIC_NR):
            assert r.num_beats == 0 and offset % 64 + nbytes <= 64
        elif r.cmd & 0x20 and r.cmd < 0x3C:
            assert r.num_beats == (offset % 64 + nbytes - 1) // 64
        if r.cmd & 0x20:
            assert len(r.data) == len(r.byte_en) == len(r.error) == r.num_beats + 1
            assert all(len(b) == 64 for b in r.data)
        else:
            assert r.data == r.byte_en == r.error == ()
        assert tl.request_error(r.cmd, r.addr, r.length, r.num_beats) is None
        beats += len(r.error)
        errors += sum(r.error)
    for cmd in list(range(0x08, 0x10)) + list(range(0x3C, 0x40)):
        assert len(num_beats_seen[cmd]) >= 3                # h0[50:52], any value
    assert num_beats_seen[WRITE_FULL] == {0, 1, 2, 3}
    assert 0.05 < errors / beats < 0.11, (errors, beats)    # 10/128 = 0.078
    for field, top in (("vc", 4), ("asi", 4), ("tag", 2048), ("attr", 256), ("metadata", 256),
                       ("src_acc", 1024), ("dst_acc", 1024)):
        values = {getattr(r, field) for r in requests}
        assert max(values) < top and len(values) >= min(top, N) // 4, field


def test_read_response_ranges(sequences):
    seed, _, reads, _ = sequences
    statuses = collections.Counter(r.status for r in reads)
    assert set(statuses) == READ_STATUSES
    assert 0.62 < statuses[OKAY] / N < 0.75                 # 11/16 = 0.6875
    beats = errors = 0
    singles = set()
    for r in reads:
        assert isinstance(r, ReadResponse) and r.status in READ_STATUSES
        assert len(r.data) == len(r.error) == r.num_beats + 1
        if r.num_beats:
            assert r.offset == 0 and r.last
        else:
            singles.add((r.offset, r.last))
        beats += len(r.error)
        errors += sum(r.error)
    assert {r.num_beats for r in reads} == {0, 1, 2, 3}
    assert singles == {(o, last) for o in range(4) for last in (False, True)}
    assert 0.05 < errors / beats < 0.11
    for field, top in (("vc", 4), ("tag", 2048), ("src_acc", 1024), ("dst_acc", 1024)):
        assert len({getattr(r, field) for r in reads}) >= top // 4


def test_write_response_ranges(sequences):
    seed, _, _, writes = sequences
    statuses = collections.Counter(w.status for w in writes)
    assert set(statuses) == WRITE_STATUSES
    assert 0.62 < statuses[OKAY] / N < 0.75
    # 0xF is 1 of the 8 error entries, 0x8 1, 0x2 .. 0x6 2 each
    assert statuses[0xF] < statuses[0x2] and statuses[0x8] < statuses[0x3]
    for field, top in (("vc", 4), ("tag", 2048), ("src_acc", 1024), ("dst_acc", 1024)):
        assert len({getattr(w, field) for w in writes}) >= top // 4


# --- Delivery and transfer counts [§5] ---------------------------------------------------------

def test_as_delivered_by_hand():
    beat = bytes(range(64))
    r = UpliTraffic(7).first_requests(1)[0]
    rq = dataclasses.replace(r, cmd=0x28, length=31, addr=0x100, num_beats=1,
                             data=(beat, beat), byte_en=(1, 2), error=(False, True))
    got = as_delivered(rq)
    poisoned = bytearray(beat)
    poisoned[0] = poisoned[32] = 0x20
    assert got.data == (beat, bytes(poisoned)) and got.error == (False, True)
    assert got.src_acc == rq.src_acc and got.byte_en == rq.byte_en
    okay = ReadResponse(vc=1, tag=2, src_acc=3, dst_acc=4, num_beats=0, offset=2, last=False,
                        status=OKAY, data=(beat,), error=(True,))
    assert as_delivered(okay) == dataclasses.replace(okay, src_acc=0, data=(bytes(poisoned),))
    bad = dataclasses.replace(okay, status=0x8, error=(False,))
    assert as_delivered(bad) == bad
    assert as_delivered(WriteResponse(1, 2, 3, 4, OKAY)) == WriteResponse(1, 2, 0, 4, OKAY)
    assert as_delivered(WriteResponse(1, 2, 3, 4, 0xF)) == WriteResponse(1, 2, 3, 4, 0xF)


def test_channel_transfers():
    t = UpliTraffic(11)
    for r in t.first_requests(200):
        assert channel_transfers(r) == {"req": 1, "orig": r.beats, "rd_rsp": 0, "wr_rsp": 0}
        assert transfers(r) == 1 + (r.num_beats + 1 if r.cmd & 0x20 else 0)
    for r in t.first_read_responses(200):
        assert channel_transfers(r) == {"req": 0, "orig": 0, "rd_rsp": r.num_beats + 1,
                                        "wr_rsp": 0}
    for w in t.first_write_responses(20):
        assert channel_transfers(w) == {"req": 0, "orig": 0, "rd_rsp": 0, "wr_rsp": 1}
        assert transfers(w) == 1
    with pytest.raises(TypeError):
        channel_transfers(object())


# --- Legal for the TL golden model: round trip ------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_tl_round_trip(seed):
    """A few hundred mixed items through the TL model's Packer and Unpacker: each channel
    delivers exactly as_delivered(item), in order; no receive error."""
    print(f"upli_traffic seed {seed:#018x}")
    round_trip(UpliTraffic(seed))


def round_trip(t, n_requests=200, tx_cache=None, rx_cache=None):
    """Mixed items of ``t`` through Packer -> Unpacker (with the given address caches); each
    channel delivers exactly as_delivered(item), in order. Returns the packer."""
    requests, reads, writes = t.first_requests(n_requests), t.first_read_responses(150), \
        t.first_write_responses(150)
    p = Packer({}, PLENTY, address_cache=tx_cache)
    # interleave the three channels (responses share one TL queue in push order)
    order = itertools.cycle(["req", "rd", "req", "wr", "rd"])
    queues = {"req": iter(requests), "rd": iter(reads), "wr": iter(writes)}
    left = len(requests) + len(reads) + len(writes)
    while left:
        item = next(queues[next(order)], None)
        if item is None:
            continue
        left -= 1
        (p.push_request if isinstance(item, Request) else p.push_response)(item)
    flits = p.drain()
    u = Unpacker(address_cache=rx_cache)
    for flit in flits:
        u.feed(flit)
    assert u.error is None and u.idle() and u.peer_init_done
    assert u.requests == [as_delivered(r) for r in requests]
    assert [r for r in u.responses if isinstance(r, ReadResponse)] == \
        [as_delivered(r) for r in reads]
    assert [w for w in u.responses if isinstance(w, WriteResponse)] == \
        [as_delivered(w) for w in writes]
    items = requests + reads + writes
    beats = sum(channel_transfers(i)["orig"] + channel_transfers(i)["rd_rsp"] for i in items)
    assert u.data_halves == 2 * beats
    assert u.poisoned_halves == 2 * sum(sum(i.error) for i in items)
    return p


# --- Independence of the channels ---------------------------------------------------------------

def test_channels_independent():
    seed = SEEDS[0]
    print(f"upli_traffic seed {seed:#018x}")
    alone = UpliTraffic(seed)
    ref = (alone.first_requests(300), alone.first_read_responses(300),
           alone.first_write_responses(300))
    t = UpliTraffic(seed)
    its = [t.requests(), t.read_responses(), t.write_responses()]
    got = ([], [], [])
    # uneven interleaving, read responses and write responses drawn well ahead of requests
    for step in range(900):
        k = (0, 1, 1, 2, 2, 2)[step % 6]
        if len(got[k]) < 300:
            got[k].append(next(its[k]))
    for k in range(3):
        while len(got[k]) < 300:
            got[k].append(next(its[k]))
    assert got == ref
    # two iterators of one channel do not share lanes either
    a, b = t.requests(), t.requests()
    take(b, 50)
    assert take(a, 300) == ref[0]
    assert take(UpliTraffic(seed).requests(), 300) == ref[0]      # deterministic
    assert take(UpliTraffic(seed ^ 1).requests(), 300) != ref[0]


# --- Cacheable requests [§2 "Cacheable requests"] ---------------------------------------------

def h2_of(sel, cmd_index, units_index, block_index, dst, k, low=0, high=0):
    """An ``h2`` word: h2[0:10] = low, [10] sel, [11:13] cmd, [13:15] units - 1,
    [15:17] block draw, [17:20] dst_acc, [20:22] region, [22:64] high."""
    return (low | sel << 10 | cmd_index << 11 | units_index << 13 | block_index << 15
            | dst << 17 | k << 20 | high << 22)


def test_cacheable_regions():
    # splitmix64(256) step by step from the README formula, then bits 0..36
    z = (256 + 0x9E3779B97F4A7C15) % 2**64
    z = ((z ^ z >> 30) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ z >> 27) * 0x94D049BB133111EB) % 2**64
    assert z ^ z >> 31 == 0x6602_D201_E324_653F
    assert cacheable_region(0, 0) == 0x6602_D201_E324_653F & ((1 << 37) - 1) == 0x1_E324_653F
    assert cacheable_region(7, 3) == splitmix64(256 + 31) % (1 << 37) == 0x4_4606_1D63
    assert cacheable_region(2, 1) == splitmix64(265) % (1 << 37)
    regions = {cacheable_region(d, k) for d in range(8) for k in range(4)}
    assert len(regions) == 32 and max(regions) < 1 << 37
    for bad in ((8, 0), (0, 4), (-1, 0)):
        with pytest.raises(ValueError):
            cacheable_region(*bad)


# (units - 1, h2[15:17]) -> block offset: 64 * ((h2[15:17] * (5 - units)) >> 2)
BLOCKS = {(0, 0): 0, (0, 1): 64, (0, 2): 128, (0, 3): 192,
          (1, 0): 0, (1, 1): 0, (1, 2): 64, (1, 3): 128,        # 3x >> 2
          (2, 0): 0, (2, 1): 0, (2, 2): 64, (2, 3): 64,         # 2x >> 2
          (3, 0): 0, (3, 1): 0, (3, 2): 0, (3, 3): 0}


@pytest.mark.parametrize("ui, x", sorted(BLOCKS))
def test_cacheable_block_by_hand(ui, x):
    f = cacheable_request_fields(0, 0, h2_of(0, 1, ui, x, 0, 0))       # a Write
    assert f["addr"] == cacheable_region(0, 0) << 20 | BLOCKS[ui, x]
    assert f["length"] == 16 * (ui + 1) - 1 and f["num_beats"] == ui
    assert BLOCKS[ui, x] + 64 * (ui + 1) <= 256


# h0: vc 2, asi 1, tag 0x5A5, attr 0xAB (unused), metadata byte 0xFD ([2:0] = 5), vendor
# num_beats 3 (unused), cmd index 13 (unused); h1: ReqAddr[56:8] draw with h1[0:12] = 0xABC,
# src_acc 0x2C3, top bits set; h2: h2[0:10] = 0x3FF and h2[22:64] all ones (unused).
H0 = 13 | 2 << 19 | 1 << 21 | 0x5A5 << 23 | 0xAB << 34 | 0xFD << 42 | 3 << 50 | 0xFFF << 52
H1 = 0xABC | 0x1_2345_6789 << 12 | 0x2C3 << 49 | 0x1F << 59
HIGH = (1 << 42) - 1


@pytest.mark.parametrize("h2, want", [
    # Read (index 0), 64 bytes, block 3 -> 192, dst 0, region 0
    (h2_of(0, 0, 0, 3, 0, 0, 0x3FF, HIGH),
     dict(cmd=0x03, attr=0xFF, length=15, num_beats=0, dst_acc=0,
          addr=0x1_E324_653F << 20 | 0xABC << 8 | 192)),
    # Write (index 1), 128 bytes, h2[15:17] = 3 -> (3 * 3) >> 2 = 2 -> 128, dst 5, region 2
    (h2_of(0, 1, 1, 3, 5, 2, 0x3FF, HIGH),
     dict(cmd=0x28, attr=0x00, length=31, num_beats=1, dst_acc=5,
          addr=cacheable_region(5, 2) << 20 | 0xABC << 8 | 128)),
    # WriteFull (index 2), 192 bytes, h2[15:17] = 2 -> (2 * 2) >> 2 = 1 -> 64, dst 7, region 3
    (h2_of(0, 2, 2, 2, 7, 3, 0x3FF, HIGH),
     dict(cmd=0x29, attr=0x00, length=47, num_beats=2, dst_acc=7,
          addr=0x4_4606_1D63 << 20 | 0xABC << 8 | 64)),
    # Read (index 3), 256 bytes, block 0 whatever h2[15:17], dst 3, region 1
    (h2_of(0, 3, 3, 3, 3, 1),
     dict(cmd=0x03, attr=0xFF, length=63, num_beats=0, dst_acc=3,
          addr=cacheable_region(3, 1) << 20 | 0xABC << 8)),
])
def test_cacheable_fields_by_hand(h2, want):
    f = cacheable_request_fields(H0, H1, h2)
    assert f == dict(want, vc=2, asi=1, tag=0x5A5, metadata=5, src_acc=0x2C3)
    assert f["addr"] >> 8 & 0xFFF == 0xABC and f["addr"] < 1 << 57
    assert compressible(f["cmd"], f["attr"], f["length"], f["addr"], f["metadata"])
    assert tl.request_error(f["cmd"], f["addr"], f["length"], f["num_beats"]) is None
    # the ordinary request of the same draw: a Write (index 13), dst_acc = h2[0:10]
    o = request_fields(H0, H1, h2)
    assert (o["cmd"], o["attr"], o["metadata"], o["dst_acc"]) == (0x28, 0xAB, 0xFD, h2 & 0x3FF)
    assert is_cacheable_draw(h2) and not is_cacheable_draw(h2 | 1 << 10)


def test_cacheable_first_request_by_hand():
    """The first request of seeds whose first h2[10] is 0, and 1: from the lane starts."""
    starts = {}
    for seed in itertools.count(1):
        h = tuple(lane_start(seed, ut.REQ_HEADER, k) for k in range(3))
        starts.setdefault(bits(h[2], 10, 11), (seed, h))
        if len(starts) == 2:
            break
    seed, (h0, h1, h2) = starts[0]
    rq = UpliTraffic(seed, cacheable=True).first_requests(1)[0]
    units = 1 + (h2 >> 13) % 4
    cmd = [0x03, 0x28, 0x29, 0x03][(h2 >> 11) % 4]
    dst = (h2 >> 17) % 8
    block = 64 * (((h2 >> 15) % 4 * (5 - units)) >> 2)
    region = splitmix64(256 + 4 * dst + (h2 >> 20) % 4) % 2**37
    assert (rq.cmd, rq.length, rq.dst_acc, rq.addr) == (
        cmd, 16 * units - 1, dst, region << 20 | (h1 % 4096) << 8 | block)
    assert (rq.vc, rq.asi, rq.tag, rq.metadata, rq.src_acc) == (
        (h0 >> 19) & 3, (h0 >> 21) & 3, (h0 >> 23) & 0x7FF, (h0 >> 42) & 7, (h1 >> 49) & 0x3FF)
    assert rq.attr == (0xFF if cmd == 0x03 else 0) and rq.beats == (units if cmd & 0x20 else 0)
    assert rq != UpliTraffic(seed).first_requests(1)[0]
    seed, _ = starts[1]
    assert UpliTraffic(seed, cacheable=True).first_requests(1) == \
        UpliTraffic(seed).first_requests(1)


def _walk(seed, n):
    """``n`` cacheable-mode requests with the stream 0 draw of each, checking the stream 1
    draws of their beats on the way (one per beat, be or all ones, error from misc)."""
    header = Lanes(seed, ut.REQ_HEADER, 3)
    data = Lanes(seed, ut.REQ_DATA, 10)
    out = []
    for r in UpliTraffic(seed, cacheable=True).first_requests(n):
        h = header.draw()
        for k in range(r.beats):
            d = data.draw()
            assert r.data[k] == beat_data(d[:8])
            assert r.byte_en[k] == (M64 if r.cmd == WRITE_FULL else d[8])
            assert r.error[k] == beat_error(d[9])
        out.append((h, r))
    return out


def header_of(r):
    """The header fields of a request (all but its beats), as a dict."""
    return {f.name: getattr(r, f.name) for f in dataclasses.fields(r)
            if f.name not in ("data", "byte_en", "error")}


@pytest.mark.parametrize("seed", SEEDS)
def test_cacheable_mode(seed):
    print(f"upli_traffic seed {seed:#018x}")
    walked = _walk(seed, N)
    plain = UpliTraffic(seed, cacheable=False).first_requests(N)
    assert plain == UpliTraffic(seed).first_requests(N)
    cacheable = [r for (h, r) in walked if is_cacheable_draw(h[2])]
    assert 0.45 < len(cacheable) / N < 0.55
    for (h, r), p in zip(walked, plain):
        if is_cacheable_draw(h[2]):
            assert header_of(r) == cacheable_request_fields(*h)
        else:
            assert header_of(r) == header_of(p)             # unchanged but for the beats
            assert header_of(r) == request_fields(*h)
    seen = collections.defaultdict(set)
    for r in cacheable:
        nbytes = 4 * (r.length + 1)
        assert r.cmd in (tl.READ, tl.WRITE, WRITE_FULL)
        assert 64 <= nbytes <= 256 and nbytes % 64 == 0 and r.addr % 64 == 0
        assert r.addr % 256 + nbytes <= 256
        assert 0 <= r.dst_acc < 8
        assert r.addr >> 20 in {cacheable_region(r.dst_acc, k) for k in range(4)}
        assert r.attr == (0xFF if r.cmd == tl.READ else 0x00) and r.metadata < 8
        assert r.num_beats == (nbytes // 64 - 1 if r.cmd & 0x20 else 0)
        assert compressible(r.cmd, r.attr, r.length, r.addr, r.metadata)
        seen["cmd"].add(r.cmd)
        seen["bytes"].add(nbytes)
        seen["region"].add((r.dst_acc, r.addr >> 20))
        seen["offset"].add((nbytes, r.addr % 256))
    assert seen["cmd"] == {tl.READ, tl.WRITE, WRITE_FULL}
    assert seen["bytes"] == {64, 128, 192, 256} and len(seen["region"]) == 32
    assert len(seen["offset"]) == 4 + 3 + 2 + 1              # every place in the block
    for _, r in walked:
        assert tl.request_error(r.cmd, r.addr, r.length, r.num_beats) is None
    # responses do not depend on the mode
    on, off = UpliTraffic(seed, cacheable=True), UpliTraffic(seed)
    assert on.first_read_responses(200) == off.first_read_responses(200)
    assert on.first_write_responses(200) == off.first_write_responses(200)


@pytest.mark.parametrize("seed", SEEDS)
def test_cacheable_tl_round_trip(seed):
    """Cacheable mode through Packer -> Unpacker, without address caches."""
    print(f"upli_traffic seed {seed:#018x}")
    round_trip(UpliTraffic(seed, cacheable=True))


@pytest.mark.parametrize("seed", SEEDS)
def test_cacheable_compress(seed):
    """With 4-way 1024-row address caches indexed by DSTACCID (adaptive policy), most
    cacheable requests go compressed, and everything arrives intact, caches in lock-step."""
    print(f"upli_traffic seed {seed:#018x}")
    config = AddrCacheConfig(ways=4, rows=1024)
    tx, rx = TxAddressCache(config), RxAddressCache(config, index="DSTACCID")
    t = UpliTraffic(seed, cacheable=True)
    p = round_trip(t, 1000, tx, rx)
    n_cacheable = sum(is_cacheable_draw(h[2]) for h in take(_headers(seed), 1000))
    assert tx.compressed == p.compressed_sent == rx.expansions
    assert tx.compressed > 0.3 * n_cacheable, (tx.counters(), n_cacheable)
    assert rx.errors == 0 and rx.loads == tx.loads and tx.backoff_entries == 0
    for acc in range(8):
        for way in range(4):
            assert tx.entry(acc, way) == rx.entry(acc, way)


def _headers(seed):
    lanes = Lanes(seed, ut.REQ_HEADER, 3)
    while True:
        yield lanes.draw()


def test_cacheable_cmds_table():
    assert CACHEABLE_CMDS == [tl.READ, tl.WRITE, WRITE_FULL, tl.READ]
    assert set(CACHEABLE_CMDS) == set(tl.COMPRESSED_COMMANDS.values())
