# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the ETH-X lossless link layer: link-level retry (go-back-N) and credit-based
flow control over Ethernet.

Written from ``rtl/scaleup_ip/ethx/link/README.md`` §1–6 (cited as ``[link README §n]``) and the
Ultra Ethernet Specification 1.0 sections it follows (``[UEC 1.0 §5.1]`` LLR, ``[UEC 1.0 §5.2]``
CBFC), independently of the RTL. Pure Python, event-driven: time is an explicit integer clock
``now`` passed to the methods that have timers; nothing runs by itself.

- Frames: :func:`to_wire`, :func:`encode_control` and :func:`classify` are byte-exact; the
  bridge frame format (and :func:`~scaleup_ip.model.ethx.bridge.fcs_of`) comes from
  :mod:`scaleup_ip.model.ethx.bridge`.
- LLR: :class:`LlrRx` and :class:`LlrTx` are the receiver and transmitter state machines of
  README §3; :func:`seq_class` is §2.
- CBFC: :class:`CreditSender` and :class:`CreditReceiver` are README §4.
- :class:`ModelLink` joins them into one direction of traffic over a delayed, lossy channel with
  its reverse control path, for end-to-end checks and the goodput estimate against
  :func:`goodput_bound`.

Choices the README leaves open are marked [ours] where they are made; each class docstring lists
those of its part. Two switches, on by default, are the mends of two liveness gaps the model's
review found, now in the README (``LlrTx(ack_to_highest)``, ``LlrRx(ack_in_nack_sent)``,
``ModelLink(fixes)``); with them off the model follows the rules as first written, for the tests
that show the gaps.
"""

from __future__ import annotations

from collections import deque
from enum import Enum, IntEnum
from typing import NamedTuple

from ..crc.crc32 import RESIDUE, advance
from .bridge import ETHERTYPE, HEADER_BYTES, WORD, fcs_of, mac, node_of, vc_of

__all__ = [
    "CONTROL_BYTES", "CONTROL_DA", "COUNT_BITS", "FCS_BYTES", "LINK_ETHERTYPE", "LINK_WORD_AT",
    "MAX_PCP", "MAX_VCS", "MAX_VID", "MIN_BYTES", "RX_COUNTERS", "SEQ_BITS", "TAG_AT",
    "TAG_BYTES", "TPID", "TX_COUNTERS", "Vlan",
    "Class", "Ctl", "CreditReceiver", "CreditSender", "Fate", "LlrRx", "LlrTx", "ModelLink",
    "Received", "RxState", "SeqClass", "TxState", "Why",
    "classify", "encode_control", "goodput_bound", "link_vc", "max_wire_bytes", "pkt_credits",
    "random_loss", "seq_class", "tag", "to_wire", "untag", "wire_bytes_of",
]

# --- Constants -------------------------------------------------------------------------------

LINK_ETHERTYPE = 0x88B6     # link-control frames [link README §1] [ours]; 0x88B5 is the bridge's
CONTROL_DA = bytes([3, 0, 0, 0, 0, 1])  # locally administered group address [link README §1] [ours]
LINK_WORD_AT = 16           # the link word follows the 16-byte bridge header [link README §1]
LINK_WORD_BYTES = WORD      # 64-bit little-endian link word [link README §1]
CONTROL_BYTES = 64          # control frame without FCS [link README §1]
FCS_BYTES = 4
MIN_BYTES = 64              # shortest good frame, FCS included [link README §1] [802.3]
MAX_VCS = 8                 # VC fields 0 .. 7 of CF/CC_UPDATE [link README §1]
COUNT_BITS = 20             # credit counters and count fields [link README §1, §4] [UEC 1.0 §5.2]
COUNT_MOD = 1 << COUNT_BITS
SEQ_BITS = 20               # sequence number width [link README §2] [UEC 1.0 §5.1]
SEQ_FIELD_BITS = 20         # the field's width in the link word [link README §1]
COUNTS_AT = 24              # CF/CC_UPDATE counts: 8 x 32-bit LE at 24 .. 55 [link README §1]
MAX_OVERHEAD = 127          # pkt_overhead 0 .. 127 [link README §7.5] [ours]
TPID = 0x8100               # an 802.1Q tag's first two bytes [IEEE 802.1Q §9.5]
TAG_AT = 12                 # the tag follows the SA [IEEE 802.1Q §9.5]
TAG_BYTES = 8               # the tag and the 4 zero bytes after the EtherType and link header
                            # [link README §1] [ours]
MAX_PCP = 7                 # PCP is 3 bits [IEEE 802.1Q §9.6]
MAX_VID = 0xFFF             # VID is 12 bits; 0: a priority tag [IEEE 802.1Q §9.6]


class Vlan(NamedTuple):
    """The receive side of the tag option [link README §1]: frames tagged with ``vid`` are the
    link's, and a tagged data frame enters VC ``vc_of_pcp[PCP]`` (an entry at or above the
    link's VCs names the last, as a link header's VC does)."""

    vid: int
    vc_of_pcp: tuple


class Ctl(IntEnum):
    """Link-control kinds, byte 14 of a control frame [link README §1]."""

    ACK = 1
    NACK = 2
    INIT = 3
    INIT_ECHO = 4
    CF_UPDATE = 16
    CC_UPDATE = 17


#: kinds that carry a sequence number in bytes 16 .. 23 [link README §1]
_SEQ_KINDS = frozenset({Ctl.ACK, Ctl.NACK, Ctl.INIT, Ctl.INIT_ECHO, Ctl.CC_UPDATE})
#: kinds that carry eight counts in bytes 24 .. 55 [link README §1]
_COUNT_KINDS = frozenset({Ctl.CF_UPDATE, Ctl.CC_UPDATE})


def _field(value, bits, name):
    if not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise ValueError(f"{name} {value!r} does not fit {bits} bits")
    return value


def _check_seq_bits(seq_bits):
    if not isinstance(seq_bits, int) or not 2 <= seq_bits <= SEQ_FIELD_BITS:
        raise ValueError(f"seq_bits must be 2 .. {SEQ_FIELD_BITS}, not {seq_bits!r}")
    return seq_bits


# --- Frames [link README §1] -----------------------------------------------------------------

def wire_bytes_of(bridge_len):
    """Wire length (FCS included) of a bridge frame of ``bridge_len`` bytes: + link word + FCS."""
    return bridge_len + LINK_WORD_BYTES + FCS_BYTES


def max_wire_bytes(mtu=1500):
    """The longest data frame on the wire for a bridge of ``mtu``: the bridge's largest frame
    (``16 + 8 * ((mtu - 2) // 8)`` bytes, :func:`scaleup_ip.model.ethx.bridge.capacity`) plus 12.
    The README's
    bound ``14 + mtu + 12`` (1526) is 2 more than this (1524) and is never a ``28 + 8n`` length."""
    return wire_bytes_of(HEADER_BYTES + (mtu - 2) // WORD * WORD)


#: A poisoned frame's FCS is the correct one XOR this [link README §1] [ours]: not all ones, which
#: a burst that inverts the FCS's beat makes of a good frame (SEED=1804400685 of the lossy tests).
POISON = 0x5A5A_5A5A
#: The CRC register after a frame followed by its poisoned FCS (the good-frame residue, and the
#: poison shifted through: the CRC is linear).
POISON_RESIDUE = RESIDUE ^ advance(0, POISON, 32)


def poison(fcs):
    """The poisoned form of an FCS (4 bytes) [link README §1] [ours]."""
    return (int.from_bytes(fcs, "little") ^ POISON).to_bytes(FCS_BYTES, "little")


def tag(frame, pcp, vid):
    """``frame`` (no FCS) with the link's 802.1Q tag [link README §1] [ours]: bytes 12 .. 15 the
    TPID and the TCI (``pcp``, DEI 0, ``vid``), then the frame's bytes 12 .. 15, four zero
    bytes, and its bytes 16 on."""
    tci = _field(pcp, 3, "pcp") << 13 | _field(vid, 12, "vid")
    return (frame[:TAG_AT] + TPID.to_bytes(2, "big") + tci.to_bytes(2, "big")
            + frame[TAG_AT:TAG_AT + 4] + bytes(4) + frame[TAG_AT + 4:])


def untag(frame):
    """``frame`` (FCS or not) without the link's tag, and the tag's PCP, DEI and VID; or
    ``frame`` and ``None`` if it has no 802.1Q tag."""
    if len(frame) < TAG_AT + TAG_BYTES or int.from_bytes(frame[TAG_AT:TAG_AT + 2], "big") != TPID:
        return frame, None
    tci = int.from_bytes(frame[TAG_AT + 2:TAG_AT + 4], "big")
    return (frame[:TAG_AT] + frame[TAG_AT + 4:TAG_AT + 8] + frame[TAG_AT + TAG_BYTES + 4:],
            (tci >> 13, tci >> 12 & 1, tci & MAX_VID))


def to_wire(bridge_frame, seq, seq_bits=SEQ_BITS, *, poisoned=False, tagged=None):
    """The wire frame of a bridge frame (built with ``fcs=False``): the link word carrying
    ``seq`` inserted after byte 16, ``tagged`` = ``(pcp, vid)``: the tag (:func:`tag`), the FCS
    appended, poisoned if ``poisoned`` [link README §1].

    Raises
    ------
    ValueError
        If the bridge frame is not ``16 + 8n`` bytes or ``seq`` does not fit ``seq_bits``.
    """
    bridge_frame = bytes(bridge_frame)
    n = len(bridge_frame) - HEADER_BYTES
    if n < 0 or n % WORD:
        raise ValueError(f"a bridge frame is 16 + 8n bytes, not {len(bridge_frame)}")
    word = _field(seq, _check_seq_bits(seq_bits), "seq").to_bytes(LINK_WORD_BYTES, "little")
    wire = bridge_frame[:LINK_WORD_AT] + word + bridge_frame[LINK_WORD_AT:]
    if tagged is not None:
        wire = tag(wire, *tagged)
    return wire + (poison(fcs_of(wire)) if poisoned else fcs_of(wire))


def encode_control(kind, node, *, seq=0, counts=(), seq_bits=SEQ_BITS, tagged=None):
    """A 68-byte link-control frame from node ``node``, FCS included [link README §1]; with
    ``tagged`` = ``(pcp, vid)``, 76 bytes with the tag (:func:`tag`).

    Parameters
    ----------
    kind : Ctl
    node : int
        The sender's node ID (SA ``02:00:00:00:hi:lo``).
    seq : int
        ACK, NACK, INIT, INIT_ECHO: the sequence number; CC_UPDATE: the one of its link word.
        CF_UPDATE carries none (must be 0).
    counts : sequence of int
        CF_UPDATE (``R_CF``) and CC_UPDATE (``S_CC``) only: up to 8 values < 2**20, VC 0 first;
        missing VCs are sent as zero.
    """
    kind = Ctl(kind)
    _check_seq_bits(seq_bits)
    if kind not in _SEQ_KINDS and seq:
        raise ValueError(f"{kind.name} carries no sequence number")
    counts = list(counts)
    if kind not in _COUNT_KINDS and counts:
        raise ValueError(f"{kind.name} carries no counts")
    if len(counts) > MAX_VCS:
        raise ValueError(f"{len(counts)} counts, at most {MAX_VCS}")
    body = (CONTROL_DA + mac(node) + LINK_ETHERTYPE.to_bytes(2, "big") + bytes([kind, 0])
            + _field(seq, seq_bits, "seq").to_bytes(LINK_WORD_BYTES, "little")
            + b"".join(_field(c, COUNT_BITS, "count").to_bytes(4, "little") for c in counts))
    body += bytes(CONTROL_BYTES - len(body))
    if tagged is not None:
        body = tag(body, *tagged)
    return body + fcs_of(body)


class Class(Enum):
    """What the receive checks make of a frame [link README §1]."""

    BAD = "bad"             # NACKed (in SEND_ACKS), counted RX_BAD
    FOREIGN = "foreign"     # good FCS, not ours: dropped, counted, never NACKed
    DATA = "data"           # LLR-eligible data frame
    POISONED = "poisoned"   # a data frame with its FCS poisoned: eligible, never delivered
    CONTROL = "control"     # ineligible control frame: ACK, NACK, INIT, INIT_ECHO, CF_UPDATE
    CC = "cc"               # LLR-eligible CC_UPDATE


class Why(Enum):
    """Which receive check decided a BAD or FOREIGN frame, in the README's order."""

    USER = "user"           # the MAC flagged the frame on its last beat
    RUNT = "runt"           # shorter than 64 bytes (FCS included) [ours: the 802.3 reading]
    GIANT = "giant"         # longer than max_bytes
    LENGTH = "length"       # data not 4 mod 8, control not 68
    FCS = "fcs"
    ETHERTYPE = "ethertype" # foreign: neither 0x88B5 nor 0x88B6
    VID = "vid"             # foreign: tagged, but not with the link's VID
    KIND = "kind"           # foreign: 0x88B6 with an unknown kind


class Received(NamedTuple):
    """A classified wire frame; fields that do not apply are ``None`` (``counts``: ``()``).

    ``cls`` the :class:`Class`; ``seq`` of DATA and CC (link word) and of CONTROL (bytes 16 .. 23,
    0 for CF_UPDATE); ``kind`` a :class:`Ctl` for CONTROL and CC; ``counts`` the eight 20-bit
    counts of CF_UPDATE and CC_UPDATE; ``frame`` the bridge frame of DATA (link word and FCS
    removed); ``vc`` of DATA (bits 6:4 of byte 14); ``node`` the SA's node ID when the SA has our
    MAC form; ``why`` the deciding :class:`Why` of BAD and FOREIGN.
    """

    cls: Class
    seq: int | None = None
    kind: Ctl | None = None
    counts: tuple = ()
    frame: bytes | None = None
    vc: int | None = None
    node: int | None = None
    why: Why | None = None


def classify(wire, *, user=False, max_bytes, seq_bits=SEQ_BITS, vlan=None):
    """Apply the receive checks of [link README §1] to a wire frame (FCS included).

    With ``vlan`` (a :class:`Vlan`, ``max_bytes`` then the longest tagged frame), a frame
    tagged with its VID is read without its tag and with the length rules applied to the
    untagged length (a data or control frame under 64 bytes untagged is a runt; an untagged
    one of the link's longer than ``max_bytes - 8`` a giant); a tagged data frame's ``vc`` is
    ``vlan.vc_of_pcp[PCP]``; a frame tagged with another VID is FOREIGN (after the FCS).
    In order: ``user``, shorter than 64 bytes, longer than ``max_bytes``, the length rule of its
    EtherType (0x88B5: 4 mod 8; 0x88B6: 68; other EtherTypes: none [ours]), the FCS: BAD, but a
    0x88B5 frame with its FCS poisoned (XOR :data:`POISON`) is POISONED. Then an EtherType other
    than 0x88B5/0x88B6 or an unknown kind: FOREIGN. Reserved fields (byte 15, the zero areas,
    link word bits 63:20, count bits 31:20, the DA, the four zero bytes after a tag's EtherType
    and link header) are not checked [ours]; a sequence number is read as the low ``seq_bits``
    bits of its 20-bit field [ours].
    """
    wire = bytes(wire)
    if user:
        return Received(Class.BAD, why=Why.USER)
    if len(wire) < MIN_BYTES:
        return Received(Class.BAD, why=Why.RUNT)
    if len(wire) > max_bytes:
        return Received(Class.BAD, why=Why.GIANT)
    raw, tci, other_vid = wire, None, False
    if vlan is not None:
        wire, tci = untag(raw)
        if tci is not None and tci[2] != vlan.vid:
            wire, tci, other_vid = raw, None, True
    ethertype = int.from_bytes(wire[12:14], "big")
    if ethertype in (ETHERTYPE, LINK_ETHERTYPE):    # the link's frames, untagged [ours]
        if len(wire) < MIN_BYTES:
            return Received(Class.BAD, why=Why.RUNT)
        if vlan is not None and tci is None and len(wire) > max_bytes - TAG_BYTES:
            return Received(Class.BAD, why=Why.GIANT)
    if (ethertype == ETHERTYPE and len(wire) % 8 != 4) or (
            ethertype == LINK_ETHERTYPE and len(wire) != CONTROL_BYTES + FCS_BYTES):
        return Received(Class.BAD, why=Why.LENGTH)
    fcs = fcs_of(raw[:-FCS_BYTES])
    poisoned = ethertype == ETHERTYPE and poison(fcs) == raw[-FCS_BYTES:]
    if fcs != raw[-FCS_BYTES:] and not poisoned:
        return Received(Class.BAD, why=Why.FCS)
    node = node_of(wire[6:12])
    if other_vid:
        return Received(Class.FOREIGN, node=node, why=Why.VID)
    if ethertype not in (ETHERTYPE, LINK_ETHERTYPE):
        return Received(Class.FOREIGN, node=node, why=Why.ETHERTYPE)
    mask = (1 << _check_seq_bits(seq_bits)) - 1
    seq = int.from_bytes(wire[LINK_WORD_AT:LINK_WORD_AT + LINK_WORD_BYTES], "little") & mask
    if ethertype == ETHERTYPE:
        frame = wire[:LINK_WORD_AT] + wire[LINK_WORD_AT + LINK_WORD_BYTES:-FCS_BYTES]
        vc = vc_of(wire) if tci is None else vlan.vc_of_pcp[tci[0]]
        return Received(Class.POISONED if poisoned else Class.DATA, seq=seq, frame=frame,
                        vc=vc, node=node)
    try:
        kind = Ctl(wire[14])
    except ValueError:
        return Received(Class.FOREIGN, node=node, why=Why.KIND)
    counts = ()
    if kind in _COUNT_KINDS:
        counts = tuple(int.from_bytes(wire[COUNTS_AT + 4 * v:COUNTS_AT + 4 * v + 4], "little")
                       & (COUNT_MOD - 1) for v in range(MAX_VCS))
    if kind == Ctl.CC_UPDATE:
        return Received(Class.CC, seq=seq, kind=kind, counts=counts, node=node)
    return Received(Class.CONTROL, seq=seq if kind in _SEQ_KINDS else 0, kind=kind,
                    counts=counts, node=node)


# --- Sequence numbers [link README §2] -------------------------------------------------------

class SeqClass(Enum):
    EXPECTED = "expected"
    DUPLICATE = "duplicate"     # (e - s) mod 2**b in 1 .. 2**(b-1)
    AHEAD = "ahead"             # a gap: frames were lost


def seq_class(s, e, seq_bits=SEQ_BITS):
    """How a receiver expecting ``e`` sees sequence number ``s`` [link README §2]."""
    modulus = 1 << seq_bits
    if s % modulus == e % modulus:
        return SeqClass.EXPECTED
    if 1 <= (e - s) % modulus <= modulus // 2:
        return SeqClass.DUPLICATE
    return SeqClass.AHEAD


def goodput_bound(q, m):
    """Go-back-N efficiency ``(1 - q) / (1 + (m - 1) q)``: frame error rate ``q``, a lost frame
    costing ``m`` frame times (itself and the ``m - 1`` sent before its replay)."""
    return (1 - q) / (1 + (m - 1) * q)


# --- LLR receiver [link README §3.1] ---------------------------------------------------------

class RxState(Enum):
    OFF = "off"
    SEND_ACKS = "send_acks"
    NACK_SENT = "nack_sent"


#: LinkRxCount names [link README §5]
RX_COUNTERS = ("RX_OK", "RX_DUPLICATE", "RX_MISSING", "RX_BAD", "RX_DISCARD", "RX_OVERFLOW",
               "RX_FOREIGN", "ACK_TX", "NACK_TX", "INIT_RX", "INIT_ECHO_TX", "CF_TX", "CC_RX",
               "RX_POISONED")
#: LinkTxCount names [link README §5]
TX_COUNTERS = ("TX_OK", "TX_REPLAYED", "TX_REPLAY_NACK", "TX_REPLAY_TIMER", "TX_FLUSHED",
               "ACK_RX", "NACK_RX", "INIT_ECHO_RX", "ACK_NACK_SEQ_ERROR", "INIT_TX", "CC_TX",
               "CF_RX", "CREDIT_ERROR", "PEAK_REPLAY", "TX_MALFORMED", "TX_POISONED")


class LlrRx:
    """The LLR receiver of one link end [link README §3.1, UEC 1.0 §5.1].

    The owner reports each received frame once: :meth:`init` (a good INIT), :meth:`eligible`
    (a good data frame or CC_UPDATE), :meth:`bad`, :meth:`foreign`; and calls :meth:`tick` every
    clock. Control messages wait in one slot per kind (INIT_ECHO, NACK, ACK: a second request
    of a kind merges into the pending one) and leave, in that priority order, by :meth:`take`.

    ACK triggers, in SEND_ACKS only:

    - **ack_bytes**: at the accept of a frame, when the bytes (``nbytes`` as given: the wire
      frame's) of frames accepted since the last ACK or NACK was *queued* reach ``ack_bytes``
      [ours: "since the last ACK or NACK" read as since it was queued, not since it left; frames
      accepted while an ACK waits count towards the next one].
    - **ack_delay**: at :meth:`tick`, when ``now - t0 >= ack_delay``, ``t0`` the clock of the
      first frame accepted since the last ACK or NACK was queued.
    - a duplicate in SEND_ACKS queues an ACK at once [link README §3.1] [ours].

    Queueing an ACK or a NACK (and an INIT) restarts both counts. A queued ACK or NACK carries
    ``e - 1`` at the moment it leaves. Other choices [ours]: queueing a NACK cancels a pending
    ACK (the NACK acknowledges the same frames, and in NACK_SENT nothing is acknowledged); an
    INIT keeps a pending ACK/NACK (it leaves with the new ``e - 1``, harmless to the
    transmitter) and a second INIT before the echo left replaces the echoed number; a frame
    without room counts RX_BAD and RX_OVERFLOW; an accepted CC_UPDATE counts RX_OK (the owner
    counts CC_RX).

    Parameters
    ----------
    seq_bits : int
    ack_bytes : int
        Bytes between ACKs (UEC's default spacing is 2048).
    ack_delay : int
        Clocks from the first unacknowledged accepted frame to its ACK.
    ack_in_nack_sent : bool
        The README's rule (default True; False: the rule as first written): a duplicate in NACK_SENT
        queues ACK(e - 1). Without it a lost NACK leaves the receiver silent until frame ``e``
        arrives, which never happens when the transmitter holds nothing beyond ``e - 1`` (full ring
        or end of a burst) or its timer replays restart before reaching ``e``.
    """

    def __init__(self, *, seq_bits=SEQ_BITS, ack_bytes, ack_delay, ack_in_nack_sent=True):
        self.ack_in_nack_sent = ack_in_nack_sent
        self.seq_bits = _check_seq_bits(seq_bits)
        self.modulus = 1 << seq_bits
        if ack_bytes < 1 or ack_delay < 0:
            raise ValueError("ack_bytes must be >= 1 and ack_delay >= 0")
        self.ack_bytes = ack_bytes
        self.ack_delay = ack_delay
        self.counters = dict.fromkeys(RX_COUNTERS, 0)
        self.state = RxState.OFF                # reset [link README §3.1]
        self.expected = 0
        self._echo = None           # the INIT_ECHO number waiting, or None
        self._nack = False
        self._ack = False
        self._bytes = 0             # bytes accepted since the last ACK/NACK was queued
        self._since = None          # clock of the first of them

    # -- events --

    def init(self, s, now):
        """A good INIT(s) arrived: ``e = s``, INIT_ECHO(s) queued, SEND_ACKS (any state)."""
        self.counters["INIT_RX"] += 1
        self.expected = s % self.modulus
        self._echo = self.expected
        self.state = RxState.SEND_ACKS
        self._restart()

    def eligible(self, seq, nbytes, now, room=True, poisoned=False):
        """A good LLR-eligible frame with sequence ``seq`` and ``nbytes`` bytes arrived.

        ``room`` False: the receive buffer cannot take it (only looked at for an expected frame).
        ``poisoned``: a poisoned data frame, taken (expected) without room and counted
        RX_POISONED, not RX_OK [link README §1].
        Returns whether the frame is accepted (to be stored, or applied if a CC_UPDATE; a
        poisoned one is dropped and its credits freed).
        """
        c = self.counters
        if self.state is RxState.OFF:
            c["RX_DISCARD"] += 1
            return False
        kind = seq_class(seq, self.expected, self.seq_bits)
        if kind is SeqClass.EXPECTED:
            if not room and not poisoned:
                c["RX_OVERFLOW"] += 1
                self.bad(now)
                return False
            c["RX_POISONED" if poisoned else "RX_OK"] += 1
            self.expected = (self.expected + 1) % self.modulus
            self.state = RxState.SEND_ACKS
            if self._since is None:
                self._since = now
            self._bytes += nbytes
            if self._bytes >= self.ack_bytes:
                self._queue_ack()
            return True
        if kind is SeqClass.DUPLICATE:
            c["RX_DUPLICATE"] += 1
            if self.state is RxState.SEND_ACKS or self.ack_in_nack_sent:
                self._queue_ack()
            return False
        c["RX_MISSING"] += 1
        if self.state is RxState.SEND_ACKS:
            self._queue_nack()
        return False

    def bad(self, now):
        """A bad frame arrived (or an accepted one found no room)."""
        self.counters["RX_BAD"] += 1
        if self.state is RxState.SEND_ACKS:
            self._queue_nack()

    def foreign(self, now):
        """A foreign frame arrived: counted only."""
        self.counters["RX_FOREIGN"] += 1

    def tick(self, now):
        """Advance to clock ``now``: the ``ack_delay`` trigger."""
        if (self.state is RxState.SEND_ACKS and self._since is not None
                and now - self._since >= self.ack_delay):
            self._queue_ack()

    # -- control messages --

    def pending(self):
        """The queued control messages in the order they leave, as ``(Ctl, seq)``."""
        last = (self.expected - 1) % self.modulus
        out = []
        if self._echo is not None:
            out.append((Ctl.INIT_ECHO, self._echo))
        if self._nack:
            out.append((Ctl.NACK, last))
        if self._ack:
            out.append((Ctl.ACK, last))
        return out

    def take(self, now):
        """Dequeue the first pending message (its value as it leaves), or ``None``."""
        pending = self.pending()
        if not pending:
            return None
        kind, seq = pending[0]
        if kind is Ctl.INIT_ECHO:
            self._echo = None
            self.counters["INIT_ECHO_TX"] += 1
        elif kind is Ctl.NACK:
            self._nack = False
            self.counters["NACK_TX"] += 1
        else:
            self._ack = False
            self.counters["ACK_TX"] += 1
        return kind, seq

    # -- internals --

    def _restart(self):
        self._bytes, self._since = 0, None

    def _queue_ack(self):
        self._ack = True
        self._restart()

    def _queue_nack(self):
        self._nack, self._ack = True, False
        self.state = RxState.NACK_SENT
        self._restart()


# --- LLR transmitter [link README §3.2] ------------------------------------------------------

class TxState(Enum):
    OFF = "off"
    INIT = "init"
    ADVANCE = "advance"
    REPLAY = "replay"
    FLUSH = "flush"


class LlrTx:
    """The LLR transmitter of one link end [link README §3.2, UEC 1.0 §5.1].

    The replay ring holds payloads (any object) for ``acked .. next - 1``; ``acked .. sent - 1``
    have been sent. REPLAY versus ADVANCE is tracked with :attr:`highest`, the sequence number
    after the highest one ever sent since the last reset/FLUSH: the state is REPLAY while
    ``sent`` is below it (in ring order from ``acked``), and a send at ``sent == highest`` is a
    first send (TX_OK, ``highest`` + 1), any other a resend (TX_REPLAYED).

    The owner calls :meth:`tick` every clock and :meth:`send` whenever the wire is free.
    Choices [ours] where the README is silent:

    - ACK/NACK are applied in every state (a valid one can only free frames); INIT_ECHO outside
      INIT is ignored without an error count.
    - INITs: the first at :meth:`send` once INIT is entered, the next ``init_period`` clocks
      after the previous one *left* (a busy wire delays it).
    - The replay timer runs in ADVANCE/REPLAY while ``sent != acked``; it (re)starts at the
      first send with nothing outstanding, on progress, and when a replay starts (a go-back
      leaves ``sent == acked``, so in effect at the first replayed send). It expires at the
      :meth:`tick` with ``now - start >= replay_timeout``.
    - ``up`` rising when synchronized replays from ``acked`` without a count; the replay count
      only clears on progress (and FLUSH).
    - FLUSH (replay count > ``replay_max``, or ``down_max`` clocks after ``up`` fell, even with
      nothing kept) is a state of its own until the next :meth:`tick`, which drops the kept
      frames (those pushed meanwhile too) and goes to INIT or OFF. It sends nothing.

    Parameters
    ----------
    seq_bits : int
    replay_frames : int
        Ring size in frames, ``<= 2**(seq_bits - 1)`` [link README §2].
    replay_timeout, replay_max, init_period, down_max : int
        Clocks, replays, clocks, clocks.
    replay_bytes : int or None
        Ring size in bytes (None: no byte limit); :meth:`push` takes the frame's ``nbytes``.
    ack_to_highest : bool
        The README's rule (default True; False: as first written): an ACK/NACK is valid up to the
        highest frame ever sent (``d <= highest - acked``) instead of ``sent - acked``, and one that
        frees past ``sent`` moves ``sent`` up to ``acked``. Without it, after a timer replay (``sent
        = acked``) the receiver's ACK of the frames it already holds is rejected until the replay
        has caught up; when ``replay_timeout`` clocks of sending do not reach them, the link
        livelocks into FLUSH and loses the kept frames never sent.
    """

    def __init__(self, *, seq_bits=SEQ_BITS, replay_frames, replay_timeout, replay_max,
                 init_period, down_max, replay_bytes=None, ack_to_highest=True):
        self.ack_to_highest = ack_to_highest
        self.seq_bits = _check_seq_bits(seq_bits)
        self.modulus = 1 << seq_bits
        if not 1 <= replay_frames <= self.modulus // 2:
            raise ValueError(f"replay_frames must be 1 .. 2**(seq_bits - 1) = "
                             f"{self.modulus // 2}, not {replay_frames}")
        if replay_timeout < 1 or init_period < 1 or replay_max < 0 or down_max < 0:
            raise ValueError("replay_timeout, init_period >= 1; replay_max, down_max >= 0")
        self.replay_frames = replay_frames
        self.replay_bytes = replay_bytes
        self.replay_timeout = replay_timeout
        self.replay_max = replay_max
        self.init_period = init_period
        self.down_max = down_max
        self.reset()

    def reset(self):
        """Reset: OFF, not synchronized, all pointers 0, counters cleared."""
        self.counters = dict.fromkeys(TX_COUNTERS, 0)
        self.state = TxState.OFF
        self.synchronized = False
        self.acked = self.sent = self.next = self.highest = 0
        self.ring = deque()         # (payload, nbytes) of acked .. next - 1
        self.ring_bytes = 0
        self.level = False          # the last ``up`` level seen
        self.replay_count = 0
        self._down_since = None
        self._timer = None          # clock the replay timer started, None: not running
        self._init_due = None

    # -- ring --

    def kept(self):
        """Frames in the ring."""
        return len(self.ring)

    def room(self, nbytes=0):
        """Whether a frame of ``nbytes`` may enter the ring now."""
        return len(self.ring) < self.replay_frames and (
            self.replay_bytes is None or self.ring_bytes + nbytes <= self.replay_bytes)

    def push(self, payload, nbytes=0):
        """A frame enters the ring (any state); returns its sequence number."""
        if not self.room(nbytes):
            raise RuntimeError("the replay ring is full")
        seq = self.next
        self.ring.append((payload, nbytes))
        self.ring_bytes += nbytes
        self.next = (self.next + 1) % self.modulus
        self.counters["PEAK_REPLAY"] = max(self.counters["PEAK_REPLAY"], len(self.ring))
        return seq

    def _offset(self, seq):
        return (seq - self.acked) % self.modulus

    # -- events --

    def up(self, level, now):
        """The link's ``up`` input at clock ``now`` (only edges act)."""
        level = bool(level)
        if level == self.level:
            return
        self.level = level
        if not level:
            self._down_since = now
            if self.state is not TxState.FLUSH:
                self.state = TxState.OFF
            self._timer = None
            return
        self._down_since = None
        if self.state is TxState.FLUSH:
            return                              # the FLUSH goes to INIT at the next tick
        if not self.synchronized:
            self._enter_init(now)
        else:
            self.sent = self.acked              # REPLAY from the oldest kept frame [ours]
            self.state = TxState.ADVANCE
            self._timer = None
            self._settle()

    def ack(self, s, now):
        """An ACK(s) arrived; returns whether it was valid."""
        self.counters["ACK_RX"] += 1
        if not self._valid(s):
            self.counters["ACK_NACK_SEQ_ERROR"] += 1
            return False
        self._free(s, now)
        return True

    def nack(self, s, now):
        """A NACK(s) arrived; returns whether it was valid."""
        self.counters["NACK_RX"] += 1
        if not self._valid(s):
            self.counters["ACK_NACK_SEQ_ERROR"] += 1
            return False
        self._free(s, now)
        if (s + 1) % self.modulus != self.sent:
            self.sent = (s + 1) % self.modulus      # go back
            self.counters["TX_REPLAY_NACK"] += 1
            self._replay_started(now)
        return True

    def init_echo(self, s, now):
        """An INIT_ECHO(s) arrived."""
        self.counters["INIT_ECHO_RX"] += 1
        if self.state is not TxState.INIT:
            return
        if s % self.modulus != self.acked:
            self.counters["ACK_NACK_SEQ_ERROR"] += 1
            return
        self.synchronized = True
        self.state = TxState.ADVANCE
        self._init_due = None
        self._settle()

    def tick(self, now):
        """Advance to clock ``now``: a pending FLUSH, ``down_max``, the replay timer."""
        if self.state is TxState.FLUSH:
            self._flush(now)
            return
        if (self.state is TxState.OFF and self._down_since is not None
                and now - self._down_since >= self.down_max):
            self._down_since = None
            self.state = TxState.FLUSH
            return
        if self.state not in (TxState.ADVANCE, TxState.REPLAY) or self.sent == self.acked:
            self._timer = None
            return
        if self._timer is None:
            self._timer = now
        elif now - self._timer >= self.replay_timeout:
            self.sent = self.acked                  # replay everything kept
            self.counters["TX_REPLAY_TIMER"] += 1
            self._replay_started(now)

    def send(self, now):
        """What goes on the wire next if it is free: ``(Ctl.INIT, acked, None)``,
        ``("DATA", seq, payload)`` for the eligible frame at ``sent``, or ``None``."""
        if self.state is TxState.INIT:
            if self._init_due is not None and now >= self._init_due:
                self._init_due = now + self.init_period
                self.counters["INIT_TX"] += 1
                return Ctl.INIT, self.acked, None
            return None
        if self.state not in (TxState.ADVANCE, TxState.REPLAY) or self.sent == self.next:
            return None
        seq = self.sent
        payload = self.ring[self._offset(seq)][0]
        if seq == self.highest:
            self.counters["TX_OK"] += 1
            self.highest = (seq + 1) % self.modulus
        else:
            self.counters["TX_REPLAYED"] += 1
        if self._timer is None:
            self._timer = now
        self.sent = (seq + 1) % self.modulus
        self._settle()
        return "DATA", seq, payload

    # -- internals --

    def _valid(self, s):
        """ACK/NACK validity: ``(s + 1 - acked) mod 2**b <= sent - acked`` [link README §3.2]
        (``highest - acked`` with ``ack_to_highest``)."""
        top = self.highest if self.ack_to_highest else self.sent
        return (s + 1 - self.acked) % self.modulus <= self._offset(top)

    def _free(self, s, now):
        d = (s + 1 - self.acked) % self.modulus
        past_sent = d > self._offset(self.sent)         # only with ack_to_highest
        for _ in range(d):
            self.ring_bytes -= self.ring.popleft()[1]
        self.acked = (s + 1) % self.modulus
        if past_sent:
            self.sent = self.acked
            self._settle()
        if d:                                       # progress
            self.replay_count = 0
            self._timer = now if self.sent != self.acked else None

    def _replay_started(self, now):
        self.replay_count += 1
        self._timer = now if self.sent != self.acked else None
        if self.replay_count > self.replay_max:
            self.state = TxState.FLUSH
        else:
            self._settle()

    def _settle(self):
        """ADVANCE or REPLAY from the pointers (other states stay)."""
        if self.state in (TxState.ADVANCE, TxState.REPLAY):
            below = self._offset(self.sent) < self._offset(self.highest)
            self.state = TxState.REPLAY if below else TxState.ADVANCE

    def _enter_init(self, now):
        self.state = TxState.INIT
        self._init_due = now                        # the first INIT at once

    def _flush(self, now):
        self.counters["TX_FLUSHED"] += len(self.ring)
        self.ring.clear()
        self.ring_bytes = 0
        self.acked = self.sent = self.highest = self.next
        self.synchronized = False
        self.replay_count = 0
        self._timer = None
        self._down_since = None
        if self.level:
            self._enter_init(now)
        else:
            self.state = TxState.OFF


# --- Credit-based flow control [link README §4] ----------------------------------------------

def pkt_credits(length, credit_size, overhead=0):
    """Credits of a frame of ``length`` bridge bytes: ``ceil((L + overhead) / credit_size)``
    [link README §4] [UEC 1.0 §5.2]."""
    if credit_size < 1 or not 0 <= overhead <= MAX_OVERHEAD:
        raise ValueError("credit_size >= 1, overhead 0 .. 127")
    return -(-(length + overhead) // credit_size)


def link_vc(frame, vcs):
    """The link VC of a bridge frame: the VC it names; VCs at or above ``vcs`` share the last
    one [link README §4] [ours]."""
    return min(vc_of(frame), vcs - 1)


def _check_vcs(vcs):
    if not 1 <= vcs <= MAX_VCS:
        raise ValueError(f"vcs must be 1 .. {MAX_VCS}, not {vcs}")
    return vcs


class CreditSender:
    """The CBFC sender of one link end [link README §4, UEC 1.0 §5.2].

    ``S_CC``/``S_CF`` are 20-bit cyclic; ``S_CL`` the per-VC limits. ``counters`` holds
    ``CREDIT_ERROR`` and ``CF_RX`` (pass a transmitter's counters to share them).
    """

    def __init__(self, *, vcs, credit_size, overhead=0, limits, port_limit, counters=None):
        self.vcs = _check_vcs(vcs)
        self.credit_size = credit_size
        self.overhead = overhead
        pkt_credits(0, credit_size, overhead)       # validates
        self.S_CL = list(limits)
        if len(self.S_CL) != vcs or not all(0 <= v < COUNT_MOD for v in self.S_CL):
            raise ValueError(f"limits: {vcs} values in 0 .. 2**20 - 1")
        if not 0 <= port_limit < COUNT_MOD:
            raise ValueError("port_limit: 0 .. 2**20 - 1")
        self.port_limit = port_limit
        self.S_CC = [0] * vcs
        self.S_CF = [0] * vcs
        self.counters = counters if counters is not None else {}
        for name in ("CREDIT_ERROR", "CF_RX"):
            self.counters.setdefault(name, 0)

    def credits(self, length):
        return pkt_credits(length, self.credit_size, self.overhead)

    def in_use(self, v):
        """``S_CU[v] = S_CC[v] - S_CF[v]`` (mod 2**20)."""
        return (self.S_CC[v] - self.S_CF[v]) % COUNT_MOD

    def port_in_use(self):
        return sum(self.in_use(v) for v in range(self.vcs))

    def may_send(self, v, length):
        """Whether a frame of ``length`` bridge bytes on VC ``v`` may leave its queue."""
        c = self.credits(length)
        return self.in_use(v) + c <= self.S_CL[v] and self.port_in_use() + c <= self.port_limit

    def consume(self, v, length):
        """The frame leaves its queue for the ring: ``S_CC[v] += c``."""
        if not self.may_send(v, length):
            raise RuntimeError(f"VC {v} has no credit for {length} bytes")
        self.S_CC[v] = (self.S_CC[v] + self.credits(length)) % COUNT_MOD

    def cf_update(self, values):
        """A CF_UPDATE with ``R_CF`` of VC 0 ..: per VC ``v < vcs``, take it if
        ``(R_CF - S_CF) mod 2**20 <= S_CU``, else count CREDIT_ERROR. Extra values are ignored."""
        self.counters["CF_RX"] += 1
        for v, r_cf in enumerate(list(values)[:self.vcs]):
            if (r_cf - self.S_CF[v]) % COUNT_MOD <= self.in_use(v):
                self.S_CF[v] = r_cf % COUNT_MOD
            else:
                self.counters["CREDIT_ERROR"] += 1

    def cc_values(self):
        """``S_CC`` for a CC_UPDATE."""
        return list(self.S_CC)


class CreditReceiver:
    """The CBFC receiver of one link end [link README §4, UEC 1.0 §5.2]. ``counters`` holds
    ``CC_RX`` (pass a receiver's counters to share it)."""

    def __init__(self, *, vcs, credit_size, overhead=0, counters=None):
        self.vcs = _check_vcs(vcs)
        self.credit_size = credit_size
        self.overhead = overhead
        pkt_credits(0, credit_size, overhead)
        self.R_CC = [0] * vcs
        self.R_CF = [0] * vcs
        self.counters = counters if counters is not None else {}
        self.counters.setdefault("CC_RX", 0)

    def credits(self, length):
        return pkt_credits(length, self.credit_size, self.overhead)

    def accept(self, v, length):
        """An accepted data frame of ``length`` bridge bytes on VC ``v``: ``R_CC[v] += c``."""
        self.R_CC[v] = (self.R_CC[v] + self.credits(length)) % COUNT_MOD

    def free(self, v, length):
        """Its last byte left the receive buffer: ``R_CF[v] += c``."""
        self.R_CF[v] = (self.R_CF[v] + self.credits(length)) % COUNT_MOD

    def cc_update(self, values):
        """An accepted CC_UPDATE with ``S_CC`` of VC 0 ..: ``R_CF += S_CC - R_CC; R_CC = S_CC``."""
        self.counters["CC_RX"] += 1
        for v, s_cc in enumerate(list(values)[:self.vcs]):
            self.R_CF[v] = (self.R_CF[v] + s_cc - self.R_CC[v]) % COUNT_MOD
            self.R_CC[v] = s_cc % COUNT_MOD

    def held(self, v):
        """Credits accepted and not yet freed on VC ``v``."""
        return (self.R_CC[v] - self.R_CF[v]) % COUNT_MOD

    def cf_values(self):
        """``R_CF`` for a CF_UPDATE."""
        return list(self.R_CF)


# --- End-to-end model ------------------------------------------------------------------------

class Fate(IntEnum):
    """What a channel does with one frame (the value a loss function returns)."""

    DELIVER = 0
    LOSE = 1        # vanishes
    CORRUPT = 2     # arrives with a bit flipped: a bad FCS


def random_loss(rng, fwd, rev=None, corrupt=0.5):
    """A loss function: each frame of the forward (reverse) direction is hit with probability
    ``fwd`` (``rev``, default ``fwd``), corrupted with probability ``corrupt`` else lost."""
    rev = fwd if rev is None else rev

    def loss(direction, wire, now):
        if rng.random() < (fwd if direction == "fwd" else rev):
            return Fate.CORRUPT if rng.random() < corrupt else Fate.LOSE
        return Fate.DELIVER
    return loss


class _Channel:
    """A fixed delay line: a frame sent at clock t arrives at t + delay."""

    def __init__(self, direction, delay, loss):
        self.direction = direction
        self.delay = delay
        self.loss = loss
        self.line = deque()
        self.sent = self.lost = self.corrupted = 0

    def send(self, wire, now):
        self.sent += 1
        fate = Fate(int(self.loss(self.direction, wire, now))) if self.loss else Fate.DELIVER
        if fate is Fate.LOSE:
            self.lost += 1
            return
        if fate is Fate.CORRUPT:
            self.corrupted += 1
            at = len(wire) // 2
            wire = wire[:at] + bytes([wire[at] ^ 0x01]) + wire[at + 1:]
        self.line.append((now + self.delay, wire))

    def arrivals(self, now):
        while self.line and self.line[0][0] <= now:
            yield self.line.popleft()[1]


class ModelLink:
    """One direction of an ETH-X link, end to end, in clocks: a sender (VC queues, a
    :class:`CreditSender`, a :class:`LlrTx`) and a receiver (:class:`LlrRx`,
    :class:`CreditReceiver`, a receive FIFO drained at ``drain`` bytes per clock), joined by a
    forward channel (data, CC_UPDATE, INIT) and a reverse one (ACK, NACK, INIT_ECHO, CF_UPDATE),
    both of ``delay`` clocks, one frame per clock each way, every frame really encoded and
    classified.

    Each :meth:`step` (clock ``now``): the ``up`` edge; arrivals of both channels; the ticks;
    the drain (credits freed at a frame's last byte) and the CF_UPDATE triggers; ring entry (a due
    CC_UPDATE first, then at most one data frame, round-robin over the VCs whose head frame may
    go); one forward frame (:meth:`LlrTx.send`); one reverse frame. Choices of this harness
    [ours]: on the reverse wire a CF_UPDATE goes before an ACK but after INIT_ECHO and NACK;
    ``cf_bytes`` counts bridge bytes freed; ``cf_period`` and ``cc_period`` run from the last
    CF/CC queued (0: never); a CC_UPDATE takes no credit and waits for ring room; while ``up``
    is low both channels lose everything, in flight too.

    Parameters
    ----------
    vcs : int
    delay : int
        One-way channel delay in clocks, >= 1.
    loss : callable or None
        ``loss(direction, wire, now) -> Fate`` (``direction`` "fwd" or "rev").
    drain : int or callable
        Bytes per clock leaving the receive buffer, or ``drain(now) -> bytes``.
    limits : list or None
        ``S_CL`` per VC (default: ``port_limit`` each).
    trace : bool
        Record ``(now, seq, first)`` of every eligible frame sent in :attr:`sends`.
    fixes : bool
        The README's mends ``LlrTx(ack_to_highest)`` and ``LlrRx(ack_in_nack_sent)`` (default
        True; False: the rules as first written).
    """

    def __init__(self, *, vcs=2, seq_bits=SEQ_BITS, delay=8, loss=None,
                 replay_frames=64, replay_timeout=100, replay_max=8, init_period=50,
                 down_max=1000, ack_bytes=512, ack_delay=8, credit_size=64, overhead=0,
                 limits=None, port_limit=64, rx_bytes=4096, drain=64, cf_bytes=512,
                 cf_period=64, cc_period=0, max_bytes=None, tx_node=0, rx_node=1,
                 trace=False, fixes=True):
        if delay < 1:
            raise ValueError("delay must be >= 1")
        self.vcs = vcs
        self.seq_bits = seq_bits
        self.max_bytes = max_wire_bytes() if max_bytes is None else max_bytes
        self.tx = LlrTx(seq_bits=seq_bits, replay_frames=replay_frames,
                        replay_timeout=replay_timeout, replay_max=replay_max,
                        init_period=init_period, down_max=down_max, ack_to_highest=fixes)
        self.sender = CreditSender(vcs=vcs, credit_size=credit_size, overhead=overhead,
                                   limits=[port_limit] * vcs if limits is None else limits,
                                   port_limit=port_limit, counters=self.tx.counters)
        self.rx = LlrRx(seq_bits=seq_bits, ack_bytes=ack_bytes, ack_delay=ack_delay,
                        ack_in_nack_sent=fixes)
        self.receiver = CreditReceiver(vcs=vcs, credit_size=credit_size, overhead=overhead,
                                       counters=self.rx.counters)
        self.fwd = _Channel("fwd", delay, loss)
        self.rev = _Channel("rev", delay, loss)
        self.rx_bytes = rx_bytes
        self.drain = drain
        self.cf_bytes, self.cf_period, self.cc_period = cf_bytes, cf_period, cc_period
        self.tx_node, self.rx_node = tx_node, rx_node
        self.queues = [deque() for _ in range(vcs)]
        self.offered = [[] for _ in range(vcs)]
        self.delivered = [[] for _ in range(vcs)]
        self.buffer = deque()           # (vc, bridge frame)
        self.buffer_bytes = 0
        self.peak_buffer_bytes = 0
        self.peak_port_in_use = 0
        self.peak_held = 0              # max over clocks of sum(R_CC - R_CF)
        self.stray = 0                  # bad or foreign frames at the sender, unused kinds
        self.sends = [] if trace else None
        self.up = True
        self.now = 0
        self._rr = vcs - 1
        self._head_done = 0
        self._freed = 0
        self._cf_pending = False
        self._last_cf = 0
        self._last_cc = 0

    # -- traffic --

    def offer(self, frame):
        """Queue a bridge frame (``16 + 8n`` bytes) on the VC of its byte 14."""
        vc = vc_of(frame)
        if vc >= self.vcs:
            raise ValueError(f"VC {vc} >= vcs {self.vcs}")
        self.queues[vc].append(bytes(frame))
        self.offered[vc].append(bytes(frame))

    def run(self, clocks):
        for _ in range(clocks):
            self.step()

    def drain_all(self, max_clocks, vcs=None):
        """Step until :meth:`quiet` (over ``vcs``); returns whether it got there."""
        for _ in range(max_clocks):
            if self.quiet(vcs):
                return True
            self.step()
        return self.quiet(vcs)

    def quiet(self, vcs=None):
        """Nothing queued (on ``vcs``, default all), kept, in flight, buffered or in use."""
        vcs = range(self.vcs) if vcs is None else vcs
        return (not any(self.queues[v] for v in vcs) and not self.tx.ring
                and not self.fwd.line and not self.rev.line and not self.buffer
                and self.sender.port_in_use() == 0
                and self.tx.state in (TxState.ADVANCE, TxState.REPLAY))

    # -- one clock --

    def step(self):
        now = self.now
        if self.up != self.tx.level:
            self.tx.up(self.up, now)
        if not self.up:
            self.fwd.line.clear()
            self.rev.line.clear()
        for wire in self.fwd.arrivals(now):
            self._at_receiver(wire, now)
        for wire in self.rev.arrivals(now):
            self._at_sender(wire, now)
        self.tx.tick(now)
        self.rx.tick(now)
        self._drain(now)
        self._enter_ring(now)
        self._send_forward(now)
        self._send_reverse(now)
        self.peak_buffer_bytes = max(self.peak_buffer_bytes, self.buffer_bytes)
        self.peak_port_in_use = max(self.peak_port_in_use, self.sender.port_in_use())
        self.peak_held = max(self.peak_held,
                             sum(self.receiver.held(v) for v in range(self.vcs)))
        self.now += 1

    def _at_receiver(self, wire, now):
        r = classify(wire, max_bytes=self.max_bytes, seq_bits=self.seq_bits)
        if r.cls is Class.BAD:
            self.rx.bad(now)
        elif r.cls is Class.FOREIGN:
            self.rx.foreign(now)
        elif r.cls is Class.DATA:
            length = len(r.frame)
            room = self.buffer_bytes + length <= self.rx_bytes
            if self.rx.eligible(r.seq, len(wire), now, room):
                self.buffer.append((r.vc, r.frame))
                self.buffer_bytes += length
                self.receiver.accept(r.vc, length)
        elif r.cls is Class.POISONED:
            if self.rx.eligible(r.seq, len(wire), now, poisoned=True):
                self.receiver.accept(r.vc, len(r.frame))
                self.receiver.free(r.vc, len(r.frame))
        elif r.cls is Class.CC:
            if self.rx.eligible(r.seq, len(wire), now):
                self.receiver.cc_update(r.counts[:self.vcs])
        elif r.kind is Ctl.INIT:
            self.rx.init(r.seq, now)
        else:
            self.stray += 1

    def _at_sender(self, wire, now):
        r = classify(wire, max_bytes=self.max_bytes, seq_bits=self.seq_bits)
        if r.cls is not Class.CONTROL:
            self.stray += 1
        elif r.kind is Ctl.ACK:
            self.tx.ack(r.seq, now)
        elif r.kind is Ctl.NACK:
            self.tx.nack(r.seq, now)
        elif r.kind is Ctl.INIT_ECHO:
            self.tx.init_echo(r.seq, now)
        elif r.kind is Ctl.CF_UPDATE:
            self.sender.cf_update(r.counts[:self.vcs])
        else:
            self.stray += 1

    def _drain(self, now):
        budget = self.drain(now) if callable(self.drain) else self.drain
        while self.buffer and budget > 0:
            vc, frame = self.buffer[0]
            step = min(len(frame) - self._head_done, budget)
            budget -= step
            self._head_done += step
            if self._head_done == len(frame):
                self.buffer.popleft()
                self._head_done = 0
                self.buffer_bytes -= len(frame)
                self.receiver.free(vc, len(frame))
                self.delivered[vc].append(frame)
                self._freed += len(frame)
        if self.cf_bytes and self._freed >= self.cf_bytes:
            self._queue_cf(now)
        if self.cf_period and now - self._last_cf >= self.cf_period:
            self._queue_cf(now)

    def _queue_cf(self, now):
        self._cf_pending, self._freed, self._last_cf = True, 0, now

    def _enter_ring(self, now):
        if self.cc_period and now - self._last_cc >= self.cc_period and self.tx.room():
            wire = encode_control(Ctl.CC_UPDATE, self.tx_node, seq=self.tx.next,
                                  counts=self.sender.cc_values(), seq_bits=self.seq_bits)
            self.tx.push(wire, len(wire))
            self.tx.counters["CC_TX"] += 1
            self._last_cc = now
        for k in range(1, self.vcs + 1):
            v = (self._rr + k) % self.vcs
            queue = self.queues[v]
            if not queue:
                continue
            wire_len = wire_bytes_of(len(queue[0]))
            if not self.tx.room(wire_len) or not self.sender.may_send(v, len(queue[0])):
                continue
            frame = queue.popleft()
            self.sender.consume(v, len(frame))
            self.tx.push(to_wire(frame, self.tx.next, self.seq_bits), wire_len)
            self._rr = v
            return

    def _send_forward(self, now):
        first = self.tx.counters["TX_OK"]
        out = self.tx.send(now)
        if out is None:
            return
        kind, seq, payload = out
        if kind is Ctl.INIT:
            wire = encode_control(Ctl.INIT, self.tx_node, seq=seq, seq_bits=self.seq_bits)
        else:
            wire = payload
            if self.sends is not None:
                self.sends.append((now, seq, self.tx.counters["TX_OK"] > first))
        self._transmit(self.fwd, wire, now)

    def _send_reverse(self, now):
        pending = self.rx.pending()
        if self._cf_pending and (not pending or pending[0][0] is Ctl.ACK):
            self._cf_pending = False
            self.rx.counters["CF_TX"] += 1
            wire = encode_control(Ctl.CF_UPDATE, self.rx_node, counts=self.receiver.cf_values())
        elif pending:
            kind, seq = self.rx.take(now)
            wire = encode_control(kind, self.rx_node, seq=seq, seq_bits=self.seq_bits)
        else:
            return
        self._transmit(self.rev, wire, now)

    def _transmit(self, channel, wire, now):
        if self.up:
            channel.send(wire, now)
