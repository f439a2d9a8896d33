# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the UALink DL flit framing: TL flits packed into 640-byte DL flits and back.

Written from the UALink_200 Rev 1.0 Evaluation Copy, chapter 6 (§6.3 flit format, §6.3.4 packing
rules, §6.3.7 CRC), independently of the RTL. Conventions the public text leaves open are marked
[ours]; where the text is ambiguous the reading chosen is said so, with the sentence it rests on.

**Bytes** [ours]. A DL flit is 640 bytes in a *logical* order: payload sectors 0..156 in bytes
0..627 (sector ``s`` in bytes ``4s .. 4s+3``), the 24-bit flit header FH0..FH2 in bytes 628..630
(little-endian: FH0 holds header bits 7:0), segment headers SH0..SH4 in bytes 631..635 and
CRC0..CRC3 in bytes 636..639. A TL flit is 64 bytes (its lower half-flit is bytes 0..31) and
two message bits, M0 for the lower half and M1 for the upper; TL flit byte ``b`` is byte ``b % 4``
of TL sector ``b // 4``, and TL sector ``k`` goes to the ``k``-th payload sector the TL flit
occupies ("TL Flit sector[0] maps to DL Flit sector[0], and so on" [§6.3.5]).

**Packing** (:class:`Packer`) follows the flow of §6.3.4 (Figure 6-5) segment by segment; the
reading of every rule is in the class docstring. **Unpacking** (:class:`Unpacker`) walks the
segment headers with the same rules and reports a malformed flit as a named error;
:class:`RulesChecker` adds the rules only a transmitter must keep, for checking the output of a
packer whose TL flit timing is unknown (the RTL).

**Wire order** [Figure 6-4]. On the link the 640 bytes go in the order of Figure 6-4 "DL Flit
with segment details", transcribed in :data:`WIRE_ROWS`. [ours] The figure is read as 40 rows of
16 one-byte cells, wire byte = 16 x row + column, row 0 at the top and column 0 at the left; the
spec text does not say how the figure's cells map onto time or lanes. In that order segment
``k`` has rows ``8k .. 8k+7`` (SHk in row ``8k+4``, column 3), give or take the bytes of the
split sectors: sectors 31, 63, 95, 156 (a segment's last) and 47, 79, 111 (a first half's last)
are cut into single bytes that fill columns 0..3 of rows 4, 8, .., 28, 36 and 39 around the
segment headers, S31.B3 in row 8 and S63.B2..B3 in row 16, for example. FH0..FH2 are wire bytes
624..626; CRC0..CRC3 are wire bytes 636..639, the same as in the logical order.
:func:`to_wire` and :func:`from_wire` permute between the orders (:data:`WIRE_ORDER`,
:data:`WIRE_POSITION`).

