# SPDX-License-Identifier: BSD-2-Clause
"""Response delivery of the TL receiver: write responses and read response beats."""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layout import MAX_BEATS, CreditSlot, rd_rsp_stream, wr_rsp_stream
from ..logic import plus_one
from .decode import rx_rsp_entry
from .front import rx_beat_layout
from .req_out import beats_held

__all__ = ["ResponseDeliver"]


class ResponseDeliver(wiring.Component):
    """Delivers responses in the order their fields arrived: a write response on ``wr_rsp``;
    a read response, once all its beats are buffered, as one beat per clock on ``rd_rsp``
    (a multi-beat one with offsets 0..n and ``last`` on the final beat, README §2).

    The response being delivered sits in a head register, loaded from the receive buffer or,
    when that is empty and the head register too, straight from the receiver's front end.
    Whether all its beats are buffered is a register (:func:`~scaleup_ip.tl.rx.req_out.beats_held`),
    so that neither the decision to send nor the load of the next head waits on a comparison.

    Parameters
    ----------
    data_depth : int
        Depth of the response data buffer feeding ``beat``.

    Members
    -------
    head : In(stream.Signature(rx_rsp_entry))
        The oldest response in the receive buffer; taken into the head register.
    direct : In(rx_rsp_entry), direct_valid : In(1)
        A response for the head register while ``idle`` and ``head`` is empty.
    idle : Out(1)
        The head register is empty (a register).
    beat : In(stream.Signature(rx_beat_layout)), beat_level : In, beat_in : In(1)
        The response data buffer, the beats it holds (a register), and a beat joining it
        (counted in ``beat_level`` from the next clock).
    rd_rsp, wr_rsp : Out
        UPLI read response beats and write responses; ``pool`` = 0.
    ret_cmd, ret_data : Out(1), slot : Out(range(5))
        A Response CMD credit (response left) and a Response Data credit (a beat left) to
        return in ``slot``.

    Latency: a response is offered the clock after it enters the head register, a read
    response once all its beats are buffered. Throughput: one beat or one write response per
    clock; a write response waits behind an older read response (one order for both).
    Overflow: none.
    """

    def __init__(self, data_depth):
        super().__init__({
            "head": In(stream.Signature(rx_rsp_entry)),
            "direct": In(rx_rsp_entry),
            "direct_valid": In(1),
            "idle": Out(1),
            "beat": In(stream.Signature(rx_beat_layout)),
            "beat_level": In(range(data_depth + 1)),
            "beat_in": In(1),
            "rd_rsp": Out(rd_rsp_stream()),
            "wr_rsp": Out(wr_rsp_stream()),
            "ret_cmd": Out(1),
            "ret_data": Out(1),
            "slot": Out(range(len(CreditSlot))),
        })

    def elaborate(self, platform):
        m = Module()
        h = Signal(rx_rsp_entry)
        hv = Signal()
        left = Signal(range(MAX_BEATS + 1))      # beats still to send
        k = Signal(range(MAX_BEATS))             # beats sent
        multi = Signal()
        enough = Signal()                        # beat_level >= left (a register)
        m.d.comb += [self.idle.eq(~hv), multi.eq(h.num_beats != 0)]
        w, r = self.wr_rsp.payload, self.rd_rsp.payload
        m.d.comb += [
            self.wr_rsp.valid.eq(hv & ~h.rd),
            w.vc.eq(h.vc), w.tag.eq(h.tag), w.src_acc.eq(h.src_acc), w.dst_acc.eq(h.dst_acc),
            w.status.eq(h.status), w.pool.eq(0),
            self.rd_rsp.valid.eq(hv & h.rd & enough),
            r.data.eq(self.beat.payload.data), r.error.eq(self.beat.payload.error),
            r.vc.eq(h.vc), r.pool.eq(0), r.tag.eq(h.tag), r.src_acc.eq(h.src_acc),
            r.dst_acc.eq(h.dst_acc), r.num_beats.eq(h.num_beats), r.status.eq(h.status),
            r.offset.eq(Mux(multi, k, h.offset)), r.last.eq(Mux(multi, left == 1, h.last)),
        ]
        beat_fire = Signal()
        finish = Signal()
        m.d.comb += [
            beat_fire.eq(self.rd_rsp.valid & self.rd_rsp.ready),
            finish.eq((self.wr_rsp.valid & self.wr_rsp.ready) | (beat_fire & (left == 1))),
            self.beat.ready.eq(beat_fire),
            self.ret_cmd.eq(finish), self.ret_data.eq(beat_fire),
            self.slot.eq(Mux(h.pool, CreditSlot.POOL, h.vc + CreditSlot.VC0)),
        ]
        nxt = Signal(rx_rsp_entry)
        nxt_beats = Signal.like(left)
        load = Signal()
        m.d.comb += [
            nxt.eq(Mux(self.head.valid, self.head.payload, self.direct)),
            nxt_beats.eq(Mux(nxt.rd, plus_one(nxt.num_beats), 0)),
            load.eq(~hv | finish),
            self.head.ready.eq(load),
        ]
        beats_held(m, enough, left, nxt_beats, load, beat_fire, self.beat_level, self.beat_in)
        with m.If(load):
            m.d.sync += [
                h.eq(nxt), hv.eq(self.head.valid | self.direct_valid),
                left.eq(nxt_beats), k.eq(0),
            ]
        with m.Elif(beat_fire):
            m.d.sync += [left.eq(left - 1), k.eq(k + 1)]
        return m
