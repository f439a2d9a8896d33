# SPDX-License-Identifier: BSD-2-Clause
"""UALink DL layouts, enums, constants and stream signatures: the only copy of each.

Field layouts follow UALink_200 Rev 1.0 chapter 6; fields are declared least significant first,
as Amaranth lays them out. Conventions the public text leaves open are marked [ours] here and
listed, once, in ``rtl/scaleup_ip/dl/README.md``.

The DL flit travels as :data:`BEATS_PER_FLIT` beats of :data:`BEAT_BYTES` bytes (byte ``k`` of
a beat in bits ``8k .. 8k+7``; beat 0 first). Inside the DL its bytes follow the *logical*
layout below [ours]; on the PHY side they are in the wire order of Figure 6-4
(:data:`WIRE_ROWS`), over which the CRC is computed. :class:`~scaleup_ip.dl.to_wire.DlToWire` and
:class:`~scaleup_ip.dl.from_wire.DlFromWire` are the only blocks that reorder.
"""

import dataclasses
import enum as py_enum

from amaranth.lib import data, enum, stream

from ..config import BlockConfig, check_int

__all__ = [
    "ACK_TIMEOUT_BITS",
    "ACK_TIMEOUT_DEFAULT",
    "BEATS_PER_FLIT",
    "BEAT_BITS",
    "BEAT_BYTES",
    "CRC_BYTES",
    "CRC_OFFSET",
    "DL_FLIT_BYTES",
    "EXPLICIT_EVERY",
    "FH_BYTES",
    "FH_OFFSET",
    "HALF_SEGMENT_STARTS",
    "MAX_UNACKED",
    "PAYLOAD_BYTES",
    "PAYLOAD_OFFSET",
    "PAYLOAD_SECTORS",
    "REPLAY_IGNORE",
    "REPLAY_LIMIT_BITS",
    "REPLAY_LIMIT_DEFAULT",
    "REPLAY_REQUEST_COPIES",
    "SECTOR_BYTES",
    "SEGMENTS",
    "SEGMENT_SECTORS",
    "SEGMENT_STARTS",
    "SEQ_BITS",
    "SEQ_MODULUS",
    "SH_OFFSET",
    "TL_FLIT_BYTES",
    "TL_FLIT_SECTORS",
    "DlConfig",
    "FlitOp",
    "LinkMode",
    "RxCount",
    "TxCount",
    "WIRE_ORDER",
    "WIRE_POSITION",
    "WIRE_ROWS",
    "beat_sources",
    "body_beat_layout",
    "body_stream",
    "checked_beat_layout",
    "checked_stream",
    "command_header",
    "explicit_header",
    "ingress_layout",
    "last_beat_layout",
    "phy_beat_layout",
    "phy_stream",
    "rx_counts",
    "segment_header",
    "tx_counts",
    "unpack_beat_layout",
    "unpack_stream",
]

#: [§6.3.1] A DL flit: 640 bytes in five segments of 4-byte sectors.
DL_FLIT_BYTES = 640
SECTOR_BYTES = 4
#: [Table 6-1] Payload sectors per segment.
SEGMENT_SECTORS = (32, 32, 32, 31, 30)
SEGMENTS = len(SEGMENT_SECTORS)
PAYLOAD_SECTORS = sum(SEGMENT_SECTORS)                  # 157
PAYLOAD_BYTES = PAYLOAD_SECTORS * SECTOR_BYTES           # 628
#: First payload sector of each segment, and of each half segment [Table 6-1].
SEGMENT_STARTS = tuple(sum(SEGMENT_SECTORS[:k]) for k in range(SEGMENTS))
HALF_SEGMENT_STARTS = tuple(s + h for s in SEGMENT_STARTS for h in (0, 16))
#: [§6.3.2, §6.6.2] Flit header bytes FH0..FH2; [§6.3.7] CRC bytes CRC0..CRC3.
FH_BYTES = 3
CRC_BYTES = 4
#: A TL flit: 64 bytes, 16 sectors [§6.3.4].
TL_FLIT_BYTES = 64
TL_FLIT_SECTORS = TL_FLIT_BYTES // SECTOR_BYTES

