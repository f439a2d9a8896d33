"""DL link-level replay [UALink 1.0 §6.6]: proofs (WIP)."""

from types import SimpleNamespace

from amaranth import C, Elaboratable, Module, Mux, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.lib.wiring import In

from rtl.dl.layout import (
    BEATS_PER_FLIT,
    FH_BYTES,
    MAX_UNACKED,
    REPLAY_LIMIT_BITS,
    SEQ_BITS,
    SEQ_MODULUS,
    DlConfig,
    FlitOp,
    command_header,
    explicit_header,
)
from rtl.dl.llr_rx import LlrRx
from rtl.dl.llr_tx import LlrTx, _Source
from rtl.dl.logic import seq_diff, seq_next
from sim.prove import prove_sby

TX_CONFIG = DlConfig(replay_depth=2)
WINDOW = min(TX_CONFIG.replay_depth, MAX_UNACKED)
TX_DEPTH = 2


class _Occupancy(Elaboratable):
    """LlrTx with free inputs, a count of the payload flits it took and that are not yet
    acknowledged, the property and the invariants."""

    def __init__(self, invariants=True, deaf=False):
        self.invariants, self.deaf = invariants, deaf
        self.dut = LlrTx(TX_CONFIG)

    def inputs(self):
        return [Value.cast(value) for _, member, value in self.dut.signature.flatten(self.dut)
                if member.flow == In]

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        m.submodules.dut = dut.elaborate(platform)
        dut._MustUse__used = True
        st = dut.state
        count = Signal(range(WINDOW + 1))               # sent, not acknowledged
        last_seq = Signal(SEQ_BITS, init=SEQ_MODULUS)   # of the last payload flit taken
        last_ack = Signal(SEQ_BITS, init=SEQ_MODULUS)   # of the last one acknowledged
        beats = Signal(range(BEATS_PER_FLIT))           # body beats taken of this flit
        body, ing = dut.body, dut.ingress
        taken = body.valid & body.ready
        ends = taken & (beats == BEATS_PER_FLIT - 1)
        sent = ends & body.p.payload
        a = ing.ack_req_seq
        freed = seq_diff(a, last_ack)
        # The Ack's window: from the last acknowledged to the last sent [§6.6.6.3, Fig. 6-19].
        acked = ing.command & (ing.op == FlitOp.ACK) & (freed <= count)
        if self.deaf:
            acked = C(0)
        with m.If(taken):
            m.d.sync += beats.eq(Mux(ends, 0, beats + 1))
        with m.If(sent):
            m.d.sync += last_seq.eq(seq_next(last_seq))
        with m.If(acked):
            m.d.sync += last_ack.eq(a)
        m.d.sync += count.eq(count + sent - Mux(acked, freed, 0))
        m.d.comb += [
            Assume(~ing.command | (a != 0), "LlrRx drops commands with ackReqSeq 0"),
            Assert(st.st.unacked == count, "occupancy: flits sent and not acknowledged"),
            Assert(count <= WINDOW, "occupancy within the window"),
            Assert(~body.ready | (count < WINDOW), "no body beat taken when full"),
        ]
        if self.invariants:
            s = st.st
            new_flit = (st.src == _Source.NEW) & ~st.first
            m.d.comb += [
                Assert((last_seq != 0) & (last_ack != 0), "i: sequence numbers are 1 .. 511"),
                Assert(seq_diff(last_seq, last_ack) == count, "i: the count in seq arithmetic"),
                Assert(s.last_seq == last_seq, "i: Tx_last_seq"),
                Assert(s.last_ack == last_ack, "i: Rx_last_ack"),
                Assert(beats == Mux(new_flit, st.beat, 0), "i: body beats in step"),
                Assert(~new_flit | (count < WINDOW), "i: a body flit under way has room"),
            ]
        return m


def test_occupancy_proof(tmp_path):
    proof = _Occupancy()
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, TX_DEPTH)
    assert proved, log[-3000:]