**CRC** [§6.3.7]: the IEEE 802.3 CRC-32 (clause 3.2.9) over all 640 bytes with the CRC field
zero, bytes fed least significant bit first, placed with CRC0 bit 0 = the coefficient of x^0,
"the reverse order compared to IEEE 802.3 FCS". "The 4-byte CRC is calculated over the entire
contents of the DL Flit" [§6.3.1], read as: over its bytes in the order of Figure 6-4, so the
link's CRC is over the *wire* order: :func:`wire_flit` and :func:`wire_crc_ok`.
:func:`crc_field`, :func:`crc_ok` and :func:`assemble` compute the same CRC over the *logical*
order [ours]; that is a different value (the CRC depends on the order), kept for the
logical-order model and its tests, and not what a link partner that follows Figure 6-4 sends.
"""

from __future__ import annotations

import random
import zlib
from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

__all__ = [
    "CONTAINED_AFTER", "CRC_BYTES", "CRC_OFFSET", "DL_FLIT_BYTES", "FH_BYTES", "FH_OFFSET", "FH_PAYLOAD",
    "HALF_SEGMENTS", "PAYLOAD_BYTES", "PAYLOAD_OFFSET", "PAYLOAD_SECTORS", "RULES", "SECTOR_BYTES",
    "SEGMENTS", "SEGMENT_ENDS", "SEGMENT_SECTORS", "SEGMENT_STARTS", "SH_ALT_SECTOR", "SH_BYTES",
    "SH_MESSAGE_SHIFT", "SH_OFFSET", "SH_PRESENT", "SH_RESERVED", "TL_FLIT_BYTES",
    "TL_FLIT_SECTORS", "UNPACK_ERRORS", "WIRE_COLUMNS", "WIRE_CRC_OFFSET", "WIRE_ORDER",
    "WIRE_POSITION", "WIRE_ROWS", "Decision", "DlPayload", "FlitError", "ListSource", "Packer",
    "RandomSource", "RulesChecker", "ScriptedSource", "TlFlit", "Unpacker", "assemble", "check",
    "crc_field", "crc_ok", "from_wire", "full_load_rate", "header_of", "is_nop", "segment_header",
    "to_wire", "unpack", "wire_crc_field", "wire_crc_ok", "wire_flit",
]

# --- Sizes and layout ---------------------------------------------------------------------------

SECTOR_BYTES = 4                # "A sector is 4 bytes." [UALink 1.0 §6.3.1]
DL_FLIT_BYTES = 640             # [UALink 1.0 §6.1]
TL_FLIT_BYTES = 64              # [UALink 1.0 §6.2.1]
TL_FLIT_SECTORS = TL_FLIT_BYTES // SECTOR_BYTES   # "takes up sixteen sectors" [§6.3.4]

#: Payload sectors per segment SH0..SH4. [UALink 1.0 Table 6-1]
SEGMENT_SECTORS = (32, 32, 32, 31, 30)
SEGMENTS = len(SEGMENT_SECTORS)
#: First payload sector of each segment, and one past its last.
SEGMENT_STARTS = tuple(sum(SEGMENT_SECTORS[:k]) for k in range(SEGMENTS))
SEGMENT_ENDS = tuple(start + n for start, n in zip(SEGMENT_STARTS, SEGMENT_SECTORS))
#: Half-segment sector ranges, copied from the table: ``(first, last)`` inclusive, two per
#: segment. They define "how far to zero fill when there is no TL Flit to pack".
#: [UALink 1.0 Table 6-1, §6.3.1]
HALF_SEGMENTS = (
    ((0, 15), (16, 31)),
    ((32, 47), (48, 63)),
    ((64, 79), (80, 95)),
    ((96, 111), (112, 126)),
    ((127, 142), (143, 156)),
)
assert all(lo[0] == start and lo[1] + 1 == hi[0] and hi[1] + 1 == end
           for (lo, hi), start, end in zip(HALF_SEGMENTS, SEGMENT_STARTS, SEGMENT_ENDS))

PAYLOAD_SECTORS = sum(SEGMENT_SECTORS)                      # 157
PAYLOAD_BYTES = PAYLOAD_SECTORS * SECTOR_BYTES              # 628
FH_BYTES = 3                    # FH[2:0], a 24-bit flit header [UALink 1.0 §6.3.1, §6.6.2]
SH_BYTES = SEGMENTS             # SH[4:0], one 8-bit header per segment [UALink 1.0 §6.3.3]
CRC_BYTES = 4                   # [UALink 1.0 §6.3.7]

#: [ours] The logical byte layout (see the module docstring); the CRC is last, as §6.3.7 says.
PAYLOAD_OFFSET = 0
FH_OFFSET = PAYLOAD_OFFSET + PAYLOAD_BYTES                  # 628
SH_OFFSET = FH_OFFSET + FH_BYTES                            # 631
CRC_OFFSET = SH_OFFSET + SH_BYTES                           # 636
assert CRC_OFFSET + CRC_BYTES == DL_FLIT_BYTES

#: Flit header bit 20, "payload": 1 payload flit, 0 NOP flit. [UALink 1.0 Tables 6-14, 6-15]
FH_PAYLOAD = 1 << 20

#: Segment header fields. [UALink 1.0 Table 6-2]
SH_ALT_SECTOR = 1 << 0          # DLAltSector
SH_RESERVED = 1 << 1
#: TL Flit[0] and TL Flit[1] present (a TL flit *starts* in the segment [§6.3.3.2]).
SH_PRESENT = (1 << 4, 1 << 7)
#: Lowest bit of Message[0] (bits 3:2) and Message[1] (bits 6:5); [ours] the lower bit is M0.
SH_MESSAGE_SHIFT = (2, 5)

#: Errors :class:`Unpacker` reports: the CRC fails; a DLAltSector is set ([ours]: we exchange no
#: DL messages, so an alternative sector cannot be placed); a segment header announces a TL flit
#: start where no sector is left (the carry-over or the previous TL flit runs to the segment end).
UNPACK_ERRORS = ("crc", "alt_sector", "no_room")
#: A malformed flit's TL flits that end in its first 144 payload sectors (nine 64-byte beats)
#: are delivered; those ending later are dropped [ours, README §1].
CONTAINED_AFTER = 144
#: Everything :class:`RulesChecker` checks: the above, then reserved segment header bits not zero
#: (including the Message bits of an absent TL flit), a sector the rules leave unallocated not zero
#: ("zero fill"), a payload flit with no TL flit sector ([ours]: that is a NOP flit), a NOP flit
#: whose payload or segment headers are not zero ([ours]), a TL flit that is not the expected one.
RULES = UNPACK_ERRORS + ("reserved", "zero_fill", "empty_payload", "nop_content", "data")


# --- Values -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TlFlit:
    """One TL flit: 64 bytes (the lower half-flit first) and its two message bits."""

    data: bytes
    m0: bool = False    # the lower half-flit is a message [§6.3.3.3: "1 bit for each ½ TL Flit"]
    m1: bool = False    # the upper half-flit is a message

    def __post_init__(self):
        if not isinstance(self.data, bytes) or len(self.data) != TL_FLIT_BYTES:
            raise ValueError(f"a TL flit is {TL_FLIT_BYTES} bytes, not {self.data!r:.40}")
        object.__setattr__(self, "m0", bool(self.m0))
        object.__setattr__(self, "m1", bool(self.m1))

    @classmethod
    def from_int(cls, value, m0=False, m1=False):
        """A TL flit from a 512-bit integer (byte ``b`` = bits ``8b+7 .. 8b``), as in
        ``scaleup_ip.model.tl.flit.Flit``."""
        return cls(value.to_bytes(TL_FLIT_BYTES, "little"), m0, m1)

    @property
    def value(self):
        """The 512-bit integer of :meth:`from_int`."""
        return int.from_bytes(self.data, "little")

    @property
    def sectors(self):
        """The 16 four-byte sectors, TL sector 0 first."""
        return [self.data[k:k + SECTOR_BYTES] for k in range(0, TL_FLIT_BYTES, SECTOR_BYTES)]


class Decision(NamedTuple):
    """A decision point of the packing flow, where the packer asks whether a TL flit is available
    "on this clock tick": step 4 (``slot`` 0, TL Flit[0]) or step 7 (``slot`` 1, TL Flit[1])."""

    dl_flit: int        # DL flits packed before this one
    segment: int
    slot: int
    sector: int         # the payload sector where the TL flit would start


@dataclass(frozen=True)
class DlPayload:
    """What :meth:`Packer.pack` makes of one DL flit: everything but the flit header and CRC.

    Attributes
    ----------
    data : bytes
        The 628 payload bytes.
    segment_headers : bytes
        SH0..SH4.
    starts : tuple of (int, TlFlit)
        The TL flits that start in this DL flit, in order, with their first payload sector.
    carry_in, carry_out : int
        Sectors of a TL flit carried over from the previous DL flit, and into the next.
    """

    data: bytes
    segment_headers: bytes
    starts: tuple
    carry_in: int
    carry_out: int

    @property
    def nop(self):
        """No TL flit sector in this DL flit: it is a NOP flit [ours]."""
        return not self.carry_in and not self.starts


class FlitError(ValueError):
    """A malformed DL flit, or a broken packing rule: ``kind`` is one of :data:`RULES`."""

    def __init__(self, kind, message, dl_flit=None):
        where = "" if dl_flit is None else f"DL flit {dl_flit}: "
        super().__init__(f"{where}{kind}: {message}")
        self.kind = kind
        self.dl_flit = dl_flit


# --- Segment header, CRC and the whole flit -----------------------------------------------------

def segment_header(flit0=None, flit1=None):
    """Encode a segment header announcing the TL flits ``flit0``, ``flit1`` (or ``None``) that
    start in the segment. DLAltSector and the reserved bit are 0. [UALink 1.0 Table 6-2]"""
    header = 0
    for slot, flit in enumerate((flit0, flit1)):
        if flit is not None:
            message = int(flit.m0) | int(flit.m1) << 1
            header |= SH_PRESENT[slot] | message << SH_MESSAGE_SHIFT[slot]
    return header


def _reverse32(value):
    return int(f"{value:032b}"[::-1], 2)


def crc_field(flit):
    """Return CRC0..CRC3 for the DL flit ``flit`` (640 bytes; its CRC bytes are ignored).

    The 802.3 CRC is over all 640 bytes "with the CRC field padded to 0x0" [§6.3.7].
    :func:`zlib.crc32` returns it with the coefficient of x^(31-i) in bit ``i`` (its little-endian
    bytes are the 802.3 FCS, x^31 sent first). UALink sends "x0, x1, … x31" with "CRC[0]
    contains bits x0, x1, … x7", [ours] x^0 in bit 0 of CRC0: the 32 bits reversed.
    """
    flit = bytes(flit)
    if len(flit) != DL_FLIT_BYTES:
        raise ValueError(f"a DL flit is {DL_FLIT_BYTES} bytes, not {len(flit)}")
    value = zlib.crc32(flit[:CRC_OFFSET] + bytes(CRC_BYTES))
    return _reverse32(value).to_bytes(CRC_BYTES, "little")


def crc_ok(flit):
    """Whether the CRC of the 640-byte DL flit ``flit`` is good."""
    flit = bytes(flit)
    return len(flit) == DL_FLIT_BYTES and flit[CRC_OFFSET:] == crc_field(flit)


def header_of(flit):
    """The 24-bit flit header of a 640-byte DL flit."""
    return int.from_bytes(flit[FH_OFFSET:FH_OFFSET + FH_BYTES], "little")


def is_nop(flit):
    """Whether a 640-byte DL flit is a NOP flit: its header's payload bit is 0 [Table 6-14]."""
    return not header_of(flit) & FH_PAYLOAD


