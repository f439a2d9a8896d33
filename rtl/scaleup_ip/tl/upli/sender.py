# SPDX-License-Identifier: BSD-2-Clause
"""Sending end of UPLI channels: valid/ready streams in, credit-based UPLI out."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..layout import MAX_BEATS, orig_data_layout, request_layout, upli_channel, upli_credit_layout

__all__ = ["UpliCredits", "UpliRequestSender", "UpliSender"]

#: ``*CreditInitDone`` must be seen set this many clocks in a row before it is believed
#: [§2.6: "an implementation specific number of cycles greater than 1"; ours].
INIT_DONE_CLOCKS = 3
#: Credit counter width: up to 1023 credits of one kind [ours].
_COUNT_BITS = 10


class UpliCredits(wiring.Component):
    """Credits a UPLI sender holds for one channel, port 0 [UALink 1.0 §2.6].

    Members
    -------
    credit : In(upli_credit_layout)
        The receiver's credit returns.
    ready : Out(1)
        The initial release is complete (``init_done[0]`` seen for :data:`INIT_DONE_CLOCKS`
        clocks; later values are ignored).
    vc : In(2), need : In(range(MAX_BEATS + 1))
        A burst of ``need`` beats on virtual channel ``vc`` wants to start.
    ok : Out(1), pool : Out(1)
        It may: with VC credits when that VC holds ``need`` of them (``pool`` = 0), else with
        pool credits (``pool`` = 1).
    take : In(1)
        The burst starts this clock: ``need`` credits are spent.
    """

    def __init__(self):
        super().__init__({
            "credit": In(upli_credit_layout),
            "ready": Out(1),
            "vc": In(2),
            "need": In(range(MAX_BEATS + 1)),
            "ok": Out(1),
            "pool": Out(1),
            "take": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        pool = Signal(_COUNT_BITS)
        vcs = Signal(data.ArrayLayout(_COUNT_BITS, 4))
        seen = Signal(range(INIT_DONE_CLOCKS + 1))
        with m.If(~self.ready):
            m.d.sync += seen.eq(Mux(self.credit.init_done[0], seen + 1, 0))
            with m.If(seen == INIT_DONE_CLOCKS - 1):
                m.d.sync += self.ready.eq(self.credit.init_done[0])
        by_vc = Signal()
        m.d.comb += [
            by_vc.eq(vcs[self.vc] >= self.need),
            self.pool.eq(~by_vc),
            self.ok.eq(self.ready & (by_vc | (pool >= self.need))),
        ]
        back = Signal(range(MAX_BEATS + 1))
        m.d.comb += back.eq(Mux(self.credit.vld[0], self.credit.num[0] + 1, 0))
        spend = Signal(range(MAX_BEATS + 1))
        m.d.comb += spend.eq(Mux(self.take, self.need, 0))
        pool_back = self.credit.pool[0]
        m.d.sync += pool.eq(pool + Mux(pool_back, back, 0) - Mux(self.pool, spend, 0))
        for v in range(4):
            here = ~pool_back & (self.credit.vc[0] == v)
            mine = ~self.pool & (self.vc == v)
            m.d.sync += vcs[v].eq(vcs[v] + Mux(here, back, 0) - Mux(mine, spend, 0))
        return m


class UpliSender(wiring.Component):
    """Sends a valid/ready stream on a UPLI channel, port 0, only with credit [§2.6, §2.7.8].

    Parameters
    ----------
    layout : data.StructLayout
        The channel payload, with ``vc`` and ``pool`` fields (``pool`` is set here).
    multi_beat : bool
        Read responses: a beat with ``num_beats`` > 0 and ``offset`` 0 starts a burst of
        ``num_beats + 1`` beats that must go in consecutive clocks, so all its credits are
        taken at once and the following beats pass without further checks. The stream must
        then present them in consecutive clocks.

    Members
    -------
    i : In(stream.Signature(layout))
    o : Out(upli_channel(layout))
        The UPLI channel, with the receiver's credit returns.

    Latency: combinational from ``i`` to the channel. Throughput: one beat per clock while
    credits last.
    """

    def __init__(self, layout, multi_beat=False):
        self._multi_beat = multi_beat
        super().__init__({
            "i": In(stream.Signature(layout)),
            "o": Out(upli_channel(layout)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.credits = credits = UpliCredits()
        beat = self.i.payload
        left = Signal(range(MAX_BEATS))          # beats of a started burst still to go
        burst_pool = Signal()
        m.d.comb += [credits.credit.eq(self.o.credit), credits.vc.eq(beat.vc)]
        if self._multi_beat:
            m.d.comb += credits.need.eq(Mux(beat.offset == 0, beat.num_beats + 1, 1))
        else:
            m.d.comb += credits.need.eq(1)
        go = Signal()
        with m.If(left != 0):
            m.d.comb += [go.eq(self.i.valid), self.o.payload.pool.eq(burst_pool)]
            with m.If(go):
                m.d.sync += left.eq(left - 1)
        with m.Else():
            m.d.comb += [go.eq(self.i.valid & credits.ok), credits.take.eq(go),
                         self.o.payload.pool.eq(credits.pool)]
            if self._multi_beat:
                with m.If(go):
                    m.d.sync += [left.eq(credits.need - 1), burst_pool.eq(credits.pool)]
        _copy_but_pool(m, self.o.payload, beat)
        m.d.comb += [self.o.vld.eq(go), self.i.ready.eq(go)]
        return m


class UpliRequestSender(wiring.Component):
    """Sends requests and originator data on the UPLI Request and OrigData channels, port 0
    [UALink 1.0 §2.6, §2.7.8].

    A data command goes only when one Request credit and a credit for every one of its beats
    are held; its beat 0 goes in the same clock as the request and the rest in the following
    clocks, so the ``orig`` stream must present them back to back. Read requests may go while
    those beats are still going.

    Members
    -------
    req, orig : In(stream)
        Requests (:data:`~scaleup_ip.tl.layout.request_layout`) and their data beats
        (:data:`~scaleup_ip.tl.layout.orig_data_layout`), beat 0 valid with its request.
    req_o, orig_o : Out(upli_channel(...))
        The two UPLI channels, with the receiver's credit returns; ``pool`` is set here.

    Latency: combinational. Throughput: one request and one beat per clock while credits last.
    """

    def __init__(self):
        super().__init__({
            "req": In(stream.Signature(request_layout)),
            "orig": In(stream.Signature(orig_data_layout)),
            "req_o": Out(upli_channel(request_layout)),
            "orig_o": Out(upli_channel(orig_data_layout)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.req_credits = rc = UpliCredits()
        m.submodules.orig_credits = oc = UpliCredits()
        req, orig = self.req.payload, self.orig.payload
        has_data = Signal()
        left = Signal(range(MAX_BEATS))
        burst_pool = Signal()
        m.d.comb += [
            rc.credit.eq(self.req_o.credit), oc.credit.eq(self.orig_o.credit),
            rc.vc.eq(req.vc), rc.need.eq(1), oc.vc.eq(req.vc), oc.need.eq(req.num_beats + 1),
            has_data.eq(req.cmd[5]),
        ]
        req_go, orig_go = Signal(), Signal()
        with m.If(left != 0):
            m.d.comb += [
                orig_go.eq(self.orig.valid), self.orig_o.payload.pool.eq(burst_pool),
                req_go.eq(self.req.valid & ~has_data & rc.ok),
            ]
            with m.If(orig_go):
                m.d.sync += left.eq(left - 1)
        with m.Else():
            with m.If(has_data):
                m.d.comb += [req_go.eq(self.req.valid & self.orig.valid & rc.ok & oc.ok),
                             orig_go.eq(req_go), oc.take.eq(req_go),
                             self.orig_o.payload.pool.eq(oc.pool)]
                with m.If(req_go):
                    m.d.sync += [left.eq(req.num_beats), burst_pool.eq(oc.pool)]
            with m.Else():
                m.d.comb += req_go.eq(self.req.valid & rc.ok)
        m.d.comb += [rc.take.eq(req_go), self.req_o.payload.pool.eq(rc.pool)]
        _copy_but_pool(m, self.req_o.payload, req)
        _copy_but_pool(m, self.orig_o.payload, orig)
        m.d.comb += [
            self.req_o.vld.eq(req_go), self.req.ready.eq(req_go),
            self.orig_o.vld.eq(orig_go), self.orig.ready.eq(orig_go),
        ]
        return m


def _copy_but_pool(m, dst, src):
    for name, _ in dst.shape():
        if name != "pool":
            m.d.comb += getattr(dst, name).eq(getattr(src, name))
