# SPDX-License-Identifier: BSD-2-Clause
"""Request delivery of the TL receiver: whole requests with their data toward UPLI."""

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
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
from ..logic import or_all
from ..rules import request_beats
from .front import rx_beat_layout

__all__ = ["RequestDeliver", "beats_held", "expanded_request_layout"]

#: ReqAddr bits that number the 64-byte beats of a 256-byte block.
_BEAT_LANE = slice(6, 8)

#: A request out of the address cache (:class:`~scaleup_ip.tl.rx.expand.RequestExpand`): expanded,
#: or to be dropped (``drop``: it could not be expanded, or a request before it could not).
expanded_request_layout = data.StructLayout({"req": request_layout, "drop": 1})


class RequestDeliver(wiring.Component):
    """Store and forward of requests (UPLI rule): a request leaves only when its data beats
    and byte-enable half-flit are buffered; then its beat 0 is valid with it and further beats
    follow with offsets 1..n and ``last`` on the final one.

    The request being delivered sits in a head register, loaded from the receive buffer or,
    when that is empty and the head register too, straight from the receiver's front end.
    Whether all its beats are buffered is a register (:func:`~scaleup_ip.tl.rx.req_out.beats_held`),
    so that neither the decision to send nor the load of the next head waits on a comparison.

    With an address cache (``cached``), requests come from
    :class:`~scaleup_ip.tl.rx.expand.RequestExpand`, marked ``drop`` from the first that could not
    be expanded on [ours, README §4]. From that one on the delivery drains instead: each request
    leaves the head register the clock after it entered it, every beat and byte-enable half-flit
    buffered is taken as it comes, nothing is offered on ``req`` or ``orig``, and the credits are
    returned as for a delivery, in the pool slot (a beat does not say whose it is; every field taken
    spent pool credits, the only ones this receiver releases).

    Parameters
    ----------
    data_depth : int
        Depth of the request data buffer feeding ``beat``.
    cached : bool
        Requests come with ``drop`` (:data:`expanded_request_layout`) and there is no
        ``direct`` path.

    Members
    -------
    head : In(stream.Signature(request_layout or expanded_request_layout))
        The oldest request in the receive buffer (``pool`` = its field's POOL); taken into
        the head register.
    direct : In(request_layout), direct_valid : In(1)
        Without ``cached``: a request for the head register while ``idle`` and ``head`` is
        empty.
    idle : Out(1)
        Without ``cached``: the head register is empty (a register).
    beat : In(stream.Signature(rx_beat_layout)), beat_level : In, beat_in : In(1)
        The request data buffer, oldest beat first, the beats it holds (a register), and a
        beat joining it (counted in ``beat_level`` from the next clock).
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

    def __init__(self, data_depth, cached=False):
        self._cached = cached
        super().__init__({
            **({"head": In(stream.Signature(expanded_request_layout))} if cached else {
                "head": In(stream.Signature(request_layout)),
                "direct": In(request_layout),
                "direct_valid": In(1),
                "idle": Out(1),
            }),
            "beat": In(stream.Signature(rx_beat_layout)),
            "beat_level": In(range(data_depth + 1)),
            "beat_in": In(1),
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
        enough = Signal()                        # beat_level >= left (a register)
        go = Signal()
        offer, pool = go, h.pool                 # with an address cache, not while draining
        if self._cached:
            drain = Signal()                     # from a request not expanded on (sticky)
            offer, pool = go & ~drain, h.pool | drain
        m.d.comb += [
            go.eq(hv & enough & (~with_be | self.be.valid)),
            self.req.valid.eq(offer & ~sent),
            self.req.payload.eq(h),
            self.req.payload.pool.eq(0),
            self.orig.valid.eq(offer & (left != 0)),
        ]
        self._orig(m, h, k, left, with_be)
        beat_fire = Signal()
        finish = Signal()
        done = Signal() if self._cached else finish     # delivered
        m.d.comb += [
            beat_fire.eq(self.orig.valid & self.orig.ready),
            done.eq(go & (sent | self.req.ready) & ((left == 0) | ((left == 1) & beat_fire))),
            self.ret_cmd.eq(finish),
            self.slot.eq(Mux(pool, CreditSlot.POOL, h.vc + CreditSlot.VC0)),
        ]
        if self._cached:                         # draining: a request per clock, every beat
            m.d.comb += [
                finish.eq(Mux(drain, hv, done)),
                self.beat.ready.eq(beat_fire | drain),
                self.be.ready.eq((finish & with_be) | drain),
                self.ret_data.eq(beat_fire | (drain & self.beat.valid)),
            ]
        else:
            m.d.comb += [
                self.beat.ready.eq(beat_fire),
                self.be.ready.eq(finish & with_be),
                self.ret_data.eq(beat_fire),
            ]
        nxt = Signal(request_layout)
        nxt_beats = Signal.like(left)
        load = Signal()
        m.d.comb += [
            nxt_beats.eq(request_beats(nxt.cmd, nxt.num_beats)),
            load.eq(~hv | finish),
            self.head.ready.eq(load),
        ]
        if self._cached:
            m.d.comb += nxt.eq(self.head.payload.req)
            arrives = self.head.valid
            with m.If(load & self.head.valid & self.head.payload.drop):
                m.d.sync += drain.eq(1)
        else:
            m.d.comb += [nxt.eq(Mux(self.head.valid, self.head.payload, self.direct)),
                         self.idle.eq(~hv)]
            arrives = self.head.valid | self.direct_valid
        beats_held(m, enough, left, nxt_beats, load, beat_fire, self.beat_level, self.beat_in)
        with m.If(load):
            m.d.sync += [
                h.eq(nxt), hv.eq(arrives),
                left.eq(nxt_beats), k.eq(0), sent.eq(0),
                with_be.eq(nxt.cmd[5] & (nxt.cmd != ReqCmd.WRITE_FULL.value)),
            ]
        with m.Else():
            with m.If(beat_fire):
                m.d.sync += [left.eq(left - 1), k.eq(k + 1)]
            with m.If(self.req.valid & self.req.ready):
                m.d.sync += sent.eq(1)
        return m

    def _orig(self, m, h, k, left, with_be):
        """The originator data beat ``k`` of the head request."""
        o = self.orig.payload
        pos = Signal(2)
        m.d.comb += [
            pos.eq(h.addr[_BEAT_LANE] + k),
            o.data.eq(self.beat.payload.data), o.error.eq(self.beat.payload.error),
            o.byte_en.eq(Mux(with_be, data.View(byte_enable_half, self.be.payload)[pos],
                             Const(-1, BEAT_BYTES))),
            o.offset.eq(k), o.last.eq(left == 1), o.vc.eq(h.vc), o.pool.eq(0),
        ]


def beats_held(m, enough, left, nxt_left, load, fire, level, incoming):
    """Keeps ``enough`` = "the data buffer holds the ``left`` beats still to send" as a
    register, so that the delivery decision does not wait on a comparison.

    Beside it, ``short`` = max(0, ``left`` − ``level``) is kept (at most :data:`MAX_BEATS`).
    While the head stays, ``left`` and ``level`` both drop by the beat sent (``fire``) and
    ``level`` grows by the beat joining the buffer (``incoming``), so ``short`` only drops by
    ``incoming``. When the head is replaced (``load``), it is ``nxt_left`` less the next
    level: the outcome for each possible ``nxt_left`` is formed from flags of ``level`` (a
    register) and ``fire`` alone and then picked by ``nxt_left``, so that the head read goes
    through multiplexers only, no adder. ``incoming`` (late: the front end's commit) picks
    last.

    Parameters
    ----------
    enough : Signal(1)
        Driven here (sync): ``level >= left``.
    left, nxt_left : Value
        Beats still to send of the head (a register), and of the next head on ``load``.
    load, fire, incoming : Value
        The head is replaced; a beat leaves the buffer; a beat joins it (counted from the
        next clock).
    level : Value
        Beats in the buffer (a register).

    Returns
    -------
    Signal
        ``short`` (a register).

    Latency: ``enough`` follows ``left`` and ``level`` with no delay (it is computed for
    their next values). Throughput: one update per clock.
    """
    name = enough.name
    short = Signal(range(MAX_BEATS + 1), name=f"{name}_short")
    level_is = [Signal(name=f"{name}_level{x}") for x in range(MAX_BEATS + 1)]
    m.d.comb += [level_is[x].eq(level == x) for x in range(MAX_BEATS + 1)]

    def after(j, d):
        """max(0, j − (level + d)): ``short`` for a head of ``j`` beats at level + d."""
        terms = [Mux(level_is[x], j - x - d, 0) for x in range(MAX_BEATS + 1) if j - x - d > 0]
        return or_all(terms) if terms else Const(0, len(short))

    # ``incoming`` comes late (the front end's commit): both outcomes are formed first, kept
    # apart from it (``keep``) so that it only picks one at the end.
    ways = []
    for inc in (0, 1):
        way = Signal.like(short, name=f"{name}_short{inc}", attrs={"keep": 1})
        loaded = Mux(fire, Array(after(j, inc - 1) for j in range(MAX_BEATS + 1))[nxt_left],
                     Array(after(j, inc) for j in range(MAX_BEATS + 1))[nxt_left])
        kept = Mux(short > inc, short - inc, 0) if inc else short
        m.d.comb += way.eq(Mux(load, loaded, kept))
        ways.append(way)
    m.d.sync += [short.eq(Mux(incoming, ways[1], ways[0])),
                 enough.eq(Mux(incoming, ways[1] == 0, ways[0] == 0))]
    return short