def assemble(payload, header):
    """Return the 640-byte DL flit of ``payload`` (a :class:`DlPayload`) with the 24-bit flit
    ``header``, and its CRC. The header's payload bit must say whether ``payload`` is a NOP."""
    if not 0 <= header < 1 << 8 * FH_BYTES:
        raise ValueError(f"a flit header is {8 * FH_BYTES} bits, not {header:#x}")
    if bool(header & FH_PAYLOAD) == payload.nop:
        kind = "a NOP" if payload.nop else "a payload"
        raise ValueError(f"header {header:#08x}: its payload bit is wrong for {kind} flit")
    body = (payload.data + header.to_bytes(FH_BYTES, "little") + payload.segment_headers
            + bytes(CRC_BYTES))
    return body[:CRC_OFFSET] + crc_field(body)


# --- Wire order [Figure 6-4] --------------------------------------------------------------------

#: Figure 6-4 "DL Flit with segment details", one string per figure row (row 0 at the top), its
#: cells left to right: ``Sx.By`` is byte y of payload sector x; ``Sx`` alone stands for the four
#: cells ``Sx.B0 Sx.B1 Sx.B2 Sx.B3`` (every whole sector in the figure is drawn so); ``FHn``,
#: ``SHn``, ``CRCn`` are the header and CRC bytes. Blank lines separate 8-row bands.
WIRE_ROWS = (
    "S0 S1 S2 S3",                                      # 0
    "S4 S5 S6 S7",
    "S8 S9 S10 S11",
    "S12 S13 S14 S15",
    "S31.B0 S31.B1 S31.B2 SH0 S16 S17 S18",             # 4
    "S19 S20 S21 S22",
    "S23 S24 S25 S26",
    "S27 S28 S29 S30",

    "S47.B0 S47.B1 S47.B2 S31.B3 S32 S33 S34",          # 8
    "S35 S36 S37 S38",
    "S39 S40 S41 S42",
    "S43 S44 S45 S46",
    "S63.B0 S63.B1 S47.B3 SH1 S48 S49 S50",             # 12
    "S51 S52 S53 S54",
    "S55 S56 S57 S58",
    "S59 S60 S61 S62",

    "S79.B0 S79.B1 S63.B2 S63.B3 S64 S65 S66",          # 16
    "S67 S68 S69 S70",
    "S71 S72 S73 S74",
    "S75 S76 S77 S78",
    "S95.B0 S79.B2 S79.B3 SH2 S80 S81 S82",             # 20
    "S83 S84 S85 S86",
    "S87 S88 S89 S90",
    "S91 S92 S93 S94",

    "S111.B0 S95.B1 S95.B2 S95.B3 S96 S97 S98",         # 24
    "S99 S100 S101 S102",
    "S103 S104 S105 S106",
    "S107 S108 S109 S110",
    "S111.B1 S111.B2 S111.B3 SH3 S112 S113 S114",       # 28
    "S115 S116 S117 S118",
    "S119 S120 S121 S122",
    "S123 S124 S125 S126",

    "S127 S128 S129 S130",                              # 32
    "S131 S132 S133 S134",
    "S135 S136 S137 S138",
    "S139 S140 S141 S142",
    "S156.B0 S156.B1 S156.B2 SH4 S143 S144 S145",       # 36
    "S146 S147 S148 S149",
    "S150 S151 S152 S153",
    "FH0 FH1 FH2 S156.B3 S154 S155 CRC0 CRC1 CRC2 CRC3",  # 39
)
WIRE_COLUMNS = 16               # [ours] the figure's cells per row

