"""Rx address cache stage of the TL receiver: requests, in order, load the cache or are
expanded by it [UALink 1.0 §5.6]."""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .layout import CACHE_TAG_LSB, TlConfig, cached_request_layout, rx_cache_counts
from .rx_cache import RxAddrCache
from .rx_req_out import expanded_request_layout

__all__ = ["RequestExpand"]


class RequestExpand(wiring.Component):
    """The Rx address cache applied to the requests, one at a time in arrival order: an
    uncompressed request with CLOAD = 1 loads its ReqAddr[56:20] into (row, CWAY), a compressed
    one gets ReqAddr[56:20] from (row, CWAY) [§5.6.1]; the row is ReqDstPhysAccID or
    ReqSrcPhysAccID (``cache_rx_index``).

    Each request waits in one register while its lookup is read from block RAM, and it loads
    the cache when it leaves that register, so that a load precedes every lookup of a later
    request: in the same clock (the cache's bypass) or later. So a CLOAD is visible to the
    compressed requests after it, also in the same control half-flit [§5.6.2], and a
    compressed request before it still sees the entry as it was.

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
        Nothing waits here and the cache is not busy (registers).
    o : Out(stream.Signature(expanded_request_layout))
        Requests out, expanded or marked ``drop``.
    error : Out(1)
        The first request that could not be expanded left, one clock ago (a pulse).
    counts : Out(rx_cache_counts)
        The cache's counters (:class:`~rtl.tl.rx_cache.RxAddrCache`).

    Latency: a request is on ``o`` the clock after it is taken, while the cache is not busy
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
        e = Signal(cached_request_layout)       # the request whose lookup is being read
        v = Signal()
        dropping = Signal()                     # a request could not be expanded (sticky)
        take = Signal()
        leave = Signal()
        nxt = Signal(cached_request_layout)
        m.d.comb += [
            self.idle.eq(~v & ~cache.busy),
            take.eq((~v | self.o.ready) & ~cache.busy),
            self.head.ready.eq(take),
            leave.eq(v & self.o.ready),
            nxt.eq(Mux(self.head.valid, self.head.payload, self.direct)),
            self.counts.eq(cache.counts),
        ]
        with m.If(take):
            m.d.sync += [e.eq(nxt), v.eq(self.head.valid | self.direct_valid)]
        # The lookup as a request is taken, the load as it leaves (not after a drop).
        m.d.comb += [
            cache.lookup.valid.eq(take & nxt.cache.compressed & ~dropping),
            cache.lookup.acc.eq(self._row(nxt.req)), cache.lookup.way.eq(nxt.cache.cway),
            cache.load.valid.eq(leave & e.cache.cload & ~dropping),
            cache.load.acc.eq(self._row(e.req)), cache.load.way.eq(e.cache.cway),
            cache.load.tag.eq(e.req.addr[CACHE_TAG_LSB:]),
        ]
        # Out: the cached tag in place of ReqAddr[56:20], or the mark.
        miss = e.cache.compressed & ~cache.answer.loaded
        o = self.o.payload
        m.d.comb += [
            self.o.valid.eq(v),
            o.req.eq(e.req),
            o.drop.eq(dropping | miss),
            cache.use.eq(leave & e.cache.compressed & ~dropping),
        ]
        with m.If(e.cache.compressed):
            m.d.comb += o.req.addr[CACHE_TAG_LSB:].eq(cache.answer.tag)
        with m.If(leave & miss):
            m.d.sync += dropping.eq(1)
        m.d.sync += self.error.eq(leave & miss & ~dropping)
        return m