#: [ours] Logical layout: payload sectors 0..156 in bytes 0..627 (sector ``s`` in bytes
#: ``4s .. 4s+3``), FH0..FH2 in bytes 628..630 (FH0 holds header bits 7:0), SH0..SH4 in bytes
#: 631..635, CRC0..CRC3 in bytes 636..639 (the last bytes, as §6.3.7 places them). Payload first
#: lets the transmitter stream a flit's payload before its headers are final.
PAYLOAD_OFFSET = 0
FH_OFFSET = PAYLOAD_OFFSET + PAYLOAD_BYTES
SH_OFFSET = FH_OFFSET + FH_BYTES
CRC_OFFSET = SH_OFFSET + SEGMENTS
assert CRC_OFFSET + CRC_BYTES == DL_FLIT_BYTES

#: The PHY-side datapath: 64 bytes per clock, a DL flit every 10 clocks.
BEAT_BYTES = 64
BEAT_BITS = BEAT_BYTES * 8
BEATS_PER_FLIT = DL_FLIT_BYTES // BEAT_BYTES

#: [Figure 6-4] The wire order: the figure's 40 rows of 16 bytes, row 0 first, left to right
#: (wire byte ``16 * row + column``) [ours: the reading order of the figure]. ``Sx`` is all 4
#: bytes of payload sector ``x``, ``Sx.By`` its byte ``y``.
WIRE_ROWS = (
    "S0 S1 S2 S3", "S4 S5 S6 S7", "S8 S9 S10 S11", "S12 S13 S14 S15",
    "S31.B0 S31.B1 S31.B2 SH0 S16 S17 S18", "S19 S20 S21 S22", "S23 S24 S25 S26",
    "S27 S28 S29 S30",
    "S47.B0 S47.B1 S47.B2 S31.B3 S32 S33 S34", "S35 S36 S37 S38", "S39 S40 S41 S42",
    "S43 S44 S45 S46",
    "S63.B0 S63.B1 S47.B3 SH1 S48 S49 S50", "S51 S52 S53 S54", "S55 S56 S57 S58",
    "S59 S60 S61 S62",
    "S79.B0 S79.B1 S63.B2 S63.B3 S64 S65 S66", "S67 S68 S69 S70", "S71 S72 S73 S74",
    "S75 S76 S77 S78",
    "S95.B0 S79.B2 S79.B3 SH2 S80 S81 S82", "S83 S84 S85 S86", "S87 S88 S89 S90",
    "S91 S92 S93 S94",
    "S111.B0 S95.B1 S95.B2 S95.B3 S96 S97 S98", "S99 S100 S101 S102", "S103 S104 S105 S106",
    "S107 S108 S109 S110",
    "S111.B1 S111.B2 S111.B3 SH3 S112 S113 S114", "S115 S116 S117 S118",
    "S119 S120 S121 S122", "S123 S124 S125 S126",
    "S127 S128 S129 S130", "S131 S132 S133 S134", "S135 S136 S137 S138",
    "S139 S140 S141 S142",
    "S156.B0 S156.B1 S156.B2 SH4 S143 S144 S145", "S146 S147 S148 S149",
    "S150 S151 S152 S153",
    "FH0 FH1 FH2 S156.B3 S154 S155 CRC0 CRC1 CRC2 CRC3",
)


def _logical_bytes(token):
    """The logical byte(s) a :data:`WIRE_ROWS` token names."""
    for name, offset in (("CRC", CRC_OFFSET), ("FH", FH_OFFSET), ("SH", SH_OFFSET)):
        if token.startswith(name):
            return [offset + int(token[len(name):])]
    sector, _, byte = token[1:].partition(".B")
    first = int(sector) * SECTOR_BYTES
    return [first + int(byte)] if byte else list(range(first, first + SECTOR_BYTES))


#: ``WIRE_ORDER[w]``: the logical byte that wire byte ``w`` carries.
WIRE_ORDER = tuple(b for row in WIRE_ROWS for token in row.split() for b in _logical_bytes(token))
assert sorted(WIRE_ORDER) == list(range(DL_FLIT_BYTES))
#: ``WIRE_POSITION[b]``: the wire byte that carries logical byte ``b``.
WIRE_POSITION = tuple(WIRE_ORDER.index(b) for b in range(DL_FLIT_BYTES))


