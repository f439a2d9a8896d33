# SPDX-License-Identifier: BSD-2-Clause
"""The best-effort path's receive side: good frames that are not the link's, to ``o``."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ..config import LINK_WORD_BYTES, MIN_BYTES, LinkConfig
from ..layout import Class, be_side_counts, eth_stream, rx_beat_layout

__all__ = ["BestEffortRx"]


class BestEffortRx(ConfiguredComponent):
    """A buffer of ``be_bytes`` beside the receive buffer, fed the same beats (README §6):
    every beat of every frame is written as it arrives, while there is room; at its last beat
    a FOREIGN frame (a good FCS, not the link's) that fitted is kept without its FCS
    (``BE_RX``), any other frame leaves nothing, and a FOREIGN frame that did not fit is
    dropped and counted (``BE_RX_DROPPED``). The wire is never held. Frames leave a frame's
    time after they came (store and forward), so a buffer of two longest frames keeps up
    with best-effort frames back to back at the wire's rate; a buffer of ``be_bytes`` holds
    as many shortest frames as fit.

    Kept frames go out on ``o`` in order, one beat per clock (a clock after a frame's first
    beat could be read), ``keep`` marking the last beat's bytes.

    Members
    -------
    i : ``In(stream.Signature(rx_beat_layout(config)))``
        From :class:`~scaleup_ip.ethx.link.rx.check.RxCheck`, as the receive buffer takes
        them; always ready. ``store`` is not read.
    o : ``Out(eth_stream(eth_width))``
        Frames without FCS, ``user`` 0.
    counts : ``Out(be_side_counts)``
        ``BE_RX``, ``BE_RX_DROPPED``: 32-bit, wrapping.
    """

    config_class = LinkConfig

    def __init__(self, config):
        if not config.be_bytes:
            self._MustUse__silence = True       # never built
            raise ValueError("BestEffortRx needs a link configuration with be_bytes")
        super().__init__(config, lambda c: {
            "i": In(stream.Signature(rx_beat_layout(c))),
            "o": Out(eth_stream(c.eth_width)),
            "counts": Out(be_side_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        rows = cfg.be_bytes // cfg.eth_bytes
        m.submodules.mem = mem = Memory(shape=cfg.eth_width, depth=rows, init=[])
        layout = data.StructLayout({"bytes": range(cfg.max_be_bytes + 1)})
        m.submodules.frames = frames = SyncFIFOBuffered(width=layout.size,
                                                        depth=cfg.be_bytes // MIN_BYTES)
        head = Signal(range(2 * rows))          # the oldest row not yet read out
        self._write(m, mem, frames, head, rows)
        self._read(m, mem, frames, layout, head, rows)
        return m

    def _write(self, m, mem, frames, head, rows):
        cfg, i = self.config, self.i
        wr = mem.write_port()
        tail = Signal.like(head)                # the end of the kept frames
        at = Signal.like(head)                  # the next row of the frame coming in
        over = Signal()                         # a beat of this frame found no room
        take = i.valid & i.ready
        space = (at - head)[:len(at)] < rows
        m.d.comb += [i.ready.eq(1), wr.addr.eq(at[:len(wr.addr)]), wr.data.eq(i.p.data),
                     wr.en.eq(take & space)]
        with m.If(wr.en):
            m.d.sync += at.eq(at + 1)
        with m.If(take):
            m.d.sync += over.eq(~i.p.last & (over | ~space))
        v = i.p.verdict
        nbytes = v.bytes + LINK_WORD_BYTES + Mux(v.tagged, cfg.tag_bytes, 0)   # without FCS
        foreign = take & i.p.last & (v.cls == Class.FOREIGN)
        keep = foreign & ~over & space & frames.w_rdy
        end = (tail + ((nbytes + cfg.eth_bytes - 1) >> (cfg.eth_bytes.bit_length() - 1)))
        m.d.comb += [frames.w_en.eq(keep), frames.w_data.eq(nbytes)]
        with m.If(take & i.p.last):
            m.d.sync += at.eq(Mux(keep, end, tail))
            with m.If(keep):
                m.d.sync += [tail.eq(end), self.counts[0].eq(self.counts[0] + 1)]
        with m.If(foreign & ~keep):
            m.d.sync += self.counts[1].eq(self.counts[1] + 1)

    def _read(self, m, mem, frames, layout, head, rows):
        cfg, o = self.config, self.o
        w = cfg.eth_bytes
        rd = mem.read_port()
        desc = data.View(layout, frames.r_data)
        left = Signal(range(cfg.rows(cfg.max_be_bytes) + 1))    # rows of this frame to read
        tail_keep = Signal(w)                   # the bytes of its last row
        busy = Signal()
        advance = ~o.valid | o.ready
        reading = Signal.like(head)
        issue = advance & busy
        m.d.comb += [rd.en.eq(advance), rd.addr.eq(reading[:len(rd.addr)]),
                     o.p.data.eq(rd.data), o.p.user.eq(0)]
        with m.If(advance):
            m.d.sync += o.valid.eq(issue)
        with m.If(issue):
            m.d.sync += [reading.eq(reading + 1), left.eq(left - 1), o.p.last.eq(left == 1),
                         o.p.keep.eq(Mux(left == 1, tail_keep, (1 << w) - 1)),
                         busy.eq(left != 1)]
        start = ~busy & frames.r_rdy
        tail_bytes = (desc.bytes - 1)[:w.bit_length() - 1] if w > 1 else 0
        m.d.comb += frames.r_en.eq(start)
        with m.If(start):
            m.d.sync += [busy.eq(1), left.eq((desc.bytes + w - 1) >> (w.bit_length() - 1)),
                         tail_keep.eq(Cat(1, *(tail_bytes >= k for k in range(1, w))))]
        with m.If(o.valid & o.ready):
            m.d.sync += head.eq(head + 1)
