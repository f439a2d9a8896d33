"""DL link-level replay [UALink 1.0 §6.6]: proofs (WIP)."""

from amaranth import C, Elaboratable, Module, Mux, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.lib.wiring import In

from rtl.dl.layout import BEATS_PER_FLIT, MAX_UNACKED, SEQ_BITS, SEQ_MODULUS, DlConfig, FlitOp
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
