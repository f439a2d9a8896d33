# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the UALink transaction layer (TL) flit packer and unpacker.

Written from the UALink_200 Rev 1.0 Evaluation Copy, chapter 5 (TL) and chapter 2 (UPLI), with the
conventions and the transmit packing policy of ``rtl/scaleup_ip/tl/README.md`` (section numbers
``§3`` etc. below refer to that file, ``[§5.x]`` and ``Table 5-x`` to the specification).
Authentication is off and there is no address cache: requests are always sent uncompressed with
CLOAD = 0.

Everything is plain integers and bytes. A half-flit is a 256-bit integer (sector ``s`` at bits
``[32s+31:32s]``); a field of ``n`` sectors placed at sector ``s`` is the integer
``value << 32*s``, so its FTYPE nibble is the top nibble of its highest sector.

Credit tables are ``{class: {slot: n}}`` with the classes of :data:`CLASSES` and the slots of
:data:`SLOTS` (``"pool"`` or a virtual channel ``"vc0"`` .. ``"vc3"``).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from enum import IntEnum
from fractions import Fraction
from typing import ClassVar, NamedTuple

__all__ = [
    # sizes and codes
    "SECTOR_BITS", "HALF_SECTORS", "HALF_BITS", "BEAT_BYTES", "HALF_BYTES",
    "FType", "LAYOUTS", "FIELD_SECTORS", "CREDIT_SUBFIELDS",
    "MSG_NOP", "MSG_INIT_DONE", "MSG_POISON",
    "READ", "WRITE", "WRITE_FULL", "WRITE_MESSAGE", "ATOMIC_R", "ATOMIC_NR",
    "LEGAL_COMMANDS", "COMPRESSED_COMMANDS", "OKAY", "READ_STATUSES", "WRITE_STATUSES",
    "CLASSES", "SLOTS", "ERROR_KINDS", "REQUEST_LIMIT", "RESPONSE_LIMIT",
    # field codec
    "encode_field", "decode_field", "place", "extract", "parse_control",
    "encode_credit", "decode_credit", "fc_field",
    # transactions and their fields
    "Request", "ReadResponse", "WriteResponse", "Flit",
    "request_field", "compressed_request_field", "response_ftype", "response_field",
    "request_error", "within_block",
    "item_halves",
    "be_slot",
    "credit_table", "slot_of", "efficiency",
    # the two ends
    "RateLimiter", "Packer", "Unpacker",
]

# --- Sizes and codes ------------------------------------------------------------------------------

SECTOR_BITS = 32
HALF_SECTORS = 8
HALF_BITS = SECTOR_BITS * HALF_SECTORS
HALF_MASK = (1 << HALF_BITS) - 1
BEAT_BYTES = 64
HALF_BYTES = 32
BLOCK_BYTES = 256           # a request stays within an aligned 256-byte block (README §4)
BE_SLOT_BITS = 64           # byte enables of one beat in the byte-enable half-flit (README §1)
BE_SLOTS = HALF_BITS // BE_SLOT_BITS
REQUEST_LIMIT = 4           # source rate limits [§5.7]
RESPONSE_LIMIT = 8
MAX_REQUESTS = 4            # requests per control half: 4 compressed or 2 uncompressed [§5.10]
FAIR_LEAD_LIMIT = 16        # the balance count saturates at -16 and +15 [ours] (rule 4)
LEAD_SLACK = 4              # requests and responses issued may differ by this much [ours]


class FType(IntEnum):
    """Control field types, the top nibble of a field [Table 5-27]."""

    FLOW_CONTROL = 0x0
    REQUEST = 0x1
    RESPONSE = 0x2
    COMPRESSED_REQUEST = 0x3
    COMPRESSED_READ_RESPONSE = 0x4    # single-beat read response
    COMPRESSED_RESPONSE = 0x5         # write or multi-beat read response ("CWR")


