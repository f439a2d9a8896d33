# SPDX-License-Identifier: BSD-2-Clause
"""Link-level replay of the DL [UALink 1.0 §6.6]: three proofs, for every input sequence of any
length, by k-induction with SymbiYosys (:func:`sim.prove.prove_sby`).

**1. TxReplay occupancy** (:class:`scaleup_ip.dl.llr.tx.LlrTx`, ``replay_depth`` in
:data:`TX_DEPTHS`). Whatever the packer offers (``body`` valid, data, payload bit), ``o.ready``,
``mode``, ``request``, ``rx_seq``, ``ack_timeout``, the commands on ``ingress`` (any op, any
ackReqSeq, at any time, Replay Requests among them) and resets: TxReplay's occupancy
(``unacked``, Tx_last_seq - Rx_last_ack in the spec's mod-511 arithmetic) equals the number of
payload flits taken from the packer and not yet acknowledged, this never exceeds the window
min(``replay_depth``, 255), and no body beat is taken while it is full. The harness counts the
flits itself: one for every 10th body beat taken with its payload bit set, minus what each Ack
frees, an Ack being taken when its ackReqSeq lies from the last acknowledged flit to the last
sent (Figure 6-19), never for ackReqSeq 0 (a malformed command, §6.6.6.3: LlrRx drops it, and an
Ack with 0 that came anyway must change nothing). One assumption: no Replay Request carries
ackReqSeq 0 (LlrRx is the only source of ``ingress``). Invariants: the harness's
Tx_last_seq (and the three numbers after it, which LlrTx keeps as registers) and Rx_last_ack
equal LlrTx's (and are 1 .. 511, their distance the count, LlrTx's ``span`` the count plus
one); the body beats taken of the flit
under way equal LlrTx's beat while it sends a packer flit, and that flit had room.
TxReplay's 512-bit RAM is outside the asserts' cone of influence and Yosys drops it: the
proof takes about 2 s at ``replay_depth`` 1 or 2, 11 s at 255.

This proof found that LlrTx, following §6.6.6.3's two window tests (each distance <= 256), took
an Ack 255 or 256 ahead of Tx_last_seq while 0 or 1 flits were unacknowledged (the tests
overlap then): 256 flits counted as unacknowledged and the TxReplay head moved by 511 mod
``replay_depth`` once the next real Ack came. LlrTx now takes Acks only up to Tx_last_seq
(``rtl/scaleup_ip/dl/README.md``, "Ack window").

**1b. The replay's places** (``test_replay_place_proof``, the occupancy harness at
``replay_depth`` 2 with more invariants). LlrTx keeps where the replay is, and the flit after
the one it sends, as distances back from Tx_last_seq + 2 (mod 511), and the oldest flit's as
``span``, so that choosing the next flit compares registers only. For every input sequence,
each such distance is the sequence numbers' (and a Replay Request's, from the clock it is
checked), and the three cyclic intervals read from them (oldest .. Tx_last_seq, .. + 1,
.. + 2) are those of the sequence numbers. Mutants failing it: the last interval ending one
number early, a Replay Request's distance not moved by a flit ending in the clock it is
checked. About 18 s.

**2. In-order delivery** (:class:`scaleup_ip.dl.llr.rx.LlrRx`). Every payload flit LlrRx delivers on
``o`` is the next one the transmitter sent: each beat carries the flit's true sequence number
in its payload bits, and the harness expects 1, 2, ... 511, 1, ... (the tag is the true index
modulo 511; the transmitter holds at most 255 flits, so no two flits it may send share it).

The environment is an abstract transmitter that follows the spec, feeding LlrRx's ``i``
(``checked_stream``: 10 beats per DL flit, the CRC verdict and the flit header on every beat), with
free ``i.valid``, ``o.ready``, ``resync`` and resets (of both ends at once). At each flit the
transmitter sends, in DL Up: the next flit of a replay while one has flits left, back to back
[§6.6.6.6]; else, as a free input chooses, a new payload flit (if fewer than 255 are unacknowledged,
§6.6.6.5) or a NOP flit carrying Tx_last_seq [§6.6.6.1]. Any flit may be Explicit or Command (Ack or
Replay Request, any ackReqSeq but 0); the first flit of a replay is Explicit [§6.6.5.5]. The channel
is in order and may fail the CRC of any flit (the header is then anything). Each Replay Request
LlrRx raises (``request``) travels back: within ``round_trip`` flits the transmitter takes it (the
flit it then sends is the replay's first, from the requested flit) or it is lost (all three copies
lost, or ignored in the 12-flit ignore window or out of the validity window); its ackReqSeq is
Rx_last_seq_calc + 1 when a copy is sent, so it may be read again any time before it is taken.
``round_trip`` (1 .. 254 flits) is a free constant and ``replay_limit`` any value above it (it may
change). The transmitter is kept relative to LlrRx's Rx_last_seq_calc: ``lead`` (Tx_last_seq's
distance from it) and, in a replay, ``ahead`` (the next flit's distance from the flit expected); a
flit LlrRx delivers moves both down one.

Assumptions, each a fact of the spec or a generalisation of it:

- ``replay_limit`` > ``round_trip`` (§6.6.4.6 asks for twice the round trip). With a limit below
  it a second request can bring a stale replay, whose Command flits alias (``LlrRx``'s
  docstring); the harness asserts that one request at most is on its way.
- A flit that fails the CRC is reported, never dropped unseen, and a corrupted flit never
  passes the CRC (§6.6.1; ``_InOrder(escape=True)`` shows the check catching a corrupted flit
  that passed).
- The transmitter's window uses LlrRx's Rx_last_seq_calc as Rx_last_ack (an Ack at once): a real
  Rx_last_ack lags it, and allows fewer new flits, so this admits every real choice.
- No NOP flits inside a replay: §6.6.6.6 sends a replay's flits back to back in DL Up. The
  link states are outside this proof. (LlrTx sends NOP flits while not Up. If a replay is cut
  so and the partner does not resync, a Command NOP whose flitSeqLo matches Rx_last_seq_calc
  is accepted; were it to clear Rx_bad_crc_count while flits of the replay are lost, with 2
  replayed flits lost, such a NOP and 6 more lost, flit 31 came right after flit 22 (found
  with this proof's transmitter allowed such NOPs). LlrRx therefore does not clear the count on
  a Command NOP [ours]; ``tb/dl/test_llr_rx.py`` runs that case. The proof with such NOPs
  allowed fails its induction step on the "replaying" invariant, which was not reworked.)
- A request is taken at a flit boundary (LlrTx's restart of a replayed flit under way,
  [ours], amounts to taking it at the next one). LlrTx's skipping of flits acknowledged during a
  replay [ours] never applies here: a replay starts at the flit LlrRx expects, and nothing past
  it is acknowledged.

Invariants (with the property, inductive in one step): the harness's beat equals LlrRx's, and
an accepted flit under way is the wanted one; the wanted flit is Rx_last_seq_calc + 1 (or the
flit under way), and LlrRx's register of the number after Rx_last_seq_calc holds it;
``lead`` <= 255; outside replay and ambiguity, the stream is at most
Rx_bad_crc_count flits ahead of the flit expected, and that count < 7; while LlrRx replays, the
stream is past the flit expected; a request on its way is younger than ``round_trip``, asks for
the flit expected, LlrRx is replaying and its Rx_unexpected_count is the request's age. The
proof takes about 3 s.

Mutants, each made by hand and each failing the proof (the first and fourth from reset, the
others in the induction step, breaking an invariant): in LlrTx, an Ack freeing one flit too
many (Rx_last_ack := ackReqSeq + 1), room while ``unacked <= replay_depth``, a replayed flit
advancing Tx_last_seq, the spec's two Ack window tests; in LlrRx, Command flits taken while
replaying (``eligible`` without ``~replay``), Rx_ambiguous one bad CRC late (at 8), a NOP
expected at Rx_last_seq_calc + 1. Equivalent for these properties, and passing: in LlrTx,
flitSeqNo + 1 in the header of a packer's NOP (the occupancy does not read headers); in LlrRx,
delta 0 instead of 8 for a payload Command with flitSeqLo equal (calc differs from the next
either way), Rx_replay kept when a NOP is accepted (more cautious, not less). A twin whose
TxReplay gives a replayed flit the next flit's data fails a bounded check of 22 clocks (about
150 s with Z3, too slow to keep here). The twins kept: an occupancy harness deaf to Acks, and
a channel that passes a corrupted header with a good CRC; each fails a bounded check.
"""

