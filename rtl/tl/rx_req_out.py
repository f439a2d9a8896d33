"""Request delivery of the TL receiver: whole requests with their data toward UPLI."""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .layout import (
    BEAT_BYTES,
    HALF_BITS,
    MAX_BEATS,
    CreditSlot,
    ReqCmd,
    orig_data_stream,
    request_layout,
    request_stream,
)
from .rules import request_beats
from .rx_front import rx_beat_layout

__all__ = ["RequestDeliver"]


class RequestDeliver(wiring.Component):
    """Store and forward of requests (UPLI rule): a request leaves only when its data beats
    and byte-enable half-flit are buffered; then its beat 0 is valid with it and further beats
    follow with offsets 1..n and ``last`` on the final one.

    Parameters
    ----------
    data_depth : int
        Depth of the request data buffer feeding ``beat``.

    Members
    -------
    head : In(stream.Signature(request_layout))
        The oldest request (``pool`` = its field's POOL); taken when it has fully left.
    beat : In(stream.Signature(rx_beat_layout)), beat_level : In
        The request data buffer, oldest beat first, and the beats it holds.
    be : In(stream.Signature(HALF_BITS))
        Byte-enable half-flits, one per request with data other than WriteFull.
    req, orig : Out
        UPLI request and originator data; ``pool`` = 0. Byte enables of beat ``k`` are bits
        ``64(A[7:6]+k) ..`` of the byte-enable half (README §1), all ones for WriteFull.
    ret_cmd, ret_data : Out(1), slot : Out(range(5))
        A Request CMD credit (request left) and a Request Data credit (a beat left) to return
        in ``slot`` (0 = pool, 1 + VC otherwise).

    Latency: combinational from the buffers' heads. Throughput: one beat per clock; a request
    without data per clock. Overflow: none (it only drains).
    """

    def __init__(self, data_depth):
        super().__init__({
            "head": In(stream.Signature(request_layout)),
            "beat": In(stream.Signature(rx_beat_layout)),
            "beat_level": In(range(data_depth + 1)),
            "be": In(stream.Signature(HALF_BITS)),
            "req": Out(request_stream()),
            "orig": Out(orig_data_stream()),
            "ret_cmd": Out(1),
            "ret_data": Out(1),
            "slot": Out(range(len(CreditSlot))),
        })

    def elaborate(self, platform):
        m = Module()
        h = self.head.payload
        k = Signal(range(MAX_BEATS + 1))
        sent = Signal()                          # the request itself has left
        beats = Signal(range(MAX_BEATS + 1))
        with_be = Signal()
        go = Signal()
        m.d.comb += [
            beats.eq(request_beats(h.cmd, h.num_beats)),
            with_be.eq(h.cmd[5] & (h.cmd != ReqCmd.WRITE_FULL.value)),
            go.eq(self.head.valid & (self.beat_level >= beats - k) & (~with_be | self.be.valid)
                  & ((k == beats) | self.beat.valid)),
            self.req.valid.eq(go & ~sent),
            self.req.payload.eq(h),
            self.req.payload.pool.eq(0),
            self.orig.valid.eq(go & (k != beats)),
        ]
        o = self.orig.payload
        pos = Signal(2)
        m.d.comb += [
            pos.eq(h.addr[6:8] + k),
            o.data.eq(self.beat.payload.data), o.error.eq(self.beat.payload.error),
            o.byte_en.eq(Mux(with_be, self.be.payload.word_select(pos, BEAT_BYTES),
                             Const(-1, BEAT_BYTES))),
            o.offset.eq(k), o.last.eq(k + 1 == beats), o.vc.eq(h.vc), o.pool.eq(0),
        ]
        beat_fire = Signal()
        finish = Signal()
        m.d.comb += [
            beat_fire.eq(self.orig.valid & self.orig.ready),
            finish.eq(go & (sent | self.req.ready) & (k + beat_fire == beats)),
            self.beat.ready.eq(beat_fire),
            self.head.ready.eq(finish),
            self.be.ready.eq(finish & with_be),
            self.ret_cmd.eq(finish), self.ret_data.eq(beat_fire),
            self.slot.eq(Mux(h.pool, CreditSlot.POOL, h.vc + CreditSlot.VC0)),
        ]
        with m.If(finish):
            m.d.sync += [k.eq(0), sent.eq(0)]
        with m.Else():
            m.d.sync += k.eq(k + beat_fire)
            with m.If(self.req.valid & self.req.ready):
                m.d.sync += sent.eq(1)
        return m
