# SPDX-License-Identifier: BSD-2-Clause
"""Sector and sequence-number arithmetic shared by the DL blocks."""

from amaranth import Mux, Signal
from amaranth.lib import data

from .layout import (
    BEATS_PER_FLIT,
    HALF_SEGMENT_STARTS,
    PAYLOAD_SECTORS,
    SECTOR_BYTES,
    SEGMENT_STARTS,
    SEQ_BITS,
    SEQ_MODULUS,
    TL_FLIT_SECTORS,
)

__all__ = ["BEAT_SECTORS", "HALF_SECTORS", "LAST_SECTORS", "SECTOR_BITS", "beat_count",
           "next_cursor", "rotate", "sector_array", "segment_of", "seq_diff", "seq_next"]

#: Payload sectors of a beat (a TL flit's worth), and of the last beat of a DL flit (the rest
#: of the last beat is FH, SH and CRC in the logical layout).
BEAT_SECTORS = TL_FLIT_SECTORS
LAST_SECTORS = PAYLOAD_SECTORS - (BEATS_PER_FLIT - 1) * BEAT_SECTORS
SECTOR_BITS = SECTOR_BYTES * 8
#: The first half of every segment is 16 sectors [Table 6-1].
HALF_SECTORS = 16
#: A beat as sectors.
sector_array = data.ArrayLayout(SECTOR_BITS, BEAT_SECTORS)


def beat_count(m, step):
    """The beat of a DL flit, counted when ``step`` (the statements go under the caller's
    conditions): ``(beat, first, last)``, where ``first`` (beat 0) and ``last`` (beat 9) are
    registers written with it, so that nothing decodes the count on a handshake's path."""
    beat = Signal(range(BEATS_PER_FLIT))
    first, last = Signal(init=1), Signal()
    with m.If(step):
        m.d.sync += [beat.eq(Mux(last, 0, beat + 1)), first.eq(last),
                     last.eq(beat == BEATS_PER_FLIT - 2)]
    return beat, first, last


def rotate(value, amount):
    """``value`` (16 sectors) rotated up by ``amount`` sectors: sector ``i`` of the result is
    sector ``(i - amount) mod 16`` of ``value``. A barrel rotator, one 2:1 mux level per bit of
    ``amount``."""
    out = value
    for bit in range(len(amount)):
        out = Mux(amount[bit], out.rotate_left((1 << bit) * SECTOR_BITS), out)
    return out


def next_cursor(beat):
    """Where packing goes on after no TL flit started in beat ``beat``: the first half-segment
    start at or after the next beat (the packer's later decision points in the same beat see
    the same empty input), as a sector within the next beat; at or past that beat's size
    means none in it."""
    if beat == BEATS_PER_FLIT - 1:
        return 0                                # the next DL flit's first sector
    end = (beat + 1) * BEAT_SECTORS
    # The end of the payload (157) counts: from beat 8 the cursor lands past beat 9's
    # payload (13), which then has no decision point.
    return min(h for h in (*HALF_SEGMENT_STARTS, PAYLOAD_SECTORS) if h >= end) - end


def segment_of(position):
    """``(segment, in its second half)`` of payload sector ``position`` (a constant)."""
    seg = max(k for k, start in enumerate(SEGMENT_STARTS) if start <= position)
    return seg, position - SEGMENT_STARTS[seg] >= HALF_SECTORS


def seq_next(seq):
    """The sequence number after ``seq``: 511 wraps to 1 [§6.6.6.1]."""
    return Mux(seq == SEQ_MODULUS, 1, seq + 1)[:SEQ_BITS]


def seq_diff(a, b):
    """``(a - b) % 511`` for sequence numbers (511 counts as 0), 0 .. 510 [§6.6.6.1]."""
    return Mux(a >= b, a - b, a + SEQ_MODULUS - b)[:SEQ_BITS]
