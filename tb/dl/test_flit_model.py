# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the UALink DL flit golden model rtl/scaleup_ip/model/dl/flit.py alone (no simulator).

The spec's mapping examples (Figures 6-6, 6-7, 6-8) built with the packer and checked byte by
byte; back-to-back packing against positions worked out by hand; seeded random TL flit
availability through the unpacker and the rules checker; one hand-broken flit per rule; the CRC
against a literal long division (IEEE 802.3 clause 3.2.9) and every single-bit error.

Expected values are written by hand from the spec (the CRC's by a literal long division), never
computed with the model; the model only builds inputs (and re-makes the CRC of edited flits).
"""

import itertools
import random
from fractions import Fraction

import pytest

from scaleup_ip.model.dl import flit as dl
from scaleup_ip.model.dl.flit import (
    DlPayload,
    FlitError,
    ListSource,
    Packer,
    RandomSource,
    RulesChecker,
    ScriptedSource,
    TlFlit,
    Unpacker,
    assemble,
    check,
    crc_field,
    crc_ok,
    full_load_rate,
    segment_header,
    unpack,
)

PAYLOAD_BIT = 1 << 20               # flit header "payload" [UALink 1.0 Tables 6-14, 6-15]
G = 0x04C1_1DB7                     # 802.3 generator polynomial, without x^32 [§3.2.9]


# --- Helpers ------------------------------------------------------------------------------------

def tl(n, m0=False, m1=False):
    """TL flit number ``n``: 64 bytes that differ from every other number's."""
    return TlFlit(random.Random(n).randbytes(64), m0, m1)


def numbered(messages=None):
    """Endless TL flits 0, 1, 2, ...; ``messages(n)`` gives (m0, m1)."""
    for n in itertools.count():
        yield tl(n, *(messages(n) if messages else (False, False)))


def sector(payload, k):
    return payload.data[4 * k:4 * k + 4]


def header(payload, seq=0):
    """A flit header with the right payload bit (and, for variety, a sequence number)."""
    return (0 if payload.nop else PAYLOAD_BIT) | (seq % 512) << 8


def frames(payloads):
    return [assemble(p, header(p, k)) for k, p in enumerate(payloads)]


def pack(source, packer=None, limit=10_000):
    """Pack DL flits until the source is empty and no carry-over is left."""
    packer = packer or Packer()
    out = []
    while not source.empty or packer.carry:
        out.append(packer.pack(source))
        assert len(out) < limit
    return out


def full_load(dl_flits, messages=None):
    """``dl_flits`` DL flits packed with a TL flit available at every decision point."""
    packer, source = Packer(), ListSource(numbered(messages))
    return [packer.pack(source) for _ in range(dl_flits)], source


def nop_payload():
    return DlPayload(bytes(628), bytes(5), (), 0, 0)


def recrc(flit):
    """``flit`` (bytes or bytearray, edited by hand) with its CRC made good again."""
    flit = bytes(flit)
    return flit[:636] + crc_field(flit)


def _clause_3_2_9(data):
    """802.3 §3.2.9 taken literally: bits in transmit order (LSB of each octet first), the first
    32 complemented, times x^32, divided by G(x), remainder complemented. Returned as a
    polynomial: bit k is the coefficient of x^k."""
    bits = [(byte >> i) & 1 for byte in data for i in range(8)]
    bits = [b ^ 1 if k < 32 else b for k, b in enumerate(bits)] + [0] * 32
    remainder = 0
    for b in bits:                      # long division, the first bit the highest power
        remainder = (remainder << 1) | b
        if remainder >> 32:
            remainder ^= (1 << 32) | G
    return remainder ^ 0xFFFF_FFFF


# --- Sizes and encodings ------------------------------------------------------------------------

def test_table_6_1():
    assert dl.SEGMENT_SECTORS == (32, 32, 32, 31, 30)
    assert dl.SEGMENT_STARTS == (0, 32, 64, 96, 127)
    assert dl.SEGMENT_ENDS == (32, 64, 96, 127, 157)
    sizes = [[hi - lo + 1 for lo, hi in halves] for halves in dl.HALF_SEGMENTS]
    assert sizes == [[16, 16], [16, 16], [16, 16], [16, 15], [16, 14]]
    assert (dl.PAYLOAD_SECTORS, dl.PAYLOAD_BYTES) == (157, 628)
    # 628 payload + 3 flit header + 5 segment header + 4 CRC bytes [§6.4.2.2 note]
    assert (dl.FH_OFFSET, dl.SH_OFFSET, dl.CRC_OFFSET) == (628, 631, 636)


def test_segment_header_bits():
    # Table 6-2: TL Flit[0] present bit 4, Message[0] bits 3:2; TL Flit[1] bit 7, Message[1] 6:5
    assert segment_header() == 0x00
    assert segment_header(tl(0)) == 0x10
    assert segment_header(tl(0, m0=True)) == 0x14
    assert segment_header(tl(0, m1=True)) == 0x18
    assert segment_header(None, tl(0)) == 0x80
    assert segment_header(None, tl(0, m0=True)) == 0xA0
    assert segment_header(None, tl(0, m1=True)) == 0xC0
    assert segment_header(tl(0, True, True), tl(1, True, True)) == 0xFC


def test_tl_flit():
    assert TlFlit.from_int(0xAB << 8 * 32).data[32] == 0xAB        # upper half from byte 32
    assert TlFlit.from_int(12345, True).value == 12345
    assert tl(3).sectors[1] == tl(3).data[4:8]
    with pytest.raises(ValueError, match="a TL flit is 64 bytes"):
        TlFlit(bytes(63))


def test_assemble_header_bytes():
    p, = pack(ListSource([tl(0)]))
    flit = assemble(p, 0x1A_3456)                  # bit 20 set: a payload flit
    assert flit[628:631] == bytes([0x56, 0x34, 0x1A])
    assert flit[631:636] == bytes([0x10, 0, 0, 0, 0])
    assert dl.header_of(flit) == 0x1A_3456 and not dl.is_nop(flit)
    with pytest.raises(ValueError, match="payload bit is wrong for a payload flit"):
        assemble(p, 0x0A_3456)
    with pytest.raises(ValueError, match="payload bit is wrong for a NOP flit"):
        assemble(nop_payload(), PAYLOAD_BIT)
    with pytest.raises(ValueError, match="a flit header is 24 bits"):
        assemble(p, 1 << 24)


# --- The spec's examples ------------------------------------------------------------------------

def test_figure_6_6():
    """TL Flit[0] starts in segment 0 with no carry-over: TL sector k in DL sector k, SH0 holds
    TL Flit[0] present and its message bits."""
    f = tl(7, m0=True)
    source = ListSource([f])
    p = Packer().pack(source)
    assert p.data[:64] == f.data and p.data[64:] == bytes(564)
    assert p.segment_headers == bytes([0x14, 0, 0, 0, 0])
    assert p.starts == ((0, f),) and (p.carry_in, p.carry_out, p.nop) == (0, 0, False)
    # asked at step 4 of every segment (after the carry-over: none) and at step 7, which after
    # no TL Flit[0] is the second half segment
    asked = [(d.segment, d.slot, d.sector, took) for d, took in source.decisions]
    assert asked == [(0, 0, 0, True), (0, 1, 16, False), (1, 0, 32, False), (1, 1, 48, False),
                     (2, 0, 64, False), (2, 1, 80, False), (3, 0, 96, False),
                     (3, 1, 112, False), (4, 0, 127, False), (4, 1, 143, False)]
    assert unpack(frames([p])) == [[f]]


def test_figure_6_7_after_tl_flit_0():
    """TL Flit[1] starts at sector 16, right after TL Flit[0]."""
    a, b = tl(1, m0=True), tl(2, m1=True)
    p = Packer().pack(ListSource([a, b]))
    assert p.data[:64] == a.data and p.data[64:128] == b.data and p.data[128:] == bytes(500)
    assert p.segment_headers == bytes([0x14 | 0xC0, 0, 0, 0, 0])
    assert [s for s, _ in p.starts] == [0, 16]
    assert check(frames([p]), [a, b]) == [a, b]


def test_figure_6_7_after_zero_fill():
    """TL Flit[0] not available on the first tick: sectors 0..15 are zero filled and the TL flit
    available on the second tick starts at sector 16 as TL Flit[1] (§6.3.4 rules and step 4)."""
    b = tl(2, m0=True, m1=True)
    source = ScriptedSource([b], lambda d: d.slot == 1)
    p = Packer().pack(source)
    assert p.data[:64] == bytes(64) and p.data[64:128] == b.data and p.data[128:] == bytes(500)
    assert p.segment_headers == bytes([0xE0, 0, 0, 0, 0])
    assert check(frames([p]), [b]) == [b]


def test_figure_6_8_equivalent():
    """A TL flit starts at sector 143 of segment 4 after a carry-over, with no room for another.

    In the figure an alternative sector (127) and a carry-over (128..142) fill the first half of
    SH4. We send no alternative sectors, so the carry-over is 15 sectors at most (127..141): the
    same situation arises when a TL flit started in the last sector of SH3 (126) and no TL flit
    is available at step 4 in SH4. Sector 142 is then zero filled, and the TL flit of step 7
    starts at 143 -- announced as TL Flit[1], where the figure's special case names it TL
    Flit[0]. Its sectors 0..13 go to sectors 143..156, sectors 14..15 to sectors 0..1 of the
    next DL flit, exactly as in the figure.

    By hand: back to back, each DL flit is 157 = 9 * 16 + 13 sectors, TL flit n starts at
    overall sector 16n, and DL flit 10 starts at overall sector 1570, so it carries in
    16 * 99 - 1570 = 14 sectors and TL flits 98 + j start at 14 + 16j; TL flit 106 at 126.
    """
    target = 107
    messages = (lambda n: (n == target, n == target))
    source = ScriptedSource(numbered(messages), lambda d: d[:3] != (10, 4, 0))
    packer = Packer()
    payloads = [packer.pack(source) for _ in range(12)]
    p, nxt = payloads[10], payloads[11]
    assert p.carry_in == 14
    assert [s for s, _ in p.starts] == [14, 30, 46, 62, 78, 94, 110, 126, 143]
    assert p.starts[-1][1] == tl(target, True, True)
    assert p.segment_headers == bytes([0x90, 0x90, 0x90, 0x90, 0x80 | 0x60])
    assert sector(p, 126) == tl(106).sectors[0]
    assert [sector(p, k) for k in range(127, 142)] == tl(106).sectors[1:]
    assert sector(p, 142) == bytes(4)
    assert [sector(p, k) for k in range(143, 157)] == tl(target).sectors[:14]
    assert (p.carry_out, nxt.carry_in) == (2, 2)
    assert [sector(nxt, k) for k in (0, 1)] == tl(target).sectors[14:]
    assert nxt.starts[0] == (2, tl(target + 1))
    # SH4 asked twice (TL Flit[0] at 142: no; TL Flit[1] at 143: yes) and then no more
    asked = [(d.slot, d.sector, took) for d, took in source.decisions if d[:2] == (10, 4)]
    assert asked == [(0, 142, False), (1, 143, True)]
    flits = frames(payloads)
    done = unpack(flits)
    assert done[10][-1] == tl(106) and done[11][0] == tl(target, True, True)
    check(flits, list(itertools.islice(numbered(messages), sum(map(len, done)))))


# --- Back to back -------------------------------------------------------------------------------

#: Worked out by hand: back to back no sector is ever zero filled, so TL flit n occupies overall
#: sectors 16n .. 16n+15, and DL flit k holds overall sectors 157k .. 157k+156. Per DL flit:
#: carry-in sectors, start sectors, SH0..SH4.
BACK_TO_BACK = [
    (0, [0, 16, 32, 48, 64, 80, 96, 112, 128, 144], [0x90] * 5),
    (3, [3, 19, 35, 51, 67, 83, 99, 115, 131, 147], [0x90] * 5),
    (6, [6, 22, 38, 54, 70, 86, 102, 118, 134, 150], [0x90] * 5),
    (9, [9, 25, 41, 57, 73, 89, 105, 121, 137, 153], [0x90] * 5),
    # SH4: TL Flit[1] starts in the segment's last sector, 156
    (12, [12, 28, 44, 60, 76, 92, 108, 124, 140, 156], [0x90] * 5),
    # SH3: a 15-sector carry-over, then TL Flit[0] fills the segment: no room for TL Flit[1]
    (15, [15, 31, 47, 63, 79, 95, 111, 127, 143], [0x90, 0x90, 0x90, 0x10, 0x90]),
]


def test_back_to_back_first_flits():
    payloads, source = full_load(len(BACK_TO_BACK))
    n = 0
    for k, (p, (carry_in, starts, headers)) in enumerate(zip(payloads, BACK_TO_BACK)):
        assert (p.carry_in, [s for s, _ in p.starts]) == (carry_in, starts), k
        assert [f for _, f in p.starts] == [tl(n + j) for j in range(len(starts))], k
        assert p.segment_headers == bytes(headers), k
        n += len(starts)
    # the source is asked only where an unallocated sector is left: in DL flit 5, once in SH3
    asked = [d.segment for d, _ in source.decisions if d.dl_flit == 5]
    assert asked == [0, 0, 1, 1, 2, 2, 3, 4, 4]


def test_back_to_back_sector_exact():
    payloads, _ = full_load(200)
    for k, p in enumerate(payloads):
        for s in range(157):
            n, j = divmod(157 * k + s, 16)
            assert sector(p, s) == tl(n).sectors[j], (k, s)
        starts = [g - 157 * k for g in range(157 * k, 157 * (k + 1)) if g % 16 == 0]
        assert p.starts == tuple((s, tl((157 * k + s) // 16)) for s in starts), k
        assert p.carry_in == -157 * k % 16, k
        for seg, (first, end) in enumerate(zip((0, 32, 64, 96, 127), (32, 64, 96, 127, 157))):
            count = sum(first <= s < end for s in starts)
            assert p.segment_headers[seg] == [0x00, 0x10, 0x90][count], (k, seg)


def test_full_load_rate():
    assert full_load_rate(64) == Fraction(628, 64) == 9.8125
    # 157 = 13 (mod 16) and 13 is prime to 16: the carry-over first returns to 0 after 16 flits
    payloads, _ = full_load(33)
    assert [k for k, p in enumerate(payloads) if p.carry_in == 0] == [0, 16, 32]
    assert full_load_rate(16) == Fraction(157, 16)
    assert full_load_rate(1) == 9                   # 10 start, one is still being carried


def test_back_to_back_round_trip():
    sent = list(itertools.islice(numbered(lambda n: (n % 3 == 1, n % 5 == 2)), 1000))
    payloads = pack(ListSource(sent))
    assert len(payloads) == 102                     # 16000 sectors / 157 = 101.9
    assert payloads[-1].carry_out == 0
    flits = frames(payloads)
    assert [f for done in unpack(flits) for f in done] == sent
    assert check(flits, sent) == sent


def test_nothing_available_is_a_nop():
    source = ListSource([])
    p = Packer().pack(source)
    assert p.nop and p.data == bytes(628) and p.segment_headers == bytes(5)
    assert [(d.segment, d.slot, d.sector) for d, _ in source.decisions] == [
        (0, 0, 0), (0, 1, 16), (1, 0, 32), (1, 1, 48), (2, 0, 64), (2, 1, 80),
        (3, 0, 96), (3, 1, 112), (4, 0, 127), (4, 1, 143)]
    flit = assemble(p, 0x00_0500)
    assert dl.is_nop(flit) and check([flit]) == [] and unpack([flit]) == [[]]


def test_nop_while_carry_over_pending():
    """NOP flits replace payload flits while the TxReplay buffer is full [§6.6.1], also between
    two payload flits that share a TL flit: they carry nothing and keep the carry-over."""
    sent = [tl(n) for n in range(11)]
    a, b = pack(ListSource(sent))
    assert a.carry_out == 3                         # TL flit 9 starts at 144: 13 sectors fit
    flits = [assemble(a, PAYLOAD_BIT), assemble(nop_payload(), 0),
             assemble(nop_payload(), 0), assemble(b, PAYLOAD_BIT)]
    unpacker = Unpacker()
    assert unpacker.feed(flits[0]) == sent[:9] and unpacker.pending == 3
    assert unpacker.feed(flits[1]) == [] and unpacker.pending == 3
    assert unpacker.feed(flits[2]) == [] and unpacker.feed(flits[3]) == sent[9:]
    assert unpacker.error is None and unpacker.pending == 0
    assert check(flits, sent) == sent


# --- Random availability ------------------------------------------------------------------------

def random_case(seed, probability, count=300):
    rng = random.Random(seed)
    sent = [TlFlit(rng.randbytes(64), rng.random() < 0.5, rng.random() < 0.5)
            for _ in range(count)]
    source = RandomSource(sent, probability, seed)
    payloads = pack(source)
    # NOP flits "in their place" while the TxReplay buffer is full [§6.6.1]: anywhere
    stream = []
    for p in payloads:
        while rng.random() < 0.2:
            stream.append(nop_payload())
        stream.append(p)
    return sent, source, payloads, frames(stream)


@pytest.mark.parametrize("probability", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("seed", range(8), ids=lambda s: f"seed{s}")
def test_random_round_trip(seed, probability):
    sent, source, payloads, flits = random_case(seed, probability)
    assert [f for p in payloads for _, f in p.starts] == sent
    assert [(d.dl_flit, d.sector) for d, took in source.decisions if took] == [
        (k, s) for k, p in enumerate(payloads) for s, _ in p.starts]
    unpacker = Unpacker()
    got = [f for flit in flits for f in unpacker.feed(flit)]
    assert got == sent and unpacker.error is None and unpacker.pending == 0
    assert check(flits, sent) == sent


def test_random_source_is_seeded():
    a = RandomSource(range(5), 0.5, seed=42)
    b = RandomSource(range(5), 0.5, seed=42)
    pattern = [(a.take(None), b.take(None)) for _ in range(20)]
    assert all(x == y for x, y in pattern) and a.empty
    assert repr(a) == "RandomSource(probability=0.5, seed=42)"


# --- Hand-broken flits --------------------------------------------------------------------------

def _full_load_flits(n):
    payloads, _ = full_load(n)
    return frames(payloads), [f for p in payloads for _, f in p.starts]


def _edit(flits, index, fn, expected=None):
    """Flit ``index`` of ``flits`` edited by ``fn(bytearray)``, its CRC made good; the case
    ``(flits, expected TL flits or None, index of the broken flit)``."""
    flit = bytearray(flits[index])
    fn(flit)
    assert flit != flits[index], "the edit changed nothing"
    return flits[:index] + [recrc(flit)] + flits[index + 1:], expected, index


def _set(offset, mask):
    def fn(flit):
        flit[offset] |= mask
    return fn


def broken_crc():
    flits, _ = _full_load_flits(3)
    flit = bytearray(flits[1])
    flit[300] ^= 0x08
    return flits[:1] + [bytes(flit)] + flits[2:], None, 1


def broken_alt_sector():
    flits, _ = _full_load_flits(3)
    return _edit(flits, 1, _set(631 + 2, 0x01))


def broken_no_room_after_tl_flit_0():
    # DL flit 5 back to back: SH3 = 0x10, TL Flit[0] fills the segment (BACK_TO_BACK)
    flits, _ = _full_load_flits(7)
    assert flits[5][634] == 0x10
    return _edit(flits, 5, _set(634, 0x80))


def broken_no_room_in_carry():
    # DL flit 10 back to back: TL flit 106 at 126 leaves a 15-sector carry-over into SH4; TL
    # Flit[0] starts at 142 and runs past the end (test_figure_6_8_equivalent): SH4 = 0x10
    flits, _ = _full_load_flits(12)
    assert flits[10][635] == 0x10
    return _edit(flits, 10, _set(635, 0x80))


def broken_reserved_bit():
    flits, _ = _full_load_flits(3)
    return _edit(flits, 2, _set(631 + 4, 0x02))


def _figure_6_6():
    return frames([Packer().pack(ListSource([tl(0)]))])


def broken_absent_message():
    # Figure 6-6: SH0 announces TL Flit[0] only; a Message[1] bit set
    return _edit(_figure_6_6(), 0, _set(631, 0x20))


def broken_zero_fill():
    return _edit(_figure_6_6(), 0, _set(4 * 20 + 1, 0x40))


def broken_late_start():
    # Figure 6-6 with the TL flit one sector late (sectors 1..16) instead of right after the
    # (empty) carry-over: its last sector lands in the zero fill of sectors 16..31
    def fn(flit):
        flit[4:68] = tl(0).data
        flit[0:4] = bytes(4)
    return _edit(_figure_6_6(), 0, fn, [tl(0)])


def broken_late_start_after_zero_fill():
    # Figure 6-7 after a zero fill, the TL flit at sector 17 instead of 16: its last sector
    # lands in the zero fill of segment 1
    flits = frames([Packer().pack(ScriptedSource([tl(0)], lambda d: d.slot == 1))])

    def fn(flit):
        flit[68:132] = tl(0).data
        flit[64:68] = bytes(4)
    return _edit(flits, 0, fn, [tl(0)])


def broken_late_start_after_tl_flit():
    # back to back, TL flit 1 one sector late (17..32) and all after it shifted by a sector:
    # what the checker reads as TL flit 1 starts with a zero sector
    flits, sent = _full_load_flits(1)

    def fn(flit):
        flit[4 * 17:628] = flit[4 * 16:624]
        flit[4 * 16:4 * 17] = bytes(4)
    return _edit(flits, 0, fn, sent)


def broken_empty_payload():
    return _edit([assemble(nop_payload(), 0)], 0, _set(630, PAYLOAD_BIT >> 16))


def broken_nop_content():
    # a payload flit turned into a NOP by its header's payload bit (FH2 bit 4)
    flits, _ = _full_load_flits(2)
    return _edit(flits, 1, lambda flit: flit.__setitem__(630, flit[630] & ~0x10))


def broken_nop_payload_only():
    return _edit([assemble(nop_payload(), 0)], 0, _set(100, 0x01))


def broken_data():
    flits, sent = _full_load_flits(3)
    return _edit(flits, 1, lambda flit: flit.__setitem__(4 * 40, flit[4 * 40] ^ 0x01), sent)


def broken_order():
    flits, sent = _full_load_flits(3)
    sent[4], sent[5] = sent[5], sent[4]
    return flits, sent, 0


def broken_extra():
    flits, sent = _full_load_flits(3)
    return flits, sent[:-2], 2


#: One case per broken rule, named ``rule`` or ``rule-variant``.
BROKEN = {
    "crc": broken_crc,
    "alt_sector": broken_alt_sector,
    "no_room": broken_no_room_after_tl_flit_0,
    "no_room-carry": broken_no_room_in_carry,
    "reserved": broken_reserved_bit,
    "reserved-message": broken_absent_message,
    "zero_fill": broken_zero_fill,
    "zero_fill-late_start": broken_late_start,
    "zero_fill-late_start_after_zero_fill": broken_late_start_after_zero_fill,
    "data-late_start_after_tl_flit": broken_late_start_after_tl_flit,
    "empty_payload": broken_empty_payload,
    "nop_content": broken_nop_content,
    "nop_content-payload": broken_nop_payload_only,
    "data": broken_data,
    "data-order": broken_order,
    "data-extra": broken_extra,
}


def _rule(case):
    return case.split("-")[0]


def test_every_rule_is_broken():
    assert {_rule(case) for case in BROKEN} == set(dl.RULES)


@pytest.mark.parametrize("case", BROKEN)
def test_checker_rejects(case):
    flits, expected, index = BROKEN[case]()
    with pytest.raises(FlitError, match=rf"^DL flit {index}: {_rule(case)}: ") as info:
        check(flits, expected)
    assert info.value.kind == _rule(case) and info.value.dl_flit == index


@pytest.mark.parametrize("case", [c for c in BROKEN if _rule(c) in dl.UNPACK_ERRORS])
def test_unpacker_reports(case):
    """A malformed flit yields at most the TL flits that end in its first nine beats, and every
    later flit is dropped [§6.7.4.2]."""
    flits, _, index = BROKEN[case]()
    flits = flits + [assemble(nop_payload(), 0)]
    unpacker = Unpacker()
    out = [unpacker.feed(f) for f in flits]
    assert unpacker.error == _rule(case) == unpacker.failure.kind
    assert out[index + 1:] == [[]] * (len(flits) - index - 1)
    assert unpacker.dropped == len(flits) - index and len(out[index]) <= 9
    assert all(len(done) >= 9 for done in out[:index])      # back to back before it
    with pytest.raises(FlitError, match=rf"^DL flit {index}: {_rule(case)}: "):
        unpack(flits)


def test_malformed_flit_keeps_its_first_nine_beats():
    """DLAltSector set in a flit at full load: its TL flits 0..8 end by sector 143 and are
    delivered, TL flit 9 (from sector 144, finished in the next flit) and all later ones are
    dropped; once the link is brought up again (:meth:`Unpacker.restart`) a fresh stream is
    read whole [§6.7.4.2, ours: README §1]."""
    flits, sent = _full_load_flits(3)
    bad = bytearray(flits[0])
    bad[dl.SH_OFFSET] |= dl.SH_ALT_SECTOR
    bad[dl.CRC_OFFSET:] = dl.crc_field(bytes(bad))
    unpacker = Unpacker()
    assert unpacker.feed(bytes(bad)) == sent[:9] and unpacker.error == "alt_sector"
    assert unpacker.feed(flits[1]) == [] and unpacker.feed(flits[2]) == []
    unpacker.restart()
    again, resent = _full_load_flits(2)
    assert [f for flit in again for f in unpacker.feed(flit)] == resent[:len(resent) - 1]
    assert unpacker.error is None and unpacker.dropped == 3


@pytest.mark.parametrize("case", ["reserved", "reserved-message", "zero_fill",
                                  "empty_payload", "nop_content-payload"])
def test_unpacker_ignores_what_a_receiver_may(case):
    """Reserved bits are ignored on receive [§6.4]; so are zero-filled sectors and a NOP's
    content, which carry no TL flit."""
    flits, _, _ = BROKEN[case]()
    unpacker = Unpacker()
    for flit in flits:
        unpacker.feed(flit)
    assert unpacker.error is None


def test_checker_streams():
    """The checker takes one DL flit at a time (for an RTL monitor)."""
    flits, sent = _full_load_flits(4)
    checker = RulesChecker(sent)
    got = [f for flit in flits for f in checker.feed(flit)]
    # DL flits 0..3 start 40 TL flits; TL flit 39 starts at 153 of DL flit 3 (BACK_TO_BACK),
    # 4 of its sectors are there and 12 due
    assert got == sent[:39] and checker.pending == 12


# --- CRC ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed{s}")
def test_crc_is_clause_3_2_9_low_order_first(seed):
    """CRC0..CRC3 = the 802.3 CRC over the 640 bytes with the CRC field zero, CRC0 bit 0 the
    coefficient of x^0 [§6.3.7]."""
    _, _, _, flits = random_case(seed, 0.7, count=20)
    for flit in flits[:4] + [bytes(640)]:
        remainder = _clause_3_2_9(flit[:636] + bytes(4))
        assert crc_field(flit) == remainder.to_bytes(4, "little")
    assert crc_ok(flits[0])


def test_crc_is_802_3_fcs_reversed():
    """"The reverse order compared to IEEE 802.3 FCS": the FCS sends x^31 first (bit 0 of its
    first octet), UALink sends x^0 first, so the 32 bits are the FCS's in reverse."""
    from scaleup_ip.model.crc import crc32

    flit = random.Random(5).randbytes(636) + bytes(4)
    fcs_bits = int.from_bytes(crc32.fcs(flit), "little")
    ualink_bits = int.from_bytes(crc_field(flit), "little")
    assert ualink_bits == int(f"{fcs_bits:032b}"[::-1], 2)


def test_crc_detects_every_single_bit_error():
    _, _, _, flits = random_case(11, 0.5, count=10)
    flit = flits[0]
    assert crc_ok(flit)
    for bit in range(640 * 8):
        bad = bytearray(flit)
        bad[bit // 8] ^= 1 << bit % 8
        assert not crc_ok(bad), bit
    assert not crc_ok(flit[:639])


# --- Wire order [Figure 6-4] --------------------------------------------------------------------
#
# The figure read as 40 rows of 16 one-byte cells, wire byte = 16 x row + column (the model's
# reading). The map is found through to_wire alone (never the model's table); the expected cells
# are copied from the figure by hand, in its own tokens.

def logical(token):
    """The logical byte offset of a Figure 6-4 cell (the model docstring's logical order)."""
    if token.startswith("FH"):
        return 628 + int(token[2:])
    if token.startswith("SH"):
        return 631 + int(token[2:])
    if token.startswith("CRC"):
        return 636 + int(token[3:])
    sector, byte = token[1:].split(".B")
    return 4 * int(sector) + int(byte)


def wire_map():
    """``m[w]``: the logical byte that wire byte ``w`` carries, found by sending numbered bytes
    through to_wire (low and high halves of the number separately)."""
    low = dl.to_wire(bytes(b % 256 for b in range(640)))
    high = dl.to_wire(bytes(b // 256 for b in range(640)))
    return [lo + 256 * hi for lo, hi in zip(low, high)]


def figure_cells(row):
    m = wire_map()
    return m[16 * row:16 * row + 16]


def test_wire_map_is_a_bijection():
    m = wire_map()
    assert sorted(m) == list(range(640))
    for b in range(640):            # from_wire undoes it byte by byte
        flit = bytearray(640)
        flit[b] = 0xA5
        wire = dl.to_wire(flit)
        assert wire.index(0xA5) == m.index(b) and wire.count(0xA5) == 1
        assert dl.from_wire(wire) == flit


def test_wire_every_field_once():
    """Every payload sector's 4 bytes, FH0..2, SH0..4 and CRC0..3 are on the wire exactly once;
    CRC0..3 are the last 4 wire bytes, as in the logical order [Figure 6-4]."""
    m = wire_map()
    names = ([f"S{s}.B{y}" for s in range(157) for y in range(4)]
             + [f"FH{k}" for k in range(3)] + [f"SH{k}" for k in range(5)]
             + [f"CRC{k}" for k in range(4)])
    assert len(names) == 640
    for name in names:
        assert m.count(logical(name)) == 1, name
    assert m[636:] == [logical(f"CRC{k}") for k in range(4)]
    assert m[624:627] == [logical(f"FH{k}") for k in range(3)]
    assert [m.index(logical(f"SH{k}")) for k in range(5)] == [67, 195, 323, 451, 579]


#: Figure 6-4 rows copied cell by cell.
FIGURE_6_4_ROWS = {
    0: "S0.B0 S0.B1 S0.B2 S0.B3 S1.B0 S1.B1 S1.B2 S1.B3 "
       "S2.B0 S2.B1 S2.B2 S2.B3 S3.B0 S3.B1 S3.B2 S3.B3",
    4: "S31.B0 S31.B1 S31.B2 SH0 S16.B0 S16.B1 S16.B2 S16.B3 "
       "S17.B0 S17.B1 S17.B2 S17.B3 S18.B0 S18.B1 S18.B2 S18.B3",
    7: "S27.B0 S27.B1 S27.B2 S27.B3 S28.B0 S28.B1 S28.B2 S28.B3 "
       "S29.B0 S29.B1 S29.B2 S29.B3 S30.B0 S30.B1 S30.B2 S30.B3",
    8: "S47.B0 S47.B1 S47.B2 S31.B3 S32.B0 S32.B1 S32.B2 S32.B3 "
       "S33.B0 S33.B1 S33.B2 S33.B3 S34.B0 S34.B1 S34.B2 S34.B3",
    12: "S63.B0 S63.B1 S47.B3 SH1 S48.B0 S48.B1 S48.B2 S48.B3 "
        "S49.B0 S49.B1 S49.B2 S49.B3 S50.B0 S50.B1 S50.B2 S50.B3",
    16: "S79.B0 S79.B1 S63.B2 S63.B3 S64.B0 S64.B1 S64.B2 S64.B3 "
        "S65.B0 S65.B1 S65.B2 S65.B3 S66.B0 S66.B1 S66.B2 S66.B3",
    20: "S95.B0 S79.B2 S79.B3 SH2 S80.B0 S80.B1 S80.B2 S80.B3 "
        "S81.B0 S81.B1 S81.B2 S81.B3 S82.B0 S82.B1 S82.B2 S82.B3",
    24: "S111.B0 S95.B1 S95.B2 S95.B3 S96.B0 S96.B1 S96.B2 S96.B3 "
        "S97.B0 S97.B1 S97.B2 S97.B3 S98.B0 S98.B1 S98.B2 S98.B3",
    28: "S111.B1 S111.B2 S111.B3 SH3 S112.B0 S112.B1 S112.B2 S112.B3 "
        "S113.B0 S113.B1 S113.B2 S113.B3 S114.B0 S114.B1 S114.B2 S114.B3",
    31: "S123.B0 S123.B1 S123.B2 S123.B3 S124.B0 S124.B1 S124.B2 S124.B3 "
        "S125.B0 S125.B1 S125.B2 S125.B3 S126.B0 S126.B1 S126.B2 S126.B3",
    32: "S127.B0 S127.B1 S127.B2 S127.B3 S128.B0 S128.B1 S128.B2 S128.B3 "
        "S129.B0 S129.B1 S129.B2 S129.B3 S130.B0 S130.B1 S130.B2 S130.B3",
    36: "S156.B0 S156.B1 S156.B2 SH4 S143.B0 S143.B1 S143.B2 S143.B3 "
        "S144.B0 S144.B1 S144.B2 S144.B3 S145.B0 S145.B1 S145.B2 S145.B3",
    38: "S150.B0 S150.B1 S150.B2 S150.B3 S151.B0 S151.B1 S151.B2 S151.B3 "
        "S152.B0 S152.B1 S152.B2 S152.B3 S153.B0 S153.B1 S153.B2 S153.B3",
    39: "FH0 FH1 FH2 S156.B3 S154.B0 S154.B1 S154.B2 S154.B3 "
        "S155.B0 S155.B1 S155.B2 S155.B3 CRC0 CRC1 CRC2 CRC3",
}
#: Single cells: (row, column, token).
FIGURE_6_4_CELLS = [
    (1, 8, "S6.B0"), (3, 15, "S15.B3"), (5, 0, "S19.B0"), (9, 3, "S35.B3"),
    (11, 12, "S46.B0"), (15, 7, "S60.B3"), (19, 13, "S78.B1"), (23, 15, "S94.B3"),
    (25, 4, "S100.B0"), (27, 10, "S109.B2"), (30, 1, "S119.B1"), (35, 12, "S142.B0"),
    (33, 15, "S134.B3"), (37, 5, "S147.B1"),
]


@pytest.mark.parametrize("row", sorted(FIGURE_6_4_ROWS))
def test_wire_figure_rows(row):
    assert figure_cells(row) == [logical(t) for t in FIGURE_6_4_ROWS[row].split()]


def test_wire_figure_cells():
    m = wire_map()
    for row, column, token in FIGURE_6_4_CELLS:
        assert m[16 * row + column] == logical(token), (row, column, token)


def test_wire_segments_match_table_6_1():
    """Each red outline of Figure 6-4 holds SHk and all 4 bytes of exactly the payload sectors
    Table 6-1 gives segment k. The outlines are the 8-row bands, except: row 8 column 3 belongs to
    segment 0, row 16 columns 2..3 to segment 1, row 24 columns 1..3 to segment 2; in row 39
    FH0..2 (columns 0..2) and CRC0..3 (12..15) are outside, columns 3..11 are segment 4."""
    table = {0: (0, 32), 1: (32, 64), 2: (64, 96), 3: (96, 127), 4: (127, 157)}
    counts = {0: 32, 1: 32, 2: 32, 3: 31, 4: 30}
    lent = {(8, 3): 0, (16, 2): 1, (16, 3): 1, (24, 1): 2, (24, 2): 2, (24, 3): 2}
    m = wire_map()
    outline = {k: [] for k in range(5)}
    for w, b in enumerate(m):
        row, column = divmod(w, 16)
        if row == 39 and not 3 <= column <= 11:
            continue
        outline[lent.get((row, column), row // 8)].append(b)
    for k in range(5):
        cells = sorted(outline[k])
        assert logical(f"SH{k}") in cells
        sectors = sorted({b // 4 for b in cells if b < 628})
        assert len(cells) == 4 * counts[k] + 1
        assert sectors == list(range(*table[k])) and len(sectors) == counts[k]
        assert cells == sorted([4 * s + y for s in sectors for y in range(4)]
                               + [logical(f"SH{k}")])


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_wire_round_trip(seed):
    rng = random.Random(seed)
    flit = rng.randbytes(640)
    assert dl.from_wire(dl.to_wire(flit)) == flit
    assert dl.to_wire(dl.from_wire(flit)) == flit
    assert dl.to_wire(flit) != flit


@pytest.mark.parametrize("seed", range(3), ids=lambda s: f"seed{s}")
def test_wire_crc_is_over_the_wire_order(seed):
    """The CRC over the 640 bytes in wire order with the CRC field zero [§6.3.1, §6.3.7],
    checked by the literal long division, CRC0 bit 0 the coefficient of x^0; the logical CRC
    field of the input is ignored."""
    rng = random.Random(100 + seed)
    flit = rng.randbytes(640)
    wire = dl.wire_flit(flit)
    body = dl.to_wire(flit)[:636]
    assert wire[:636] == body
    assert wire[636:] == _clause_3_2_9(body + bytes(4)).to_bytes(4, "little")
    assert dl.wire_flit(flit[:636] + bytes(4)) == wire
    assert dl.wire_crc_ok(wire)
    assert dl.from_wire(wire)[:636] == flit[:636]


def test_wire_crc_differs_from_logical_crc():
    flit = random.Random(7).randbytes(640)
    assert dl.wire_flit(flit)[636:] != crc_field(flit)
    assert not crc_ok(dl.from_wire(dl.wire_flit(flit)))
    assert not dl.wire_crc_ok(dl.to_wire(recrc(flit)))


def test_wire_crc_detects_every_single_bit_error():
    _, _, _, flits = random_case(12, 0.5, count=10)
    wire = dl.wire_flit(flits[0])
    assert dl.wire_crc_ok(wire)
    for bit in range(640 * 8):
        bad = bytearray(wire)
        bad[bit // 8] ^= 1 << bit % 8
        assert not dl.wire_crc_ok(bad), bit
    assert not dl.wire_crc_ok(wire[:639])