from types import SimpleNamespace

import pytest
from amaranth import C, Elaboratable, Module, Mux, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.lib.wiring import In

from scaleup_ip.dl import (
    BEATS_PER_FLIT,
    DlConfig,
    FH_BYTES,
    FlitOp,
    MAX_UNACKED,
    REPLAY_LIMIT_BITS,
    SEQ_BITS,
    SEQ_MODULUS,
    command_header,
    explicit_header,
    seq_diff,
    seq_next,
)
from scaleup_ip.dl.llr import LlrRx
from scaleup_ip.dl.llr import LlrTx, ReplaySource
from sim.prove import prove_sby

#: TxReplay sizes proved: the smallest allowed, a small one, and the 255-flit window's.
TX_DEPTHS = (1, 2, MAX_UNACKED)
#: Clocks of the base case and of the induction hypothesis.
TX_DEPTH = 2
RX_DEPTH = 1


class _Occupancy(Elaboratable):
    """LlrTx with free inputs, the harness's count of the payload flits taken and not yet
    acknowledged, the property and the invariants; ``deaf``: the count ignores Acks;
    ``places``: also the replay's places (:meth:`_places`)."""

    def __init__(self, replay_depth, invariants=True, deaf=False, places=False):
        self.invariants, self.deaf, self.places = invariants, deaf, places
        self.dut = LlrTx(DlConfig(replay_depth=replay_depth))
        self.window = min(replay_depth, MAX_UNACKED)

    def inputs(self):
        """Every input port of LlrTx."""
        return [Value.cast(value) for _, member, value in self.dut.signature.flatten(self.dut)
                if member.flow == In]

    def elaborate(self, platform):
        m = Module()
        dut, window = self.dut, self.window
        m.submodules.dut = dut.elaborate(platform)      # here, for its ``state``
        dut._MustUse__used = True
        count = Signal(range(window + 1))               # sent, not acknowledged
        last_seq = Signal(SEQ_BITS, init=SEQ_MODULUS)   # of the last payload flit taken
        last_ack = Signal(SEQ_BITS, init=SEQ_MODULUS)   # of the last one acknowledged
        beats = Signal(range(BEATS_PER_FLIT))           # body beats taken of this flit
        body, ing = dut.body, dut.ingress
        taken = body.valid & body.ready
        ends = taken & (beats == BEATS_PER_FLIT - 1)
        sent = ends & body.p.payload
        a = ing.ack_req_seq
        freed = seq_diff(a, last_ack)
        # An Ack's window: from the last flit acknowledged to the last sent (Figure 6-19).
        acked = C(0) if self.deaf else (ing.command & (ing.op == FlitOp.ACK) & (a != 0)
                                        & (freed <= count))
        with m.If(taken):
            m.d.sync += beats.eq(Mux(ends, 0, beats + 1))
        with m.If(sent):
            m.d.sync += last_seq.eq(seq_next(last_seq))
        with m.If(acked):
            m.d.sync += last_ack.eq(a)
        m.d.sync += count.eq(count + sent - Mux(acked, freed, 0))
        st = dut.state
        m.d.comb += [
            Assume(~ing.command | (ing.op == FlitOp.ACK) | (a != 0),
                   "LlrRx drops commands with ackReqSeq 0"),
            Assert(st.st.unacked == count, "occupancy: flits sent and not acknowledged"),
            Assert(count <= window, "occupancy within the window"),
            Assert(~body.ready | (count < window), "no body beat taken when full"),
        ]
        if self.invariants:
            new_flit = (st.src == ReplaySource.NEW) & ~st.first
            m.d.comb += [
                Assert((last_seq != 0) & (last_ack != 0), "i: sequence numbers are 1 .. 511"),
                Assert(seq_diff(last_seq, last_ack) == count, "i: the count in seq arithmetic"),
                Assert(st.st.last_seq == last_seq, "i: Tx_last_seq"),
                Assert(st.st.last_seq_1 == seq_next(last_seq), "i: Tx_last_seq + 1"),
                Assert(st.st.last_seq_2 == seq_next(seq_next(last_seq)), "i: Tx_last_seq + 2"),
                Assert(st.st.last_seq_3 == seq_next(seq_next(seq_next(last_seq))),
                       "i: Tx_last_seq + 3"),
                Assert(st.st.last_ack == last_ack, "i: Rx_last_ack"),
                Assert(st.st.span == count + 1, "i: the count plus one (LlrTx's span)"),
                Assert(beats == Mux(new_flit, st.beat, 0), "i: body beats in step"),
                Assert(st.beat < BEATS_PER_FLIT, "i: the beat count in range"),
                Assert(st.first == (st.beat == 0), "i: the first beat's flag"),
                Assert(st.last == (st.beat == BEATS_PER_FLIT - 1), "i: the last beat's flag"),
                Assert(~new_flit | (count < window), "i: a body flit under way has room"),
            ]
        if self.places:
            m.d.comb += self._places(st, last_seq, last_ack, count)
        return m

    @staticmethod
    def _places(st, last_seq, last_ack, count):
        """The replay's places as LlrTx keeps them (distances back from Tx_last_seq + 2, and
        the oldest's, ``span``) say what the cyclic intervals of sequence numbers say."""
        def within(seq, first, last):
            return Mux(first <= last, (seq >= first) & (seq <= last),
                       (seq >= first) | (seq <= last))
        oldest = seq_next(last_ack)
        last_1 = seq_next(last_seq)
        back = {"the replay's place": (st.st.replay_seq, st.st.replay_q),
                "the flit after": (st.after.seq, st.after.q),
                "the choice": (st.ready.seq, st.ready.q)}
        asserts = [
            Assert(st.st.oldest == oldest, "i: the oldest flit"),
            Assert(st.after.seq == seq_next(st.seq), "i: the flit after"),
            Assert((st.st.taken_seq == 0)
                   | (st.st.taken_q == seq_diff(st.st.last_seq_2, st.st.taken_seq)),
                   "i: a Replay Request's distance back"),
            *(Assert((seq != 0) & (q == seq_diff(st.st.last_seq_2, seq)), f"i: {what} back")
              for what, (seq, q) in back.items()),
        ]
        for seq, inside, after_last, among in st.st.places:
            asserts += [
                Assert(inside == within(seq, oldest, seq_next(last_1)), "place: to +2"),
                Assert(after_last == within(seq, oldest, last_1), "place: to +1"),
                Assert(among == ((count != 0) & within(seq, oldest, last_seq)),
                       "place: to Tx_last_seq"),
            ]
        return asserts
        return m