# Notes on the figure. (1) No rule shows in the split sectors: most of their bytes keep column
# y mod 4, but S47.B3 (column 2), S79.B2..B3 (1..2) and S111.B1..B3 (0..2) do not; only the
# figure fixes them. (2) Not every last sector is split: S126 (segment 3's last) and S15, S142
# (first halves' last in segments 0 and 4) are whole; the purple shading marks exactly the split
# ones. (3) Payload sectors are not in ascending wire order (S31.B0 at wire byte 64, S16 at 68),
# so a TL flit is not contiguous on the wire. (4) The red outlines are not 8-row rectangles (they
# take in S31.B3, S63.B2..B3, S95.B1..B3 and S154..S156.B3), as in Figure 6-3. (5) The flit
# header comes near the end (wire bytes 624..626). (6) The text does not say the figure is read
# row by row from the top, nor how rows map onto time or lanes.


def _wire_cells(token):
    """The logical byte offsets of the cells one :data:`WIRE_ROWS` token names."""
    for name, offset, count in (("FH", FH_OFFSET, FH_BYTES), ("SH", SH_OFFSET, SH_BYTES),
                                ("CRC", CRC_OFFSET, CRC_BYTES)):
        if token.startswith(name):
            index = int(token[len(name):])
            if not 0 <= index < count:
                raise ValueError(f"no {token} in a DL flit")
            return [offset + index]
    if not token.startswith("S"):
        raise ValueError(f"bad Figure 6-4 cell {token!r}")
    sector, dot, byte = token[1:].partition(".B")
    sector = int(sector)
    if not 0 <= sector < PAYLOAD_SECTORS:
        raise ValueError(f"no payload sector {sector}")
    base = PAYLOAD_OFFSET + SECTOR_BYTES * sector
    if not dot:
        return list(range(base, base + SECTOR_BYTES))
    if not 0 <= int(byte) < SECTOR_BYTES:
        raise ValueError(f"no byte {byte} in a sector")
    return [base + int(byte)]


def _wire_order(rows):
    order = []
    for k, row in enumerate(rows):
        cells = [cell for token in row.split() for cell in _wire_cells(token)]
        if len(cells) != WIRE_COLUMNS:
            raise ValueError(f"Figure 6-4 row {k} has {len(cells)} cells, not {WIRE_COLUMNS}")
        order += cells
    if sorted(order) != list(range(DL_FLIT_BYTES)):
        raise ValueError("Figure 6-4 does not name every byte of a DL flit exactly once")
    return tuple(order)


