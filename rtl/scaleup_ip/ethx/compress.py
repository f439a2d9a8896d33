# SPDX-License-Identifier: BSD-2-Clause
"""Address compression on the way out: a request's extension word dropped when the destination
already has its key [README §2.1]."""

from amaranth import Array, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from ..config import ConfiguredComponent
from .config import EthxConfig
from .layout import (
    beyond_sources,
    extension_layout,
    node_index,
    record_stream,
    record_word_layout,
    request_header_layout,
)

__all__ = ["Compress"]

#: Where ``ext`` and ``gen`` sit in a request header word, from its layout.
_EXT_AT = request_header_layout["ext"].offset
_GEN_AT = request_header_layout["gen"].offset
_EXT_GEN = (1 << _EXT_AT) | (0b111 << _GEN_AT)


class Compress(ConfiguredComponent):
    """Compresses request records against the per-destination state [README §2.1].

    Every request comes in with its extension word (word 1, the key). If the destination's
    state holds that key, the extension is dropped and the header carries the state's
    generation; otherwise the extension stays, the generation advances (mod 8) and the key
    becomes the state. ``left`` of a record's first word is corrected. Throughput: one word
    per clock, less the dropped extension words; latency one clock. The destination's state is
    read into registers with the header, so the key compare starts from flops. A reset forgets every
    state, so the first request to each destination after it carries its extension.

    Destinations at or above ``sources`` keep no state: their requests always carry the
    extension, with generation 1 (as from a fresh state).

    Members
    -------
    i : ``In(record_stream())``
        Request records, each with its extension word.
    o : ``Out(record_stream())``
        The same records, compressed.
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, {"i": In(record_stream()), "o": Out(record_stream())})

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        i, o = self.i, self.o
        keys = Array(Signal(extension_layout, name=f"key{k}") for k in range(cfg.sources))
        gens = Array(Signal(3, name=f"gen{k}") for k in range(cfg.sources))
        known = Signal(cfg.sources)
        held = Signal(record_word_layout)       # the header, until its extension is seen
        # The destination's state, read when its header is taken, so that the extension's
        # compare starts from flops.
        key, known_key = Signal(extension_layout), Signal()
        gen_now, gen_next = Signal(3), Signal(3)
        left_less = Signal.like(held.left)
        index = node_index(held.node, cfg.sources)
        local = ~beyond_sources(held.node, cfg.sources)
        came = node_index(i.p.node, cfg.sources)
        word = Signal(2)                        # 0: a header comes, 1: its extension, 2: body
        hit = local & known_key & (key.as_value() == i.p.data)
        gen = Mux(local, Mux(hit, gen_now, gen_next), 1)   # 1: as a fresh state
        out_header = Signal(record_word_layout)
        m.d.comb += [out_header.eq(held), out_header.left.eq(Mux(hit, left_less, held.left)),
                     out_header.last.eq(hit & i.p.last),
                     # ext and gen in the header word [README §2.1]
                     out_header.data.eq(held.data & ~_EXT_GEN | gen << _GEN_AT | ~hit << _EXT_AT)]
        with m.If((word == 0) & i.valid):
            m.d.sync += [key.eq(keys[came]), known_key.eq(known.bit_select(came, 1)),
                         gen_now.eq(gens[came]), gen_next.eq(gens[came] + 1),
                         left_less.eq(i.p.left - 1)]
        with m.Switch(word):
            with m.Case(0):
                m.d.comb += i.ready.eq(1)
                with m.If(i.valid):
                    m.d.sync += [held.eq(i.p), word.eq(1)]
            with m.Case(1):
                # The header goes out with the extension's verdict; the extension waits.
                m.d.comb += [o.valid.eq(i.valid), o.p.eq(out_header),
                             i.ready.eq(o.ready & hit)]
                with m.If(i.valid & o.ready):
                    with m.If(local & ~hit):
                        m.d.sync += [keys[index].eq(i.p.data), gens[index].eq(gen),
                                     known.bit_select(index, 1).eq(1)]
                    m.d.sync += word.eq(Mux(hit & i.p.last, 0, 2))
            with m.Case(2):
                m.d.comb += [o.valid.eq(i.valid), o.p.eq(i.p), i.ready.eq(o.ready)]
                with m.If(i.valid & o.ready & i.p.last):
                    m.d.sync += word.eq(0)
        return m
