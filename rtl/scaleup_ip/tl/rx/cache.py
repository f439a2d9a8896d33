# SPDX-License-Identifier: BSD-2-Clause
"""Rx address cache of the TL receiver [UALink 1.0 §5.5-5.6]: ReqAddr[56:20] per row and way,
in block RAM."""

from types import SimpleNamespace

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ...ram import PipelinedRam
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
#: Beside a lookup in each read stage: the tag a load of the same entry wrote in the clock of
#: the lookup (``fwd``), and whether the entry exists.
_bypass = data.StructLayout({"fwd": 1, "tag": CACHE_TAG_BITS, "exists": 1})


class RxAddrCache(ConfiguredComponent):
    """The Rx address cache: ``rows`` x ``ways`` entries of ReqAddr[56:20], loaded by
    uncompressed requests with CLOAD = 1 and read by compressed requests [§5.6.1].

    The entries are one block RAM of ``rows * ways`` words (address = ``acc * ways + way``;
    4 ways x 1024 rows x 38 bits is ten ECP5 EBRs), with one write port (loads, and the reset
    walk) and one read port read through two registers (:class:`~scaleup_ip.ram.PipelinedRam`:
    on ECP5 the block RAM's own address and output registers, so that the answer leaves a
    register about 1 ns after the clock). An entry that does not exist (``acc >= rows`` or
    ``way >= ways``: the peer's Tx cache is larger) answers "not loaded", and a load of one
    changes nothing and counts an error. Entries are only replaced, never invalidated
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
        Read an entry into the first stage when ``valid``; the first stage keeps it
        otherwise. A lookup in the clock of a load of the same entry reads the loaded tag (the
        write-to-read bypass of §5.6.2); loads made after the lookup do not change what it
        read.
    advance : In(1)
        The answer takes what the first stage holds; it keeps it otherwise.
    answer : Out(cache_answer_layout)
        The entry of the lookup the last ``advance`` took.
    use : In(1)
        The current answer is used for one compressed request: it is counted, a clock later,
        as an expansion when loaded, else as an error. (A lookup made ahead and never used is
        not counted.)
    busy : Out(1)
        The reset walk is under way (``rows * ways`` clocks after reset): ``load`` and
        ``lookup`` are ignored.
    counts : Out(rx_cache_counts)
        Loads, expansions and errors (:class:`RxCacheCount`), 32-bit, wrapping.

    Latency: ``answer`` two clocks after ``lookup`` when ``advance`` is set in the clock after
    it; counters two clocks after the load or ``use``. Throughput: one load and one lookup per
    clock. Overflow: none.

    Attributes
    ----------
    state : SimpleNamespace
        Set by :meth:`elaborate`: the entries' RAM (``mem``, the Amaranth ``Memory`` of bits
        that :class:`~scaleup_ip.ram.PipelinedRam` uses off ECP5) and the layout of its words
        (``entry``), for the lock-step proof (``tb/tl/test_cache_proof.py``). Not a port.
    """

    config_class = AddrCacheConfig

    def __init__(self, config):
        super().__init__(config, {
            "load": In(cache_load_layout),
            "lookup": In(cache_lookup_layout),
            "advance": In(1),
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
        m.submodules.ram = ram = PipelinedRam(_entry.size, depth)
        self.state = SimpleNamespace(mem=ram.memory, entry=_entry)
        load, lookup = self.load, self.lookup
        load_addr, load_exists = self._address(load.acc, load.way)
        look_addr, look_exists = self._address(lookup.acc, lookup.way)
        write = Signal()
        walk = Signal(range(depth))
        stored = Signal(_entry)
        m.d.comb += [write.eq(load.valid & load_exists & ~self.busy),
                     stored.tag.eq(load.tag), stored.loaded.eq(1)]
        # Reset walk, then loads.
        with m.If(self.busy):
            m.d.comb += [ram.w_addr.eq(walk), ram.w_en.eq(1)]
            m.d.sync += walk.eq(walk + 1)
            with m.If(walk == depth - 1):
                m.d.sync += self.busy.eq(0)
        with m.Else():
            m.d.comb += [ram.w_addr.eq(load_addr), ram.w_en.eq(write), ram.w_data.eq(stored)]
        # Lookups, through the RAM's two registers; beside them, whether the entry exists and
        # the bypass when a load writes the entry being read (both stages).
        first = Signal(_bypass)
        second = Signal(_bypass)
        m.d.comb += [ram.r_addr.eq(look_addr), ram.r_en.eq(lookup.valid & ~self.busy),
                     ram.r_out_en.eq(self.advance)]
        with m.If(ram.r_en):
            m.d.sync += [first.fwd.eq(write & (load_addr == look_addr)),
                         first.tag.eq(load.tag), first.exists.eq(look_exists)]
        with m.If(self.advance):
            m.d.sync += second.eq(first)
        read = _entry(ram.r_data)
        m.d.comb += [
            self.answer.tag.eq(Mux(second.fwd, second.tag, read.tag)),
            self.answer.loaded.eq(second.exists & (second.fwd | read.loaded)),
        ]
        self._count(m, write, load.valid & ~load_exists & ~self.busy)
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