#: ``WIRE_ORDER[w]``: the logical byte that wire byte ``w`` carries.
WIRE_ORDER = _wire_order(WIRE_ROWS)
#: ``WIRE_POSITION[b]``: the wire byte that carries logical byte ``b`` (the inverse).
WIRE_POSITION = tuple(sorted(range(DL_FLIT_BYTES), key=WIRE_ORDER.__getitem__))
#: CRC0..CRC3 on the wire: the last 4 bytes, as in the logical order (so the same slicing holds).
WIRE_CRC_OFFSET = WIRE_POSITION[CRC_OFFSET]
assert WIRE_POSITION[CRC_OFFSET:] == tuple(range(WIRE_CRC_OFFSET, DL_FLIT_BYTES))
assert WIRE_CRC_OFFSET == CRC_OFFSET


def _flit_bytes(flit):
    flit = bytes(flit)
    if len(flit) != DL_FLIT_BYTES:
        raise ValueError(f"a DL flit is {DL_FLIT_BYTES} bytes, not {len(flit)}")
    return flit


def to_wire(flit: bytes) -> bytes:
    """The 640-byte DL flit ``flit`` (logical order) in the wire order of Figure 6-4, every byte
    as it is (the CRC field is moved, not recomputed: see :func:`wire_flit`)."""
    flit = _flit_bytes(flit)
    return bytes(flit[b] for b in WIRE_ORDER)


def from_wire(wire: bytes) -> bytes:
    """The 640 wire bytes ``wire`` (Figure 6-4 order) in the logical order; the inverse of
    :func:`to_wire`. The CRC field keeps the wire CRC, which :func:`crc_ok` does not accept."""
    wire = _flit_bytes(wire)
    return bytes(wire[w] for w in WIRE_POSITION)


def wire_crc_field(wire: bytes) -> bytes:
    """CRC0..CRC3 for the 640 wire bytes ``wire``: the CRC of :func:`crc_field` (same polynomial
    and bit placement) over the bytes in wire order, with the CRC field zero [§6.3.1, §6.3.7]."""
    wire = _flit_bytes(wire)
    return crc_field(wire[:WIRE_CRC_OFFSET] + bytes(CRC_BYTES))


def wire_flit(flit: bytes) -> bytes:
    """The wire bytes of the logical DL flit ``flit`` (its CRC field is ignored), with the CRC
    computed over the wire order and placed in CRC0..CRC3 as :func:`crc_field` places it."""
    wire = to_wire(flit)[:WIRE_CRC_OFFSET]
    return wire + wire_crc_field(wire + bytes(CRC_BYTES))


def wire_crc_ok(wire: bytes) -> bool:
    """Whether the CRC of the 640 wire bytes ``wire`` (Figure 6-4 order) is good."""
    wire = bytes(wire)
    return len(wire) == DL_FLIT_BYTES and wire[WIRE_CRC_OFFSET:] == wire_crc_field(wire)


# --- TL flit sources ----------------------------------------------------------------------------

class ListSource:
    """TL flits from an iterable (it may be endless), always available while any is left.

    Attributes
    ----------
    decisions : list of (Decision, bool)
        Every decision point the packer asked about, and whether a TL flit was taken.
    """

    def __init__(self, flits):
        self._flits = iter(flits)
        self._next = next(self._flits, None)
        self.decisions = []

    @property
    def empty(self):
        """No TL flit is left."""
        return self._next is None

    def _available(self, decision):
        return True

    def take(self, decision):
        """Return the next TL flit if one is available at ``decision``, else ``None``."""
        flit = None
        if self._next is not None and self._available(decision):
            flit, self._next = self._next, next(self._flits, None)
        self.decisions.append((decision, flit is not None))
        return flit


class RandomSource(ListSource):
    """TL flits from an iterable, each decision point finding one available with probability
    ``probability`` (from a :class:`random.Random` seeded with ``seed``, kept as ``seed``)."""

    def __init__(self, flits, probability, seed):
        super().__init__(flits)
        self.probability = probability
        self.seed = seed
        self._rng = random.Random(seed)

    def __repr__(self):
        return f"RandomSource(probability={self.probability}, seed={self.seed})"

    def _available(self, decision):
        return self._rng.random() < self.probability


class ScriptedSource(ListSource):
    """TL flits from an iterable, available at the decision points where ``available(decision)``
    (a :class:`Decision`) is true."""

    def __init__(self, flits, available):
        super().__init__(flits)
        self._script = available

    def _available(self, decision):
        return self._script(decision)


# --- Transmit -----------------------------------------------------------------------------------

_ZERO_SECTOR = bytes(SECTOR_BYTES)


def _half_end(segment, sector):
    """One past the last sector of the half segment that holds ``sector`` [Table 6-1]."""
    for first, last in HALF_SEGMENTS[segment]:
        if first <= sector <= last:
            return last + 1
    raise ValueError(f"sector {sector} is not in segment {segment}")


