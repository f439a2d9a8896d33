# SPDX-License-Identifier: BSD-2-Clause
"""Transmit framer: a frame's record words in, a whole Ethernet frame out."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, enum
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import ConfiguredComponent
from ..crc import Crc32, CrcConfig
from ..counters import count_events
from ..model.ethx.bridge import ETHERTYPE, MIN_WORDS, VERSION
from .config import EthxConfig
from .eth_out import EthOut
from .layout import (
    MAC_PREFIX,
    NODE_BITS,
    WORD_BITS,
    FramerCount,
    eth_header_layout,
    eth_stream,
    framer_counts,
    record_stream,
)

__all__ = ["EthxFramer"]


class _Step(enum.Enum, shape=3):
    IDLE = 0
    HDR0 = 1
    HDR1 = 2
    RECORDS = 3
    PAD = 4
    FCS = 5
    DROP = 6


class EthxFramer(ConfiguredComponent):
    """Wraps each frame's record words in an Ethernet frame [README §1] and sends it whole.

    A frame's words are written into a frame buffer (block RAM, :meth:`EthxConfig.buffer_rows`
    of ``tx_frames`` largest frames) behind the two header words, padded with zero words to 6
    record words, and the FCS, computed by the CRC engine as the words go in, is written after
    them (``fcs``). Only then is the frame sent, from its first byte to its last without a
    pause, so a MAC never underruns. Frames start on a buffer row.

    Throughput: one record word per clock in, plus 2 header clocks, the padding and, with
    ``fcs``, the CRC engine's latency per frame; one beat per clock out. Latency from a frame's
    last word to its first beat: the padding plus the CRC latency plus 3 clocks.

    A frame is started only when the buffer has room for a largest frame. Words past the MTU's
    :attr:`EthxConfig.record_words` end the frame there; the rest of that input frame is taken
    and dropped, counted in ``counts[CUT]``.

    Members
    -------
    i : ``In(record_stream())``
        Record words; ``node`` and ``vc`` of a frame's first word name its destination and VC.
    o : ``Out(eth_stream(eth_width))``
        Frames: ``DA SA EtherType link-header records [FCS]``; ``user`` is 0.
    node : ``In(16)``
        This node's ID, the frames' source address.
    busy : ``Out(1)``
        A whole frame is waiting or going out: a frame closed now would not leave sooner
        than when this falls (the :class:`~scaleup_ip.ethx.aggregate.Aggregator` keeps filling).
    counts : ``Out(framer_counts)``
        :class:`~scaleup_ip.ethx.layout.FramerCount` counters.
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(record_stream()),
            "o": Out(eth_stream(c.eth_width)),
            "node": In(NODE_BITS),
            "busy": Out(1),
            "counts": Out(framer_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        rows = cfg.buffer_rows(cfg.tx_frames)
        m.submodules.buffer = mem = Memory(shape=data.ArrayLayout(WORD_BITS, cfg.lanes),
                                           depth=rows, init=[])
        m.submodules.out = out = EthOut(cfg, mem.read_port(), rows)
        m.d.comb += [self.o.payload.eq(out.o.payload), self.o.valid.eq(out.o.valid),
                     out.o.ready.eq(self.o.ready)]
        m.submodules.frames = frames = SyncFIFO(width=out.frame.payload.shape().size, depth=4)
        m.d.comb += [out.frame.payload.eq(frames.r_data), out.frame.valid.eq(frames.r_rdy),
                     frames.r_en.eq(out.frame.ready), self.busy.eq(frames.r_rdy | out.sending)]
        self._write(m, mem.write_port(granularity=1), out, frames)
        return m

    def _header(self, m, dst, vc):
        """The two header words for a frame to ``dst`` on ``vc``."""
        header = Signal(eth_header_layout)
        m.d.comb += [
            header.da_prefix.eq(MAC_PREFIX), header.da_hi.eq(dst[8:]), header.da_lo.eq(dst[:8]),
            header.sa_prefix.eq(MAC_PREFIX), header.sa_hi.eq(self.node[8:]),
            header.sa_lo.eq(self.node[:8]),
            header.type_hi.eq(ETHERTYPE >> 8), header.type_lo.eq(ETHERTYPE & 0xFF),
            header.link.version.eq(VERSION), header.link.vc.eq(vc),
        ]
        bits = header.as_value()
        return bits[:WORD_BITS], bits[WORD_BITS:]

    def _write(self, m, wr, out, frames):
        cfg = self.config
        i = self.i
        step = Signal(_Step)
        dst, vc = Signal(NODE_BITS), Signal.like(i.payload.vc)
        start = Signal.like(out.read_row)       # the frame's first row (with the wrap bit)
        index = Signal(range(cfg.frame_words + 1))  # the frame's next word
        records = Signal(range(cfg.record_words + 1))
        hdr0, hdr1 = self._header(m, dst, vc)
        used = Signal.like(start)
        m.d.comb += used.eq(start - out.read_row)
        room = (used <= (1 << (len(start) - 1)) - cfg.frame_rows) & frames.w_rdy

        word, valid, last = Signal(WORD_BITS), Signal(), Signal()
        full = records == cfg.record_words - 1     # the word going in is the MTU's last
        with m.Switch(step):
            with m.Case(_Step.HDR0):
                m.d.comb += [word.eq(hdr0), valid.eq(1)]
            with m.Case(_Step.HDR1):
                m.d.comb += [word.eq(hdr1), valid.eq(1)]
            with m.Case(_Step.RECORDS):
                m.d.comb += [word.eq(i.payload.data), valid.eq(i.valid),
                             last.eq((i.payload.last | full) & (records >= MIN_WORDS - 1))]
            with m.Case(_Step.PAD):
                m.d.comb += [valid.eq(1), last.eq(records == MIN_WORDS - 1)]

        if cfg.fcs:
            m.submodules.crc = crc = Crc32(CrcConfig(data_width=WORD_BITS, pipeline=1))
            m.d.comb += [crc.i.payload.data.eq(word), crc.i.payload.keep.eq(0xFF),
                         crc.i.payload.last.eq(last), crc.i.valid.eq(valid)]
            go = valid & crc.i.ready
        else:
            go = valid
        lanes = cfg.lanes.bit_length() - 1
        m.d.comb += [wr.addr.eq((start + (index >> lanes))[:len(wr.addr)]),
                     wr.data.eq(Cat(*[word] * cfg.lanes)),
                     wr.en.eq(Mux(go, 1 << index[:lanes] if lanes else 1, 0))]
        with m.If(go):
            m.d.sync += index.eq(index + 1)
        with m.If(go & ((step == _Step.RECORDS) | (step == _Step.PAD))):
            m.d.sync += records.eq(records + 1)

        took = go & (step == _Step.RECORDS)
        m.d.comb += i.ready.eq(took | (step == _Step.DROP))
        cut = took & full & ~i.payload.last
        ended = go & last                          # the records and padding are all in
        cut_seen = Signal()
        with m.If(cut):
            m.d.sync += cut_seen.eq(1)
        with m.If((step == _Step.IDLE)):
            m.d.sync += cut_seen.eq(0)
        m.d.comb += frames.w_data.eq(Cat(index + go, cfg.fcs))
        with m.Switch(step):
            with m.Case(_Step.IDLE):
                with m.If(i.valid & room):
                    m.d.sync += [step.eq(_Step.HDR0), dst.eq(i.payload.node), vc.eq(i.payload.vc),
                                 index.eq(0), records.eq(0)]
            with m.Case(_Step.HDR0):
                with m.If(go):
                    m.d.sync += step.eq(_Step.HDR1)
            with m.Case(_Step.HDR1):
                with m.If(go):
                    m.d.sync += step.eq(_Step.RECORDS)
            with m.Case(_Step.RECORDS, _Step.PAD):
                with m.If(ended):
                    m.d.sync += step.eq(_Step.FCS if cfg.fcs else _Step.IDLE)
                    if not cfg.fcs:
                        m.d.comb += frames.w_en.eq(1)
                        m.d.sync += start.eq(start + ((index + 1 + (1 << lanes) - 1) >> lanes))
                        with m.If(cut):
                            m.d.sync += step.eq(_Step.DROP)
                with m.Elif(took & i.payload.last):
                    m.d.sync += step.eq(_Step.PAD)
            with m.Case(_Step.FCS):
                if cfg.fcs:
                    m.d.comb += [crc.o.ready.eq(1), wr.data.eq(Cat(*[crc.o.payload.crc, Const(0, 32)] * cfg.lanes)),
                                 wr.en.eq(Mux(crc.o.valid, 1 << index[:lanes] if lanes else 1, 0)),
                                 frames.w_en.eq(crc.o.valid),
                                 frames.w_data.eq(Cat(index, 1))]
                    with m.If(crc.o.valid):
                        m.d.sync += [step.eq(Mux(cut_seen, _Step.DROP, _Step.IDLE)),
                                     start.eq(start + ((index + 1 + (1 << lanes) - 1) >> lanes))]
            with m.Case(_Step.DROP):
                with m.If(i.valid & i.payload.last):
                    m.d.sync += step.eq(_Step.IDLE)
        count_events(m, self.counts, {
            FramerCount.FRAMES: frames.w_en,
            FramerCount.WORDS: took,
            FramerCount.CUT: cut,
        })
