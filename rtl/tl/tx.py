"""UALink TL transmit: UPLI requests and responses packed into 64-byte TL flits."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..config import ConfiguredComponent
from .layout import (
    CREDIT_BITS,
    REQ_LIMIT,
    RSP_LIMIT,
    CreditClass,
    CreditSlot,
    MsgType,
    TlConfig,
    UpliError,
    credit_array,
    credit_update_layout,
    flit_stream,
    upli_members,
)
from .queue import WindowQueue
from .tx_data import DataSequencer
from .tx_intake import TxIntake
from .tx_pick import ControlPicker, tx_req_entry, tx_rsp_entry

__all__ = ["TlTx"]


class TlTx(ConfiguredComponent):
    """The TL packer: one 64-byte TL flit per clock from UPLI traffic (README §3).

    Parameters
    ----------
    config : TlConfig

    Members
    -------
    req, orig, rd_rsp, wr_rsp : In(stream)
        UPLI requests with originator data, read response beats and write responses.
    flit : Out(flit_stream())
        TL flits toward the data link. Registered; held while ``ready`` is low.
    grant : In(credit_update_layout)
        Credits the peer granted this clock (decoded from received FC fields).
    give : In(credit_update_layout)
        Credits the local receiver released this clock, to return in FC fields.
    give_init : In(1)
        The local receiver's initial release is complete (it rises at least one clock after the
        release appears on ``give``). Then, once all of it is sent, this TL sends Initial
        Credit Release Complete and may start sending requests and responses.
    init_sent : Out(1)
        Initial Credit Release Complete has been sent.
    credits : Out(credit_array(CREDIT_BITS))
        Credits held (for credit-conservation checks).
    pending : Out(credit_array(CREDIT_BITS))
        Credits released by the local receiver and not yet sent.
    upli_events : Out(len(UpliError))
        Pulses of :attr:`~rtl.tl.layout.UpliError.TRUNCATED_BURST` and
        :attr:`~rtl.tl.layout.UpliError.RSP_SEQUENCE` when a write burst or a multi-beat read
        response was closed early and its missing beats are sent poisoned (README §5).

    Latency: a request or response accepted at clock ``t`` can leave in the flit presented at
    ``t + 3`` when the link is idle. Throughput: one flit per clock while data is queued.
    """

    config_class = TlConfig

    def __init__(self, config):
        super().__init__(config, {
            **upli_members(In),
            "flit": Out(flit_stream()),
            "grant": In(credit_update_layout),
            "give": In(credit_update_layout),
            "give_init": In(1),
            "init_sent": Out(1),
            "credits": Out(credit_array(CREDIT_BITS)),
            "pending": Out(credit_array(CREDIT_BITS)),
            "upli_events": Out(len(UpliError)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        m.submodules.intake = intake = TxIntake()
        m.submodules.req_q = req_q = WindowQueue(tx_req_entry, cfg.tx_req_depth, REQ_LIMIT)
        m.submodules.rsp_q = rsp_q = WindowQueue(tx_rsp_entry, cfg.tx_rsp_depth, RSP_LIMIT)
        m.submodules.req_data = req_data = SyncFIFOBuffered(
            width=len(intake.req_beat.payload.as_value()), depth=cfg.tx_data_depth)
        m.submodules.rsp_data = rsp_data = SyncFIFOBuffered(
            width=len(intake.rsp_beat.payload.as_value()), depth=cfg.tx_data_depth)
        m.submodules.pick = pick = ControlPicker()
        m.submodules.seq = seq = DataSequencer()
        for port in ("req", "orig", "rd_rsp", "wr_rsp"):
            wiring.connect(m, wiring.flipped(getattr(self, port)), getattr(intake, port))
        m.d.comb += [
            self.upli_events[UpliError.TRUNCATED_BURST].eq(intake.req_truncated),
            self.upli_events[UpliError.RSP_SEQUENCE].eq(intake.rsp_truncated),
        ]
        wiring.connect(m, intake.req_entry, req_q.i)
        wiring.connect(m, intake.rsp_entry, rsp_q.i)
        for fifo, src, dst in ((req_data, intake.req_beat, seq.req_data),
                               (rsp_data, intake.rsp_beat, seq.rsp_data)):
            m.d.comb += [
                fifo.w_data.eq(src.payload), fifo.w_en.eq(src.valid), src.ready.eq(fifo.w_rdy),
                dst.payload.eq(fifo.r_data), dst.valid.eq(fifo.r_rdy), fifo.r_en.eq(dst.ready),
            ]
        m.d.comb += [
            pick.req.eq(req_q.entries), pick.req_count.eq(req_q.count),
            pick.rsp.eq(rsp_q.entries), pick.rsp_count.eq(rsp_q.count),
            pick.credits.eq(self.credits), pick.pending.eq(self.pending),
            pick.traffic.eq(self.init_sent),
            seq.schedule.eq(pick.schedule),
        ]
        self._emit(m, pick, seq, req_q, rsp_q)
        return m

    def _emit(self, m, pick, seq, req_q, rsp_q):
        """The flit rule of README §3, and the state that moves with each flit."""
        owed = Signal(7)
        req_out = Signal(range(REQ_LIMIT + 1))
        rsp_out = Signal(range(RSP_LIMIT + 1))
        m.d.comb += [
            pick.req_allow.eq(REQ_LIMIT - req_out), pick.rsp_allow.eq(RSP_LIMIT - rsp_out),
            pick.req_level.eq(req_q.level), pick.rsp_level.eq(rsp_q.level),
        ]
        halves = Signal(7)
        m.d.comb += halves.eq(sum(2 * r.beats + r.be for r in pick.schedule.req)
                              + 2 * pick.schedule.rsp_beats)
        idle_pending = Signal()
        m.d.comb += idle_pending.eq(~Cat(*(self.pending[c][s].any()
                                           for c in CreditClass for s in CreditSlot)).any())
        msg_due = Signal()
        m.d.comb += msg_due.eq(self.give_init & ~self.init_sent & idle_pending & (owed == 0))

        load = Signal()                  # the output register takes a new flit this clock
        control = Signal()               # ... and it holds a new control half-flit
        nxt = Signal.like(self.flit.payload)
        m.d.comb += load.eq(~self.flit.valid | self.flit.ready)
        emit = Signal()
        go = Signal()
        with m.If(owed >= 2):
            m.d.comb += [
                emit.eq(seq.avail == 2), seq.take.eq(Mux(go, 2, 0)),
                nxt.data[0].eq(seq.halves[0].data), nxt.data[1].eq(seq.halves[1].data),
                nxt.msg.eq(Cat(seq.halves[0].msg, seq.halves[1].msg)),
            ]
        with m.Elif(msg_due):
            m.d.comb += [emit.eq(1), nxt.data[0].eq(MsgType.CREDIT_INIT_DONE.value),
                         nxt.msg.eq(0b01)]
            with m.If(load):
                m.d.sync += self.init_sent.eq(1)
        with m.Elif(owed == 1):
            m.d.comb += [
                emit.eq(seq.avail != 0), control.eq(1),
                nxt.data[0].eq(pick.half), nxt.data[1].eq(seq.halves[0].data),
                nxt.msg.eq(Cat(Const(0, 1), seq.halves[0].msg)),
            ]
        with m.Else():
            m.d.comb += [
                emit.eq(pick.nonempty & ((halves == 0) | (seq.avail != 0))), control.eq(1),
                nxt.data[0].eq(pick.half),
                nxt.data[1].eq(Mux(halves != 0, seq.halves[0].data, 0)),
                nxt.msg.eq(Cat(Const(0, 1), (halves != 0) & seq.halves[0].msg)),
            ]
        placed = Signal()
        m.d.comb += [go.eq(load & emit), placed.eq(go & control)]
        with m.If(control & (owed <= 1)):
            m.d.comb += seq.take.eq(Mux(go & ((owed == 1) | (halves != 0)), 1, 0))
        m.d.comb += [
            seq.fresh.eq(control),
            seq.load.eq(placed),
            req_q.pop.eq(Mux(placed, pick.n_req, 0)),
            rsp_q.pop.eq(Mux(placed, pick.n_rsp, 0)),
        ]
        with m.If(load):
            m.d.sync += [self.flit.valid.eq(emit), self.flit.payload.eq(nxt)]
        with m.If(go):
            with m.If(owed >= 2):
                m.d.sync += owed.eq(owed - 2)
            with m.Elif(control & (owed == 0)):
                m.d.sync += owed.eq(Mux(halves != 0, halves - 1, 0))
            with m.Elif(control):
                m.d.sync += owed.eq(halves)
            n_req = Mux(placed, pick.n_req, 0)
            n_rsp = Mux(placed, pick.n_rsp, 0)
            m.d.sync += [
                req_out.eq(Mux(req_out + n_req > 0, req_out + n_req - 1, 0)),
                rsp_out.eq(Mux(rsp_out + n_rsp > 0, rsp_out + n_rsp - 1, 0)),
            ]
        for c in CreditClass:
            for s in CreditSlot:
                spent = Mux(placed, pick.spent[c][s], 0)
                sent = Mux(placed, pick.sent[c][s], 0)
                m.d.sync += [
                    self.credits[c][s].eq(self.credits[c][s] - spent
                                          + getattr(self.grant, c.name.lower())[s]),
                    self.pending[c][s].eq(self.pending[c][s] - sent
                                          + getattr(self.give, c.name.lower())[s]),
                ]