class Packer:
    """Transmit DL: TL flits in, one DL flit's payload and segment headers per :meth:`pack`.

    The packer follows the packing flow of §6.3.4 (Figure 6-5) for each segment, in sector
    order, keeping the carry-over across segments and DL flits. Its reading of the rules:

    1. "Start packing a segment." Steps 1..8 run once per segment, SH0 to SH4; step 9 ("goto
       (1)") moves to the next segment, and after SH4 to SH0 of the next DL flit.
    2. "If there is a DL ALT sector, it is placed in the first sector of the segment" -- never:
       [ours] this DL sends no DL messages, so DLAltSector is always 0.
    3. "If there is carry over from the previous Segment pack it in sector order": the rest of
       the TL flit that did not fit ("If a TL Flit does not pack into the current segment the
       remainder is carried over to the next segment"), from the segment's first sector. The
       next DL flit's SH0 is "the next segment" of SH4: the carry-over crosses DL flits too.
       The carry-over is at most 15 sectors (a TL flit has at least one sector where it
       starts), so it always ends inside the first half segment (16 sectors in every segment).
    4. "If TL Flit[0] is available, on this clock tick, then start packing it in sector order
       into the current segment [...], else zero unallocated sectors to the end of the half
       segment and goto (6)." The packer asks the source (a :class:`Decision`, slot 0) once,
       right after the carry-over; a TL flit starts in the first unallocated sector. If none is
       available, the sectors up to the end of the half segment holding the first unallocated
       sector are zeroed ([ours] which half: in this geometry always the first, see 3).
       "There shall be at least one unallocated sector in the segment to start adding a TL
       Flit": the source is asked only if one is left, and a TL flit may start in the last
       sector of a segment (15 of its sectors are then carried over).
    5. "If TL Flit[0] completes packing continue, else save remaining TL Flit[0] in carry over
       and done."
    6. "If there are unallocated sectors continue, else done."
    7. "If TL Flit[1] is available, on this clock tick, then start packing it [...] else zero
       remaining unallocated sectors and done." The source is asked again (slot 1). After
       TL Flit[0] it starts in the next sector; when TL Flit[0] was not available it starts at
       the first sector of the second half segment (Table 6-1), as the rule says: "the first
       tick of the packer may not have a TL Flit[0] to pack, the remaining ½ segment is zero
       filled, the 2'nd tick of the packer may have a TL Flit[1] available, and that starts to
       pack". It is then announced as TL Flit[1] with TL Flit[0] absent.
    8. "If TL Flit[1] packing is completed then done, else save remaining TL Flit[1] in carry
       over and done." (TL Flit[1] starts at a segment's sector 16 or later, and segments have
       at most 32 sectors, so it never completes with sectors left over.)

    Hence "Up to 2 TL Flits start packing into a segment", "TL Flits shall be packed in the
    order received", and an SH of 0x00 when no TL flit starts in the segment. The special case
    "where the first ½ segment is filled with a previous TL Flit carry over and an alternative
    sector, and there is a TL Flit to add, it is designated TL Flit[0]" (Figure 6-8) needs an
    alternative sector: a carry-over alone never fills the 16-sector first half. A DL flit with no
    TL flit sector at all (no carry-over in, no start) is a NOP flit [ours]: its payload and
    segment headers are zero, and the source was asked twice per segment.

    Attributes
    ----------
    dl_flits, tl_flits : int
        DL flits packed, TL flits started.
    """

    def __init__(self):
        self._carry = deque()           # sectors of the TL flit being packed, not yet placed
        self.dl_flits = 0
        self.tl_flits = 0

    @property
    def carry(self):
        """Sectors of a started TL flit that are still to be placed."""
        return len(self._carry)

    def pack(self, source):
        """Pack one DL flit, asking ``source`` (``take(decision)``) for TL flits; return its
        :class:`DlPayload`."""
        sectors = [None] * PAYLOAD_SECTORS
        starts = []
        carry_in = self.carry
        headers = bytes(self._segment(k, source, sectors, starts) for k in range(SEGMENTS))
        assert None not in sectors, "the packing flow left a sector unallocated"
        self.dl_flits += 1
        return DlPayload(b"".join(sectors), headers, tuple(starts), carry_in, self.carry)

    def _segment(self, segment, source, sectors, starts):
        """Steps 1..8 for one segment; return its segment header."""
        end = SEGMENT_ENDS[segment]
        header = 0
        pos = self._place(SEGMENT_STARTS[segment], end, sectors)          # steps 1, 3
        if pos < end:                                                      # one unallocated
            flit = source.take(Decision(self.dl_flits, segment, 0, pos))   # step 4
            if flit is None:
                pos = self._zero(pos, _half_end(segment, pos), sectors)
            else:
                header |= self._start(flit, 0, pos, starts)
                pos = self._place(pos, end, sectors)
                if self._carry:                                            # step 5
                    return header
        if pos < end:                                                      # step 6
            flit = source.take(Decision(self.dl_flits, segment, 1, pos))   # step 7
            if flit is None:
                self._zero(pos, end, sectors)
            else:
                header |= self._start(flit, 1, pos, starts)
                self._place(pos, end, sectors)                             # step 8
        return header

    def _start(self, flit, slot, pos, starts):
        """Begin TL flit ``flit`` as TL Flit[``slot``]; return its segment header bits."""
        if not isinstance(flit, TlFlit):
            raise TypeError(f"a source gives TlFlit objects, not {flit!r:.40}")
        self._carry.extend(flit.sectors)
        starts.append((pos, flit))
        self.tl_flits += 1
        return segment_header(*((flit, None) if slot == 0 else (None, flit)))

    def _place(self, pos, end, sectors):
        """Place carried sectors from ``pos`` on, up to ``end``; return the next free sector."""
        while self._carry and pos < end:
            sectors[pos] = self._carry.popleft()
            pos += 1
        return pos

    @staticmethod
    def _zero(pos, end, sectors):
        for k in range(pos, end):
            sectors[k] = _ZERO_SECTOR
        return end


