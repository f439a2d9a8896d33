# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the UALink data link (DL) link-level replay (LLR) and DL link states.

Written from the UALink_200 Rev 1.0 Evaluation Copy, chapter 6: §6.6 (link level replay, with
the Rx and Tx flow charts of Figures 6-20 and 6-21) and §6.7.1 (DL link states). Names follow the
spec's variables (``Rx_last_seq_calc`` is :attr:`LlrRx.last_seq_calc`, ``Tx_last_seq`` is
:attr:`LlrTx.last_seq`, ...). Conventions the spec leaves open are marked [ours] where they are
made; the module docstring of each class lists those of its half.

The model works at flit granularity. A DL flit is a :class:`Flit`: the 24-bit flit header as an
integer with the bit positions of Tables 6-14/6-15 (op in bits 23:21, payload in bit 20, ...) and
an opaque payload object (``None`` for a NOP flit). Where the header sits in the 640-byte flit,
the CRC and the FEC are other models' concern: a flit reaches the receiver either intact or
"CRC bad". One call of :meth:`DlEndpoint.send` and one of :meth:`DlEndpoint.receive` make one
flit time.

Sequence numbers live in 1 .. 511 and all arithmetic is modulo 511, so 511 stands for the class
of 0 (the reset value 0x1FF is "just before 1") [§6.6.6.1].
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from enum import Enum, IntEnum
from typing import NamedTuple

__all__ = [
    "ACK_REQ_SEQ_LSB",
    "ACK_TIMEOUT_DEFAULT",
    "ACK_TIMEOUT_MAX",
    "BAD_CRC_AMBIGUOUS",
    "BAD_CRC_MAX",
    "COMMAND_OPS",
    "CONTROL_FLITS_TO_IDLE",
    "EXPLICIT_INTERVAL",
    "EXPLICIT_OPS",
    "GOOD_FLITS_TO_UP",
    "HEADER_BITS",
    "MAX_UNACKED",
    "NOP_FLITS_TO_UP",
    "OP_BITS",
    "OP_LSB",
    "PAYLOAD_BIT",
    "REPLAY_IGNORE_FLITS",
    "REPLAY_LIMIT_DEFAULT",
    "REPLAY_REQUEST_COPIES",
    "SEQ_BITS",
    "SEQ_LO_BITS",
    "SEQ_LO_LSB",
    "SEQ_MODULUS",
    "SEQ_NO_LSB",
    "SEQ_RESET",
    "SEQ_WINDOW",
    "UNEXPECTED_MAX",
    "DlCounters",
    "DlEndpoint",
    "DlState",
    "Flit",
    "Header",
    "LlrRx",
    "LlrTx",
    "MalformedHeader",
    "Op",
    "ack_valid",
    "decode_header",
    "encode_command",
    "encode_explicit",
    "replay_request_valid",
    "rx_seq_calc",
    "seq_add",
    "seq_diff",
]

# --- Flit header [UALink 1.0 §6.6.2] --------------------------------------------------------------

HEADER_BITS = 24
OP_LSB, OP_BITS = 21, 3             # op 23:21 [Tables 6-14, 6-15]
PAYLOAD_BIT = 20                    # payload 20
SEQ_BITS = 9
SEQ_NO_LSB = 8                      # explicit: flitSeqNo 16:8 [Table 6-14]
ACK_REQ_SEQ_LSB = 11                # command: ackReqSeq 19:11 [Table 6-15]
SEQ_LO_LSB, SEQ_LO_BITS = 8, 3      # command: flitSeqLo 10:8
SEQ_MASK = (1 << SEQ_BITS) - 1
SEQ_LO_MASK = (1 << SEQ_LO_BITS) - 1


class Op(IntEnum):
    """Flit header ``op`` [Tables 6-14, 6-15]; 0b100 .. 0b111 are reserved."""

    ORIGINAL = 0b000        # explicit: original payload flit "org", or a NOP flit (payload = 0)
    REPLAY = 0b001          # explicit: replayed payload flit "rpy" (payload = 1 only)
    ACK = 0b010             # command
    REPLAY_REQUEST = 0b011  # command: Standard Replay Request


EXPLICIT_OPS = frozenset({Op.ORIGINAL, Op.REPLAY})      # [§6.6.3.1]
COMMAND_OPS = frozenset({Op.ACK, Op.REPLAY_REQUEST})    # [§6.6.3.2]


class MalformedHeader(ValueError):
    """A header with a reserved ``op`` or a reserved payload/op combination [Table 6-14].

    ``reason`` is ``"reserved_op"`` (op 0b100 .. 0b111) or ``"nop_replay"`` (op 0b001 with
    payload = 0).
    """

    def __init__(self, word, reason):
        super().__init__(f"flit header {word:#08x}: {reason}")
        self.word = word
        self.reason = reason


