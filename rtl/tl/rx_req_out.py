"""Request delivery of the TL receiver: whole requests with their data toward UPLI."""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .layout import (
    BEAT_BYTES,
    HALF_BITS,
    MAX_BEATS,
    CreditSlot,
    ReqCmd,
    byte_enable_half,
    orig_data_stream,
    request_layout,
    request_stream,
)
from .rules import request_beats
from .rx_front import rx_beat_layout

__all__ = ["RequestDeliver"]

#: ReqAddr bits that number the 64-byte beats of a 256-byte block.
_BEAT_LANE = slice(6, 8)


class RequestDeliver(wiring.Component):
    """Store and forward of requests (UPLI rule): a request leaves only when its data beats
    and byte-enable half-flit are buffered; then its beat 0 is valid with it and further beats
    follow with offsets 1..n and ``last`` on the final one.

    The request being delivered sits in a head register, loaded from the receive buffer or,
    when that is empty and the head register too, straight from the receiver's front end.

    Parameters
    ----------
    data_depth : int
        Depth of the request data buffer feeding ``beat``.

    Members
    -------
    head : In(stream.Signature(request_layout))
        The oldest request in the receive buffer (``pool`` = its field's POOL); taken into
        the head register.
    direct : In(request_layout), direct_valid : In(1)
        A request for the head register while ``idle`` and ``head`` is empty.
    idle : Out(1)
        The head register is empty (a register).
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

    Latency: a request is on ``req`` the clock after it enters the head register (from
    ``head`` or ``direct``), once its beats are buffered. Throughput: one beat per clock; a
    request without data per clock. Overflow: none (it only drains).
    """

    def __init__(self, data_depth):
        super().__init__({
            "head": In(stream.Signature(request_layout)),
            "direct": In(request_layout),
            "direct_valid": In(1),
            "idle": Out(1),
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
        h = Signal(request_layout)
        hv = Signal()
        left = Signal(range(MAX_BEATS + 1))      # beats still to send
        k = Signal(range(MAX_BEATS))             # beats sent
        sent = Signal()                          # the request itself has left
        with_be = Signal()
        go = Signal()
        m.d.comb += [
            self.idle.eq(~hv),
            go.eq(hv & (self.beat_level >= left) & (~with_be | self.be.valid)),
            self.req.valid.eq(go & ~sent),
            self.req.payload.eq(h),
            self.req.payload.pool.eq(0),
            self.orig.valid.eq(go & (left != 0)),
        ]
        o = self.orig.payload
        pos = Signal(2)
        m.d.comb += [
            pos.eq(h.addr[_BEAT_LANE] + k),
            o.data.eq(self.beat.payload.data), o.error.eq(self.beat.payload.error),
            o.byte_en.eq(Mux(with_be, data.View(byte_enable_half, self.be.payload)[pos],
                             Const(-1, BEAT_BYTES))),
            o.offset.eq(k), o.last.eq(left == 1), o.vc.eq(h.vc), o.pool.eq(0),
        ]
        beat_fire = Signal()
        finish = Signal()
        m.d.comb += [
            beat_fire.eq(self.orig.valid & self.orig.ready),
            finish.eq(go & (sent | self.req.ready) & ((left == 0) | ((left == 1) & beat_fire))),
            self.beat.ready.eq(beat_fire),
            self.be.ready.eq(finish & with_be),
            self.ret_cmd.eq(finish), self.ret_data.eq(beat_fire),
            self.slot.eq(Mux(h.pool, CreditSlot.POOL, h.vc + CreditSlot.VC0)),
        ]
        nxt = Signal(request_layout)
        m.d.comb += [
            nxt.eq(Mux(self.head.valid, self.head.payload, self.direct)),
            self.head.ready.eq(~hv | finish),
        ]
        with m.If(~hv | finish):
            m.d.sync += [
                h.eq(nxt), hv.eq(self.head.valid | self.direct_valid),
                left.eq(request_beats(nxt.cmd, nxt.num_beats)), k.eq(0), sent.eq(0),
                with_be.eq(nxt.cmd[5] & (nxt.cmd != ReqCmd.WRITE_FULL.value)),
            ]
        with m.Else():
            m.d.sync += [left.eq(left - beat_fire), k.eq(k + beat_fire)]
            with m.If(self.req.valid & self.req.ready):
                m.d.sync += sent.eq(1)
        return m
