# SPDX-License-Identifier: BSD-2-Clause
"""The receive buffer: accepted bridge frames kept until the bridge takes them."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ..config import MIN_FRAME_BYTES, LinkConfig
from ..layout import Class, eth_stream, frame_layout, freed_layout, rx_beat_layout, verdict_layout

__all__ = ["RxStore"]



class RxStore(ConfiguredComponent):
    """One FIFO of ``rx_bytes`` shared by the VCs [README §4]: every frame's beats but its
    link word's (and a tag's: ``store``, ``merge``) are written as they arrive; at its last beat the frame is kept (an accepted
    DATA frame: ``accept``), or the write pointer goes back to where the frame began. So a
    frame the LLR receiver does not accept leaves nothing, and the next frame may begin the
    clock after.

    A frame that finds the buffer full stops being written; ``room`` tells the LLR receiver
    whether its bytes all went in (with credits they always do). Kept frames go to the bridge
    in order, one beat per clock (a clock after a frame's first beat could be read);
    ``freed`` names each as its last beat leaves.

    Members
    -------
    i : ``In(stream.Signature(rx_beat_layout(config)))``
        From :class:`~scaleup_ip.ethx.link.rx.check.RxCheck`; always ready.
    judge : ``Out(1)``; verdict : ``Out(verdict_layout(config))``; room : ``Out(1)``
        The frame whose last beat is on ``i``, for the :class:`~scaleup_ip.ethx.link.rx.llr.LlrRx`.
    accept : ``In(1)``
        Its answer, in the same clock.
    o : ``Out(eth_stream(eth_width))``
        Bridge frames (no link word, no FCS), ``keep`` all ones, ``user`` 0.
    freed : ``Out(freed_layout(config))``
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(stream.Signature(rx_beat_layout(c))),
            "judge": Out(1), "verdict": Out(verdict_layout(c)), "room": Out(1),
            "accept": In(1),
            "o": Out(eth_stream(c.eth_width)),
            "freed": Out(freed_layout(c)),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        rows = cfg.rx_bytes // cfg.eth_bytes
        m.submodules.mem = mem = Memory(shape=cfg.eth_width, depth=rows, init=[])
        m.submodules.frames = frames = SyncFIFOBuffered(
            width=frame_layout(cfg).size, depth=cfg.rx_bytes // MIN_FRAME_BYTES)
        head = Signal(range(2 * rows))          # the oldest row not yet read out
        self._write(m, mem, frames, head, rows)
        self._read(m, mem, frames, head, rows)
        return m

    def _write(self, m, mem, frames, head, rows):
        cfg, i = self.config, self.i
        wr = mem.write_port()
        tail = Signal.like(head)                # the end of the kept frames
        at = Signal.like(head)                  # the next row of the frame coming in
        take = i.valid & i.ready
        space = ((at - head)[:len(at)] < rows)
        m.d.comb += [i.ready.eq(1), wr.addr.eq(at[:len(wr.addr)]), wr.data.eq(i.p.data),
                     wr.en.eq(take & i.p.store & space)]
        if cfg.vlan and cfg.eth_width == 64:      # a tagged frame's bytes 8 .. 11 and 16 .. 19
            low = Signal(32)
            with m.If(take):
                m.d.sync += low.eq(i.p.data[:32])
            with m.If(i.p.merge):
                m.d.comb += wr.data.eq(Cat(low, i.p.data[:32]))
        need = i.p.verdict.bytes >> (cfg.eth_bytes.bit_length() - 1)
        m.d.comb += [self.judge.eq(take & i.p.last), self.verdict.eq(i.p.verdict),
                     self.room.eq(((at - tail)[:len(at)] >= need) & frames.w_rdy)]
        keep = self.judge & self.accept & (i.p.verdict.cls == Class.DATA)
        end = (tail + need)[:len(tail)]
        desc = Signal(frame_layout(cfg))
        m.d.comb += [desc.vc.eq(i.p.verdict.vc), desc.bytes.eq(i.p.verdict.bytes),
                     frames.w_en.eq(keep), frames.w_data.eq(desc)]
        with m.If(wr.en):
            m.d.sync += at.eq(at + 1)
        with m.If(self.judge):
            m.d.sync += at.eq(Mux(keep, end, tail))
            with m.If(keep):
                m.d.sync += tail.eq(end)

    def _read(self, m, mem, frames, head, rows):
        cfg, o = self.config, self.o
        rd = mem.read_port()
        desc = Signal(frame_layout(cfg))
        left = Signal(range(cfg.rows(cfg.max_frame_bytes) + 1))    # rows of this frame to read
        busy = Signal()
        advance = ~o.valid | o.ready
        reading = Signal(range(2 * rows))       # the next row to read
        m.d.comb += [desc.eq(frames.r_data), rd.en.eq(advance),
                     rd.addr.eq(reading[:len(rd.addr)])]
        held = Signal(frame_layout(cfg))        # the frame being read
        shown = Signal(frame_layout(cfg))       # the frame of the beat on ``o``
        issue = advance & busy
        with m.If(advance):
            m.d.sync += o.valid.eq(issue)
        with m.If(issue):
            m.d.sync += [reading.eq(reading + 1), left.eq(left - 1), o.p.last.eq(left == 1),
                         busy.eq(left != 1), shown.eq(held)]
        start = ~busy & frames.r_rdy
        m.d.comb += frames.r_en.eq(start)
        with m.If(start):
            m.d.sync += [busy.eq(1), left.eq(desc.bytes >> (cfg.eth_bytes.bit_length() - 1)),
                         held.eq(desc)]
        m.d.comb += [o.p.data.eq(rd.data), o.p.keep.eq((1 << cfg.eth_bytes) - 1), o.p.user.eq(0)]
        out = o.valid & o.ready
        with m.If(out):
            m.d.sync += head.eq(head + 1)
        m.d.comb += [self.freed.valid.eq(out & o.p.last), self.freed.frame.eq(shown)]