class Header(NamedTuple):
    """A decoded flit header.

    ``seq`` is the full flitSeqNo of an explicit flit or the 3-bit flitSeqLo of a command flit;
    ``ack_req_seq`` is the ackReqSeq of a command flit and ``None`` for an explicit one.
    Reserved bits are not kept: a receiver ignores them [ours].
    """

    op: Op
    payload: bool
    seq: int
    ack_req_seq: int | None = None

    @property
    def explicit(self):
        """Whether this is an Explicit Sequence Number Flit [§6.6.3.1]."""
        return self.op in EXPLICIT_OPS

    @property
    def nop(self):
        """Whether this is a NOP flit (payload = 0)."""
        return not self.payload


class Flit(NamedTuple):
    """One DL flit: the 24-bit header and the payload object (``None`` for a NOP flit)."""

    header: int
    payload: object = None


def _field(value, bits, name):
    if not 0 <= value < 1 << bits:
        raise ValueError(f"{name}={value} does not fit in {bits} bits")
    return value


def encode_explicit(op, payload, seq):
    """Build an Explicit Sequence Number Flit header [Table 6-14].

    Parameters
    ----------
    op : Op
        :data:`Op.ORIGINAL` (also for a NOP flit) or :data:`Op.REPLAY`.
    payload : bool
        Whether the flit carries a payload.
    seq : int
        flitSeqNo, 9 bits (0 is accepted so that tests can build the reserved value).

    Returns
    -------
    int
        The 24-bit header; reserved bits are 0.
    """
    op = Op(op)
    if op not in EXPLICIT_OPS or (op is Op.REPLAY and not payload):
        raise ValueError(f"{op.name} with payload={int(payload)} is not an explicit header")
    return (op << OP_LSB | int(bool(payload)) << PAYLOAD_BIT
            | _field(seq, SEQ_BITS, "flitSeqNo") << SEQ_NO_LSB)


def encode_command(op, payload, ack_req_seq, seq_lo):
    """Build a Command Flit header [Table 6-15].

    Parameters
    ----------
    op : Op
        :data:`Op.ACK` or :data:`Op.REPLAY_REQUEST`.
    payload : bool
        Whether the flit carries a payload.
    ack_req_seq : int
        ackReqSeq, 9 bits.
    seq_lo : int
        flitSeqLo; only its low 3 bits are kept, so a full sequence number may be passed.

    Returns
    -------
    int
        The 24-bit header; reserved bits are 0.
    """
    op = Op(op)
    if op not in COMMAND_OPS:
        raise ValueError(f"{op.name} is not a command op")
    return (op << OP_LSB | int(bool(payload)) << PAYLOAD_BIT
            | _field(ack_req_seq, SEQ_BITS, "ackReqSeq") << ACK_REQ_SEQ_LSB
            | (seq_lo & SEQ_LO_MASK) << SEQ_LO_LSB)


def decode_header(word):
    """Split a 24-bit flit header into a :class:`Header`.

    Raises
    ------
    MalformedHeader
        For a reserved op, or op :data:`Op.REPLAY` with payload = 0 [Table 6-14]. A receiver
        drops such a flit whole and logs it, as it does a Command flit with ackReqSeq = 0
        [ours, after §6.6.6.3].
    """
    _field(word, HEADER_BITS, "header")
    payload = bool(word >> PAYLOAD_BIT & 1)
    try:
        op = Op(word >> OP_LSB & ((1 << OP_BITS) - 1))
    except ValueError:
        raise MalformedHeader(word, "reserved_op") from None
    if op is Op.REPLAY and not payload:
        raise MalformedHeader(word, "nop_replay")
    if op in EXPLICIT_OPS:
        return Header(op, payload, word >> SEQ_NO_LSB & SEQ_MASK)
    return Header(op, payload, word >> SEQ_LO_LSB & SEQ_LO_MASK,
                  word >> ACK_REQ_SEQ_LSB & SEQ_MASK)


# --- Sequence numbers and the rules' constants ----------------------------------------------------

