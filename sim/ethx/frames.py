# SPDX-License-Identifier: BSD-2-Clause
"""Numbered bridge frames made and checked in hardware, for runs too long for a testbench that
handles every beat (the link benchmark's goodput points and its 10^6-frame run).

A frame of ``words`` record words is the bridge header of
:func:`scaleup_ip.model.ethx.bridge.header`, then its number (a 64-bit little-endian word counting
from 0), then ``words - 1`` zero words.
"""

from amaranth import Cat, Const, Module, Mux, Shape, Signal
from amaranth.lib.wiring import In, Out

from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.ethx.link import LinkConfig, eth_stream
from scaleup_ip.model.ethx import bridge as bridge_model

__all__ = ["FrameCheck", "FrameSource"]

#: The number's bytes: the first record word.
_NUMBER_AT = bridge_model.HEADER_BYTES
_NUMBER_END = _NUMBER_AT + bridge_model.WORD
_COUNT_BITS = 32


def _words_shape(config):
    return range(bridge_model.capacity(config.mtu) + 1)


def _rows(config, words):
    """Beats of a frame of ``words`` record words (a whole number at every width)."""
    return config.rows(bridge_model.HEADER_BYTES + bridge_model.WORD * words)


class FrameSource(ConfiguredComponent):
    """Frames from ``src`` to ``dst`` on VC 0, back to back while ``enable`` is high (sampled
    at each frame's start); ``words`` (6 up to the MTU's capacity) sampled at each beat, so
    change it only while disabled. ``frames`` counts the frames sent whole."""

    config_class = LinkConfig

    def __init__(self, config, dst, src):
        self._header = int.from_bytes(bridge_model.header(dst, src), "little")
        super().__init__(config, lambda c: {
            "o": Out(eth_stream(c.eth_width)),
            "enable": In(1), "words": In(_words_shape(c)),
            "frames": Out(_COUNT_BITS),
        })

    def elaborate(self, platform):
        cfg, o = self.config, self.o
        m = Module()
        number = Signal(8 * bridge_model.WORD)
        prefix = Cat(Const(self._header, 8 * bridge_model.HEADER_BYTES), number)
        k = Signal(range(_rows(cfg, bridge_model.capacity(cfg.mtu)) + 1))
        head_rows = _NUMBER_END // cfg.eth_bytes
        last = k == _rows(cfg, self.words) - 1
        index = k[:Shape.cast(range(head_rows)).width]
        m.d.comb += [o.p.data.eq(Mux(k < head_rows, prefix.word_select(index, cfg.eth_width), 0)),
                     o.p.keep.eq((1 << cfg.eth_bytes) - 1), o.p.last.eq(last), o.p.user.eq(0)]
        with m.If(~o.valid):
            m.d.sync += o.valid.eq(self.enable)
        with m.If(o.valid & o.ready):
            m.d.sync += k.eq(k + 1)
            with m.If(last):
                m.d.sync += [k.eq(0), o.valid.eq(self.enable), number.eq(number + 1),
                             self.frames.eq(self.frames + 1)]
        return m


class FrameCheck(ConfiguredComponent):
    """Frames of :class:`FrameSource` taken at once (``i.ready`` is high): ``frames`` counts
    them, ``bad`` those whose number is not the next or whose length is not ``words``."""

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)), "words": In(_words_shape(c)),
            "frames": Out(_COUNT_BITS), "bad": Out(_COUNT_BITS),
        })

    def elaborate(self, platform):
        cfg, i = self.config, self.i
        m = Module()
        width = cfg.eth_bytes
        k_max = _rows(cfg, bridge_model.capacity(cfg.mtu)) + 1
        k = Signal(range(k_max + 1))
        expected = Signal(8 * bridge_model.WORD)
        number = Signal(8 * bridge_model.WORD)
        take = i.valid & i.ready
        m.d.comb += i.ready.eq(1)
        bytes_now = []
        for b in range(_NUMBER_AT, _NUMBER_END):
            lane = i.p.data.word_select(b % width, 8)
            held = number.word_select(b - _NUMBER_AT, 8)
            bytes_now.append(Mux(k == b // width, lane, held))
            with m.If(take & (k == b // width)):
                m.d.sync += held.eq(lane)
        got = Cat(*bytes_now)
        with m.If(take):
            m.d.sync += k.eq(Mux(k == k_max, k, k + 1))      # saturates past any frame
            with m.If(i.p.last):
                wrong = (got != expected) | (k != _rows(cfg, self.words) - 1)
                m.d.sync += [k.eq(0), expected.eq(expected + 1),
                             self.frames.eq(self.frames + 1), self.bad.eq(self.bad + wrong)]
        return m