def test_occupancy_proof_can_fail(tmp_path):
    proof = _Occupancy(invariants=False, deaf=True)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, 14, mode="bmc")
    assert not proved
    assert "occupancy: flits sent and not acknowledged" in log


# ---------------------------------------------------------------------------------------------
# In-order delivery (LlrRx)

RX_CONFIG = DlConfig()
#: Round trip bound, in flits: the first flit of the replay a Replay Request asks for is at most
#: this many flits after the flit that made LlrRx ask; ``replay_limit`` is above it.
RT = 16
#: The transmitter's window: unacknowledged payload flits.
TX_WINDOW = MAX_UNACKED
RX_DEPTH = 1


class _InOrder(Elaboratable):
    """LlrRx fed by an abstract spec-following transmitter through a channel that may fail any
    flit's CRC; its Replay Requests reach the transmitter within :data:`RT` flits or are
    lost."""

    def __init__(self, invariants=True, limit_min=RT + 1):
        self.invariants, self.limit_min = invariants, limit_min
        self.rx = LlrRx(RX_CONFIG)
        free = {"valid": 1, "o_ready": 1, "resync": 1, "limit": REPLAY_LIMIT_BITS,
                "send": 1, "explicit": 1, "good": 1, "junk": FH_BYTES * 8,
                "junk_tag": SEQ_BITS, "ask": 1, "ack_req_seq": SEQ_BITS,
                "take": 1, "drop": 1, "refresh": 1}
        self.free = SimpleNamespace(**{k: Signal(w, name=f"f_{k}") for k, w in free.items()})

    def inputs(self):
        return list(vars(self.free).values())

    def elaborate(self, platform):
        m = Module()
        rx, f = self.rx, self.free
        m.submodules.rx = rx.elaborate(platform)
        rx._MustUse__used = True
        # The transmitter, relative to Rx_last_seq_calc: Tx_last_seq is ``lead`` flits on; a
        # replay sends the flit ``ahead`` flits after the one LlrRx expects.
        tx = SimpleNamespace(
            lead=Signal(range(TX_WINDOW + 1), name="tx_lead"),
            replay=Signal(name="tx_replay"),
            ahead=Signal(range(TX_WINDOW + 1), name="tx_ahead"),
            first=Signal(name="tx_first"),                      # Tx_first_replay
            # A Replay Request on its way back: its ackReqSeq, flits since LlrRx asked.
            pending=Signal(name="rq_pending"), req=Signal(SEQ_BITS, init=1, name="rq_seq"),
            age=Signal(range(RT), name="rq_age"))
        # The receiving side: the flit wanted next, the beat, the flit under way.
        want = Signal(SEQ_BITS, init=1)
        beat = Signal(range(BEATS_PER_FLIT))
        held_ok, held_header, held_tag = Signal(), Signal(FH_BYTES * 8), Signal(SEQ_BITS)

        i = rx.i
        go = i.valid & i.ready & (beat == 0)                     # a flit starts
        fresh_ok, fresh_header, fresh_tag = self._transmit(m, tx, go)
        first = beat == 0
        m.d.comb += [
            i.valid.eq(f.valid),
            i.p.crc_ok.eq(Mux(first, fresh_ok, held_ok)),
            i.p.header.eq(Mux(first, fresh_header, held_header)),
            i.p.data.eq(Mux(first, fresh_tag, held_tag)),
            i.p.last.eq(beat == BEATS_PER_FLIT - 1),
            rx.o.ready.eq(f.o_ready), rx.resync.eq(f.resync), rx.replay_limit.eq(f.limit),
            Assume(f.limit >= self.limit_min, "replay_limit above the round trip"),
        ]
        with m.If(i.valid & i.ready):
            m.d.sync += beat.eq(Mux(beat == BEATS_PER_FLIT - 1, 0, beat + 1))
            with m.If(beat == 0):
                m.d.sync += [held_ok.eq(fresh_ok), held_header.eq(fresh_header),
                             held_tag.eq(fresh_tag)]
        o = rx.o
        with m.If(o.valid & o.ready & (beat == BEATS_PER_FLIT - 1)):
            m.d.sync += want.eq(seq_next(want))
        m.d.comb += Assert(~o.valid | (o.p.data[:SEQ_BITS] == want),
                           "in order: each payload flit delivered is the next one sent")
        if self.invariants:
            self._invariants(m, tx, want, beat, held_tag)
        return m

    def _transmit(self, m, tx, go):
        """The flit the transmitter sends when one starts (``go``): its CRC verdict, header and
        tag; the transmitter's and the request's state moves on ``go``."""
        rx, f = self.rx, self.free
        last = rx.rx_seq
        e = seq_next(last)
        # The request is taken (this flit is the replay's first) or lost, by RT flits.
        taking = tx.pending & f.take
        leaving = tx.pending & (f.take | f.drop | (tx.age == RT - 1))
        first = Mux(taking, 1, tx.first)
        ahead = Mux(taking, seq_diff(tx.req, e), tx.ahead)
        more = (taking | tx.replay) & (ahead < tx.lead)
        # In DL Up a replay sends its flits back to back [§6.6.6.6]; otherwise a new payload
        # flit if fewer than TX_WINDOW are unacknowledged [§6.6.6.5], or a NOP, as the free
        # input chooses. (Acknowledged at once: any Tx_last_ack would allow fewer new flits.)
        payload = more | (f.send & (tx.lead < TX_WINDOW))
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
        header = Mux(~f.good, f.junk, Mux(f.explicit | (replayed & first), explicit.as_value(),
                                          command.as_value()))
        # LlrRx takes this flit as the next payload flit: all offsets move down one.
        took = rx.o.valid
        with m.If(go):
            m.d.sync += [tx.replay.eq(more), tx.first.eq(first & ~replayed),
                         tx.ahead.eq(ahead + replayed - took),
                         tx.lead.eq(tx.lead + (payload & ~more) - took)]
            # The request: gone, or older; a new one (for the flit arriving now); its
            # ackReqSeq is Rx_last_seq_calc + 1 when a copy is sent, a flit or two later.
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
        return f.good, header, Mux(f.good, seq, f.junk_tag)

    def _invariants(self, m, tx, want, beat, held_tag):
        rx = self.rx
        rs = rx.state
        last = rx.rx_seq
        e = seq_next(last)                          # the payload flit LlrRx expects
        normal = ~rs.replay & ~rs.ambiguous
        # The next payload flit the transmitter sends (but for a request taken), from ``e``.
        more = tx.replay & (tx.ahead < tx.lead)
        ahead = Mux(more, tx.ahead, tx.lead)
        under_way = (beat != 0) & rs.keep           # accepted, still being delivered
        m.d.comb += [
            Assert((beat == rs.beat) & (beat < BEATS_PER_FLIT), "i: beats in step"),
            Assert(~under_way | (held_tag == want), "i: the flit under way"),
            Assert(want == Mux(under_way, last, e), "i: the flit wanted"),
            Assert((last != 0) & (tx.lead <= TX_WINDOW), "i: window"),
            Assert(~normal | ((ahead <= rs.bad) & (rs.bad < 7)), "i: in sync"),
            Assert(~rs.replay | (ahead != 0), "i: replaying, a flit sent is missing"),
            Assert(tx.age < RT, "i: a request is taken or lost by RT flits"),
            Assert(~tx.pending | (rs.replay & (tx.req == e) & (rs.unexpected == tx.age)),
                   "i: a request on its way"),
        ]


def _seq_add(seq, k):
    """Sequence number ``seq`` plus ``k`` (0 .. 510) in the spec's arithmetic (511 + 1 is 1)."""
    total = seq + k
    return Mux(total > SEQ_MODULUS, total - SEQ_MODULUS, total)[:SEQ_BITS]


def test_in_order_proof(tmp_path):
    proof = _InOrder()
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, RX_DEPTH)
    assert proved, log[-3000:]