SEQ_MODULUS = 511               # [§6.6.6.1] 1 .. 511, 0 reserved, "511 wraps to 1"
SEQ_RESET = 0x1FF               # [§6.6.4.1-3, §6.6.5.3] default of the sequence registers
SEQ_CALC_MODULUS = 512          # [§6.6.4.1] Rx_seq_calc is formed modulo 512
SEQ_WINDOW = 256                # [§6.6.6.3] Ack and Replay Request validity windows
MAX_UNACKED = 255               # [§6.6.6.5] at most 255 unacknowledged flits in TxReplay
EXPLICIT_INTERVAL = 7           # [§6.6.5.6] Tx_explicit_count reload (3 bits)
REPLAY_REQUEST_COPIES = 3       # [§6.6.1, §6.6.6.4] Tx_replay_req_count load
REPLAY_IGNORE_FLITS = 12        # [§6.6.6.3] Rx_replay_ignore_count load (4 bits)
BAD_CRC_AMBIGUOUS = 7           # [§6.6.6.2] Rx_bad_crc_count >= 7 sets Rx_ambiguous
BAD_CRC_MAX = 0x7               # [§6.6.4.4] 3 bits, saturating
UNEXPECTED_MAX = 0xFF           # [§6.6.4.5] 8 bits, saturating
REPLAY_LIMIT_DEFAULT = 50       # [§6.6.4.6] Rx_replay_limit, flit times (8 bits)
ACK_TIMEOUT_DEFAULT = 40_000    # [§6.6.5.8] Tx_ack_time_out: 1 ms of 25 ns flits
ACK_TIMEOUT_MAX = (1 << 24) - 1     # [§6.6.5.8] 24 bits
NOP_FLITS_TO_UP = 10            # [§6.7.1.3] NOP flits sent before DL Up
GOOD_FLITS_TO_UP = 2            # [§6.7.1.3] consecutive flits received before DL Up
CONTROL_FLITS_TO_IDLE = 4       # [§6.7.1.4] consecutive control flits: partner is down


def seq_add(seq, n=1):
    """The sequence number ``n`` after ``seq`` (mod 511, in 1 .. 511) [§6.6.6.1]."""
    return (seq - 1 + n) % SEQ_MODULUS + 1


def seq_diff(a, b):
    """``(a - b) % 511``, the distance the spec's window tests use [§6.6.6.3]."""
    return (a - b) % SEQ_MODULUS


def rx_seq_calc(last_seq_calc, header):
    """Rx_seq_calc of a received flit [§6.6.4.1].

    An explicit flit gives its flitSeqNo. A command flit's flitSeqLo is placed in the 8 values
    after ``last_seq_calc``, counted modulo 512 (so 511 -> 1 steps over 0 as the sequence does);
    a payload flit with the same low bits is 8 ahead, a NOP flit is ``last_seq_calc`` itself.
    The result can be 0, which never matches an expected number.
    """
    if header.explicit:
        return header.seq
    delta = (header.seq - last_seq_calc) & SEQ_LO_MASK
    if delta == 0 and header.payload:
        delta = SEQ_LO_MASK + 1
    return (last_seq_calc + delta) % SEQ_CALC_MODULUS


def ack_valid(ack_req_seq, last_ack, tx_last_seq):
    """Whether an Ack's ackReqSeq is in its window [§6.6.6.3, Figure 6-19]."""
    return (seq_diff(ack_req_seq, last_ack) <= SEQ_WINDOW
            and seq_diff(tx_last_seq, ack_req_seq) <= SEQ_WINDOW)


def replay_request_valid(ack_req_seq, last_ack, tx_last_seq):
    """Whether a Replay Request's ackReqSeq is in its window [§6.6.6.3, Figure 6-19]."""
    return (seq_diff(ack_req_seq, last_ack + 1) <= SEQ_WINDOW
            and seq_diff(tx_last_seq, ack_req_seq) <= SEQ_WINDOW)


# --- Counters -------------------------------------------------------------------------------------

@dataclass
class DlCounters:
    """Event counts of one endpoint, cumulative over link-downs and faults.

    Transmit: ``flits_sent`` (all DL flits), ``nop_flits``, ``explicit_flits``,
    ``payload_flits`` (original transmissions), ``replayed_flits``, ``replays_started``
    (Replay Requests accepted), ``replay_requests_sent`` (copies), ``acks_sent``,
    ``ack_timeouts``, ``peak_occupancy`` (of TxReplay), ``flits_acked`` (removed by Acks).

    Receive: ``flits_received`` (good or bad), ``control_slots`` (flit times without a DL
    flit), ``good_crc``, ``bad_crc``, ``malformed`` (reserved op or combination, ackReqSeq = 0,
    flitSeqNo = 0), ``delivered``, ``unexpected`` (sequence number not the expected one),
    ``duplicates`` (explicit payload flits at or behind Rx_last_seq_calc), ``dropped`` (command
    flits not checked while Rx_replay or Rx_ambiguous), ``replay_entries`` (Rx_replay set),
    ``replay_rerequests`` (Rx_replay_limit reached), ``ambiguous_entries``, ``ack_seq_errors``
    and ``replay_request_seq_errors`` (outside their windows), ``replay_requests_ignored`` (in the
    ignore window), ``ignored_flits`` (arrived in DL Fault or DL Idle).

    Link: ``link_ups``, ``link_downs`` (DL Up -> DL Idle), ``faults``, ``lost_on_fault``
    (unacknowledged flits dropped when DL Fault resets the replay state).
    """

    flits_sent: int = 0
    nop_flits: int = 0
    explicit_flits: int = 0
    payload_flits: int = 0
    replayed_flits: int = 0
    replays_started: int = 0
    replay_requests_sent: int = 0
    acks_sent: int = 0
    ack_timeouts: int = 0
    peak_occupancy: int = 0
    flits_acked: int = 0
    flits_received: int = 0
    control_slots: int = 0
    good_crc: int = 0
    bad_crc: int = 0
    malformed: int = 0
    delivered: int = 0
    unexpected: int = 0
    duplicates: int = 0
    dropped: int = 0
    replay_entries: int = 0
    replay_rerequests: int = 0
    ambiguous_entries: int = 0
    ack_seq_errors: int = 0
    replay_request_seq_errors: int = 0
    replay_requests_ignored: int = 0
    ignored_flits: int = 0
    link_ups: int = 0
    link_downs: int = 0
    faults: int = 0
    lost_on_fault: int = 0

    def as_dict(self):
        """The counts as a plain ``{name: int}``."""
        return asdict(self)


