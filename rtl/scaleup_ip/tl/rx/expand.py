# SPDX-License-Identifier: BSD-2-Clause
"""Rx address cache stage of the TL receiver: requests, in order, load the cache or are
expanded by it [UALink 1.0 §5.6]."""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layout import CACHE_TAG_LSB, TlConfig, cached_request_layout, rx_cache_counts
from .cache import RxAddrCache
from .req_out import expanded_request_layout

__all__ = ["RequestExpand"]


class RequestExpand(wiring.Component):
    """The Rx address cache applied to the requests, one at a time in arrival order: an
    uncompressed request with CLOAD = 1 loads its ReqAddr[56:20] into (row, CWAY), a compressed
    one gets ReqAddr[56:20] from (row, CWAY) [§5.6.1]; the row is ReqDstPhysAccID or
    ReqSrcPhysAccID (``cache_rx_index``).

    Each request passes two registers, beside the cache's two read stages: as it enters the
    first its lookup is read from block RAM, as it enters the second its answer is taken into
    the block RAM's output register. It loads the cache as it leaves the first, so that a load
    precedes every lookup of a later request: in the same clock (the cache's bypass) or later.
    So a CLOAD is visible to the compressed requests after it, also in the same control
    half-flit [§5.6.2], and a compressed request before it still sees the entry as it was.

    A compressed request naming an entry that was never loaded, or a row or way the cache
    lacks, is never given an address: [ours, after the Drop Mode of §5.5] it and every request
    after it leave marked ``drop`` (the delivery drains them with their data), the cache is not
    touched any more, and ``error`` reports the first one (README §4). A CLOAD to an entry the
    cache lacks is counted as a cache error and changes nothing; its request, which carries its
    whole address, is delivered.

    Parameters
    ----------
    config : TlConfig
        ``cache_ways``, ``cache_rows`` and ``cache_rx_index`` (:attr:`TlConfig.rx_cache`).

    Members
    -------
    head : In(stream.Signature(cached_request_layout))
        The oldest request in the receive buffer.
    direct : In(cached_request_layout), direct_valid : In(1)
        A request taken while ``idle`` (and ``head`` is empty).
    idle : Out(1)
        The first register is empty and the cache is not busy (registers).
    o : Out(stream.Signature(expanded_request_layout))
        Requests out, expanded or marked ``drop``.
    error : Out(1)
        The first request that could not be expanded left, one clock ago (a pulse).
    counts : Out(rx_cache_counts)
        The cache's counters (:class:`~scaleup_ip.tl.rx.cache.RxAddrCache`).

    Latency: a request is on ``o`` two clocks after it is taken, while the cache is not busy
    (after reset it is, for ``cache_rows * cache_ways`` clocks: requests wait in the receive
    buffers). Throughput: one request per clock. Overflow: none (``head.ready``).
    """

    def __init__(self, config):
        if not isinstance(config, TlConfig) or config.rx_cache is None:
            raise TypeError(f"RequestExpand needs a TlConfig with an Rx cache, not {config!r}")
        self._config = config
        super().__init__({
            "head": In(stream.Signature(cached_request_layout)),
            "direct": In(cached_request_layout),
            "direct_valid": In(1),
            "idle": Out(1),
            "o": Out(stream.Signature(expanded_request_layout)),
            "error": Out(1),
            "counts": Out(rx_cache_counts),
        })

    def _row(self, req):
        return req.dst_acc if self._config.rx_cache.index == "DSTACCID" else req.src_acc

    def elaborate(self, platform):
        m = Module()
        m.submodules.cache = cache = RxAddrCache(self._config.rx_cache)
        # Stage 1: the request whose lookup the cache's first stage holds; stage 2: with its
        # answer in the cache's output register.
        e1, e2 = Signal(cached_request_layout), Signal(cached_request_layout)
        v1, v2 = Signal(), Signal()
        answer = cache.answer
        dropping = Signal()                     # a request could not be expanded (sticky)
        take, advance, leave = Signal(), Signal(), Signal()
        nxt = Signal(cached_request_layout)
        m.d.comb += [
            self.idle.eq(~v1 & ~cache.busy),
            leave.eq(v2 & self.o.ready),
            advance.eq(v1 & (~v2 | self.o.ready)),
            take.eq((~v1 | advance) & ~cache.busy),
            self.head.ready.eq(take),
            nxt.eq(Mux(self.head.valid, self.head.payload, self.direct)),
            self.counts.eq(cache.counts),
        ]
        with m.If(take):
            m.d.sync += [e1.eq(nxt), v1.eq(self.head.valid | self.direct_valid)]
        with m.If(advance):
            m.d.sync += [e2.eq(e1), v2.eq(1)]
        with m.Elif(leave):
            m.d.sync += v2.eq(0)
        # Stage 2's request could not be expanded: nothing after it touches the cache.
        miss = e2.cache.compressed & ~answer.loaded
        stop = dropping | (v2 & miss)
        # The lookup as a request enters stage 1, the load as it leaves it, the count as it
        # leaves stage 2.
        m.d.comb += [
            cache.lookup.valid.eq(take & nxt.cache.compressed & ~dropping),
            cache.lookup.acc.eq(self._row(nxt.req)), cache.lookup.way.eq(nxt.cache.cway),
            cache.advance.eq(advance),
            cache.load.valid.eq(advance & e1.cache.cload & ~stop),
            cache.load.acc.eq(self._row(e1.req)), cache.load.way.eq(e1.cache.cway),
            cache.load.tag.eq(e1.req.addr[CACHE_TAG_LSB:]),
            cache.use.eq(leave & e2.cache.compressed & ~dropping),
        ]
        # Out: the cached tag in place of ReqAddr[56:20], or the mark.
        o = self.o.payload
        m.d.comb += [self.o.valid.eq(v2), o.req.eq(e2.req), o.drop.eq(dropping | miss)]
        with m.If(e2.cache.compressed):
            m.d.comb += o.req.addr[CACHE_TAG_LSB:].eq(answer.tag)
        with m.If(leave & miss):
            m.d.sync += dropping.eq(1)
        m.d.sync += self.error.eq(leave & miss & ~dropping)
        return m