@pytest.mark.parametrize("replay_depth", TX_DEPTHS)
def test_occupancy_proof(tmp_path, replay_depth):
    """For every input sequence: TxReplay holds exactly the payload flits sent and not
    acknowledged, never more than its window, and takes no body beat when full."""
    proof = _Occupancy(replay_depth)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, TX_DEPTH)
    assert proved, log[-3000:]


def test_replay_place_proof(tmp_path):
    """For every input sequence: the distances back that LlrTx keeps for the replay's places
    give the same cyclic intervals as the sequence numbers (TxReplay of 2 flits; the places
    do not depend on its size)."""
    proof = _Occupancy(2, places=True)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, TX_DEPTH)
    assert proved, log[-3000:]


def test_occupancy_proof_can_fail(tmp_path):
    """With a count deaf to Acks, a bounded check of the property alone finds a run from reset
    that breaks it: a payload flit taken (10 clocks), then acknowledged."""
    proof = _Occupancy(2, invariants=False, deaf=True)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, 14, mode="bmc")
    assert not proved
    assert "occupancy: flits sent and not acknowledged" in log


class _InOrder(Elaboratable):
    """LlrRx fed by an abstract transmitter that follows the spec, through a channel that may
    fail any flit's CRC; LlrRx's Replay Requests reach the transmitter within a round trip or
    are lost. ``escape``: the channel may also pass a corrupted header with a good CRC."""

    def __init__(self, invariants=True, escape=False):
        self.invariants, self.escape = invariants, escape
        self.rx = LlrRx(DlConfig())
        free = {"valid": 1, "o_ready": 1, "resync": 1, "limit": REPLAY_LIMIT_BITS,
                "round_trip": REPLAY_LIMIT_BITS,
                "send": 1, "explicit": 1, "good": 1, "junk": FH_BYTES * 8, "junk_tag": SEQ_BITS,
                "corrupt": 1, "ask": 1, "ack_req_seq": SEQ_BITS,
                "take": 1, "drop": 1, "refresh": 1}
        self.free = SimpleNamespace(**{k: Signal(w, name=f"f_{k}") for k, w in free.items()})

    def inputs(self):
        """The harness's free inputs."""
        return list(vars(self.free).values())

    def elaborate(self, platform):
        m = Module()
        rx, f = self.rx, self.free
        m.submodules.rx = rx.elaborate(platform)        # here, for its ``state``
        rx._MustUse__used = True
        # The transmitter, relative to Rx_last_seq_calc: Tx_last_seq is ``lead`` flits on; a
        # replay sends next the flit ``ahead`` flits after the one LlrRx expects.
        tx = SimpleNamespace(
            lead=Signal(range(MAX_UNACKED + 1), name="tx_lead"),
            replay=Signal(name="tx_replay"),
            ahead=Signal(range(MAX_UNACKED + 1), name="tx_ahead"),
            first=Signal(name="tx_first"),                      # Tx_first_replay
            # A Replay Request on its way back: its ackReqSeq, flits since LlrRx asked.
            pending=Signal(name="rq_pending"), req=Signal(SEQ_BITS, init=1, name="rq_seq"),
            age=Signal(REPLAY_LIMIT_BITS, name="rq_age"))
        # The round trip in flits, a free constant.
        rt = f.round_trip
        rt_was, held = Signal.like(rt, reset_less=True), Signal(reset_less=True)
        m.d.sync += [rt_was.eq(rt), held.eq(1)]
        # The receiving side: the flit wanted next, the beat, the flit under way.
        want = Signal(SEQ_BITS, init=1)
        beat = Signal(range(BEATS_PER_FLIT))
        held_ok, held_header, held_tag = Signal(), Signal(FH_BYTES * 8), Signal(SEQ_BITS)

        i = rx.i
        first = beat == 0
        go = i.valid & i.ready & first                  # a flit starts
        fresh_ok, fresh_header, fresh_tag = self._transmit(m, tx, go, rt)
        m.d.comb += [
            i.valid.eq(f.valid),
            i.p.crc_ok.eq(Mux(first, fresh_ok, held_ok)),
            i.p.header.eq(Mux(first, fresh_header, held_header)),
            i.p.data.eq(Mux(first, fresh_tag, held_tag)),
            i.p.last.eq(beat == BEATS_PER_FLIT - 1),
            rx.o.ready.eq(f.o_ready), rx.resync.eq(f.resync), rx.replay_limit.eq(f.limit),
            Assume(~held | (rt == rt_was), "the round trip is constant"),
            Assume((rt != 0) & (f.limit > rt), "replay_limit above the round trip"),
        ]
        with m.If(i.valid & i.ready):
            m.d.sync += beat.eq(Mux(beat == BEATS_PER_FLIT - 1, 0, beat + 1))
            with m.If(first):
                m.d.sync += [held_ok.eq(fresh_ok), held_header.eq(fresh_header),
                             held_tag.eq(fresh_tag)]
        o = rx.o
        with m.If(o.valid & o.ready & (beat == BEATS_PER_FLIT - 1)):
            m.d.sync += want.eq(seq_next(want))
        m.d.comb += Assert(~o.valid | (o.p.data[:SEQ_BITS] == want),
                           "in order: each payload flit delivered is the next one sent")
        if self.invariants:
            self._invariants(m, tx, want, beat, held_tag, rt)
        return m

    def _transmit(self, m, tx, go, rt):
        """The flit the transmitter sends when one starts (``go``): its CRC verdict, header and
        tag. The transmitter and the request on its way move on ``go``."""
        rx, f = self.rx, self.free
        last = rx.rx_seq
        # The request is taken (this flit is the replay's first) or lost, within the round trip.
        taking = tx.pending & f.take
        leaving = tx.pending & (f.take | f.drop | (tx.age + 1 == rt))
        first = Mux(taking, 1, tx.first)
        ahead = Mux(taking, seq_diff(tx.req, seq_next(last)), tx.ahead)
        more = (taking | tx.replay) & (ahead < tx.lead)
        # In DL Up a replay sends its flits back to back [§6.6.6.6]; otherwise a new payload
        # flit if fewer than 255 are unacknowledged [§6.6.6.5], or a NOP, as chosen.
        payload = more | (f.send & (tx.lead < MAX_UNACKED))
        replayed = payload & more
        # A payload flit's number, or a NOP's: Tx_last_seq [§6.6.6.1].
        seq = _seq_add(last, Mux(payload, Mux(more, ahead, tx.lead) + 1, tx.lead))
        explicit, command = Signal(explicit_header), Signal(command_header)
        m.d.comb += [
            explicit.op.eq(Mux(replayed, FlitOp.REPLAY, FlitOp.ORIGINAL)),
            explicit.payload.eq(payload), explicit.seq.eq(seq),
            command.op.eq(Mux(f.ask, FlitOp.REPLAY_REQUEST, FlitOp.ACK)),
            command.payload.eq(payload), command.seq_lo.eq(seq[:3]),
            command.ack_req_seq.eq(Mux(f.ack_req_seq == 0, 1, f.ack_req_seq)),
        ]
        header = Mux(f.explicit | (replayed & first), explicit.as_value(), command.as_value())
        broken = ~f.good | (f.corrupt if self.escape else C(0))
        # LlrRx takes this flit as its next payload flit: the distances move down one.
        took = rx.o.valid
        with m.If(go):
            m.d.sync += [tx.replay.eq(more), tx.first.eq(first & ~replayed),
                         tx.ahead.eq(ahead + replayed - took),
                         tx.lead.eq(tx.lead + (payload & ~more) - took)]
            # The request: gone, or a flit older; a new one for the flit arriving now. Its
            # ackReqSeq is Rx_last_seq_calc + 1 when a copy is sent, read again if refreshed.
            ask = seq_next(last)
            m.d.comb += Assert(~rx.request | ~tx.pending | leaving, "one request at a time")
            with m.If(leaving):
                m.d.sync += tx.pending.eq(0)
            with m.Elif(tx.pending):
                m.d.sync += tx.age.eq(tx.age + 1)
                with m.If(f.refresh):
                    m.d.sync += tx.req.eq(ask)
            with m.If(rx.request):
                m.d.sync += [tx.pending.eq(1), tx.req.eq(ask), tx.age.eq(0)]
        return f.good, Mux(broken, f.junk, header), Mux(f.good, seq, f.junk_tag)

    def _invariants(self, m, tx, want, beat, held_tag, rt):
        rs = self.rx.state
        last = self.rx.rx_seq
        expected = seq_next(last)
        normal = ~rs.replay & ~rs.ambiguous
        # The next payload flit the transmitter sends, from the one expected (but for a
        # request taken).
        more = tx.replay & (tx.ahead < tx.lead)
        ahead = Mux(more, tx.ahead, tx.lead)
        under_way = (beat != 0) & rs.keep               # accepted, still being delivered
        m.d.comb += [
            Assert((beat == rs.beat) & (beat < BEATS_PER_FLIT), "i: beats in step"),
            Assert(~under_way | (held_tag == want), "i: the flit under way"),
            Assert(want == Mux(under_way, last, expected), "i: the flit wanted"),
            Assert((last != 0) & (tx.lead <= MAX_UNACKED), "i: window"),
            Assert(rs.after == expected, "i: LlrRx's register of the number after"),
            Assert(~normal | ((ahead <= rs.bad) & (rs.bad < 7)), "i: in sync"),
            Assert(~rs.replay | (ahead != 0), "i: replaying, a flit sent is missing"),
            Assert(tx.age < rt, "i: a request is taken or lost within the round trip"),
            Assert(~tx.pending | (rs.replay & (tx.req == expected) & (rs.unexpected == tx.age)),
                   "i: a request on its way"),
        ]


def _seq_add(seq, k):
    """Sequence number ``seq`` plus ``k`` (0 .. 510) in the spec's arithmetic (511 + 1 is 1)."""
    total = seq + k
    return Mux(total > SEQ_MODULUS, total - SEQ_MODULUS, total)[:SEQ_BITS]


def test_in_order_proof(tmp_path):
    """For every input sequence: LlrRx delivers the payload flits in the order sent, with no
    duplicate and no gap."""
    proof = _InOrder()
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, RX_DEPTH)
    assert proved, log[-3000:]


def test_in_order_proof_can_fail(tmp_path):
    """With a channel that may pass a corrupted header with a good CRC, a bounded check of the
    property alone finds a run from reset that breaks it."""
    proof = _InOrder(invariants=False, escape=True)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, 2, mode="bmc")
    assert not proved
    assert "in order: each payload flit delivered is the next one sent" in log