def beat_sources(order, beat):
    """Where each byte of beat ``beat`` of a flit reordered by ``order`` comes from, as
    ``(source beat, byte in that beat)`` in the other order: ``order`` is :data:`WIRE_ORDER`
    (a wire beat from logical beats) or :data:`WIRE_POSITION` (a logical beat from wire
    beats)."""
    first = beat * BEAT_BYTES
    return [divmod(order[first + k], BEAT_BYTES) for k in range(BEAT_BYTES)]

#: [§6.6.6.1] Flit sequence numbers: 9 bits, 1 .. 511, 0 reserved, arithmetic mod 511.
SEQ_BITS = 9
SEQ_MODULUS = 511


class FlitOp(enum.Enum, shape=3):
    """Flit header ``op`` [Tables 6-14, 6-15]."""
    ORIGINAL = 0b000        # explicit: original payload flit, or NOP (payload = 0)
    REPLAY = 0b001          # explicit: replayed payload flit
    ACK = 0b010             # command
    REPLAY_REQUEST = 0b011  # command


#: [§6.6.6.5] At most this many unacknowledged flits in TxReplay.
MAX_UNACKED = 255
#: [§6.6.5.6] Tx_explicit_count reload: an Explicit flit at least every 7 flits.
EXPLICIT_EVERY = 7
#: [§6.6.6.3] Rx_replay_ignore_count after a Replay Request is taken.
REPLAY_IGNORE = 12
#: [§6.6.1] Copies of each Replay Request.
REPLAY_REQUEST_COPIES = 3
#: [§6.6.5.8] Tx_ack_time_out: a 24-bit register, in flit times; the default is 1 ms at 25 ns
#: per flit.
ACK_TIMEOUT_BITS = 24
ACK_TIMEOUT_DEFAULT = 40_000
#: [§6.6.4.6] Rx_replay_limit: an 8-bit register, in flit times (twice the round trip).
REPLAY_LIMIT_BITS = 8
REPLAY_LIMIT_DEFAULT = 50


@dataclasses.dataclass(frozen=True)
class DlConfig(BlockConfig):
    """Parameters of the DL's link-level replay.

    Parameters
    ----------
    replay_depth : int
        TxReplay buffer, in DL flits (1 .. 255; block RAM of 640 bytes each) [§6.6.7: size it
        for the round trip].
    nop_flits : int
        NOP flits the NOP state sends before it may go Up, 1 .. 255 [§6.7.1.3: ten].
    """
    replay_depth: int = 32
    nop_flits: int = 10

    def __post_init__(self):
        check_int("DL", "replay_depth", self.replay_depth, range(1, MAX_UNACKED + 1))
        check_int("DL", "nop_flits", self.nop_flits, range(1, 256))


class LinkMode(enum.Enum, shape=2):
    """What the DL transmitter may send [§6.7.1]."""
    IDLE = 0                # nothing (Fault, Idle)
    NOP = 1                 # NOP flits only
    UP = 2                  # payload and NOP flits


class TxCount(py_enum.IntEnum):
    """DL transmit counters (32-bit, wrapping)."""
    FLITS = 0               # DL flits sent
    PAYLOAD = 1             # payload flits sent for the first time
    REPLAYED = 2            # payload flits sent again
    REPLAYS = 3             # Replay Requests taken (a replay started)
    REPLAY_REQUESTS = 4     # Replay Request flits sent
    ACK_ERRORS = 5          # Acks outside the validity window, ignored
    REQUEST_ERRORS = 6      # Replay Requests outside the validity window, ignored
    TIMEOUTS = 7            # ack timeouts
    PEAK = 8                # most unacknowledged flits seen in TxReplay


class RxCount(py_enum.IntEnum):
    """DL receive counters (32-bit, wrapping)."""
    FLITS = 0               # DL flits received
    GOOD = 1                # payload flits accepted in order
    BAD_CRC = 2             # flits failing the CRC
    UNEXPECTED = 3          # flits with an unexpected sequence number (duplicates among them)
    DUPLICATES = 4          # ... of which repeat a payload flit already accepted
    DROPPED = 5             # good flits dropped: ambiguous or replaying, not Explicit
    MALFORMED = 6           # sequence number or ackReqSeq 0, reserved op
    REQUESTS = 7            # times a replay was requested