# --- Transmit half --------------------------------------------------------------------------------

class LlrTx:
    """Transmit half of LLR: TxReplay, sequence numbering and header scheduling.

    Every flit time the transmitter sources one flit [§6.6.6.6] (the next replay flit while
    Tx_replay, else the next TL payload if the enqueue rules allow, else a NOP flit) and
    schedules its header [§6.6.6.7]. Choices of ours:

    - Replayed payload flits carry op Replay and only they do, the last one of a replay too
      (the text clears Tx_replay before it schedules that flit; Figure 6-21 tests
      Tx_first_replay there instead of Tx_replay); a NOP flit never does (op 0b001 with
      payload = 0 is reserved). The first replay flit is explicit; Tx_first_replay waits for a
      replayed payload flit (in DL NOP the transmitter sends NOPs only).
    - Tx_explicit_count reloads with 7 as the text and the 3-bit width say, not with the 0x1F
      of Figure 6-21.
    - A Replay Request copy goes only in a codeword group (``rr_group`` consecutive flit times,
      aligned to the first flit sent) other than the previous copy's. The spec does not size the
      FEC-interleave group; the default 1 makes each DL flit its own group. The three copies
      span up to ``2 * rr_group + 1`` flit times and must fit in the partner's 12-flit ignore
      window, so ``rr_group`` <= 5: with more, a second copy starts a second replay, and a
      replay from 8k behind the receiver whose first flit is lost is misread as new data.
    - An accepted Replay Request whose ackReqSeq is not in TxReplay (possible only with the
      empty or nearly empty buffer, see :func:`replay_request_valid`) replays nothing.
    - Tx_ack_counter is armed to Tx_ack_time_out at reset and when the link comes up (the spec's
      default 0 would time out at once), and only counts in DL Up ("shall not expect ACKs" in
      DL NOP, §6.7.1.3).

    Parameters
    ----------
    counters : DlCounters
        Where to count events.
    depth : int
        TxReplay entries, 1 .. 255.
    ack_timeout : int
        Tx_ack_time_out in flit times.
    rr_group : int
        Flit times per FEC-interleave (codeword) group.
    """

    def __init__(self, counters, *, depth, ack_timeout, rr_group):
        self.counters = counters
        self.depth = depth
        self.ack_timeout = ack_timeout
        self.rr_group = rr_group
        self.last_seq = SEQ_RESET               # Tx_last_seq [§6.6.5.3]
        self.buffer = deque()                   # TxReplay: (seq, payload), oldest first
        self.replay = False                     # Tx_replay [§6.6.5.4]
        self.first_replay = False               # Tx_first_replay [§6.6.5.5]
        self.replay_next = 0                    # index in TxReplay of the next replay flit
        self.explicit_count = EXPLICIT_INTERVAL     # Tx_explicit_count [§6.6.5.6]
        self.replay_req_seq_no = 0              # Tx_replay_req_seq_no [§6.6.5.1]
        self.replay_req_count = 0               # Tx_replay_req_count [§6.6.5.2]
        self.ack_counter = ack_timeout          # Tx_ack_counter [§6.6.5.7], armed [ours]
        self.flit_time = 0                      # flits sent, for codeword groups
        self._rr_group_sent = None

    @property
    def accepting(self):
        """Whether TxReplay accepts a payload flit now [§6.6.6.5]."""
        return not self.replay and len(self.buffer) < min(self.depth, MAX_UNACKED)

    def acknowledge(self, ack_req_seq, last_ack):
        """Remove the flits up to and including ``ack_req_seq`` [§6.6.6.3].

        ``last_ack`` is Rx_last_ack before this Ack; TxReplay holds ``last_ack + 1 ..
        Tx_last_seq`` in order, so the Ack removes ``ack_req_seq - last_ack`` flits at most.
        """
        removed = min(seq_diff(ack_req_seq, last_ack), len(self.buffer))
        for _ in range(removed):
            self.buffer.popleft()
        self.replay_next = max(0, self.replay_next - removed)
        if removed:
            self.ack_counter = self.ack_timeout         # rearmed [§6.6.6.8]
            self.counters.flits_acked += removed
        return removed

    def start_replay(self, ack_req_seq, last_ack):
        """Schedule a Standard Replay from ``ack_req_seq`` [§6.6.6.3]."""
        index = seq_diff(ack_req_seq, last_ack) - 1
        if index >= len(self.buffer):
            return                              # nothing held from there [ours]
        self.replay, self.first_replay, self.replay_next = True, True, index
        self.counters.replays_started += 1

    def tick_ack_timer(self):
        """Count one flit time of DL Up; whether Tx_ack_counter reached 0 [§6.6.6.8]."""
        if self.buffer:
            self.ack_counter = max(0, self.ack_counter - 1)
        return self.ack_counter == 0

    def send(self, rx_last_seq_calc, tl_queue, nop_only=False):
        """Source and schedule the flit of this flit time.

        Parameters
        ----------
        rx_last_seq_calc : int
            The local receiver's Rx_last_seq_calc, for Acks and Replay Requests.
        tl_queue : deque
            TL payloads waiting; the next one is taken when TxReplay accepts it.
        nop_only : bool
            Send a NOP flit whatever is pending (DL NOP state).

        Returns
        -------
        Flit
        """
        entry, replaying = (None, False) if nop_only else self._source(tl_queue)
        seq = entry[0] if entry else self.last_seq      # a NOP uses Tx_last_seq [§6.6.6.1]
        header = self._schedule(seq, entry is not None, replaying, rx_last_seq_calc)
        self.flit_time += 1
        self._count(header)
        return Flit(header, entry[1] if entry else None)

    def _source(self, tl_queue):
        """[§6.6.6.6] The replay flit, a new payload flit or ``None`` (NOP)."""
        if self.replay and self.replay_next >= len(self.buffer):
            self.replay = self.first_replay = False     # acknowledged meanwhile
        if self.replay:
            entry = self.buffer[self.replay_next]
            self.replay_next += 1
            self.replay = self.replay_next < len(self.buffer)
            self.counters.replayed_flits += 1
            return entry, True
        if tl_queue and self.accepting:
            self.last_seq = seq_add(self.last_seq)
            self.buffer.append((self.last_seq, tl_queue.popleft()))
            self.counters.payload_flits += 1
            self.counters.peak_occupancy = max(self.counters.peak_occupancy, len(self.buffer))
            return self.buffer[-1], False
        return None, False

    def _schedule(self, seq, payload, replaying, rx_last_seq_calc):
        """[§6.6.6.7] The header of the flit."""
        self.explicit_count = max(0, self.explicit_count - 1)
        if self.first_replay and replaying:
            self.first_replay = False
            self.explicit_count = EXPLICIT_INTERVAL
            return encode_explicit(Op.REPLAY, True, seq)
        if self.explicit_count <= 0:
            self.explicit_count = EXPLICIT_INTERVAL
            return encode_explicit(Op.REPLAY if replaying else Op.ORIGINAL, payload, seq)
        group = self.flit_time // self.rr_group
        if self.replay_req_count > 0 and group != self._rr_group_sent:
            if self.replay_req_count == REPLAY_REQUEST_COPIES:
                self.replay_req_seq_no = seq_add(rx_last_seq_calc)
            self.replay_req_count -= 1
            self._rr_group_sent = group
            return encode_command(Op.REPLAY_REQUEST, payload, self.replay_req_seq_no, seq)
        return encode_command(Op.ACK, payload, rx_last_seq_calc, seq)

    def _count(self, header):
        c = self.counters
        op, payload = Op(header >> OP_LSB), header >> PAYLOAD_BIT & 1
        c.flits_sent += 1
        c.nop_flits += not payload
        c.explicit_flits += op in EXPLICIT_OPS
        c.acks_sent += op is Op.ACK
        c.replay_requests_sent += op is Op.REPLAY_REQUEST