def full_load_rate(dl_flits=64):
    """TL flits completed per DL flit when a TL flit is available at every decision point, over
    ``dl_flits`` DL flits from an empty carry-over, as a :class:`~fractions.Fraction`."""
    def endless():
        n = 0
        while True:
            yield TlFlit.from_int(n)
            n += 1

    packer, source = Packer(), ListSource(endless())
    for _ in range(dl_flits):
        packer.pack(source)
    return Fraction(packer.tl_flits - (1 if packer.carry else 0), dl_flits)


# --- Receive ------------------------------------------------------------------------------------

class _Piece(NamedTuple):
    first: int          # payload sector
    count: int
    slot: int | None    # the TL Flit[slot] that starts here, or None for a carry-over


class Unpacker:
    """Receive DL: good 640-byte DL flits in order (as the link-level replay accepts them), TL
    flits out.

    Each segment is read as the packer fills it (see :class:`Packer`): first the carry-over, then
    TL Flit[0] if SH announces it, in the next sector; TL Flit[1] if announced, right after TL
    Flit[0], or at the start of the second half segment when TL Flit[0] is absent. Zero-filled
    sectors, reserved bits and the Message bits of an absent TL flit are ignored ("Reserved
    fields [...] shall be ignored by receiving link partner" [§6.4]).

    A NOP flit (header payload bit 0) carries no TL flit and leaves a carry-over pending: a
    transmitter sends NOP flits "in their place" while its TxReplay buffer is full [§6.6.1],
    which may be between two payload flits that share a TL flit; the receiver enqueues only
    payload flits [§6.6.6.4].

    A malformed flit (one of :data:`UNPACK_ERRORS`: DLAltSector set, or a TL flit announced
    where no decision point is) is contained [§6.7.4.2, ours: README §1]: it is read as if the
    offending bits were clear, the TL flits it completes in its first
    :data:`CONTAINED_AFTER` payload sectors (the first nine 64-byte beats, which a receiver
    passes on before it has seen the whole flit) are delivered, and those it completes later
    and every later flit are dropped ("Subsequent TL Flits are dropped"), until :meth:`restart`
    (the link brought up again).

    Attributes
    ----------
    error : str or None
        The first error's kind (until :meth:`restart`).
    failure : FlitError or None
        That error.
    dl_flits, dropped, tl_flits : int
        DL flits fed, DL flits dropped (the malformed one and all after it), TL flits delivered.
    """

    def __init__(self):
        self._sectors = []              # sectors received of the TL flit under way
        self._messages = (False, False)
        self._flit_error = None
        self.error = self.failure = None
        self.dl_flits = self.dropped = self.tl_flits = 0

    def restart(self):
        """The link is brought up again: no carry-over, no error [ours]."""
        self._sectors, self._messages = [], (False, False)
        self.error = self.failure = None

    @property
    def pending(self):
        """Sectors still due of a TL flit started in an earlier DL flit (0: none)."""
        return TL_FLIT_SECTORS - len(self._sectors) if self._sectors else 0

    def feed(self, flit):
        """Take one DL flit; return the TL flits completed in it (``[]`` if it is dropped)."""
        index = self.dl_flits
        self.dl_flits += 1
        if self.error is not None:
            self.dropped += 1
            return []
        try:
            done = self._accept(bytes(flit), index)
        except FlitError as e:              # a bad CRC: nothing of it can be read
            done, self._flit_error = [], e
        if self._flit_error is None:
            return done
        self.failure, self._flit_error = self._flit_error, None
        self.error = self.failure.kind
        self.dropped += 1
        kept = [f for f, end in zip(done, self._ends) if end < CONTAINED_AFTER]
        self.tl_flits -= len(done) - len(kept)
        return kept

    # -- reading one flit; raises FlitError --

    def _accept(self, flit, index):
        if not crc_ok(flit):
            raise FlitError("crc", "the CRC is bad", index)
        if is_nop(flit):
            self._nop(flit, index)
            return []
        payload = [flit[k:k + SECTOR_BYTES] for k in range(0, PAYLOAD_BYTES, SECTOR_BYTES)]
        used = [False] * PAYLOAD_SECTORS
        done, self._ends = [], []
        for segment in range(SEGMENTS):
            sh = flit[SH_OFFSET + segment]
            self._segment_header(sh, segment, index)
            for piece in self._pieces(sh, segment, index):
                taken = self._take(payload, piece, sh)
                done += taken
                self._ends += [piece.first + piece.count - 1] * len(taken)
                used[piece.first:piece.first + piece.count] = [True] * piece.count
        self._payload(payload, used, index)
        self.tl_flits += len(done)
        return done

    def _pieces(self, sh, segment, index):
        """Where TL flit sectors lie in ``segment``, as its header ``sh`` and the carry-over
        announce them."""
        pos, end = SEGMENT_STARTS[segment], SEGMENT_ENDS[segment]
        pieces = []
        if self.pending:
            pieces.append(_Piece(pos, min(self.pending, end - pos), None))
            pos += pieces[-1].count
        for slot in (0, 1):
            if not sh & SH_PRESENT[slot]:
                if slot == 0:                   # TL Flit[0] was not available: zero fill
                    pos = _half_end(segment, pos) if pos < end else end
                continue
            if pos >= end:
                runs = "TL Flit[0]" if slot == 1 and sh & SH_PRESENT[0] else "the carry-over"
                self._malformed(FlitError(
                    "no_room", f"SH{segment}={sh:#04x} starts TL Flit[{slot}], but {runs} "
                    "runs to the end of the segment", index))
                continue                        # read as if the bit were clear
            pieces.append(_Piece(pos, min(TL_FLIT_SECTORS, end - pos), slot))
            pos += pieces[-1].count
        return pieces

    def _take(self, payload, piece, sh):
        """Collect a piece's sectors; return the TL flit it completes, if any."""
        if piece.slot is not None:
            message = sh >> SH_MESSAGE_SHIFT[piece.slot]
            self._messages = (bool(message & 1), bool(message & 2))
            self._sectors = []
        self._sectors += payload[piece.first:piece.first + piece.count]
        if len(self._sectors) < TL_FLIT_SECTORS:
            return []
        flit = TlFlit(b"".join(self._sectors), *self._messages)
        self._sectors = []
        return [flit]

    # -- checks; the unpacker makes only the one a receiver needs --

    def _segment_header(self, sh, segment, index):
        if sh & SH_ALT_SECTOR:
            self._malformed(FlitError("alt_sector", f"SH{segment}={sh:#04x} announces a DL "
                                      "alternative sector, and this DL exchanges no DL "
                                      "messages", index))

    def _malformed(self, error):
        """The flit being read is malformed: keep the first error and read on."""
        if self._flit_error is None:
            self._flit_error = error

    def _payload(self, payload, used, index):
        pass

    def _nop(self, flit, index):
        pass


