# SPDX-License-Identifier: BSD-2-Clause
"""UPLI traffic generator: random legal items on a TL end's four UPLI inputs."""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
    UpliChannel,
    orig_data_stream,
    rd_rsp_stream,
    request_stream,
    traffic_counts,
    traffic_limits,
    wr_rsp_stream,
)
from .draws import (
    GEN_PACING,
    RD_DATA,
    RD_HEADER,
    REQ_DATA,
    REQ_HEADER,
    WR,
    Lanes,
    Pacing,
    RdData,
    RdHeader,
    ReqData,
    ReqHeader,
    WrHeader,
    count_beats,
)

__all__ = ["UpliGen"]


def _offer(m, o, want, pause):
    """``o.valid``: ``want`` (from registers only) in a clock without ``pause``; once shown,
    held until taken. Returns the handshake."""
    held = Signal()
    m.d.sync += held.eq(o.valid & ~o.ready)
    m.d.comb += o.valid.eq(held | (want & ~pause))
    return o.valid & o.ready


def _count_items(m, items, load, done):
    with m.If(load):
        m.d.sync += items.eq(0)
    with m.Elif(done):
        m.d.sync += items.eq(items + 1)


def _below(count, limit):
    return (limit == 0) | (count < limit)


class UpliGen(wiring.Component):
    """The sequence of ``rtl/scaleup_ip/tl/traffic/README.md`` on four UPLI streams: requests on ``req``
    with their data beats on ``orig``, read responses on ``rd_rsp``, write responses on
    ``wr_rsp``, each channel on its own and in sequence order.

    While ``enable``, each channel offers its next transfer in every clock but about
    ``idle / 256`` of them, until ``limits`` items of its kind have gone (0: no limit); a
    transfer offered stays until taken, ``enable`` low or not. ``load`` (with ``enable`` low
    and nothing offered) restarts the sequence from ``seed`` and clears ``sent``.

    Latency: none (the payload is drawn from registers). Throughput: one transfer per clock
    and channel, but ``orig`` spends a clock on each request without data.

    Members
    -------
    req, orig, rd_rsp, wr_rsp : ``Out(stream)``
        The UPLI streams (:func:`~scaleup_ip.tl.layout.upli_members`), to a TL end's inputs.
    seed : ``In(64)``; load : ``In(1)``; enable : ``In(1)``; idle : ``In(8)``
    cacheable : ``In(1)``
        Half of the requests compressible by an address cache (README §2); set it with
        ``load`` and leave it.
    limits : ``In(traffic_limits)``
    sent : ``Out(traffic_counts)``
        Transfers per channel (:class:`~scaleup_ip.tl.layout.UpliChannel`).
    done : ``Out(1)``
        Every limit reached and nothing offered.
    """

    req: Out(request_stream())
    orig: Out(orig_data_stream())
    rd_rsp: Out(rd_rsp_stream())
    wr_rsp: Out(wr_rsp_stream())
    seed: In(64)
    load: In(1)
    cacheable: In(1)
    enable: In(1)
    idle: In(8)
    limits: In(traffic_limits)
    sent: Out(traffic_counts)
    done: Out(1)

    def elaborate(self, platform):
        m = Module()
        pacing = Pacing(m, "pacing", GEN_PACING, self.seed, self.load, self.idle)
        done = [self._requests(m, pacing), self._orig(m, pacing), self._reads(m, pacing),
                self._writes(m, pacing)]
        m.d.comb += self.done.eq(Cat(*done).all())
        with m.If(self.load):
            m.d.sync += self.sent.eq(0)
        return m

    def _count(self, m, channel, fire):
        with m.If(fire & ~self.load):
            m.d.sync += self.sent[channel].eq(self.sent[channel] + 1)

    def _lanes(self, m, name, stream, n, advance):
        return Lanes(m, name, stream, n, self.seed, self.load, advance & ~self.load)

    def _requests(self, m, pacing):
        fire = Signal()
        header = ReqHeader(m, self._lanes(m, "req_h", REQ_HEADER, 3, fire), self.cacheable)
        more = _below(self.sent[UpliChannel.REQ], self.limits.req)
        m.d.comb += fire.eq(_offer(m, self.req, self.enable & more,
                                   pacing.pause(UpliChannel.REQ)))
        for name, value in header.fields.items():
            m.d.comb += getattr(self.req.payload, name).eq(value)
        self._count(m, UpliChannel.REQ, fire)
        return ~more & ~self.req.valid

    def _orig(self, m, pacing):
        """The request sequence again (its own copy of stream 0), for each request with data
        its beats from stream 1; a request without data is passed over in a clock."""
        fire, skip, last = Signal(), Signal(), Signal()
        items = Signal(32)                      # requests passed, data or not
        k = Signal(2)
        header = ReqHeader(m, self._lanes(m, "orig_h", REQ_HEADER, 3, skip | (fire & last)),
                           self.cacheable)
        beat = ReqData(header, self._lanes(m, "orig_d", REQ_DATA, 10, fire), k)
        more = _below(items, self.limits.req)
        m.d.comb += [last.eq(beat.last),
                     skip.eq(self.enable & more & ~header.has_data & ~self.orig.valid),
                     fire.eq(_offer(m, self.orig, self.enable & more & header.has_data,
                                    pacing.pause(UpliChannel.ORIG)))]
        for name, value in beat.fields.items():
            m.d.comb += getattr(self.orig.payload, name).eq(value)
        _count_items(m, items, self.load, skip | (fire & last))
        count_beats(m, k, self.load, fire, last)
        self._count(m, UpliChannel.ORIG, fire)
        return ~more & ~self.orig.valid

    def _reads(self, m, pacing):
        fire, last = Signal(), Signal()
        items = Signal(32)
        k = Signal(2)
        header = RdHeader(m, self._lanes(m, "rd_h", RD_HEADER, 1, fire & last)[0])
        beat = RdData(header, self._lanes(m, "rd_d", RD_DATA, 9, fire), k)
        more = _below(items, self.limits.rd_rsp)
        m.d.comb += [last.eq(beat.last),
                     fire.eq(_offer(m, self.rd_rsp, self.enable & more,
                                    pacing.pause(UpliChannel.RD_RSP)))]
        for name, value in beat.fields.items():
            m.d.comb += getattr(self.rd_rsp.payload, name).eq(value)
        _count_items(m, items, self.load, fire & last)
        count_beats(m, k, self.load, fire, last)
        self._count(m, UpliChannel.RD_RSP, fire)
        return ~more & ~self.rd_rsp.valid

    def _writes(self, m, pacing):
        fire = Signal()
        header = WrHeader(m, self._lanes(m, "wr", WR, 1, fire)[0])
        more = _below(self.sent[UpliChannel.WR_RSP], self.limits.wr_rsp)
        m.d.comb += fire.eq(_offer(m, self.wr_rsp, self.enable & more,
                                   pacing.pause(UpliChannel.WR_RSP)))
        for name, value in header.fields.items():
            m.d.comb += getattr(self.wr_rsp.payload, name).eq(value)
        self._count(m, UpliChannel.WR_RSP, fire)
        return ~more & ~self.wr_rsp.valid
