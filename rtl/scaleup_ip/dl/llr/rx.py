# SPDX-License-Identifier: BSD-2-Clause
"""The DL receiver's link-level replay: which checked flits go up, in order, and what the local
transmitter must Ack or Replay-Request [UALink 1.0 §6.6.6.2-§6.6.6.4]."""

from types import SimpleNamespace

from amaranth import Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ...counters import count_events
from ..layout import (
    BEATS_PER_FLIT,
    REPLAY_LIMIT_BITS,
    SEQ_BITS,
    SEQ_MODULUS,
    DlConfig,
    FlitOp,
    RxCount,
    checked_stream,
    command_header,
    explicit_header,
    ingress_layout,
    rx_counts,
    unpack_stream,
)
from ..logic import seq_diff, seq_next

__all__ = ["LlrRx"]

#: [§6.6.4.4] Rx_bad_crc_count saturates at 7, which makes the sequence ambiguous.
_BAD_CRC_MAX = 7
#: [§6.6.4.5] Rx_unexpected_count is 8 bits, saturating.
_UNEXPECTED_MAX = 255
#: A payload flit at most this far behind the last one accepted is a duplicate [ours: for the
#: counter only; the validity windows use the same half of the sequence space].
_BEHIND = 256


class LlrRx(ConfiguredComponent):
    """The receive half of link-level replay [§6.6.6.2-§6.6.6.4], one decision per DL flit, at
    its first beat (the CRC stage has its verdict and header on every beat).

    A flit that fails the CRC is discarded: Rx_bad_crc_count counts up (7 in a row make the
    sequence ambiguous). A good flit's header gives its sequence number: in full (Explicit),
    or rebuilt from Rx_last_seq_calc and flitSeqLo (Command; a payload flit moves at least
    1). It is taken when it is Explicit, or the sequence is neither ambiguous nor in replay,
    and its number is the expected one (a NOP: the last; a payload flit: the next): a payload
    flit's 10 beats then go up on ``o``. An unexpected number starts a replay: 3 Replay
    Requests (``request``) and the replay state, in which flits are dropped until the
    expected one comes; while in it, Replay Requests are sent again every ``replay_limit``
    flits not taken [ours: the spec counts unexpected flits and bad CRCs; we count every flit
    not taken, and restart the count when asking again, so that a lost request is repeated
    once per limit and not on every flit]. Command flits also carry an Ack or a Replay
    Request for the local transmitter (``ingress``). A header with a reserved op (a NOP with
    op Replay, op 4 .. 7), a Command with ackReqSeq 0 or an Explicit flit with sequence
    number 0 is dropped and counted [§6.6.6.3, §6.6.6.4].

    Latency: none (``o`` is ``i`` for a flit taken). Throughput: one beat per clock; a flit
    not taken is consumed at one beat per clock while ``o`` is ready. ``i`` waits while ``o``
    does: ``i.ready`` is ``o.ready``, never the verdict [ours: so that the verdict's logic is
    not on the ready path of the CRC stage's queues; a flit not taken waits only while the
    unpacker stalls].

    Parameters
    ----------
    config : DlConfig

    Members
    -------
    i : In(checked_stream())
        Received flits, checked.
    o : Out(unpack_stream())
        The beats of the payload flits taken, in order.
    ingress : Out(ingress_layout)
        Per flit received, for the local transmitter.
    rx_seq : Out(SEQ_BITS)
        Rx_last_seq_calc (the local transmitter Acks it).
    request : Out(1)
        A pulse: send 3 Replay Requests.
    good : Out(1)
        A pulse per flit with a good CRC (for the link states).
    replay_limit : In(REPLAY_LIMIT_BITS)
        Rx_replay_limit in flit times (:data:`~scaleup_ip.dl.layout.REPLAY_LIMIT_DEFAULT`). It must
        exceed the round trip: a re-request sent sooner can bring a second, stale replay,
        whose command flits may alias as new ones when its first flit is lost.
    resync : In(1)
        Set Rx_ambiguous: trust only Explicit flits until one is taken [ours: the link enters
        NOP; flits lost while it was down never showed as bad CRCs].
    counts : Out(rx_counts)
        Counters by :class:`~scaleup_ip.dl.layout.RxCount`, a clock after the flit's first
        beat.
    """

    config_class = DlConfig

    def __init__(self, config):
        super().__init__(config, {
            "i": In(checked_stream()),
            "o": Out(unpack_stream()),
            "ingress": Out(ingress_layout),
            "rx_seq": Out(SEQ_BITS, init=SEQ_MODULUS),
            "request": Out(1),
            "good": Out(1),
            "replay_limit": In(REPLAY_LIMIT_BITS),
            "resync": In(1),
            "counts": Out(rx_counts),
        })

    def elaborate(self, platform):
        m = Module()
        beat = Signal(range(BEATS_PER_FLIT))
        keep = Signal()                     # the flit being received is taken
        first = beat == 0
        take = Signal()
        arrive = Signal()
        m.d.comb += [
            self.o.valid.eq(self.i.valid & take),
            self.o.p.data.eq(self.i.p.data),
            self.o.p.headers.eq(self.i.p.headers),
            self.i.ready.eq(self.o.ready),
            arrive.eq(self.i.valid & self.i.ready & first),
        ]
        accept = self._decide(m, arrive)
        self.state.beat, self.state.keep = beat, keep
        # The rules are evaluated on the beat present, and act when it moves.
        m.d.comb += take.eq(Mux(first, accept, keep))
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += beat.eq(Mux(beat == BEATS_PER_FLIT - 1, 0, beat + 1))
            with m.If(first):
                m.d.sync += keep.eq(accept)
        return m

    def _decide(self, m, arrive):
        """The rules for the flit at the first beat, acting when it ``arrive``-s; returns
        whether it is taken (a payload flit accepted), valid whenever one is present."""
        bad = Signal(range(_BAD_CRC_MAX + 1), name="rx_bad_crc_count")
        unexpected = Signal(range(_UNEXPECTED_MAX + 1), name="rx_unexpected_count")
        ambiguous = Signal(name="rx_ambiguous")
        replay = Signal(name="rx_replay")
        last = self.rx_seq                                  # Rx_last_seq_calc
        # A read-only view of the state, for the proof (tb/dl/test_replay_proof.py).
        self.state = SimpleNamespace(bad=bad, unexpected=unexpected, ambiguous=ambiguous,
                                     replay=replay)
        explicit = explicit_header(self.i.p.header)
        command = command_header(self.i.p.header)
        op, payload = explicit.op, explicit.payload
        is_explicit = (op == FlitOp.ORIGINAL) | ((op == FlitOp.REPLAY) & payload)
        is_command = (op == FlitOp.ACK) | (op == FlitOp.REPLAY_REQUEST)
        malformed = ~(is_explicit | is_command) | (is_command & (command.ack_req_seq == 0)) \
            | (is_explicit & (explicit.seq == 0))
        crc_ok = self.i.p.crc_ok
        fine = crc_ok & ~malformed
        eligible = is_explicit | (~ambiguous & ~replay)
        # [§6.6.4.1] Rx_seq_calc (an Explicit flit's number; a Command's, ``last`` moved by
        # the difference of flitSeqLo and its low bits, 1 .. 8 for a payload flit, 0 for a
        # NOP) is the expected number (a NOP: ``last``; a payload flit: ``after``, kept as a
        # register) exactly when the header's number, or its low bits in a Command, match:
        # no adder on the way.
        after = Signal(SEQ_BITS, init=1, name="rx_next_seq")
        self.state.after = after
        want = Mux(payload, after, last)
        expected = Mux(is_explicit, explicit.seq == want, command.seq_lo == want[:3])
        judged = fine & eligible                        # the enqueue rules look at it
        in_order = judged & expected
        taken = in_order & payload                      # on the beat present
        accept = arrive & in_order
        out_of_order = arrive & judged & ~expected
        first_miss = out_of_order & ~replay
        missed = arrive & ~accept & replay              # a flit not taken while replaying
        again = missed & (unexpected + 1 >= self.replay_limit)
        m.d.comb += [
            self.request.eq(first_miss | again),
            self.good.eq(arrive & crc_ok),
            self.ingress.flit.eq(arrive),
            self.ingress.command.eq(arrive & fine & is_command),
            self.ingress.op.eq(op),
            self.ingress.ack_req_seq.eq(command.ack_req_seq),
        ]
        with m.If(arrive & ~crc_ok):
            m.d.sync += bad.eq(Mux(bad == _BAD_CRC_MAX, bad, bad + 1))
            with m.If(bad >= _BAD_CRC_MAX - 1):
                m.d.sync += ambiguous.eq(1)
        with m.If(self.resync):
            m.d.sync += ambiguous.eq(1)
        with m.If(missed):
            m.d.sync += unexpected.eq(Mux(unexpected == _UNEXPECTED_MAX, unexpected,
                                          unexpected + 1))
        with m.If(again):
            m.d.sync += [unexpected.eq(0), bad.eq(0)]
        with m.If(accept):
            m.d.sync += [unexpected.eq(0), replay.eq(0), ambiguous.eq(0)]
            with m.If(payload):                     # ``calc`` is ``after``; a NOP's, ``last``
                m.d.sync += [last.eq(after), after.eq(seq_next(after))]
            # [ours] A Command NOP does not clear Rx_bad_crc_count: its 3 bits of Tx_last_seq
            # can match while flits of a replay cut short are still missing.
            with m.If(is_explicit | payload):
                m.d.sync += bad.eq(0)
        with m.If(first_miss):
            m.d.sync += [replay.eq(1), unexpected.eq(0)]
        count_events(m, self.counts, {
            RxCount.FLITS: arrive,
            RxCount.GOOD: accept & payload,
            RxCount.BAD_CRC: arrive & ~crc_ok,
            RxCount.UNEXPECTED: out_of_order,
            # A Command payload flit is 1 .. 8 ahead of ``last``, never behind it.
            RxCount.DUPLICATES: out_of_order & payload & is_explicit
            & (seq_diff(last, explicit.seq) < _BEHIND),
            RxCount.DROPPED: arrive & fine & ~eligible,
            RxCount.MALFORMED: arrive & crc_ok & malformed,
            RxCount.REQUESTS: self.request,
        }, late=True)
        return taken