# --- Receive half ---------------------------------------------------------------------------------

class LlrRx:
    """Receive half of LLR: ingress, Ack / Replay Request processing and enqueuing.

    It applies received Acks and Replay Requests to the local :class:`LlrTx` and asks that
    transmitter for Replay Requests (Tx_replay_req_count) [§6.6.6.2-6.6.6.4]. Choices of ours:

    - A good-CRC flit with a reserved op or op/payload combination is dropped whole and
      counted as malformed, like a Command flit with ackReqSeq = 0.
    - While Rx_replay, every flit that does not end the replay counts towards
      Rx_replay_limit: bad-CRC flits (§6.6.6.2), command flits (Figure 6-20) and explicit flits
      with an unexpected number (the text of §6.6.6.4), so the limit counts flit times as
      §6.6.4.6 describes. As in §6.6.6.2, a bad-CRC flit only counts; the limit is checked at
      the next good flit.
    - ``rearm_replay_limit`` (default): when the limit fires, Rx_unexpected_count is cleared
      too, so Replay Requests are resent every ``replay_limit`` flit times. With ``False`` the
      text is followed literally: the count stays at the limit and every further unexpected
      flit re-arms three more copies.

    Parameters
    ----------
    tx : LlrTx
        The local transmitter.
    counters : DlCounters
        Where to count events.
    replay_limit : int
        Rx_replay_limit in flit times, 1 .. 255.
    rearm_replay_limit : bool
        See above.
    """

    def __init__(self, tx, counters, *, replay_limit, rearm_replay_limit=True):
        self.tx = tx
        self.counters = counters
        self.replay_limit = replay_limit
        self.rearm_replay_limit = rearm_replay_limit
        self.seq_calc = SEQ_RESET               # Rx_seq_calc [§6.6.4.1]
        self.last_seq_calc = SEQ_RESET          # Rx_last_seq_calc [§6.6.4.2]
        self.last_ack = SEQ_RESET               # Rx_last_ack [§6.6.4.3]
        self.bad_crc_count = 0                  # Rx_bad_crc_count [§6.6.4.4]
        self.unexpected_count = 0               # Rx_unexpected_count [§6.6.4.5]
        self.ambiguous = False                  # Rx_ambiguous [§6.6.4.7]
        self.replay = False                     # Rx_replay [§6.6.4.8]
        self.replay_ignore_count = 0            # Rx_replay_ignore_count [§6.6.4.9]

    def ingress(self, flit, crc_ok=True):
        """Take one received DL flit [§6.6.6.2]; the payload to deliver upward, or ``None``.

        With ``crc_ok`` False the flit's content is never read (``flit`` may be ``None``).
        """
        self.replay_ignore_count = max(0, self.replay_ignore_count - 1)
        self.counters.flits_received += 1
        if not crc_ok:
            self._bad_crc()
            return None
        self.counters.good_crc += 1
        header = self._decode(flit.header)
        if header is None:
            return None
        if not header.explicit:
            self._command(header)
        return self._enqueue(header, flit.payload)

    def _bad_crc(self):
        self.counters.bad_crc += 1
        self.bad_crc_count = min(BAD_CRC_MAX, self.bad_crc_count + 1)
        if self.bad_crc_count >= BAD_CRC_AMBIGUOUS and not self.ambiguous:
            self.ambiguous = True
            self.counters.ambiguous_entries += 1
        if self.replay:
            self.unexpected_count = min(UNEXPECTED_MAX, self.unexpected_count + 1)

    def _decode(self, word):
        """The header, or ``None`` for a flit dropped as malformed [§6.6.6.3, §6.6.6.4]."""
        try:
            header = decode_header(word)
        except MalformedHeader:
            header = None
        if header is None or (header.ack_req_seq == 0 if not header.explicit
                              else header.seq == 0):
            self.counters.malformed += 1
            return None
        return header

    def _command(self, header):
        """[§6.6.6.3] Apply an Ack or a Replay Request to the local transmitter."""
        seq, tx, c = header.ack_req_seq, self.tx, self.counters
        if header.op is Op.REPLAY_REQUEST:
            if self.replay_ignore_count:
                c.replay_requests_ignored += 1
            elif replay_request_valid(seq, self.last_ack, tx.last_seq):
                tx.start_replay(seq, self.last_ack)
                self.replay_ignore_count = REPLAY_IGNORE_FLITS
            else:
                c.replay_request_seq_errors += 1
        elif ack_valid(seq, self.last_ack, tx.last_seq):
            tx.acknowledge(seq, self.last_ack)
            self.last_ack = seq
        else:
            c.ack_seq_errors += 1

    def _enqueue(self, header, payload):
        """[§6.6.6.4, Figure 6-20] Deliver an expected payload flit or ask for a replay."""
        self.seq_calc = rx_seq_calc(self.last_seq_calc, header)
        checked = header.explicit or not (self.ambiguous or self.replay)
        if not checked:
            if self.replay:
                self._unexpected_in_replay()
            else:
                self.counters.dropped += 1          # ambiguous: wait for an explicit flit
            return None
        want = seq_add(self.last_seq_calc) if header.payload else self.last_seq_calc
        if self.seq_calc == want:
            return self._expected(header, payload)
        self._unexpected(header)
        return None

    def _expected(self, header, payload):
        self.unexpected_count = 0
        self.last_seq_calc = self.seq_calc
        self.replay = self.ambiguous = False
        self.bad_crc_count = 0
        if header.payload:
            self.counters.delivered += 1
            return payload
        return None

    def _unexpected(self, header):
        c = self.counters
        c.unexpected += 1
        behind = seq_diff(self.last_seq_calc, self.seq_calc) < SEQ_WINDOW
        c.duplicates += header.explicit and header.payload and behind
        if self.replay:
            self._unexpected_in_replay()        # [ours] the text's reading, see the class
            return
        self.tx.replay_req_count = REPLAY_REQUEST_COPIES
        self.replay = True
        self.unexpected_count = 0
        c.replay_entries += 1

    def _unexpected_in_replay(self):
        self.counters.dropped += 1
        self.unexpected_count = min(UNEXPECTED_MAX, self.unexpected_count + 1)
        if self.unexpected_count >= self.replay_limit:
            self.tx.replay_req_count = REPLAY_REQUEST_COPIES
            self.bad_crc_count = 0
            self.counters.replay_rerequests += 1
            if self.rearm_replay_limit:
                self.unexpected_count = 0