class RulesChecker(Unpacker):
    """An :class:`Unpacker` that raises :class:`FlitError` at the first broken rule, for checking
    a packer whose TL flit timing is unknown (every choice the flow allows is accepted).

    Beyond the unpacker's checks it requires what the transmitter must do: the reserved segment
    header bits and the Message bits of an absent TL flit are 0 ("Reserved fields shall be set to
    0x0" [§6.4]); every sector no TL flit occupies is zero (steps 4, 7: "zero unallocated
    sectors"), which, as the segment headers fix where each TL flit starts, also means TL flits
    start only right after the carry-over or the previous TL flit, or at the second half segment
    after a zero fill; a payload flit carries at least one TL flit sector and a NOP flit is all
    zero [ours]; and, if ``expected`` is given, the TL flits are those, in order. NOP flits may
    come anywhere, also while a carry-over is pending (see :class:`Unpacker`).

    That at most 2 TL flits start in a segment needs no check here: the segment header can
    announce only two, and a third would lie in sectors that must be zero.
    """

    def __init__(self, expected=None):
        super().__init__()
        self._expected = None if expected is None else list(expected)

    def feed(self, flit):
        """Take one DL flit; return the TL flits completed in it, or raise :class:`FlitError`."""
        index = self.dl_flits
        self.dl_flits += 1
        done = self._accept(bytes(flit), index)
        if self._expected is not None:
            for k, got in enumerate(done, self.tl_flits - len(done)):
                if k >= len(self._expected):
                    raise FlitError("data", f"TL flit {k} was not expected "
                                    f"(only {len(self._expected)} are)", index)
                if got != self._expected[k]:
                    raise FlitError("data", f"TL flit {k} differs from the expected one", index)
        return done

    def _malformed(self, error):
        raise error

    def _segment_header(self, sh, segment, index):
        super()._segment_header(sh, segment, index)
        reserved = sh & SH_RESERVED
        for slot in (0, 1):
            if not sh & SH_PRESENT[slot]:
                reserved |= sh & 0b11 << SH_MESSAGE_SHIFT[slot]
        if reserved:
            raise FlitError("reserved", f"SH{segment}={sh:#04x} has reserved bits "
                            f"{reserved:#04x} set", index)

    def _payload(self, payload, used, index):
        if not any(used):
            raise FlitError("empty_payload", "a payload flit carries no TL flit sector", index)
        for k, (sector, in_use) in enumerate(zip(payload, used)):
            if not in_use and sector != _ZERO_SECTOR:
                raise FlitError("zero_fill", f"payload sector {k} belongs to no TL flit and is "
                                f"{sector.hex()}, not zero", index)

    def _nop(self, flit, index):
        if any(flit[:FH_OFFSET]) or any(flit[SH_OFFSET:CRC_OFFSET]):
            raise FlitError("nop_content", "a NOP flit has a non-zero payload or segment "
                            "header", index)


def unpack(flits):
    """The TL flits completed in each of the DL flits ``flits``; raise :class:`FlitError` on a
    malformed one."""
    unpacker, out = Unpacker(), []
    for flit in flits:
        out.append(unpacker.feed(flit))
        if unpacker.failure is not None:
            raise unpacker.failure
    return out


def check(flits, expected=None):
    """Check the DL flits ``flits`` against every packing rule (:class:`RulesChecker`); return
    all the TL flits completed in them, in order. ``expected`` TL flits, if given, must begin
    with those (a TL flit still being carried over at the end is not counted)."""
    checker = RulesChecker(expected)
    return [tl for flit in flits for tl in checker.feed(flit)]