tx_counts = data.ArrayLayout(32, len(TxCount))
rx_counts = data.ArrayLayout(32, len(RxCount))

#: What the local receiver tells the local transmitter, per received flit: that one came (for
#: Rx_replay_ignore_count), and, for a good Command flit, its op and ackReqSeq.
ingress_layout = data.StructLayout({
    "flit": 1,
    "command": 1,
    "op": FlitOp,
    "ack_req_seq": SEQ_BITS,
})


#: [Table 6-14] Explicit sequence number flit header (24 bits).
explicit_header = data.StructLayout({
    "rsvd_lo": 8,
    "seq": 9,               # flitSeqNo
    "rsvd_hi": 3,
    "payload": 1,
    "op": FlitOp,
})

#: [Table 6-15] Command flit header (24 bits).
command_header = data.StructLayout({
    "rsvd_lo": 8,
    "seq_lo": 3,            # flitSeqLo
    "ack_req_seq": 9,       # ackReqSeq
    "payload": 1,
    "op": FlitOp,
})

#: [Table 6-2] Segment header. ``msg`` bit 0 is M0 (the TL flit's lower half), bit 1 is M1
#: [ours: the order within Message[1:0] follows the TL's M1:M0].
segment_header = data.StructLayout({
    "alt_sector": 1,        # DLAltSector
    "rsvd": 1,
    "msg0": 2,              # Message[0]
    "flit0": 1,             # TL Flit[0] present
    "msg1": 2,              # Message[1]
    "flit1": 1,             # TL Flit[1] present
})

#: The last beat of a DL flit in the logical layout: the last 13 payload sectors, then the flit
#: header, SH0..SH4 and the CRC bytes (CRC0 in ``crc`` bits 7:0).
last_beat_layout = data.StructLayout({
    "payload": (PAYLOAD_BYTES - (BEATS_PER_FLIT - 1) * BEAT_BYTES) * 8,
    "header": FH_BYTES * 8,
    "headers": data.ArrayLayout(segment_header, SEGMENTS),
    "crc": CRC_BYTES * 8,
})
assert last_beat_layout.size == BEAT_BITS

#: One PHY-side beat: 64 bytes of a DL flit; ``last`` marks the flit's tenth beat.
phy_beat_layout = data.StructLayout({
    "data": BEAT_BITS,
    "last": 1,
})


#: A DL flit beat inside the DL, before the flit header and CRC are filled in: ``payload``, on
#: the last beat, tells whether the flit carries any TL flit sector (else it is a NOP flit).
body_beat_layout = data.StructLayout({
    "data": BEAT_BITS,
    "last": 1,
    "payload": 1,
})


def body_stream():
    """A valid/ready stream of :data:`body_beat_layout` beats, one DL flit per 10 beats."""
    return stream.Signature(body_beat_layout)


#: A beat of an accepted payload DL flit on its way to the unpacker, with the flit's segment
#: headers (from its last beat) on every beat.
unpack_beat_layout = data.StructLayout({
    "data": BEAT_BITS,
    "headers": data.ArrayLayout(segment_header, SEGMENTS),
})


def unpack_stream():
    """A valid/ready stream of :data:`unpack_beat_layout` beats, 10 per DL flit."""
    return stream.Signature(unpack_beat_layout)


#: A received DL flit beat after the CRC check, released once its flit's check is done, with
#: the flit's verdict and headers (from its last beat) on every beat.
checked_beat_layout = data.StructLayout({
    "data": BEAT_BITS,
    "last": 1,
    "crc_ok": 1,
    "header": FH_BYTES * 8,         # the flit header, raw (explicit or command)
    "headers": data.ArrayLayout(segment_header, SEGMENTS),
})


def checked_stream():
    """A valid/ready stream of :data:`checked_beat_layout` beats, 10 per DL flit."""
    return stream.Signature(checked_beat_layout)


def phy_stream():
    """A valid/ready stream of :data:`phy_beat_layout` beats, one DL flit per 10 beats."""
    return stream.Signature(phy_beat_layout)