# --- The endpoint and its link states -------------------------------------------------------------

class DlState(Enum):
    """DL link states [§6.7.1, Figure 6-23]."""

    FAULT = "fault"     # reset state; link down; the RS sends Idle or remote fault
    IDLE = "idle"       # link down; the transmitter sends Idle
    NOP = "nop"         # link down; the transmitter sends NOP DL flits only
    UP = "up"           # link up; NOP and payload DL flits


class DlEndpoint:
    """One DL endpoint: LLR transmit and receive halves with the DL link states.

    Each flit time the owner calls :meth:`send` once and :meth:`receive` once (in either
    order). TL payloads wait in :attr:`tl_queue` (:meth:`push`); :attr:`ready` is the DL's
    back-pressure to the TL (DL Up, not replaying, TxReplay not full). Received payloads come
    back from :meth:`receive` in order, each once.

    Link states [§6.7.1]: DL Fault (reset) -> DL Idle when :attr:`rs_fault` is low -> DL NOP
    when :attr:`enable` -> DL Up after 10 NOP flits sent and 2 consecutive DL flits received
    -> DL Idle on 4 consecutive control flits, an ack timeout (§6.6.6.8) or :meth:`contain`
    (§6.7.4); any state -> DL Fault while :attr:`rs_fault`. Choices of ours:

    - In DL Fault and DL Idle :meth:`send` returns ``None`` (the RS sends Idle or fault
      codewords, no DL flit) and received flits are ignored. In DL NOP and DL Up every received
      flit goes through the Rx rules, so Acks, Replay Requests and payload from a partner
      already in DL Up are taken.
    - "Two consecutive DL flits received": two flit times in a row with a good-CRC DL flit,
      latched once seen in DL NOP. "Control flits": flit times without a DL flit
      (``receive(None)``); a bad-CRC flit is a DL flit.
    - State changes take effect at the start of :meth:`send`, one per flit time.
    - DL Fault resets the LLR state of both halves (the partner's DL resets too: a local fault
      is signalled to it as remote fault); unacknowledged flits are counted as
      ``lost_on_fault``. DL Idle keeps the LLR state, so no accepted flit is lost across a link
      down; entering DL NOP sets Rx_ambiguous, because flits ignored in DL Idle were not
      counted as bad CRC, so the receiver waits for an explicit flit.
    - :meth:`contain` also clears :attr:`enable`; the higher layer sets it again.

    Parameters
    ----------
    depth : int
        TxReplay entries, 1 .. 255 (:data:`MAX_UNACKED`).
    ack_timeout : int
        Tx_ack_time_out in flit times, 1 .. 2**24 - 1.
    replay_limit : int
        Rx_replay_limit in flit times, 1 .. 255; the spec advises twice the round trip. Below
        the round trip, Replay Requests are resent while the replay is on its way, and the
        second replay can be misread as new data (see :class:`LlrTx` on ``rr_group``).
    rr_group : int
        Flit times per FEC-interleave group for Replay Request copies [ours], >= 1.
    rearm_replay_limit : bool
        See :class:`LlrRx`.

    Attributes
    ----------
    tx : LlrTx
    rx : LlrRx
    state : DlState
    counters : DlCounters
    tl_queue : deque
        TL payloads not yet accepted by the DL.
    rs_fault : bool
        The RS indicates a fault (input).
    enable : bool
        The higher layer enables the link (input).
    """

    def __init__(self, *, depth=MAX_UNACKED, ack_timeout=ACK_TIMEOUT_DEFAULT,
                 replay_limit=REPLAY_LIMIT_DEFAULT, rr_group=1, rearm_replay_limit=True):
        _check_range("depth", depth, 1, MAX_UNACKED)
        _check_range("ack_timeout", ack_timeout, 1, ACK_TIMEOUT_MAX)
        _check_range("replay_limit", replay_limit, 1, UNEXPECTED_MAX)
        _check_range("rr_group", rr_group, 1, None)
        self.depth = depth
        self.ack_timeout = ack_timeout
        self.replay_limit = replay_limit
        self.rr_group = rr_group
        self.rearm_replay_limit = rearm_replay_limit
        self.counters = DlCounters()
        self.tl_queue = deque()
        self.rs_fault = False
        self.enable = True
        self.state = DlState.FAULT
        self._reset_llr()
        self._clear_runs()

    # -- TL side --

    def push(self, payload):
        """Queue one TL payload (any object but ``None``) for transmission."""
        if payload is None:
            raise ValueError("None stands for a NOP flit; push a payload object")
        self.tl_queue.append(payload)

    @property
    def ready(self):
        """Whether the DL accepts a TL payload in this flit time [§6.6.1, §6.6.6.5]."""
        return self.state is DlState.UP and self.tx.accepting

    @property
    def quiescent(self):
        """Nothing left to send and everything sent acknowledged."""
        return not self.tl_queue and not self.tx.buffer and not self.tx.replay

    # -- flit times --

    def send(self):
        """The DL flit of this flit time, or ``None`` when no DL flit is sent (Fault, Idle)."""
        self._advance()
        if self.state in (DlState.FAULT, DlState.IDLE):
            return None
        nop_only = self.state is DlState.NOP
        if nop_only:
            self._nops_sent += 1
        elif self.tx.tick_ack_timer():
            self._timed_out = True
        return self.tx.send(self.rx.last_seq_calc, self.tl_queue, nop_only)

    def receive(self, flit, *, crc_ok=True):
        """Take what arrived in this flit time; the payload delivered upward, or ``None``.

        Parameters
        ----------
        flit : Flit or None
            The DL flit; ``None`` with ``crc_ok`` means no DL flit (control codewords).
        crc_ok : bool
            False for a DL flit that failed its CRC (or that the FEC could not correct [ours]);
            its content is not read.
        """
        if self.state in (DlState.FAULT, DlState.IDLE):
            self.counters.ignored_flits += flit is not None or not crc_ok
            return None
        if flit is None and crc_ok:
            self.counters.control_slots += 1
            self._control_run += 1
            self._good_run = 0
            return None
        self._control_run = 0
        self._good_run = self._good_run + 1 if crc_ok else 0
        self._rx_pair_seen |= self._good_run >= GOOD_FLITS_TO_UP
        return self.rx.ingress(flit, crc_ok)

    def contain(self):
        """An error containment event [§6.7.4]: DL Up -> DL Idle; clears :attr:`enable`."""
        self._contained = True
        self.enable = False

    # -- link states --

    def _advance(self):
        """[§6.7.1] At most one state change per flit time."""
        if self.rs_fault:
            if self.state is not DlState.FAULT:
                self._enter(DlState.FAULT)
        elif self.state is DlState.FAULT:
            self._enter(DlState.IDLE)
        elif self.state is DlState.IDLE:
            if self.enable:
                self._enter(DlState.NOP)
        elif self.state is DlState.NOP:
            if self._nops_sent >= NOP_FLITS_TO_UP and self._rx_pair_seen:
                self._enter(DlState.UP)
        elif self._control_run >= CONTROL_FLITS_TO_IDLE or self._timed_out or self._contained:
            self.counters.ack_timeouts += self._timed_out
            self.counters.link_downs += 1
            self._enter(DlState.IDLE)

    def _enter(self, state):
        if state is DlState.FAULT:
            self.counters.faults += 1
            self.counters.lost_on_fault += len(self.tx.buffer)
            self._reset_llr()
        elif state is DlState.NOP:
            self.rx.ambiguous = True
        elif state is DlState.UP:
            self.tx.ack_counter = self.ack_timeout
            self.counters.link_ups += 1
        self.state = state
        self._clear_runs()

    def _clear_runs(self):
        self._nops_sent = self._good_run = self._control_run = 0
        self._rx_pair_seen = self._timed_out = self._contained = False

    def _reset_llr(self):
        self.tx = LlrTx(self.counters, depth=self.depth, ack_timeout=self.ack_timeout,
                        rr_group=self.rr_group)
        self.rx = LlrRx(self.tx, self.counters, replay_limit=self.replay_limit,
                        rearm_replay_limit=self.rearm_replay_limit)


def _check_range(name, value, low, high):
    if not isinstance(value, int) or value < low or (high is not None and value > high):
        top = "" if high is None else f" .. {high}"
        raise ValueError(f"{name} must be an integer in {low}{top}, not {value!r}")
