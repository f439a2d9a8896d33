# SPDX-License-Identifier: BSD-2-Clause
"""The transmit side's first block: bridge frames sorted into one queue per VC."""

from amaranth import Array, Cat, Module, Mux, Shape, Signal
from amaranth.lib import data
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ....model.ethx.bridge import HEADER_BYTES, WORD
from ..config import MIN_FRAME_BYTES, LinkConfig
from ..layout import eth_stream, head_layout, link_vc, vc_shape

__all__ = ["TxQueues"]

#: The link header's first byte, with the bridge frame's VC [../README.md §1].
_VC_BYTE = 14


def _entry_layout(config):
    """A whole frame in a VC's queue, as its head FIFO keeps it: the head without ``valid``."""
    head = head_layout(config)
    return data.StructLayout({"bytes": head["bytes"].shape, "poison": head["poison"].shape})


class TxQueues(ConfiguredComponent):
    """One queue per VC in one memory of ``vcs × queue_bytes`` (README §4).

    A frame's first 16 bytes wait in a small FIFO until its VC (byte 14) is known; then the
    frame is written into its VC's queue as it comes, and becomes the queue's head (``heads``)
    once whole. A frame that is shorter than 64 bytes, longer than the longest, not a multiple
    of 8 bytes or has a partial beat is dropped (``malformed`` pulses); the queue's write
    pointer goes back. ``take`` with ``pick`` starts reading the head of VC ``pick`` (it must
    be valid) out on ``o``; ``busy`` is high until its last beat is read. A frame whose last
    beat carries ``user`` is to be sent poisoned: its head's ``poison``, and ``user`` on its
    last beat out.

    Backpressure: a frame waits for room in its VC's queue (``queue_frames`` frames, and room
    for a longest frame); frames behind it on ``i`` wait too, whatever their VC.
    ``vc_ready`` tells a source that can choose which VCs have room.

    Latency: ``16 / eth_bytes`` clocks from a frame's first beat in to its writing; its
    last beat written to ``heads``, one clock; ``take`` to the first beat on ``o``, two.
    Throughput: one beat per clock in and out.

    Members
    -------
    i : ``In(eth_stream(eth_width))``
        Bridge frames without FCS.
    heads : ``Out(ArrayLayout(head_layout(config), vcs))``
    pick : ``In(vc_shape(config))``; take : ``In(1)``; busy : ``Out(1)``
    o : ``Out(eth_stream(eth_width))``
        The frame taken, ``keep`` all ones, ``user`` on the last beat of a poisoned frame.
    vc_ready : ``Out(vcs)``
    malformed : ``Out(1)``
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)),
            "heads": Out(data.ArrayLayout(head_layout(c), c.vcs)),
            "pick": In(vc_shape(c)), "take": In(1), "busy": Out(1),
            "o": Out(eth_stream(c.eth_width)),
            "vc_ready": Out(c.vcs), "malformed": Out(1),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        rows = cfg.queue_bytes // cfg.eth_bytes
        m.submodules.mem = mem = Memory(shape=cfg.eth_width, depth=rows * cfg.vcs, init=[])
        heads = []
        for v in range(cfg.vcs):
            fifo = SyncFIFOBuffered(width=_entry_layout(cfg).size, depth=cfg.queue_frames)
            m.submodules[f"heads{v}"] = fifo
            heads.append(fifo)
        wp = Array(Signal(range(2 * rows), name=f"wp{v}") for v in range(cfg.vcs))
        rp = Array(Signal(range(2 * rows), name=f"rp{v}") for v in range(cfg.vcs))
        for v in range(cfg.vcs):
            used = (wp[v] - rp[v])[:len(wp[v])]
            entry = data.View(_entry_layout(cfg), heads[v].r_data)
            m.d.comb += [self.vc_ready[v].eq(heads[v].w_rdy
                                             & (used <= rows - cfg.rows(cfg.max_frame_bytes))),
                         self.heads[v].valid.eq(heads[v].r_rdy),
                         self.heads[v].bytes.eq(entry.bytes),
                         self.heads[v].poison.eq(entry.poison)]
        self._write(m, mem, heads, wp, self._hold(m), rows)
        self._read(m, mem, heads, rp, rows)
        return m

    def _hold(self, m):
        """The first 16 bytes wait here; the VC of each frame goes into ``vcq`` as its byte 14
        arrives (``bad``: the frame ended before it)."""
        cfg, i = self.config, self.i
        beat = data.StructLayout({"data": cfg.eth_width, "keep": cfg.eth_bytes, "last": 1,
                                  "user": 1})
        m.submodules.hold = hold = SyncFIFO(width=beat.size, depth=HEADER_BYTES // cfg.eth_bytes + 1)
        m.submodules.vcq = vcq = SyncFIFO(width=Shape.cast(vc_shape(cfg)).width + 1, depth=2)
        pos = Signal(range(_VC_BYTE + cfg.eth_bytes + 1))   # bytes in, saturating past byte 14
        at_vc = pos == (_VC_BYTE // cfg.eth_bytes) * cfg.eth_bytes
        byte14 = i.p.data.word_select(_VC_BYTE % cfg.eth_bytes, 8)
        take = i.valid & i.ready
        m.d.comb += [
            i.ready.eq(hold.w_rdy & vcq.w_rdy),
            hold.w_en.eq(take), hold.w_data.eq(Cat(i.p.data, i.p.keep, i.p.last, i.p.user)),
            vcq.w_en.eq(take & (at_vc | (i.p.last & (pos < _VC_BYTE)))),
            vcq.w_data.eq(Cat(link_vc(byte14, cfg.vcs), ~at_vc)),
        ]
        with m.If(take):
            m.d.sync += pos.eq(Mux(i.p.last, 0, Mux(pos > _VC_BYTE, pos, pos + cfg.eth_bytes)))
        return hold, vcq, beat

    def _write(self, m, mem, heads, wp, held, rows):
        cfg = self.config
        hold, vcq, beat = held
        beat = data.View(beat, hold.r_data)
        wr = mem.write_port()
        vw = Shape.cast(vc_shape(cfg)).width
        inside = Signal()                       # a frame is being written
        vc = Signal(vc_shape(cfg))
        bad = Signal()                          # ended before byte 14, or found malformed
        at = Signal(range(2 * rows))            # the next row of this frame
        nbytes = Signal(range(cfg.max_frame_bytes + cfg.eth_bytes + 1))
        new_vc = vcq.r_data[:vw]
        room = self.vc_ready.bit_select(new_vc, 1)
        begin = ~inside & vcq.r_rdy & (room | vcq.r_data[vw])
        with m.If(begin):
            m.d.sync += [inside.eq(1), vc.eq(new_vc), bad.eq(vcq.r_data[vw]), at.eq(wp[new_vc]),
                         nbytes.eq(0)]
        ones = (1 << cfg.eth_bytes) - 1
        pop = inside & hold.r_rdy
        full = nbytes + cfg.eth_bytes > cfg.max_frame_bytes
        m.d.comb += [hold.r_en.eq(pop),
                     wr.addr.eq(Cat(at[:len(at) - 1], vc[:vw] if cfg.vcs > 1 else [])),
                     wr.data.eq(beat.data), wr.en.eq(pop & ~bad & ~full)]
        with m.If(wr.en):
            m.d.sync += [at.eq(at + 1), nbytes.eq(nbytes + cfg.eth_bytes)]
        with m.If(pop & ((beat.keep != ones) | full)):
            m.d.sync += bad.eq(1)
        length = nbytes + cfg.eth_bytes
        good = (~bad & (beat.keep == ones) & ~full & (length >= MIN_FRAME_BYTES)
                & ((length & (WORD - 1)) == 0))
        done = pop & beat.last
        entry = Signal(_entry_layout(cfg))
        m.d.comb += [entry.bytes.eq(length), entry.poison.eq(beat.user)]
        for v in range(cfg.vcs):
            m.d.comb += [heads[v].w_data.eq(entry),
                         heads[v].w_en.eq(done & good & (vc == v))]
        with m.If(done):
            m.d.sync += inside.eq(0)
            with m.If(good):
                m.d.sync += wp[vc].eq(at + 1)
        m.d.comb += [vcq.r_en.eq(done), self.malformed.eq(done & ~good)]

    def _read(self, m, mem, heads, rp, rows):
        cfg, o = self.config, self.o
        rd = mem.read_port()
        vw = Shape.cast(vc_shape(cfg)).width
        vc = Signal(vc_shape(cfg))
        reading = Signal(range(2 * rows))
        left = Signal(range(cfg.rows(cfg.max_frame_bytes) + 1))
        busy = Signal()
        head = Signal(head_layout(cfg))
        poison = Signal()
        m.d.comb += head.eq(self.heads[self.pick] if cfg.vcs > 1 else self.heads[0])
        for v in range(cfg.vcs):
            m.d.comb += heads[v].r_en.eq(self.take & (self.pick == v))
        with m.If(self.take):
            m.d.sync += [busy.eq(1), vc.eq(self.pick), reading.eq(rp[self.pick]),
                         poison.eq(head.poison),
                         left.eq(head.bytes >> (cfg.eth_bytes.bit_length() - 1))]
        advance = ~o.valid | o.ready
        issue = advance & busy
        m.d.comb += [rd.en.eq(advance),
                     rd.addr.eq(Cat(reading[:len(reading) - 1], vc[:vw] if cfg.vcs > 1 else [])),
                     o.p.data.eq(rd.data), o.p.keep.eq((1 << cfg.eth_bytes) - 1),
                     o.p.user.eq(poison & o.p.last),
                     self.busy.eq(busy)]
        with m.If(advance):
            m.d.sync += o.valid.eq(issue)
        with m.If(issue):
            m.d.sync += [reading.eq(reading + 1), left.eq(left - 1), o.p.last.eq(left == 1),
                         busy.eq(left != 1)]
            with m.If(left == 1):
                m.d.sync += rp[vc].eq(reading + 1)
