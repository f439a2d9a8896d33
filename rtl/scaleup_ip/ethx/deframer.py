# SPDX-License-Identifier: BSD-2-Clause
"""Receive deframer: Ethernet frames in, the record words of the good ones out."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import ConfiguredComponent
from ..counters import count_events
from ..crc import Crc32, CrcConfig
from ..model.ethx.bridge import ETHERTYPE, HEADER_BYTES, VERSION, WORD
from .config import EthxConfig
from .frame_reader import FrameReader, stored_layout
from .layout import (
    MAC_PREFIX,
    NODE_BITS,
    VC_BITS,
    WORD_BITS,
    DeframerCount,
    deframer_counts,
    eth_header_layout,
    eth_stream,
    record_stream,
)

__all__ = ["EthxDeframer"]

_PENDING = 8        # frames whose CRC result is awaited


class EthxDeframer(ConfiguredComponent):
    """Checks each received frame whole and passes on the record words of the good ones.

    Every frame is written into a receive buffer (block RAM, :meth:`EthxConfig.buffer_rows` of
    ``rx_frames`` longest frames) while its FCS (``fcs``), length and headers are checked
    [README §1]; when its CRC result is in, it is either passed on, one record word per clock,
    or dropped and counted by the first error in the order of
    :class:`~scaleup_ip.ethx.layout.DeframerCount`. Nothing of a bad frame reaches ``o``. The words
    after a PAD record are passed on; the record parser ignores them.

    ``i.ready`` falls at a frame's first beat until the buffer has room for a longest frame
    (and for a clock after each frame's end, while that room is worked out again), and when
    ``o`` backs up; so with a channel that honours ``ready`` nothing is lost. An
    oversized frame is taken to its end and only its first rows are kept. A frame's end is
    registered and classified the clock after. Latency from a frame's last beat to its first
    word: the CRC engine's latency plus about 5 clocks.

    Members
    -------
    i : ``In(eth_stream(eth_width))``
        Frames with their FCS (``fcs``) or without; ``user`` on a last beat marks a frame the
        MAC found bad.
    o : ``Out(record_stream())``
        Record words of good frames; ``node`` is the frame's source, ``last`` on its last word.
    node : ``In(16)``
        This node's ID: frames for another destination are dropped.
    counts : ``Out(deframer_counts)``
        :class:`~scaleup_ip.ethx.layout.DeframerCount` counters.
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)),
            "o": Out(record_stream()),
            "node": In(NODE_BITS),
            "counts": Out(deframer_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        rows = cfg.buffer_rows(cfg.rx_frames)
        m.submodules.buffer = mem = Memory(shape=data.ArrayLayout(WORD_BITS, cfg.lanes),
                                           depth=rows, init=[])
        m.submodules.reader = reader = FrameReader(cfg, mem.read_port(), rows)
        m.d.comb += [self.o.payload.eq(reader.o.payload), self.o.valid.eq(reader.o.valid),
                     reader.o.ready.eq(self.o.ready)]
        layout = stored_layout(cfg, rows)
        m.submodules.stored = stored = SyncFIFO(width=layout.size, depth=8)
        m.d.comb += [reader.frame.payload.eq(stored.r_data), reader.frame.valid.eq(stored.r_rdy),
                     stored.r_en.eq(reader.frame.ready)]
        pending = self._write(m, mem.write_port(), reader, rows)
        self._judge(m, pending, stored, layout, rows)
        return m

    def _rows(self, m):
        """The input cut into buffer rows: (row data, its valid bytes, write strobe, the beat's
        bytes, whether a keep rule broke). Narrow beats gather into 8-byte rows."""
        cfg, i = self.config, self.i
        take = i.valid & i.ready
        beat_bytes = Signal(range(cfg.eth_bytes + 1))
        m.d.comb += beat_bytes.eq(sum(i.p.keep[k] for k in range(cfg.eth_bytes)))
        full = i.p.keep == (1 << cfg.eth_bytes) - 1
        bad_keep = take & Mux(i.p.last, (i.p.keep & (i.p.keep + 1)) != 0, ~full)
        if cfg.eth_bytes >= 8:
            return i.p.data, take, beat_bytes, bad_keep
        parts = 8 // cfg.eth_bytes
        part = Signal(range(parts))
        held = Signal(data.ArrayLayout(cfg.eth_width, parts))
        row = Signal(WORD_BITS)
        m.d.comb += row.eq(held)
        with m.Switch(part):
            for k in range(parts):
                with m.Case(k):
                    m.d.comb += row.word_select(k, cfg.eth_width).eq(i.p.data)
        write = take & ((part == parts - 1) | i.p.last)
        with m.If(take):
            m.d.sync += [held[part].eq(i.p.data), part.eq(Mux(write, 0, part + 1))]
        return row, write, beat_bytes, bad_keep

    def _write(self, m, wr, reader, rows):
        cfg, i = self.config, self.i
        row, write, beat_bytes, bad_keep = self._rows(m)
        take = i.valid & i.ready
        inside = Signal()                    # a frame has begun
        start = Signal.like(reader.read_row)
        r = Signal(range(cfg.rx_frame_rows + 1))
        length = Signal(range(cfg.max_frame_bytes + 2))     # saturates past the longest
        broke, user = Signal(), Signal()
        header = Signal(eth_header_layout)
        # Room for a longest frame, registered: a frame may begin once ``room`` has seen the
        # ``start`` its predecessor's end set, a clock after that end (``ending``).
        room, ending = Signal(), Signal()
        m.d.sync += [room.eq((start - reader.read_row)[:len(start)] <= rows - cfg.rx_frame_rows),
                     ending.eq(take & i.p.last)]

        m.submodules.pending = pending = SyncFIFO(width=_pending_layout(cfg, rows).size,
                                                  depth=_PENDING)
        crc_ready = Const(1)
        if cfg.fcs:
            m.submodules.crc = crc = Crc32(CrcConfig(data_width=cfg.eth_width, pipeline=1))
            m.d.comb += [crc.i.payload.data.eq(i.p.data), crc.i.payload.keep.eq(i.p.keep),
                         crc.i.payload.last.eq(i.p.last), crc.i.valid.eq(take)]
            crc_ready = crc.i.ready
            self._crc = crc
        # Room in ``pending`` for this frame and the one in ``end`` (queued a clock late).
        queue_room = pending.w_level < _PENDING - 1
        m.d.comb += i.ready.eq((inside | (room & ~ending)) & crc_ready & queue_room)

        keep_row = write & (r < cfg.rx_frame_rows)
        m.d.comb += [wr.addr.eq((start + r)[:len(wr.addr)]), wr.data.eq(row), wr.en.eq(keep_row)]
        # The header words, taken as they pass (the current row's when it is one of them).
        now = Signal(eth_header_layout)
        first_two = cfg.lanes >= 2
        word0 = Mux(write & (r == 0), row[:WORD_BITS], header.as_value()[:WORD_BITS])
        if first_two:
            word1 = Mux(write & (r == 0), row[WORD_BITS:2 * WORD_BITS], header.as_value()[WORD_BITS:])
        else:
            word1 = Mux(write & (r == 1), row[:WORD_BITS], header.as_value()[WORD_BITS:])
        m.d.comb += now.eq(Cat(word0, word1))
        total = Signal.like(length)            # saturated past the longest frame
        m.d.comb += total.eq(Mux(length + beat_bytes > cfg.max_frame_bytes,
                                 cfg.max_frame_bytes + 1, length + beat_bytes))
        with m.If(take):
            m.d.sync += [header.eq(now), inside.eq(~i.p.last), length.eq(total),
                         broke.eq(broke | bad_keep), user.eq(user | i.p.user)]
            with m.If(i.p.last):
                m.d.sync += [length.eq(0), broke.eq(0), user.eq(0), r.eq(0),
                             start.eq(start + r + keep_row)]
        with m.If(keep_row & ~i.p.last):
            m.d.sync += r.eq(r + 1)

        # The frame's end, registered; it is classified and queued the clock after, while
        # ``header`` still holds its headers (no frame begins in that clock: ``ending``).
        end = Signal(data.StructLayout({"length": len(total), "rows": len(r), "broke": 1,
                                        "user": 1}))
        with m.If(take & i.p.last):
            m.d.sync += [end.length.eq(total), end.rows.eq(r + keep_row),
                         end.broke.eq(broke | bad_keep), end.user.eq(user | i.p.user)]
        p = Signal(_pending_layout(cfg, rows))
        m.d.comb += [pending.w_data.eq(p), pending.w_en.eq(ending), p.rows.eq(end.rows),
                     p.node.eq(Cat(header.sa_lo, header.sa_hi)), p.vc.eq(header.link.vc)]
        self._classify(m, p, header, end.length, end.broke, end.user)
        return pending

    def _classify(self, m, p, hdr, length, broke, user):
        """The frame's first error that is not its FCS's (README §1; the order of
        :class:`DeframerCount`), and its record words."""
        cfg = self.config
        body = length - 4 * cfg.fcs
        checks = [
            (DeframerCount.RUNT, length + 4 * (not cfg.fcs) < 64),
            (DeframerCount.OVERSIZED, length > cfg.max_frame_bytes),
            (DeframerCount.MAC_ERROR, user),
            (DeframerCount.ETHERTYPE, Cat(hdr.type_lo, hdr.type_hi) != ETHERTYPE),
            (DeframerCount.DESTINATION, (hdr.da_prefix != MAC_PREFIX)
             | (Cat(hdr.da_lo, hdr.da_hi) != self.node)),
            (DeframerCount.SOURCE, hdr.sa_prefix != MAC_PREFIX),
            (DeframerCount.VERSION, (hdr.link.version != VERSION) | (hdr.link.zero != 0)),
            (DeframerCount.LENGTH, (body[:3] != 0) | (body < HEADER_BYTES + 6 * WORD) | broke),
        ]
        code = Const(0, 4)
        for kind, failed in reversed(checks):
            code = Mux(failed, kind, code)
        m.d.comb += [p.code.eq(code), p.words.eq((body - HEADER_BYTES) >> 3)]

    def _judge(self, m, pending, stored, layout, rows):
        """Each frame's verdict once its CRC result is in: stored for reading or dropping."""
        cfg = self.config
        view = Signal(_pending_layout(cfg, rows))
        m.d.comb += view.eq(pending.r_data)
        ready = pending.r_rdy & stored.w_rdy
        code = Signal(4)
        if cfg.fcs:
            crc = self._crc
            ready = ready & crc.o.valid
            m.d.comb += crc.o.ready.eq(pending.r_rdy & stored.w_rdy)
            early = (view.code == DeframerCount.RUNT) | (view.code == DeframerCount.OVERSIZED) | \
                    (view.code == DeframerCount.MAC_ERROR)
            m.d.comb += code.eq(Mux(~early & ~crc.o.payload.ok, DeframerCount.BAD_FCS, view.code))
        else:
            m.d.comb += code.eq(view.code)
        s = Signal(layout)
        m.d.comb += [s.rows.eq(view.rows), s.words.eq(view.words), s.node.eq(view.node),
                     s.vc.eq(view.vc), s.drop.eq(code != 0),
                     stored.w_data.eq(s), stored.w_en.eq(ready), pending.r_en.eq(ready)]
        count_events(m, self.counts, {
            kind: ready & (code == kind) for kind in DeframerCount})


def _pending_layout(config, rows):
    """A received frame waiting for its CRC result."""
    return data.StructLayout({
        "rows": range(rows + 1),
        "words": range(config.record_words + 1),
        "node": NODE_BITS,
        "vc": VC_BITS,
        "code": 4,
    })