#: Field bit layouts, ``(name, msb, lsb)`` from the top down; bit 0 is the field's lowest bit.
LAYOUTS = {
    FType.REQUEST: (                                                        # Table 5-29
        ("FTYPE", 127, 124), ("CMD", 123, 118), ("VCHAN", 117, 116), ("ASI", 115, 114),
        ("TAG", 113, 103), ("POOL", 102, 102), ("ATTR", 101, 94), ("LEN", 93, 88),
        ("METADATA", 87, 80), ("ADDR", 79, 25), ("SRCACCID", 24, 15), ("DSTACCID", 14, 5),
        ("CLOAD", 4, 4), ("CWAY", 3, 2), ("NUMBEATS", 1, 0)),
    FType.RESPONSE: (                                                       # Table 5-30
        ("FTYPE", 63, 60), ("VCHAN", 59, 58), ("TAG", 57, 47), ("POOL", 46, 46),
        ("LEN", 45, 44), ("OFFSET", 43, 42), ("STATUS", 41, 38), ("RDWR", 37, 37),
        ("LAST", 36, 36), ("SRCACCID", 35, 26), ("DSTACCID", 25, 16), ("SPARE", 15, 0)),
    FType.COMPRESSED_REQUEST: (                                             # Table 5-31
        ("FTYPE", 63, 60), ("CMD", 59, 57), ("VCHAN", 56, 55), ("ASI", 54, 53),
        ("TAG", 52, 42), ("POOL", 41, 41), ("LEN", 40, 39), ("METADATA", 38, 36),
        ("ADDR", 35, 22), ("SRCACCID", 21, 12), ("DSTACCID", 11, 2), ("CWAY", 1, 0)),
    FType.COMPRESSED_READ_RESPONSE: (                                       # Table 5-34
        ("FTYPE", 31, 28), ("VCHAN", 27, 26), ("TAG", 25, 15), ("POOL", 14, 14),
        ("DSTACCID", 13, 4), ("OFFSET", 3, 2), ("LAST", 1, 1), ("SPARE", 0, 0)),
    FType.COMPRESSED_RESPONSE: (                                            # Table 5-36
        ("FTYPE", 31, 28), ("VCHAN", 27, 26), ("TAG", 25, 15), ("POOL", 14, 14),
        ("DSTACCID", 13, 4), ("LEN", 3, 2), ("RDWR", 1, 1), ("SPARE", 0, 0)),
    FType.FLOW_CONTROL: (                                                   # Table 5-38
        ("FTYPE", 31, 28), ("REQCMD", 27, 22), ("RSPCMD", 21, 16), ("REQDATA", 15, 8),
        ("RSPDATA", 7, 0)),
}
#: Sectors of each field type [Table 5-2].
FIELD_SECTORS = {ftype: (layout[0][1] + 1) // SECTOR_BITS for ftype, layout in LAYOUTS.items()}

#: Flow Control subfield and count width of each credit class; a subfield is ``t vv c..c``
#: with ``t`` = 0 for pool credits, 1 for VC ``vv`` [Table 5-38].
CREDIT_SUBFIELDS = {
    "req_cmd": ("REQCMD", 3), "rsp_cmd": ("RSPCMD", 3),
    "req_data": ("REQDATA", 5), "rsp_data": ("RSPDATA", 5),
}
CLASSES = ("req_cmd", "rsp_cmd", "req_data", "rsp_data")
SLOTS = ("pool", "vc0", "vc1", "vc2", "vc3")

MSG_NOP = 0x00          # TL message types [Table 5-28]
MSG_INIT_DONE = 0x01    # Initial Credit Release Complete; payload 0 (no Shared Data Buffer mode)
MSG_POISON = 0x20
MSG_TYPE_MASK = 0xFF

READ, WRITE, WRITE_FULL, WRITE_MESSAGE = 0x03, 0x28, 0x29, 0x2A     # ReqCmd [Table 2-6]
ATOMIC_R, ATOMIC_NR = 0x30, 0x32
CMD_HAS_DATA = 0x20                                                 # ReqCmd[5]
CMD_WRITE_CLASS = 0b10                                              # ReqCmd[5:4]
LEGAL_COMMANDS = frozenset(
    [READ, *range(0x08, 0x10), WRITE, WRITE_FULL, WRITE_MESSAGE, *range(0x2C, 0x30),
     ATOMIC_R, ATOMIC_NR, *range(0x3C, 0x40)])
#: Compressed request CMD encodings [Table 5-33]; the others are reserved.
COMPRESSED_COMMANDS = {0b000: READ, 0b100: WRITE, 0b110: WRITE_FULL}

OKAY = 0x0                                                          # [Tables 2-9, 2-12]
READ_STATUSES = frozenset({0x0, 0x2, 0x3, 0x6, 0x8})
WRITE_STATUSES = READ_STATUSES | {0xF}

#: Receive error kinds (README §4), in the order the README lists them.
ERROR_KINDS = (
    "reserved_ftype", "footprint", "reserved_command", "impossible_length", "reserved_status",
    "misplaced_poison", "unknown_message", "mandatory_nop", "catch_overrun", "buffer_overrun",
    "compressed_request",
)


# --- Field codec ----------------------------------------------------------------------------------

def encode_field(ftype, **values):
    """Pack a control field.

    Parameters
    ----------
    ftype : FType
        The field type; it selects the layout and is written into FTYPE.
    **values : int
        Values by layout name (``CMD=0x03, TAG=5, ...``); names left out are 0.

    Returns
    -------
    int
        The field, bit 0 = its lowest bit (place it with :func:`place`).
    """
    layout = LAYOUTS[FType(ftype)]
    unknown = set(values) - {name for name, _, _ in layout[1:]}
    if unknown:
        raise ValueError(f"{FType(ftype).name} has no subfield {sorted(unknown)}")
    value = 0
    for name, msb, lsb in layout:
        v = int(ftype) if name == "FTYPE" else int(values.get(name, 0))
        if not 0 <= v < 1 << (msb - lsb + 1):
            raise ValueError(f"{name}={v:#x} does not fit in {msb - lsb + 1} bits")
        value |= v << lsb
    return value


def decode_field(ftype, value):
    """Split a control field into ``{name: int}`` by the layout of ``ftype`` (FTYPE included)."""
    return {name: (value >> lsb) & ((1 << (msb - lsb + 1)) - 1)
            for name, msb, lsb in LAYOUTS[FType(ftype)]}


def place(sector, value):
    """A field ``value`` placed at sectors ``sector ..`` of a half-flit."""
    return value << (SECTOR_BITS * sector)


def extract(half, sector, sectors):
    """The ``sectors``-sector field at ``sector ..`` of a half-flit."""
    return (half >> (SECTOR_BITS * sector)) & ((1 << (SECTOR_BITS * sectors)) - 1)


def parse_control(half):
    """Split a control half-flit into its fields by their footprints [Table 5-2].

    Each field's FTYPE is the top nibble of its highest sector, so the half is read from sector
    7 down; a field of ``n`` sectors starts at a multiple of ``n``, so fields never cross the
    groups of four sectors (0-3, 4-7) and sector 3 of each group is always the top of a field.
    A top sector with a reserved FTYPE, or with a field type whose footprint does not fit below
    it, is malformed: it is returned with ``ftype`` None and stands for its aligned pair of
    sectors (``2k``, ``2k+1``); reading goes on at the pair below. So every sector that the
    local footprint rule makes a top is decoded, whatever the other group holds, and one half
    can show several malformations (README §4). (Sector ``4q+2`` is a top only below a
    one-sector field, ``4q+1`` unless a request fills the group, ``4q`` below a one-sector
    field at ``4q+1``.)

    Returns
    -------
    list of (start_sector, ftype, value, problem)
        Lowest sector first; ``problem`` is ``None``, ``"reserved_ftype"`` or ``"footprint"``
        (then ``start_sector`` is the malformed top sector and ``value`` that sector).
    """
    found = []
    top = HALF_SECTORS - 1
    while top >= 0:
        nibble = (half >> (SECTOR_BITS * top + SECTOR_BITS - 4)) & 0xF
        size = FIELD_SECTORS.get(nibble)
        start = top + 1 - (size or 1)
        if size is None or start % size:        # also catches start < 0
            problem = "footprint" if size else "reserved_ftype"
            found.append((top, None, extract(half, top, 1), problem))
            top = (top & ~1) - 1                # the rest of its pair is not a field top
            continue
        found.append((start, FType(nibble), extract(half, start, size), None))
        top = start - 1
    return found[::-1]


def encode_credit(slot, count, count_bits):
    """One Flow Control subfield ``t vv c..c`` returning ``count`` credits of ``slot``."""
    if not 0 <= count < 1 << count_bits:
        raise ValueError(f"{count} credits do not fit in {count_bits} bits")
    if slot == "pool":
        return count                                         # t = 0: pool [Table 5-38]
    return (0b100 | SLOTS.index(slot) - 1) << count_bits | count


def decode_credit(value, count_bits):
    """Inverse of :func:`encode_credit`: ``(slot, count)``; ``vv`` is ignored when ``t`` = 0."""
    count = value & ((1 << count_bits) - 1)
    t, vv = value >> (count_bits + 2), (value >> count_bits) & 0b11
    return (f"vc{vv}" if t else "pool"), count


def fc_field(slot, counts):
    """A Flow Control field returning ``counts`` (``{class: n}``) credits of one ``slot``.

    Every class carries the slot's ``t``/``vv``, also with a count of 0 (README §3 rule 5).
    """
    _check_slot(slot)
    return encode_field(FType.FLOW_CONTROL, **{
        name: encode_credit(slot, counts.get(cls, 0), bits)
        for cls, (name, bits) in CREDIT_SUBFIELDS.items()})


# --- Transactions ---------------------------------------------------------------------------------

def _request_beats(cmd, num_beats):
    return num_beats + 1 if cmd & CMD_HAS_DATA else 0


def _check_widths(item, widths):
    for name, bits in widths.items():
        value = getattr(item, name)
        if not 0 <= value < 1 << bits:
            raise ValueError(f"{type(item).__name__}.{name}={value:#x} does not fit in {bits} bits")


def _check_beats(item, beats, names):
    for name in names:
        object.__setattr__(item, name, tuple(getattr(item, name)))
        if len(getattr(item, name)) != beats:
            raise ValueError(f"{type(item).__name__}.{name} needs {beats} entries")
    if any(len(beat) != BEAT_BYTES for beat in item.data):
        raise ValueError(f"{type(item).__name__}: every data beat is {BEAT_BYTES} bytes")


@dataclass(frozen=True)
class Request:
    """One UPLI request with its OrigData beats.

    ``length`` is ReqLen (doublewords - 1) and ``addr`` the 57-bit byte address ReqAddr
    (a multiple of 4). ``data`` (64-byte beats), ``byte_en`` (one 64-bit int per beat) and
    ``error`` (OrigDataError per beat) have ``num_beats + 1`` entries when ``cmd & 0x20``, none
    otherwise.
    """

    cmd: int
    vc: int
    asi: int
    tag: int
    attr: int
    length: int
    metadata: int
    addr: int
    src_acc: int
    dst_acc: int
    num_beats: int
    data: tuple = ()
    byte_en: tuple = ()
    error: tuple = ()

    WIDTHS: ClassVar[dict] = {"cmd": 6, "vc": 2, "asi": 2, "tag": 11, "attr": 8, "length": 6,
                              "metadata": 8, "addr": 57, "src_acc": 10, "dst_acc": 10,
                              "num_beats": 2}

    def __post_init__(self):
        _check_widths(self, self.WIDTHS)
        if self.addr % 4:
            raise ValueError("ReqAddr is a doubleword address")
        _check_beats(self, self.beats, ("data", "byte_en", "error"))
        if any(not 0 <= be < 1 << BE_SLOT_BITS for be in self.byte_en):
            raise ValueError("byte enables are 64 bits per beat")

    @property
    def beats(self):
        """OrigData beats: ``num_beats + 1`` for a command with data, else 0."""
        return _request_beats(self.cmd, self.num_beats)


@dataclass(frozen=True)
class ReadResponse:
    """One read response: one beat (``num_beats`` = 0) or a whole multi-beat burst.

    A burst (``num_beats`` > 0) stands for its ``num_beats + 1`` UPLI beats with offsets
    ``0 .. num_beats`` and ``last`` on the final one, so it has ``offset`` = 0 and ``last``.
    """

    vc: int
    tag: int
    src_acc: int
    dst_acc: int
    num_beats: int
    offset: int
    last: bool
    status: int
    data: tuple = ()
    error: tuple = ()

    WIDTHS: ClassVar[dict] = {"vc": 2, "tag": 11, "src_acc": 10, "dst_acc": 10, "num_beats": 2,
                              "offset": 2, "status": 4}

    def __post_init__(self):
        _check_widths(self, self.WIDTHS)
        if self.num_beats and (self.offset or not self.last):
            raise ValueError("a multi-beat read response has offset 0 and last set")
        _check_beats(self, self.beats, ("data", "error"))

    @property
    def beats(self):
        return self.num_beats + 1


@dataclass(frozen=True)
class WriteResponse:
    """One write response."""

    vc: int
    tag: int
    src_acc: int
    dst_acc: int
    status: int

    WIDTHS: ClassVar[dict] = {"vc": 2, "tag": 11, "src_acc": 10, "dst_acc": 10, "status": 4}
    beats = 0                   # a write response carries no data
    data = error = ()

    def __post_init__(self):
        _check_widths(self, self.WIDTHS)


@dataclass(frozen=True)
class Flit:
    """One TL flit: 512 bits (sector ``s`` = bits ``[32s+31:32s]``) and the message bits."""

    data: int
    m0: bool = False    # lower half-flit is a message
    m1: bool = False    # upper half-flit is a message

    def __post_init__(self):
        if not 0 <= self.data < 1 << (2 * HALF_BITS):
            raise ValueError("a flit is 512 bits")

    @classmethod
    def of(cls, lower, upper, m0=False, m1=False):
        """A flit from its two half-flits."""
        if not 0 <= lower <= HALF_MASK:
            raise ValueError("a half-flit is 256 bits")
        return cls(lower | upper << HALF_BITS, m0, m1)

    @property
    def lower(self):
        return self.data & HALF_MASK

    @property
    def upper(self):
        return self.data >> HALF_BITS


def request_field(r, pool, cload=False, cway=0):
    """The uncompressed request field (FTYPE 0x1) of ``r``; CLOAD and CWAY as given."""
    return encode_field(
        FType.REQUEST, CMD=r.cmd, VCHAN=r.vc, ASI=r.asi, TAG=r.tag, POOL=pool, ATTR=r.attr,
        LEN=r.length, METADATA=r.metadata, ADDR=r.addr >> 2, SRCACCID=r.src_acc,
        DSTACCID=r.dst_acc, CLOAD=cload, CWAY=cway, NUMBEATS=r.num_beats)


#: Compressed request CMD codes by UPLI command [Table 5-33].
COMPRESSED_CODES = {cmd: code for code, cmd in COMPRESSED_COMMANDS.items()}
#: A compressed request carries ReqAddr[19:6] [Table 5-31].
COMPRESSED_ADDR_LSB, COMPRESSED_ADDR_BITS = 6, 14


def compressed_request_field(r, pool, cway):
    """The compressed request field (FTYPE 0x3, Table 5-31) of ``r``, which must meet Table
    5-32 (the address cache decides that): LEN counts 64-byte beats - 1, METADATA carries
    ReqMetaData[2:0], ADDR ReqAddr[19:6]."""
    return encode_field(
        FType.COMPRESSED_REQUEST, CMD=COMPRESSED_CODES[r.cmd], VCHAN=r.vc, ASI=r.asi,
        TAG=r.tag, POOL=pool, LEN=(r.length + 1) // 16 - 1, METADATA=r.metadata,
        ADDR=(r.addr >> COMPRESSED_ADDR_LSB) & ((1 << COMPRESSED_ADDR_BITS) - 1),
        SRCACCID=r.src_acc, DSTACCID=r.dst_acc, CWAY=cway)


def response_ftype(r):
    """The field type of a response (README §2): OKAY responses are compressed (0x4 for a
    single-beat read, 0x5 otherwise), any other status takes an uncompressed 0x2 field."""
    if r.status != OKAY:
        return FType.RESPONSE
    if isinstance(r, ReadResponse) and not r.num_beats:
        return FType.COMPRESSED_READ_RESPONSE
    return FType.COMPRESSED_RESPONSE


def response_field(r, pool):
    """The field of a response (README §2): ``(ftype, value)``; RD/WR = 1 for reads."""
    read = isinstance(r, ReadResponse)
    common = {"VCHAN": r.vc, "TAG": r.tag, "POOL": pool, "DSTACCID": r.dst_acc}
    ftype = response_ftype(r)
    if ftype == FType.COMPRESSED_READ_RESPONSE:
        extra = {"OFFSET": r.offset, "LAST": r.last}
    elif ftype == FType.COMPRESSED_RESPONSE:
        extra = {"LEN": r.num_beats if read else 0, "RDWR": read}
    else:
        extra = {
            "LEN": r.num_beats if read else 0, "OFFSET": r.offset if read else 0,
            "LAST": r.last if read else 0, "STATUS": r.status, "RDWR": read,
            "SRCACCID": r.src_acc}
    return ftype, encode_field(ftype, **common, **extra)


def within_block(addr, nbytes):
    """Whether ``nbytes`` from byte address ``addr`` stay within one aligned 256-byte block."""
    return addr % BLOCK_BYTES + nbytes <= BLOCK_BYTES


def request_error(cmd, addr, length, num_beats):
    """The README §4 check of a request: ``None``, ``"reserved_command"`` or
    ``"impossible_length"`` (``addr`` is ReqAddr, ``length`` is ReqLen)."""
    if cmd not in LEGAL_COMMANDS:
        return "reserved_command"
    nbytes = 4 * (length + 1)
    in_block = within_block(addr, nbytes)
    if cmd == READ:
        ok = in_block
    elif cmd >> 4 == CMD_WRITE_CLASS:
        ok = in_block and num_beats + 1 == -(-(addr % BEAT_BYTES + nbytes) // BEAT_BYTES)
        if cmd == WRITE_FULL:
            ok = ok and addr % BEAT_BYTES == 0 and nbytes % BEAT_BYTES == 0
    elif cmd in (ATOMIC_R, ATOMIC_NR):
        ok = num_beats == 0
    else:
        ok = True                                   # vendor-defined read and atomic commands
    return None if ok else "impossible_length"


def be_slot(addr, beat):
    """The 64-bit slot of beat ``beat``'s byte enables in the byte-enable half-flit.

    README §1 gives ``A[7:6] + beat``; legal requests never pass slot 3, and a vendor-defined
    atomic (no length check) wraps modulo 4 here, so its beats still get distinct slots.
    """
    return ((addr >> 6) + beat) % BE_SLOTS


def _beat_halves(beat, poisoned):
    """The two data half-flits of a 64-byte beat: ``(value, message, kind)`` each."""
    for half in (beat[:HALF_BYTES], beat[HALF_BYTES:]):
        value = int.from_bytes(half, "little")
        if poisoned:      # a Poisoned Data message keeps bytes 1..31 (README §1)
            yield value & ~MSG_TYPE_MASK | MSG_POISON, True, "P"
        else:
            yield value, False, "D"


def item_halves(item):
    """The data half-flits an item implies, in order, as ``(value, message, kind)`` with kind
    ``D`` (data), ``P`` (Poisoned Data message) or ``B`` (byte enables) [§5.1.1, §5.3]."""
    for beat, poisoned in zip(item.data, item.error):
        yield from _beat_halves(beat, poisoned)
    if isinstance(item, Request) and item.beats and item.cmd != WRITE_FULL:
        yield sum(be << (BE_SLOT_BITS * be_slot(item.addr, k))
                  for k, be in enumerate(item.byte_en)), False, "B"


# --- Credits and rate limits ----------------------------------------------------------------------

def _check_slot(slot, cls=None):
    if slot not in SLOTS or (cls is not None and cls not in CLASSES):
        raise ValueError(f"unknown credit class/slot {cls!r}/{slot!r}")


def credit_table(init=None):
    """A full ``{class: {slot: n}}`` table, zero where ``init`` says nothing."""
    table = {cls: dict.fromkeys(SLOTS, 0) for cls in CLASSES}
    for cls, slots in (init or {}).items():
        for slot, n in slots.items():
            _check_slot(slot, cls)
            table[cls][slot] += n
    return table


def slot_of(pool, vc):
    """The credit slot named by a field's POOL and VCHAN."""
    return "pool" if pool else f"vc{vc}"


def efficiency(data_halves, flits):
    """Data bytes over all bytes [§5.4]: ``32 * data_halves / (64 * flits)``."""
    return Fraction(HALF_BYTES * data_halves, 2 * HALF_BYTES * flits)


class RateLimiter:
    """Source rate limit [§5.7]: at most ``limit`` items in flight, one retired per flit."""

    def __init__(self, limit):
        self.limit = limit
        self.outstanding = 0

    @property
    def allowance(self):
        """Items the next flit may issue."""
        return self.limit - self.outstanding

    def flit(self, issued):
        """Account one flit that issued ``issued`` items (README §3 rule 7)."""
        self.outstanding = max(0, self.outstanding + issued - 1)


_ITEM_CLASSES = {Request: ("req_cmd", "req_data"), ReadResponse: ("rsp_cmd", "rsp_data"),
                 WriteResponse: ("rsp_cmd", "rsp_data")}


# --- Transmit -------------------------------------------------------------------------------------

class _Half(NamedTuple):
    value: int
    message: bool
    kind: str       # C control, D data, B byte enables, P poison, M message, N MANDATORY NOP


_MANDATORY_NOP = _Half(0, False, "N")


class Packer:
    """Transmit TL: UPLI items in, one flit per :meth:`step` out (README §3).

    Parameters
    ----------
    advertise : dict
        ``{class: {slot: n}}``, this TL's receive buffers: credit returns pending at time 0,
        sent in Flow Control fields before the Initial Credit Release Complete message.
    granted : dict, optional
        ``{class: {slot: n}}`` credits the peer has granted, usable from time 0.
    address_cache : optional
        A Tx address cache (``scaleup_ip.model.tl.addrcache.TxAddressCache``): its ``request(acc,
        cmd, attr, length, addr, metadata)`` decides, as each request is pushed, whether it goes
        compressed, with CLOAD, or plain. Without one no request is compressed.
    cache_index : str
        The request field that is the cache row: "DSTACCID" (an accelerator's Tx cache
        [§5.5]) or "SRCACCID" (a switch's).
    compact : bool
        Fill each control half by the compact policy (README §3, *Compact packer*) instead of
        choosing among candidates.

    Attributes
    ----------
    credits : dict
        Credits held, ``{class: {slot: n}}``.
    init_sent : bool
        The Initial Credit Release Complete message has been sent.
    trace : list of str
        Per emitted flit, the kinds of its lower and upper half (``"CD"``, ``"DB"``, ...:
        C control, D data, B byte enables, P Poisoned Data, M message, N MANDATORY NOP).
    issued : list of (int, int)
        Per emitted flit, the requests and responses its control half issued.
    lead : int
        Requests minus responses issued so far, saturating at ``-FAIR_LEAD_LIMIT`` and
        ``FAIR_LEAD_LIMIT - 1`` (the balance count of README §3 rules 3 and 4).
    flits, control_halves, data_halves, be_halves, poison_halves, mandatory_nops, nop_sectors,
    fc_fields, requests_sent, responses_sent, compressed_sent, pace_flits : int
        Counters. ``data_halves`` counts data positions (poisoned ones too), ``nop_sectors``
        the NOP sectors of control halves, ``pace_flits`` the slot packer's pacing flits
        (:func:`~.slots.paces`; none here).
    """

    def __init__(self, advertise: dict, granted: dict | None = None, address_cache=None,
                 cache_index: str = "DSTACCID", compact: bool = False):
        if cache_index not in ("DSTACCID", "SRCACCID"):
            raise ValueError(f"cache_index must be DSTACCID or SRCACCID, not {cache_index!r}")
        self._cache = address_cache
        self._compact = compact
        self._cache_acc = "dst_acc" if cache_index == "DSTACCID" else "src_acc"
        self._decisions = deque()       # (FTYPE, CLOAD, CWAY) of each queued request
        self.credits = credit_table(granted)
        self._returns = credit_table(advertise)
        self._requests = deque()
        self._responses = deque()
        self._owed = deque()            # data half-flits owed to control halves already sent
        self._rates = {"req": RateLimiter(REQUEST_LIMIT), "rsp": RateLimiter(RESPONSE_LIMIT)}
        self.init_sent = False
        self.trace = []
        self.issued = []
        self.flits = self.control_halves = self.data_halves = self.be_halves = 0
        self.poison_halves = self.mandatory_nops = self.nop_sectors = self.fc_fields = 0
        self.requests_sent = self.responses_sent = self.compressed_sent = self.pace_flits = 0
        self.lead = 0                   # requests minus responses issued, saturating (rule 4)

    # -- inputs --

    def push_request(self, r: Request):
        """Queue a request (with its data beats)."""
        if not isinstance(r, Request):
            raise TypeError("push_request takes a Request")
        decision = (FType.REQUEST, False, 0)
        if self._cache is not None:
            d = self._cache.request(getattr(r, self._cache_acc), r.cmd, r.attr, r.length,
                                    r.addr, r.metadata)
            ftype = FType.COMPRESSED_REQUEST if d.compressed else FType.REQUEST
            decision = (ftype, d.cload, d.way or 0)
        self._requests.append(r)
        self._decisions.append(decision)

    def push_response(self, r: ReadResponse | WriteResponse):
        """Queue a read or write response; one response queue, in push order."""
        if not isinstance(r, (ReadResponse, WriteResponse)):
            raise TypeError("push_response takes a ReadResponse or a WriteResponse")
        self._responses.append(r)

    def grant(self, cls: str, slot: str, n: int):
        """The peer returned ``n`` credits of ``cls``/``slot``."""
        _check_slot(slot, cls)
        self.credits[cls][slot] += n

    def return_credits(self, cls: str, slot: str, n: int):
        """The local receiver freed ``n`` buffers: return them in Flow Control fields."""
        _check_slot(slot, cls)
        self._returns[cls][slot] += n

    @property
    def backlog(self):
        """Requests and responses queued but not yet placed in a control half."""
        return len(self._requests) + len(self._responses)

    @property
    def pending_returns(self):
        """Credits the local receiver freed that no Flow Control field has returned yet."""
        return sum(n for slots in self._returns.values() for n in slots.values())

    @property
    def allowances(self):
        """``(requests, responses)`` the next control half may issue under the rate limits."""
        return self._rates["req"].allowance, self._rates["rsp"].allowance

    # -- one clock --

    def step(self) -> Flit | None:
        """One flit time: the flit sent, or ``None`` when nothing may be sent (README §3)."""
        if len(self._owed) >= 2:
            return self._emit(self._owed.popleft(), self._owed.popleft(), (0, 0))
        control = self._control(required=bool(self._owed))
        if control is None:
            return None
        lower, issued = control
        upper = self._owed.popleft() if self._owed else _MANDATORY_NOP
        return self._emit(lower, upper, issued)

    def drain(self, max_steps=100000) -> list[Flit]:
        """Step until :meth:`step` returns ``None``; the flits sent."""
        flits = []
        for _ in range(max_steps):
            flit = self.step()
            if flit is None:
                return flits
            flits.append(flit)
        raise RuntimeError(f"still sending after {max_steps} flits")

    # -- control half --

    def _control(self, required):
        """The control position's half and ``(requests, responses)`` issued, or ``None`` when
        the control would be empty and is not ``required`` (no data half owed)."""
        pending = self.pending_returns > 0
        if not self.init_sent and not pending:
            self.init_sent = True                                   # README §3 rule 1
            return _Half(MSG_INIT_DONE, True, "M"), (0, 0)
        reserve = int(pending)                                      # rule 2
        if not self.init_sent:
            requests, responses = [], []
        elif self._compact:
            requests, responses = self._fill(reserve)
        else:
            requests, responses = self._choose(reserve, required)
        if not (requests or responses or pending or required):
            return None
        half, taken = 0, set()
        sizes = [FIELD_SECTORS[ftype] for _, _, (ftype, _, _) in requests]
        starts, sector = _request_starts(sizes)
        for (item, pool, decision), start, size in zip(requests, starts, sizes):
            half |= self._place_request(item, pool, decision, start)
            taken.update(range(start, start + size))
        gap = [s for s in range(sector) if s not in taken]     # before an aligned 0x1 field
        for item, pool in responses:
            half, sector = self._place(item, pool, half, sector)
        fc_free = ([] if self._compact else gap) + list(range(sector, HALF_SECTORS))
        half, used = self._place_flow_control(half, fc_free)
        free = len(gap) + HALF_SECTORS - sector
        self.nop_sectors += free - used
        return _Half(half, False, "C"), (len(requests), len(responses))

    def _choose(self, reserve, swapped):
        """The request and response prefixes (rules 3, 4, 6): requests as ``[(item, pool,
        decision)]``, responses as ``[(item, pool)]``; ``reserve`` sectors stay free;
        ``swapped`` when the control shares its flit with an owed data half-flit."""
        sizes = [FIELD_SECTORS[ftype] for ftype, _, _ in self._decisions]

        def free(n, more=0):
            """Sectors left free by ``n`` requests, their alignment gap included, and
            ``more`` sectors from the end of the requests."""
            end = _request_starts(sizes[:n])[1] + more
            return -1 if end > HALF_SECTORS else HALF_SECTORS - sum(sizes[:n]) - more

        most = min(MAX_REQUESTS, self._rates["req"].allowance)
        requests = self._prefix(self._requests, most, lambda items: free(len(items)) >= reserve)
        allowed = min(RESPONSE_LIMIT, self._rates["rsp"].allowance)
        # every response that could go in this control, were the half theirs (rule 4)
        most_rsp = len(self._prefix(self._responses, allowed,
                                    lambda items: free(0, _response_sectors(items)) >= reserve))
        candidates = []                                         # rule 3, for each count
        for a in range(len(requests) + 1):
            cap = allowed
            if requests and a < len(self._requests):            # balance: rule 4
                cap = min(cap, max(0, a + self.lead + LEAD_SLACK))
            responses = self._prefix(self._responses, cap,
                                     lambda items: free(a, _response_sectors(items)) >= reserve)
            b = len(responses)
            lead = self.lead + a - b
            if a + b and (lead <= LEAD_SLACK or b == most_rsp):
                end = _request_starts(sizes[:a])[1] + _response_sectors([r for r, _ in responses])
                data = any(item.beats for item, _ in requests[:a] + responses)
                candidates.append(((data or swapped, end, -abs(lead)), a, responses))
        if not candidates:
            return [], []
        _, a, responses = max(candidates, key=lambda c: c[0])
        return self._take(self._prefix(self._requests, a, lambda items: True),   # rule 6 for a
                          responses)

    def _take(self, requests, responses):
        """Take ``requests`` and ``responses`` (``[(item, pool)]``, prefixes of the queues)
        off the queues and count the balance; the requests with their cache decisions, as
        :meth:`_choose` returns them."""
        requests = [(item, pool, self._decisions.popleft()) for item, pool in requests]
        for _ in requests:
            self._requests.popleft()
        for _ in responses:
            self._responses.popleft()
        self.lead = max(-FAIR_LEAD_LIMIT,
                        min(FAIR_LEAD_LIMIT - 1, self.lead + len(requests) - len(responses)))
        return requests, responses

    def _fill(self, reserve):
        """The compact policy (README §3, *Compact packer*): in rounds, the next request, then
        the next response, each joining while its fields end by sector ``8 - reserve``, within
        its allowance and its credits (:meth:`_join`); a round that adds nothing ends the
        control. Returns what :meth:`_choose` returns."""
        sizes = [FIELD_SECTORS[ftype] for ftype, _, _ in self._decisions]
        req_cap = min(MAX_REQUESTS, self._rates["req"].allowance, len(self._requests))
        rsp_cap = min(RESPONSE_LIMIT, self._rates["rsp"].allowance, len(self._responses))
        requests, responses = [], []

        def fits(a, rsp):
            end = _request_starts(sizes[:a])[1] + _response_sectors([r for r, _ in rsp])
            return end + reserve <= HALF_SECTORS

        while True:
            a, b = len(requests), len(responses)
            req = self._join(requests, self._requests[a]) if a < req_cap else None
            rsp = self._join(responses, self._responses[b]) if b < rsp_cap else None
            more = responses + [rsp] if rsp else responses
            req_ok = req is not None and fits(a + 1, responses)
            # balance (rule 4): while requests wait, responses stay within LEAD_SLACK of them
            capped = (a < req_cap and not self._requests[a].beats
                      and b + 1 > a + req_ok + self.lead + LEAD_SLACK)
            rsp_ok = (rsp is not None and not capped and fits(a, more)
                      and (not req_ok or fits(a + 1, more)))
            if req_ok:
                requests.append(req)
            if rsp_ok:
                responses.append(rsp)
            if not (req_ok or rsp_ok):
                return self._take(requests, responses)

    def _join(self, taken, item):
        """``(item, pool)`` when ``item`` may join the fields ``taken`` of its kind in a compact
        control, else ``None``. The first field takes its VC's credits when they cover it, else
        the pool's; the others take the same kind (and, on VC credits, the same VC) while the
        credits cover them all [ours]."""
        cmd_cls, data_cls = _ITEM_CLASSES[type(item)]
        if taken:
            first, pool = taken[0]
            choices = [pool] if pool or item.vc == first.vc else []
        else:
            choices = [False, True]
        cmd = len(taken) + 1
        data = item.beats + sum(t.beats for t, _ in taken)
        for pool in choices:
            slot = slot_of(pool, item.vc)
            if self.credits[cmd_cls][slot] >= cmd and self.credits[data_cls][slot] >= data:
                return item, pool
        return None

    def _prefix(self, queue, cap, fits):
        """The longest prefix of ``queue`` of at most ``cap`` items that ``fits`` and is credit
        feasible, as ``[(item, pool)]`` (both conditions are prefix-closed, so the first
        failure ends the search)."""
        best = []
        for n in range(1, min(cap, len(queue)) + 1):
            items = list(itertools.islice(queue, n))
            pools = self._pools(items)
            if not fits(items) or pools is None:
                break
            best = [(item, pools[item.vc]) for item in items]
        return best

    def _pools(self, items):
        """Rule 6: ``{vc: pool}`` for the items' VCs, or ``None`` if the credits do not cover
        them. Items that all share one VC use that VC's credits when its counters of both
        classes cover them; otherwise all use pool credits, if the pool covers them."""
        cmd_cls, data_cls = _ITEM_CLASSES[type(items[0])]
        cmd, data = len(items), sum(item.beats for item in items)
        vcs = {item.vc for item in items}
        if len(vcs) == 1:
            slot = slot_of(False, items[0].vc)
            if self.credits[cmd_cls][slot] >= cmd and self.credits[data_cls][slot] >= data:
                return {items[0].vc: False}
        if self.credits[cmd_cls]["pool"] >= cmd and self.credits[data_cls]["pool"] >= data:
            return dict.fromkeys(vcs, True)
        return None

    def _place(self, item, pool, half, sector):
        """Spend the response's credits, place its field and queue its data half-flits."""
        cmd_cls, data_cls = _ITEM_CLASSES[type(item)]
        slot = slot_of(pool, item.vc)
        self.credits[cmd_cls][slot] -= 1
        self.credits[data_cls][slot] -= item.beats
        ftype, value = response_field(item, pool)
        sector += sector % FIELD_SECTORS[ftype]
        self.responses_sent += 1
        self._owed.extend(_Half(*h) for h in item_halves(item))
        return half | place(sector, value), sector + FIELD_SECTORS[ftype]

    def _place_request(self, item, pool, decision, start):
        """Spend the request's credits, queue its data half-flits; its field at ``start``."""
        cmd_cls, data_cls = _ITEM_CLASSES[Request]
        slot = slot_of(pool, item.vc)
        self.credits[cmd_cls][slot] -= 1
        self.credits[data_cls][slot] -= item.beats
        ftype, cload, cway = decision
        if ftype == FType.COMPRESSED_REQUEST:
            value = compressed_request_field(item, pool, cway)
            self.compressed_sent += 1
        else:
            value = request_field(item, pool, cload, cway)
        self.requests_sent += 1
        self._owed.extend(_Half(*h) for h in item_halves(item))
        return place(start, value)

    def _place_flow_control(self, half, free):
        """Rule 5: one Flow Control field per slot with returns pending, in slot order, in the
        ``free`` sectors in turn; the half and the number of sectors used."""
        used = 0
        for slot in SLOTS:
            if used == len(free):
                break
            counts = {cls: min(self._returns[cls][slot], (1 << bits) - 1)
                      for cls, (_, bits) in CREDIT_SUBFIELDS.items()}
            if not any(counts.values()):
                continue
            for cls, n in counts.items():
                self._returns[cls][slot] -= n
            half |= place(free[used], fc_field(slot, counts))
            used += 1
            self.fc_fields += 1
        return half, used

    def _emit(self, lower, upper, issued):
        """Assemble the flit and account it (counters, rate limits, trace)."""
        for half in (lower, upper):
            self.control_halves += half.kind == "C"
            self.data_halves += half.kind in "DP"
            self.be_halves += half.kind == "B"
            self.poison_halves += half.kind == "P"
            self.mandatory_nops += half.kind == "N"
        self._rates["req"].flit(issued[0])
        self._rates["rsp"].flit(issued[1])
        self.flits += 1
        self.trace.append(lower.kind + upper.kind)
        self.issued.append(issued)
        return Flit.of(lower.value, upper.value, lower.message, upper.message)


def _request_starts(sizes):
    """Start sectors of request fields of ``sizes`` sectors placed in order from sector 0, each
    at the next sector its footprint allows (a 4-sector field at 0 or 4, a 2-sector one at an
    even sector [Table 5-2]), and the sector after the last; requests are ordered from the
    low sectors up [§5.6.2]."""
    starts, sector = [], 0
    for size in sizes:
        sector += -sector % size
        starts.append(sector)
        sector += size
    return starts, sector


def _response_sectors(items):
    """Sectors spanned by a run of responses placed in order from an even sector, each at the
    next sector its footprint allows (a NOP sector before an uncompressed one at an odd
    sector) (README §3 rule 4)."""
    sector = 0
    for r in items:
        size = FIELD_SECTORS[response_ftype(r)]
        sector += sector % size + size
    return sector


# --- Receive --------------------------------------------------------------------------------------

def _first_error(errors):
    """The error counted among ``errors`` found in one half-flit: the kind listed first in
    :data:`ERROR_KINDS` (README §4), or ``None``."""
    return min(errors, key=ERROR_KINDS.index, default=None)


_BE = -1    # data-slot index of a byte-enable half-flit


class _Pending:
    """A request or response whose data half-flits are still arriving."""

    def __init__(self, make, beats, with_be):
        self.make = make            # make(data, error, be) -> the finished item
        self.halves = [0] * (2 * beats)
        self.poison = [False] * (2 * beats)
        self.be = 0
        self.missing = 2 * beats + with_be
        self.slots = [(self, i) for i in range(2 * beats)] + ([(self, _BE)] if with_be else [])

    def store(self, index, value, poisoned):
        if index == _BE:
            self.be = value
        else:
            self.halves[index], self.poison[index] = value, poisoned
        self.missing -= 1

    def build(self):
        lows, highs = self.halves[0::2], self.halves[1::2]
        data = tuple((lo | hi << HALF_BITS).to_bytes(BEAT_BYTES, "little")
                     for lo, hi in zip(lows, highs))
        error = tuple(a or b for a, b in zip(self.poison[0::2], self.poison[1::2]))
        return self.make(data, error, self.be)


class _Staged:
    """What one flit changes in the public state; applied only if the flit has no error."""

    def __init__(self):
        self.errors = []        # error kinds found in the half-flit being read
        self.granted = []       # (class, slot, n)
        self.consumed = []
        self.init = False
        self.poisoned = 0
        self.data = 0
        self.issued = {"req": 0, "rsp": 0}


def _request_kwargs(f):
    """Request constructor arguments from a decoded uncompressed request field."""
    return {"cmd": f["CMD"], "vc": f["VCHAN"], "asi": f["ASI"], "tag": f["TAG"],
            "attr": f["ATTR"], "length": f["LEN"], "metadata": f["METADATA"],
            "addr": f["ADDR"] << 2, "src_acc": f["SRCACCID"], "dst_acc": f["DSTACCID"],
            "num_beats": f["NUMBEATS"]}


#: The uncompressed ADDR field is ReqAddr[56:2]; a cache entry holds ReqAddr[56:20].
_TAG_SHIFT = 18


def _compressed_request_kwargs(f, addr):
    """Request arguments from a compressed request field (CMD not reserved [Table 5-33]) and
    ReqAddr rebuilt by the address cache; ATTR and the omitted METADATA bits are those Table
    5-32 requires."""
    cmd = COMPRESSED_COMMANDS[f["CMD"]]
    return {"cmd": cmd, "vc": f["VCHAN"], "asi": f["ASI"], "tag": f["TAG"],
            "attr": 0xFF if cmd == READ else 0x00, "length": 16 * (f["LEN"] + 1) - 1,
            "metadata": f["METADATA"], "addr": addr,
            "src_acc": f["SRCACCID"], "dst_acc": f["DSTACCID"],
            "num_beats": f["LEN"] if cmd & CMD_HAS_DATA else 0}


def _response_kwargs(ftype, f):
    """``(type, constructor arguments, error)`` of a decoded response field (README §2);
    ``error`` is ``"reserved_status"`` or ``None`` (the arguments are built either way)."""
    common = {"vc": f["VCHAN"], "tag": f["TAG"], "dst_acc": f["DSTACCID"]}
    if ftype == FType.COMPRESSED_READ_RESPONSE:
        return ReadResponse, {**common, "src_acc": 0, "num_beats": 0, "offset": f["OFFSET"],
                              "last": bool(f["LAST"]), "status": OKAY}, None
    if ftype == FType.COMPRESSED_RESPONSE and f["RDWR"]:
        return ReadResponse, {**common, "src_acc": 0, "num_beats": f["LEN"], "offset": 0,
                              "last": True, "status": OKAY}, None
    if ftype == FType.COMPRESSED_RESPONSE:
        return WriteResponse, {**common, "src_acc": 0, "status": OKAY}, None
    if f["RDWR"]:
        error = None if f["STATUS"] in READ_STATUSES else "reserved_status"
        multi = f["LEN"] > 0
        return ReadResponse, {**common, "src_acc": f["SRCACCID"], "num_beats": f["LEN"],
                              "offset": 0 if multi else f["OFFSET"],
                              "last": multi or bool(f["LAST"]), "status": f["STATUS"]}, error
    error = None if f["STATUS"] in WRITE_STATUSES else "reserved_status"
    return WriteResponse, {**common, "src_acc": f["SRCACCID"], "status": f["STATUS"]}, error


def _beats(kind, kwargs):
    """Data beats of an item being received."""
    if kind is Request:
        return _request_beats(kwargs["cmd"], kwargs["num_beats"])
    return kwargs["num_beats"] + 1 if kind is ReadResponse else 0


def _maker(kind, kwargs):
    """``make(data, error, be)`` building the received item once its data is in."""
    if kind is WriteResponse:
        return lambda data, error, be: WriteResponse(**kwargs)
    if kind is ReadResponse:
        return lambda data, error, be: ReadResponse(**kwargs, data=data, error=error)

    def make(data, error, be):
        mask = (1 << BE_SLOT_BITS) - 1
        if kwargs["cmd"] == WRITE_FULL:
            byte_en = (mask,) * len(data)
        else:
            byte_en = tuple((be >> (BE_SLOT_BITS * be_slot(kwargs["addr"], k))) & mask
                            for k in range(len(data)))
        return Request(**kwargs, data=data, byte_en=byte_en, error=error)
    return make


class Unpacker:
    """Receive TL: flits in, UPLI items out (README §4, [§5.1]).

    Parameters
    ----------
    buffers : dict, optional
        ``{class: {slot: n}}``, the receive buffers this TL advertised; when given, a field
        that needs more than is free is a ``buffer_overrun`` error (free buffers with
        :meth:`release`). When ``None``, credits are not checked.
    address_cache : optional
        An Rx address cache (``scaleup_ip.model.tl.addrcache.RxAddressCache``; its ``index`` names
        the ID field that is the row): request fields are handed to it in sector order, an
        uncompressed one with CLOAD = 1 loads ``load(acc, way, ReqAddr[56:20])``, a compressed one
        (0x3) is rebuilt from ``expand(acc, way, ReqAddr[19:6])``. Without a cache, or when
        ``expand`` returns None (an entry never loaded), a compressed request is the error
        ``compressed_request`` [§5.5: cache errors are fatal].

    Attributes
    ----------
    requests, responses : list
        Items delivered, in field order; a multi-beat read response is one object. A poisoned
        beat's data is the two message half-flits as received (bytes 1..31 of each half kept).
    granted : dict
        ``{class: {slot: n}}`` credits received in Flow Control fields.
    consumed : dict
        ``{class: {slot: n}}`` credits spent by the fields received (POOL, VCHAN, beats).
    peer_init_done : bool
        Initial Credit Release Complete seen.
    error : str or None
        The first error (one of :data:`ERROR_KINDS`; of a flit showing several, the one
        :meth:`feed` counts); then the flit that carried it and every later flit are dropped
        whole.
    errors : dict
        ``{kind: count}`` of errors (only the first is ever counted: errors are fatal).
    poisoned_halves, data_halves, flits, dropped_flits : int
        Counters: Poisoned Data halves, data positions (poisoned included, byte enables not),
        flits fed and flits dropped.
    trace : list of str
        Per accepted flit, the kinds of its halves as in :attr:`Packer.trace`.
    """

    def __init__(self, buffers: dict | None = None, address_cache=None):
        self.requests = []
        self.responses = []
        self.granted = credit_table()
        self.consumed = credit_table()
        self.peer_init_done = False
        self.error = None
        self.errors = {}
        self.poisoned_halves = self.data_halves = self.flits = self.dropped_flits = 0
        self.trace = []
        self._buffers = None if buffers is None else credit_table(buffers)
        self._occupancy = credit_table()
        self._address_cache = address_cache
        self._owed = deque()                    # (pending, index) per data half-flit due
        self._pending = {"req": deque(), "rsp": deque()}
        self._rates = {"req": RateLimiter(REQUEST_LIMIT), "rsp": RateLimiter(RESPONSE_LIMIT)}

    def idle(self) -> bool:
        """True when no data half-flits are owed to control halves received."""
        return not self._owed

    def release(self, cls: str, slot: str, n: int):
        """The local consumer freed ``n`` receive buffers of ``cls``/``slot``."""
        _check_slot(slot, cls)
        if n > self._occupancy[cls][slot]:
            raise ValueError(f"releasing {n} {cls}/{slot} buffers, only "
                             f"{self._occupancy[cls][slot]} in use")
        self._occupancy[cls][slot] -= n

    def feed(self, flit: Flit) -> None:
        """Take one flit: the lower half-flit, then the upper.

        Which error is counted when a flit shows several (README §4, ``RxError`` order): the
        half-flits are read in order, lower then upper, because the upper's role (owed data,
        message or MANDATORY NOP) follows from the lower. Every error of the lower half is
        determined (a control half is decoded whole, see :meth:`_control`) and the kind listed
        first in :data:`ERROR_KINDS` among them is counted; the upper half is read only when
        the lower shows none, so an upper-half error never outranks a lower-half one, of
        whatever kind (also when the lower's error leaves the upper's role well defined, as a
        ``buffer_overrun`` does). A data, message or MANDATORY NOP position shows at most one
        error; only a control half, which is always the lower, can show several.
        """
        self.flits += 1
        if self.error is not None:
            self.dropped_flits += 1
            return
        staged = _Staged()
        kinds = self._lower(flit.lower, flit.m0, staged)
        if not staged.errors:
            kinds += self._upper(flit.upper, flit.m1, staged)
        kind = _first_error(staged.errors)
        if kind is not None:
            self.error = kind
            self.errors[kind] = self.errors.get(kind, 0) + 1
            self.dropped_flits += 1
            return
        self._commit(staged, kinds)

    # -- positions --
    # Each appends the errors it finds to ``staged.errors`` and returns the half's kind. After
    # an error the flit is dropped whole and later flits are never read, so the sequencing
    # state (``_owed``, ``_pending``) the errored flit leaves behind is never used.

    def _lower(self, value, message, staged):
        """The lower half is a data half-flit when two or more are owed; otherwise it is the
        control position (the final owed half, if any, is swapped into the upper)."""
        if len(self._owed) >= 2:
            return self._data(value, message, staged)
        if message:
            return self._message(value, staged)
        self._control(value, staged)
        return "C"

    def _upper(self, value, message, staged):
        """The upper half carries the next owed data half-flit, else a MANDATORY NOP."""
        if self._owed:
            return self._data(value, message, staged)
        if message:
            return self._message(value, staged)
        if value:
            staged.errors.append("mandatory_nop")
        return "N"

    def _data(self, value, message, staged):
        """A data position: the next owed half-flit, a Poisoned Data message replacing it, or
        another message that delays it [§5.1.2]."""
        if message and value & MSG_TYPE_MASK != MSG_POISON:
            return self._message(value, staged)           # other messages delay the sequence
        pending, index = self._owed.popleft()
        if message and index == _BE:
            staged.errors.append("misplaced_poison")
        pending.store(index, value, message)
        staged.poisoned += message
        staged.data += index != _BE
        return "P" if message else "B" if index == _BE else "D"

    def _message(self, value, staged):
        """A message where no data half-flit is due (Poisoned Data is an error there)."""
        kind = value & MSG_TYPE_MASK
        if kind == MSG_POISON:
            staged.errors.append("misplaced_poison")
        elif kind not in (MSG_NOP, MSG_INIT_DONE):
            staged.errors.append("unknown_message")
        staged.init |= kind == MSG_INIT_DONE
        return "M"

    # -- control half --

    def _control(self, half, staged):
        """Decode a control half-flit, then check the catch and receive buffers, collecting
        every error the half shows.

        Our reading of README §4 for a half with several malformations: every field top the
        local footprint rule finds is decoded and checked on its own (:func:`parse_control`;
        a malformed top stands for its pair of sectors, and the other group of four sectors is
        read regardless). A request or response field whose contents are in error (reserved
        command, impossible length, reserved status) still arrives for the rate-limit and
        credit checks, since its footprint, POOL and VCHAN are sound; a field that cannot be
        expanded (a compressed request with a reserved CMD, with no address cache, or naming
        an entry the cache cannot expand) and a malformed top do not. Counting them or not
        never changes the kind counted: reserved command, impossible length and reserved
        status are listed before both overruns, and ``compressed_request``, listed after them,
        comes from a field that is no arrival.
        """
        for _, ftype, value, problem in parse_control(half):
            if problem:
                staged.errors.append(problem)
                continue
            fields = decode_field(ftype, value)
            if ftype == FType.FLOW_CONTROL:
                for cls, (name, bits) in CREDIT_SUBFIELDS.items():
                    slot, n = decode_credit(fields[name], bits)
                    if n:
                        staged.granted.append((cls, slot, n))
                continue
            if ftype in (FType.REQUEST, FType.COMPRESSED_REQUEST):
                kind = Request
                kwargs, error = self._request(ftype, fields)
            else:
                kind, kwargs, error = _response_kwargs(ftype, fields)
            if error:
                staged.errors.append(error)
            if kwargs is not None:
                self._expect(kind, kwargs, fields["POOL"], staged)
        self._check_credits(staged)

    def _request(self, ftype, fields):
        """``(constructor arguments, error)`` of a request field, checked (README §4); the
        arguments are ``None`` when the field cannot be expanded."""
        cache = self._address_cache
        if ftype == FType.REQUEST:
            kwargs = _request_kwargs(fields)
            if cache is not None and fields["CLOAD"]:
                cache.load(fields[cache.index], fields["CWAY"], fields["ADDR"] >> _TAG_SHIFT)
        elif cache is None:
            return None, "compressed_request"
        elif fields["CMD"] not in COMPRESSED_COMMANDS:
            return None, "reserved_command"
        else:
            addr = cache.expand(fields[cache.index], fields["CWAY"], fields["ADDR"])
            kwargs = _compressed_request_kwargs(
                fields, fields["ADDR"] << COMPRESSED_ADDR_LSB if addr is None else addr)
            if addr is None:        # an impossible length is listed first (README §4)
                error = request_error(kwargs["cmd"], kwargs["addr"], kwargs["length"],
                                      kwargs["num_beats"])
                return (kwargs, error) if error else (None, "compressed_request")
        return kwargs, request_error(kwargs["cmd"], kwargs["addr"], kwargs["length"],
                                     kwargs["num_beats"])

    def _expect(self, kind, kwargs, pool, staged):
        """Queue an item of type ``kind`` and the data half-flits it implies; stage its
        credits."""
        beats = _beats(kind, kwargs)
        with_be = kind is Request and beats > 0 and kwargs["cmd"] != WRITE_FULL
        pending = _Pending(_maker(kind, kwargs), beats, with_be)
        queue = "req" if kind is Request else "rsp"
        self._pending[queue].append(pending)
        self._owed.extend(pending.slots)
        staged.issued[queue] += 1
        cmd_cls, data_cls = _ITEM_CLASSES[kind]
        slot = slot_of(pool, kwargs["vc"])
        staged.consumed += [(cmd_cls, slot, 1), (data_cls, slot, beats)]

    def _check_credits(self, staged):
        """Catch buffers (source rate limits) and receive buffers (credits), each one error
        at most; the buffers are taken only when the flit commits."""
        if any(staged.issued[queue] > rate.allowance for queue, rate in self._rates.items()):
            staged.errors.append("catch_overrun")
        if self._buffers is None:
            return
        need = credit_table()
        for cls, slot, n in staged.consumed:
            need[cls][slot] += n
        if any(self._occupancy[cls][slot] + n > self._buffers[cls][slot]
               for cls, slots in need.items() for slot, n in slots.items()):
            staged.errors.append("buffer_overrun")

    def _commit(self, staged, kinds):
        for cls, slot, n in staged.granted:
            self.granted[cls][slot] += n
        for cls, slot, n in staged.consumed:
            self.consumed[cls][slot] += n
            self._occupancy[cls][slot] += n
        self.peer_init_done |= staged.init
        self.poisoned_halves += staged.poisoned
        self.data_halves += staged.data
        for queue, rate in self._rates.items():
            rate.flit(staged.issued[queue])
        self.trace.append(kinds)
        for queue, out in (("req", self.requests), ("rsp", self.responses)):
            pending = self._pending[queue]
            while pending and not pending[0].missing:
                out.append(pending.popleft().build())
