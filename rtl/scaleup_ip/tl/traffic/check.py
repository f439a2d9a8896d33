# SPDX-License-Identifier: BSD-2-Clause
"""UPLI traffic checker: every transfer a TL end delivers, checked against the sequence."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
    Status,
    UpliChannel,
    orig_data_layout,
    orig_data_stream,
    rd_rsp_layout,
    rd_rsp_stream,
    request_layout,
    request_stream,
    traffic_counts,
    wr_rsp_layout,
    wr_rsp_stream,
)
from .draws import (
    CHECK_PACING,
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
    poisoned,
)

__all__ = ["UpliCheck"]


class UpliCheck(wiring.Component):
    """Takes the four UPLI streams a TL end delivers and compares each transfer with the next
    one of its channel in the sequence of ``rtl/scaleup_ip/tl/traffic/README.md`` for ``seed``, as
    the far end delivers it (README §5): poisoned beats with their message bytes, OKAY responses
    without SRCACCID.

    Each channel is ready in every clock but about ``busy / 256`` of them (``orig`` also not
    while it passes over a request without data, a clock each). A transfer that differs is
    counted in ``bad`` and the check goes on with the next one of the sequence. ``load``
    (nothing arriving) restarts the sequence from ``seed`` and clears the counts.

    Latency: the counts move a clock after the transfer. Throughput: one transfer per clock
    and channel.

    Members
    -------
    req, orig, rd_rsp, wr_rsp : ``In(stream)``
        From a TL end's UPLI outputs.
    seed : ``In(64)``; load : ``In(1)``; busy : ``In(8)``
    cacheable : ``In(1)``
        As the generator's.
    got, bad : ``Out(traffic_counts)``
        Transfers taken and transfers that differed, per channel
        (:class:`~scaleup_ip.tl.layout.UpliChannel`).
    """

    req: In(request_stream())
    orig: In(orig_data_stream())
    rd_rsp: In(rd_rsp_stream())
    wr_rsp: In(wr_rsp_stream())
    seed: In(64)
    load: In(1)
    cacheable: In(1)
    busy: In(8)
    got: Out(traffic_counts)
    bad: Out(traffic_counts)

    def elaborate(self, platform):
        m = Module()
        pacing = Pacing(m, "pacing", CHECK_PACING, self.seed, self.load, self.busy)
        self._requests(m, pacing)
        self._orig(m, pacing)
        self._reads(m, pacing)
        self._writes(m, pacing)
        with m.If(self.load):
            m.d.sync += [self.got.eq(0), self.bad.eq(0)]
        return m

    def _lanes(self, m, name, stream, n, advance):
        return Lanes(m, name, stream, n, self.seed, self.load, advance & ~self.load)

    def _take(self, m, channel, layout, fields, want, pause):
        """``channel``'s ready (``want``, not ``pause``) and its check against ``fields``;
        returns the handshake."""
        i = getattr(self, channel.name.lower())
        expected = Signal(layout, name=f"{channel.name.lower()}_expected")
        for name, value in fields.items():
            m.d.comb += getattr(expected, name).eq(value)
        m.d.comb += i.ready.eq(want & ~pause)
        fire = i.valid & i.ready
        with m.If(fire & ~self.load):
            m.d.sync += self.got[channel].eq(self.got[channel] + 1)
            with m.If(i.payload.as_value() != expected.as_value()):
                m.d.sync += self.bad[channel].eq(self.bad[channel] + 1)
        return fire

    def _requests(self, m, pacing):
        fire = Signal()
        header = ReqHeader(m, self._lanes(m, "req_h", REQ_HEADER, 3, fire), self.cacheable)
        m.d.comb += fire.eq(self._take(m, UpliChannel.REQ, request_layout, header.fields, 1,
                                       pacing.pause(UpliChannel.REQ)))

    def _orig(self, m, pacing):
        fire, last = Signal(), Signal()
        k = Signal(2)
        skip = Signal()
        header = ReqHeader(m, self._lanes(m, "orig_h", REQ_HEADER, 3, skip | (fire & last)),
                           self.cacheable)
        beat = ReqData(header, self._lanes(m, "orig_d", REQ_DATA, 10, fire), k)
        fields = {**beat.fields, "data": poisoned(beat.fields["data"], beat.fields["error"])}
        m.d.comb += [last.eq(beat.last), skip.eq(~header.has_data),
                     fire.eq(self._take(m, UpliChannel.ORIG, orig_data_layout, fields,
                                        header.has_data, pacing.pause(UpliChannel.ORIG)))]
        count_beats(m, k, self.load, fire, last)

    def _reads(self, m, pacing):
        fire, last = Signal(), Signal()
        k = Signal(2)
        header = RdHeader(m, self._lanes(m, "rd_h", RD_HEADER, 1, fire & last)[0])
        beat = RdData(header, self._lanes(m, "rd_d", RD_DATA, 9, fire), k)
        fields = {**beat.fields, "data": poisoned(beat.fields["data"], beat.fields["error"]),
                  "src_acc": _compressed(header.status, beat.fields["src_acc"])}
        m.d.comb += [last.eq(beat.last),
                     fire.eq(self._take(m, UpliChannel.RD_RSP, rd_rsp_layout, fields, 1,
                                        pacing.pause(UpliChannel.RD_RSP)))]
        count_beats(m, k, self.load, fire, last)

    def _writes(self, m, pacing):
        fire = Signal()
        header = WrHeader(m, self._lanes(m, "wr", WR, 1, fire)[0])
        fields = {**header.fields,
                  "src_acc": _compressed(header.status, header.fields["src_acc"])}
        m.d.comb += fire.eq(self._take(m, UpliChannel.WR_RSP, wr_rsp_layout, fields, 1,
                                       pacing.pause(UpliChannel.WR_RSP)))


def _compressed(status, src_acc):
    """SRCACCID as delivered: 0 for an OKAY response (sent compressed) [README §5]."""
    return Mux(status == Status.OKAY.value, 0, src_acc)
