# SPDX-License-Identifier: BSD-2-Clause
"""Record parser: the words of good frames split into requests and responses."""

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import enum, stream
from amaranth.lib.wiring import In, Out, connect, flipped

from ..config import ConfiguredComponent
from ..counters import count_events
from .config import EthxConfig
from .layout import (
    Kind,
    beyond_sources,
    node_index,
    ParseCount,
    extension_layout,
    parse_counts,
    record_stream,
    request_header_layout,
    request_item_layout,
    request_layout,
    response_item_layout,
)
from .sizes import HeaderSizes

__all__ = ["RecordParse"]


class _Step(enum.Enum, shape=3):
    HEAD = 0        # the next word is a record's header
    EXT = 1         # ... a request's extension word
    EMIT = 2        # a request's header item goes out
    BODY = 3        # the next word is one of the record's data or strobe words
    SKIP = 4        # the rest of the frame is dropped


class RecordParse(ConfiguredComponent):
    """Reads the records of each good frame [README §2] and passes requests to the serving side
    and responses to the requesting side.

    A request's address and attributes are restored from the source's compression state (its
    extension word sets that state); without valid state, or from a source beyond ``sources``,
    it is passed on marked ``stale`` or ``foreign`` for the serving side to refuse. A PAD word
    ends a frame's records. A record of an unknown kind, with a reserved bit set or burst 3, or
    longer than what is left of its frame, is counted and the rest of the frame dropped (records
    before it stand, as in the golden model); no part of a too-long record is passed on.

    Throughput: one word per clock, and one clock more per request for its header item. Latency:
    each word first spends two clocks in :class:`~scaleup_ip.ethx.sizes.HeaderSizes`; then a
    response word passes in the clock it comes, and a request's header item comes out the clock
    after its header (or extension) word. A stalled output stalls the input.

    Members
    -------
    i : ``In(record_stream())``
        Record words of good frames (from :class:`~scaleup_ip.ethx.deframer.EthxDeframer`).
    req : ``Out(stream.Signature(request_item_layout))``
        Requests: a header item, then a WRITE's data and strobe words.
    rsp : ``Out(stream.Signature(response_item_layout))``
        Responses: their header words and data words as they were sent.
    counts : ``Out(parse_counts)``
        :class:`~scaleup_ip.ethx.layout.ParseCount` counters.
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, {
            "i": In(record_stream()),
            "req": Out(stream.Signature(request_item_layout)),
            "rsp": Out(stream.Signature(response_item_layout)),
            "counts": Out(parse_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        m.submodules.sizes = sizes = HeaderSizes()
        connect(m, flipped(self.i), sizes.i)
        i, req, rsp = sizes.o, self.req, self.rsp
        w = i.p.word
        word = w.data
        step = Signal(_Step)
        head = Signal(request_layout)               # the request being passed on
        is_req = Signal()                           # the record is a request (else a response)
        gen = Signal(3)                             # the request's generation
        left = Signal(range(2 * 2048 + 1))          # body words of the record still to come
        data_left = Signal.like(left)               # ... of which data (the rest: strobes)

        # The compression state per source [README §2.1].
        keys = Array(Signal(extension_layout, name=f"key{k}") for k in range(cfg.sources))
        gens = Array(Signal(3, name=f"gen{k}") for k in range(cfg.sources))
        known = Signal(cfg.sources)
        src = node_index(w.node, cfg.sources)
        foreign = Signal()
        m.d.comb += foreign.eq(beyond_sources(w.node, cfg.sources))

        rq = request_header_layout(word)
        ext = extension_layout(word)
        kind = Signal(Kind)
        m.d.comb += kind.eq(rq.kind)
        body, data_words = i.p.body, i.p.data_words
        unknown, malformed, truncated = i.p.unknown, i.p.malformed, i.p.truncated
        bad = unknown | malformed | truncated

        m.d.comb += [req.p.head.eq(head), req.p.word.eq(word), rsp.p.word.eq(word),
                     rsp.p.node.eq(w.node), rsp.p.vc.eq(w.vc)]
        events = {kind_: Signal(name=f"ev_{kind_.name.lower()}") for kind_ in ParseCount}
        skip = Mux(w.last, _Step.HEAD, _Step.SKIP)
        with m.Switch(step):
            with m.Case(_Step.HEAD):
                with m.If(i.valid & (kind == Kind.PAD)):
                    m.d.comb += i.ready.eq(1)
                    m.d.sync += step.eq(skip)
                with m.Elif(i.valid & bad):
                    m.d.comb += [i.ready.eq(1), events[ParseCount.UNKNOWN_KIND].eq(unknown),
                                 events[ParseCount.MALFORMED].eq(malformed),
                                 events[ParseCount.TRUNCATED].eq(truncated)]
                    m.d.sync += step.eq(skip)
                with m.Elif(i.valid & ((kind == Kind.READ) | (kind == Kind.WRITE))):
                    m.d.comb += i.ready.eq(1)
                    m.d.sync += [
                        head.write.eq(kind == Kind.WRITE), head.id.eq(rq.id), head.len.eq(rq.len),
                        head.size.eq(rq.size), head.burst.eq(rq.burst), head.order.eq(rq.order),
                        head.strb.eq(rq.strb), head.addr[:32].eq(rq.addr),
                        head.node.eq(w.node), head.vc.eq(w.vc), head.foreign.eq(foreign),
                        head.addr[32:].eq(keys[src].addr_hi), head.attrs.eq(keys[src].attrs),
                        head.stale.eq(~known.bit_select(src, 1) | (gens[src] != rq.gen) | foreign),
                        gen.eq(rq.gen), left.eq(body), data_left.eq(data_words), is_req.eq(1),
                        step.eq(Mux(rq.ext, _Step.EXT, _Step.EMIT)),
                    ]
                with m.Elif(i.valid):
                    m.d.comb += [rsp.valid.eq(1), rsp.p.first.eq(1), rsp.p.last.eq(body == 0),
                                 i.ready.eq(rsp.ready)]
                    with m.If(rsp.ready):
                        m.d.comb += events[ParseCount.RESPONSES].eq(1)
                        m.d.sync += [left.eq(body), is_req.eq(0),
                                     step.eq(Mux(body == 0, _Step.HEAD, _Step.BODY))]
            with m.Case(_Step.EXT):
                with m.If(i.valid):
                    m.d.comb += i.ready.eq(1)
                    with m.If(ext.zero != 0):
                        m.d.comb += events[ParseCount.MALFORMED].eq(1)
                        m.d.sync += step.eq(skip)
                    with m.Else():
                        m.d.sync += [head.addr[32:].eq(ext.addr_hi), head.attrs.eq(ext.attrs),
                                     head.stale.eq(foreign), step.eq(_Step.EMIT)]
                        with m.If(~foreign):
                            m.d.sync += [keys[src].eq(ext), gens[src].eq(gen),
                                         known.bit_select(src, 1).eq(1)]
            with m.Case(_Step.EMIT):
                m.d.comb += [req.valid.eq(1), req.p.first.eq(1), req.p.last.eq(left == 0)]
                with m.If(req.ready):
                    m.d.comb += [events[ParseCount.REQUESTS].eq(1),
                                 events[ParseCount.STALE].eq(head.stale & ~head.foreign),
                                 events[ParseCount.FOREIGN].eq(head.foreign)]
                    m.d.sync += step.eq(Mux(left == 0, _Step.HEAD, _Step.BODY))
            with m.Case(_Step.BODY):
                out = Mux(is_req, req.ready, rsp.ready)
                m.d.comb += [req.valid.eq(i.valid & is_req), rsp.valid.eq(i.valid & ~is_req),
                             req.p.strobe.eq(data_left == 0), req.p.last.eq(left == 1),
                             rsp.p.last.eq(left == 1), i.ready.eq(out)]
                with m.If(i.valid & out):
                    m.d.sync += [left.eq(left - 1), data_left.eq(data_left - (data_left != 0))]
                    with m.If(left == 1):
                        m.d.sync += step.eq(_Step.HEAD)
            with m.Case(_Step.SKIP):
                m.d.comb += i.ready.eq(1)
                with m.If(i.valid & w.last):
                    m.d.sync += step.eq(_Step.HEAD)
        count_events(m, self.counts, events)
        return m
