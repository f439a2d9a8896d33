# SPDX-License-Identifier: BSD-2-Clause
"""The best-effort path's transmit side: frames that are not the link's, sent between its own."""

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ....crc import Crc32, CrcConfig
from ....model.ethx.bridge import ETHERTYPE
from ....model.ethx.link import TPID
from ..config import FCS_BYTES, MIN_BE_BYTES, LinkConfig
from ..layout import BE_FRAMES, LINK_ETHERTYPE, be_side_counts, eth_stream

__all__ = ["BestEffortTx"]


def _frame_layout(config):
    """A whole frame in the buffer: its bytes and FCS."""
    return data.StructLayout({"bytes": range(config.max_be_bytes + 1), "fcs": 32})


class BestEffortTx(ConfiguredComponent):
    """Frames from ``i`` kept whole in a buffer of ``be_bytes`` with their FCS (computed as
    they enter), and sent on ``o`` with it when ``go`` allows (README §6).

    A frame of fewer than 60 or more than ``max_be_bytes`` bytes, or whose ``keep`` is not all
    ones before its last beat and contiguous from byte 0 on it, is dropped and counted
    (``BE_TX_MALFORMED``); the source pads short frames, as for a MAC without padding. So is a
    frame the far end would take for the link's own: EtherType 0x88B5 or 0x88B6, or with
    ``vlan`` either of them inside a tag of VID ``vid``. A frame sent is counted ``BE_TX``.

    ``ready``: a whole frame waits; ``go`` in a clock with ``ready`` starts it (``started``
    pulses), and its beats follow one per clock without a gap, the FCS in the bytes after
    its last byte (``keep`` marks them). Nothing else starts it: the link's sender calls it
    between its own frames, after them.

    Backpressure: a frame's first beat waits until the buffer has room for a longest frame
    and fewer than ``BE_FRAMES`` frames wait; a last beat waits while four frames' FCSs are
    being computed. Latency: the CRC engine's from a frame's last beat in to ``ready``; one
    clock from ``started`` to its first beat out. Throughput: one beat per clock in and out.

    Members
    -------
    i : ``In(eth_stream(eth_width))``
        Frames without FCS.
    o : ``Out(eth_stream(eth_width))``
        The same with their FCS; ``user`` 0.
    ready : ``Out(1)``; go : ``In(1)``; started : ``Out(1)``
    vid : ``In(12)``
        With ``vlan`` only: the VID of the link's tags.
    counts : ``Out(be_side_counts)``
        ``BE_TX``, ``BE_TX_MALFORMED``: 32-bit, wrapping.
    """

    config_class = LinkConfig

    def __init__(self, config):
        if not config.be_bytes:
            self._MustUse__silence = True       # never built
            raise ValueError("BestEffortTx needs a link configuration with be_bytes")
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)), "o": Out(eth_stream(c.eth_width)),
            "ready": Out(1), "go": In(1), "started": Out(1),
            "counts": Out(be_side_counts),
        } | ({"vid": In(12)} if c.vlan else {}))

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        rows = cfg.be_bytes // cfg.eth_bytes
        m.submodules.mem = mem = Memory(shape=cfg.eth_width, depth=rows, init=[])
        layout = _frame_layout(cfg)
        m.submodules.frames = frames = SyncFIFOBuffered(width=layout.size, depth=BE_FRAMES)
        head = Signal(range(2 * rows))              # the first row of the oldest frame kept
        self._write(m, mem, frames, head, rows)
        self._read(m, mem, frames, head, rows)
        return m

    def _write(self, m, mem, frames, head, rows):
        """Beats into the buffer as they come, the CRC engine beside; at a frame's last beat,
        the write pointer stays past it (a good frame) or goes back (a malformed one); its
        length and FCS enter ``frames`` once the FCS is out."""
        cfg, i = self.config, self.i
        wr = mem.write_port()
        m.submodules.crc = crc = Crc32(CrcConfig(data_width=cfg.eth_width, pipeline=1))
        ends_layout = data.StructLayout({"bytes": range(cfg.max_be_bytes + 1), "good": 1})
        m.submodules.ends = ends = SyncFIFO(width=ends_layout.size, depth=4)
        at = Signal.like(head)                      # the next row to write
        start = Signal.like(head)                   # the first row of the frame coming in
        inside = Signal()
        count = Signal(range(cfg.max_be_bytes + 1))  # its bytes so far
        bad = Signal()
        ones = (1 << cfg.eth_bytes) - 1
        room = (((at - head)[:len(at)] <= rows - cfg.rows(cfg.max_be_bytes))
                & (frames.level + ends.level < BE_FRAMES))
        m.d.comb += i.ready.eq(crc.i.ready & (inside | room) & (~i.p.last | ends.w_rdy))
        take = i.valid & i.ready
        nbytes = sum(i.p.keep[k] for k in range(cfg.eth_bytes))
        over = count + nbytes > cfg.max_be_bytes
        keep_bad = Mux(i.p.last, (i.p.keep == 0) | ((i.p.keep & (i.p.keep + 1)) != 0),
                       i.p.keep != ones)
        m.d.comb += [wr.addr.eq(at[:len(wr.addr)]), wr.data.eq(i.p.data),
                     wr.en.eq(take & ~over & ~bad & ~keep_bad),    # never past a longest frame
                     crc.i.valid.eq(take), crc.i.p.data.eq(i.p.data), crc.i.p.keep.eq(i.p.keep),
                     crc.i.p.last.eq(i.p.last)]
        length = count + nbytes
        good = (~bad & ~keep_bad & ~over & (length >= MIN_BE_BYTES)
                & ~self._link_like(m, take, count))
        with m.If(wr.en):
            m.d.sync += [at.eq(at + 1), count.eq(length)]
        with m.If(take):
            m.d.sync += [inside.eq(~i.p.last), bad.eq(bad | keep_bad | over)]
            with m.If(~inside):
                m.d.sync += start.eq(at)
        end = Signal(ends_layout)
        m.d.comb += [end.bytes.eq(length), end.good.eq(good),
                     ends.w_en.eq(take & i.p.last), ends.w_data.eq(end)]
        with m.If(take & i.p.last):
            m.d.sync += [count.eq(0), bad.eq(0)]
            with m.If(~good):
                m.d.sync += at.eq(Mux(inside, start, at))
        # One CRC result per frame, in order: a good frame's joins its length.
        done = data.View(ends_layout, ends.r_data)
        whole = Signal(_frame_layout(cfg))
        m.d.comb += [crc.o.ready.eq(1), ends.r_en.eq(crc.o.valid),
                     whole.bytes.eq(done.bytes), whole.fcs.eq(crc.o.p.crc),
                     frames.w_data.eq(whole), frames.w_en.eq(crc.o.valid & done.good)]
        with m.If(take & i.p.last & ~good):
            m.d.sync += self.counts[1].eq(self.counts[1] + 1)

    def _link_like(self, m, take, count):
        """Whether the frame coming in, at its last beat, has bytes 12 .. 17 of a frame of the
        link's (README §6): they are kept as they pass (``count``: the bytes before this beat,
        a whole number of beats)."""
        cfg, i = self.config, self.i
        head = Signal(48)                           # bytes 12 .. 17
        for b in range(12, 18):
            with m.If(take & (count == b // cfg.eth_bytes * cfg.eth_bytes)):
                m.d.sync += head.word_select(b - 12, 8).eq(
                    i.p.data.word_select(b % cfg.eth_bytes, 8))
        etype = lambda at: Cat(head.word_select(at + 1, 8), head.word_select(at, 8))
        ours = lambda at: (etype(at) == ETHERTYPE) | (etype(at) == LINK_ETHERTYPE)
        if not cfg.vlan:
            return ours(0)
        vid = Cat(head.word_select(3, 8), head.word_select(2, 8))[:12]
        return ours(0) | ((etype(0) == TPID) & (vid == self.vid) & ours(4))

    def _read(self, m, mem, frames, head, rows):
        """The oldest frame out when ``go``: its rows with their bytes past its end replaced
        by the FCS's, and a beat for the FCS alone if the last row has no room for it."""
        cfg, o = self.config, self.o
        w = cfg.eth_bytes
        rd = mem.read_port()
        desc = data.View(_frame_layout(cfg), frames.r_data)
        busy = Signal()
        reading = Signal.like(head)
        after = Signal.like(head)                   # the row after the frame being read
        d = Signal(signed(len(Const(cfg.max_be_bytes)) + 2))    # frame bytes left at this beat
        fcs = Signal(32)
        advance = ~o.valid | o.ready
        begin = self.go & frames.r_rdy & ~busy
        m.d.comb += [self.ready.eq(frames.r_rdy & ~busy), self.started.eq(begin),
                     frames.r_en.eq(begin)]
        with m.If(begin):
            m.d.sync += [busy.eq(1), reading.eq(head), d.eq(desc.bytes), fcs.eq(desc.fcs),
                         after.eq(head + ((desc.bytes + w - 1) >> (w.bit_length() - 1))),
                         self.counts[0].eq(self.counts[0] + 1)]
        issue = advance & busy
        last = d + FCS_BYTES <= w
        # The beat's FCS bytes: FCS byte 0 at byte ``d`` of the beat (before it when negative).
        ahead = Mux(d > w, w, Mux(d < 0, 0, d))[:w.bit_length()]
        behind = Mux(d < 0, -d, 0)[:2]
        fcs_beat = Signal(cfg.eth_width)
        data_mask = Signal(cfg.eth_width)
        m.d.comb += [rd.en.eq(advance), rd.addr.eq(reading[:len(rd.addr)]), o.p.user.eq(0),
                     o.p.data.eq((rd.data & data_mask) | fcs_beat)]
        with m.If(advance):
            m.d.sync += o.valid.eq(issue)
        with m.If(issue):
            m.d.sync += [
                reading.eq(reading + 1), d.eq(d - w), o.p.last.eq(last),
                o.p.keep.eq(Cat(*(k < d + FCS_BYTES for k in range(w)))),
                data_mask.eq(Cat(*((k < d).replicate(8) for k in range(w)))),
                fcs_beat.eq(((Cat(fcs, Const(0, cfg.eth_width)) << (ahead * 8))
                             >> (behind * 8))[:cfg.eth_width]),
            ]
            with m.If(last):
                m.d.sync += [busy.eq(0), head.eq(after)]
