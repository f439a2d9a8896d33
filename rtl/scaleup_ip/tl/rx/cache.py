# SPDX-License-Identifier: BSD-2-Clause
"""Rx address cache of the TL receiver [UALink 1.0 §5.5-5.6]: ReqAddr[56:20] per row and way,
in block RAM."""

from types import SimpleNamespace

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ..layout import (
    ACC_BITS,
    CACHE_TAG_BITS,
    CWAY_BITS,
    AddrCacheConfig,
    RxCacheCount,
    rx_cache_counts,
)

__all__ = ["RxAddrCache", "cache_answer_layout", "cache_load_layout", "cache_lookup_layout"]

#: Load an entry: ReqAddr[56:20] ``tag`` into row ``acc``, way ``way`` (CLOAD = 1, CWAY).
cache_load_layout = data.StructLayout({
    "valid": 1, "acc": ACC_BITS, "way": CWAY_BITS, "tag": CACHE_TAG_BITS,
})
#: Read an entry (a compressed request's row and CWAY).
cache_lookup_layout = data.StructLayout({"valid": 1, "acc": ACC_BITS, "way": CWAY_BITS})
#: What a lookup finds: ReqAddr[56:20], and whether the entry was ever loaded.
cache_answer_layout = data.StructLayout({"tag": CACHE_TAG_BITS, "loaded": 1})

#: One entry in block RAM: ReqAddr[56:20] and "loaded" (entries are never invalidated
#: [§5.6.2], so the bit is set by the first load and cleared only by the reset walk).
_entry = data.StructLayout({"tag": CACHE_TAG_BITS, "loaded": 1})


class RxAddrCache(ConfiguredComponent):
    """The Rx address cache: ``rows`` x ``ways`` entries of ReqAddr[56:20], loaded by
    uncompressed requests with CLOAD = 1 and read by compressed requests [§5.6.1].

    The entries are one block RAM of ``rows * ways`` words (address = ``acc * ways + way``;
    4 ways x 1024 rows x 38 bits is ten ECP5 EBRs), with one write port (loads, and the reset
    walk) and one synchronous read port (lookups). An entry that does not exist (``acc >=
    rows`` or ``way >= ways``: the peer's Tx cache is larger) answers "not loaded", and a load
    of one changes nothing and counts an error. Entries are only replaced, never invalidated
    [§5.6.2]. After reset every entry is written "not loaded", one per clock (``busy``).

    Parameters
    ----------
    config : AddrCacheConfig
        ``ways`` and ``rows`` (the other fields are the Tx cache's).

    Members
    -------
    load : In(cache_load_layout)
        Write ``tag`` into the entry at the end of the clock when ``valid``.
    lookup : In(cache_lookup_layout)
        Read an entry when ``valid``.
    answer : Out(cache_answer_layout)
        The entry the last lookup read, from the clock after it until the next lookup; loads
        made after the lookup do not change it. A lookup in the clock of a load of the same
        entry answers the loaded tag (the write-to-read bypass of §5.6.2); a lookup the clock
        after a load reads it from the block RAM.
    use : In(1)
        The current answer is used for one compressed request: it is counted, a clock later,
        as an expansion when loaded, else as an error. (A lookup made ahead and never used is
        not counted.)
    busy : Out(1)
        The reset walk is under way (``rows * ways`` clocks after reset): ``load`` and
        ``lookup`` are ignored.
    counts : Out(rx_cache_counts)
        Loads, expansions and errors (:class:`RxCacheCount`), 32-bit, wrapping.

    Latency: ``answer`` one clock after ``lookup``; counters two clocks after the load or
    ``use``. Throughput: one load and one lookup per clock. Overflow: none.

    Attributes
    ----------
    state : SimpleNamespace
        Set by :meth:`elaborate`: the entries' RAM (``mem``), for the lock-step proof
        (``tb/tl/test_cache_proof.py``). Not a port.
    """

    config_class = AddrCacheConfig

    def __init__(self, config):
        super().__init__(config, {
            "load": In(cache_load_layout),
            "lookup": In(cache_lookup_layout),
            "answer": Out(cache_answer_layout),
            "use": In(1),
            "busy": Out(1, init=1),
            "counts": Out(rx_cache_counts),
        })

    def _address(self, acc, way):
        """``(memory address, the entry exists)`` of row ``acc``, way ``way``."""
        cfg = self._config
        way_bits = (cfg.ways - 1).bit_length()
        depth_bits = (cfg.rows * cfg.ways - 1).bit_length()
        exists = (acc < cfg.rows) & (way < cfg.ways)
        return Cat(way[:way_bits], acc)[:depth_bits], exists

    def elaborate(self, platform):
        m = Module()
        depth = self._config.rows * self._config.ways
        m.submodules.mem = mem = Memory(shape=_entry, depth=depth, init=[])
        wport = mem.write_port()
        rport = mem.read_port(transparent_for=())
        load, lookup = self.load, self.lookup
        load_addr, load_exists = self._address(load.acc, load.way)
        look_addr, look_exists = self._address(lookup.acc, lookup.way)
        write = Signal()
        walk = Signal(range(depth))
        m.d.comb += write.eq(load.valid & load_exists & ~self.busy)
        # Reset walk, then loads.
        with m.If(self.busy):
            m.d.comb += [wport.addr.eq(walk), wport.en.eq(1)]
            m.d.sync += walk.eq(walk + 1)
            with m.If(walk == depth - 1):
                m.d.sync += self.busy.eq(0)
        with m.Else():
            m.d.comb += [
                wport.addr.eq(load_addr), wport.en.eq(write),
                wport.data.tag.eq(load.tag), wport.data.loaded.eq(1),
            ]
        # Lookups; the bypass when a load writes the entry being read.
        fwd = Signal()
        fwd_tag = Signal(CACHE_TAG_BITS)
        exists = Signal()
        m.d.comb += [rport.addr.eq(look_addr), rport.en.eq(lookup.valid & ~self.busy)]
        with m.If(rport.en):
            m.d.sync += [fwd.eq(write & (load_addr == look_addr)), fwd_tag.eq(load.tag),
                         exists.eq(look_exists)]
        m.d.comb += [
            self.answer.tag.eq(Mux(fwd, fwd_tag, rport.data.tag)),
            self.answer.loaded.eq(exists & (fwd | rport.data.loaded)),
        ]
        self._count(m, write, load.valid & ~load_exists & ~self.busy)
        self.state = SimpleNamespace(mem=mem)
        return m

    def _count(self, m, loaded, load_error):
        """The counters, a clock after what they count: each adder's increment is a
        register, so that no request-path logic (nor the block RAM) feeds a carry chain."""
        used, used_loaded, load_q, error_q = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [used.eq(self.use), used_loaded.eq(self.answer.loaded),
                     load_q.eq(loaded), error_q.eq(load_error)]
        c = self.counts
        m.d.sync += [
            c[RxCacheCount.LOADS].eq(c[RxCacheCount.LOADS] + load_q),
            c[RxCacheCount.EXPANSIONS].eq(c[RxCacheCount.EXPANSIONS] + (used & used_loaded)),
            c[RxCacheCount.ERRORS].eq(c[RxCacheCount.ERRORS] + error_q + (used & ~used_loaded)),
        ]
