# SPDX-License-Identifier: BSD-2-Clause
"""Receiving end of one UPLI channel: credit-based UPLI in, valid/ready stream out."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..layout import upli_channel

__all__ = ["UpliReceiver"]

#: Most credits one ``*CreditPort0Num`` value returns [§2.6: Num + 1, 1..4].
_NUM_MAX = 4


class UpliReceiver(wiring.Component):
    """Buffers one UPLI channel and manages its credits [UALink 1.0 §2.6].

    Parameters
    ----------
    layout : data.StructLayout
        The channel's payload; it must have ``vc`` and ``pool`` fields.
    depth : int
        Beats buffered: the credits released at initialisation.

    Members
    -------
    i : In(upli_channel(layout))
        The UPLI channel (port 0). A beat is taken whenever ``i.vld`` is set. ``i.credit``
        carries the credit returns to the sender: after reset, ``depth`` pool credits, up to
        four per clock, then ``init_done[0]`` rises and stays set. Afterwards each beat that
        leaves the buffer returns one credit with the beat's ``pool`` and ``vc`` (§2.6: the
        receiver plays back the attributes the sender used).
    discard : In(1)
        Sampled with ``i.vld``: the beat is buffered but never appears on ``o``; it leaves the
        buffer in its turn, without waiting for ``o.ready``, and returns its credit like any
        other beat. Used to drop UPLI protocol violations without leaking credits.
    o : Out(stream.Signature(layout))
        Beats toward the TL core, in arrival order. Nothing leaves before ``init_done``.
    overrun : Out(16)
        Beats that arrived with the buffer full, i.e. without credit: counted and dropped
        (saturating).

    The release starts the clock after reset. Latency: a beat is on ``o`` two clocks after
    ``vld``. Throughput: one beat per clock.
    """

    def __init__(self, layout, depth):
        if not 1 <= depth <= 1024:
            self._MustUse__silence = True           # never built: nothing to warn about
            raise ValueError(f"UpliReceiver depth must be 1..1024, not {depth!r}")
        self._layout, self._depth = layout, depth
        super().__init__({
            "i": In(upli_channel(layout)),
            "discard": In(1),
            "o": Out(stream.Signature(layout)),
            "overrun": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        entry = data.StructLayout({"beat": self._layout, "discard": 1})
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=entry.size, depth=self._depth)
        w_data, r_data = Signal(entry), Signal(entry)
        m.d.comb += [
            w_data.beat.eq(self.i.payload), w_data.discard.eq(self.discard),
            fifo.w_data.eq(w_data), fifo.w_en.eq(self.i.vld), r_data.eq(fifo.r_data),
        ]
        with m.If(self.i.vld & ~fifo.w_rdy & (self.overrun != (1 << 16) - 1)):
            m.d.sync += self.overrun.eq(self.overrun + 1)

        unreleased = Signal(range(self._depth + 1), init=self._depth)
        done = Signal()
        step = Signal(range(_NUM_MAX + 1))
        m.d.comb += step.eq(Mux(unreleased > _NUM_MAX, _NUM_MAX, unreleased))
        out = r_data.beat
        leave = Signal()
        m.d.comb += [
            self.o.payload.eq(out),
            self.o.valid.eq(fifo.r_rdy & done & ~r_data.discard),
            leave.eq(fifo.r_rdy & done & (self.o.ready | r_data.discard)),
            fifo.r_en.eq(leave),
            self.i.credit.init_done[0].eq(done),
        ]
        started = Signal()                 # no credit moves while reset is asserted
        m.d.sync += started.eq(1)
        with m.If(~started):
            pass
        with m.Elif(unreleased != 0):
            m.d.comb += [self.i.credit.vld[0].eq(1), self.i.credit.pool[0].eq(1),
                         self.i.credit.num[0].eq(step - 1)]
            m.d.sync += unreleased.eq(unreleased - step)
        with m.Elif(~done):
            m.d.sync += done.eq(1)
        with m.Elif(leave):
            m.d.comb += [self.i.credit.vld[0].eq(1), self.i.credit.pool[0].eq(out.pool),
                         self.i.credit.vc[0].eq(out.vc), self.i.credit.num[0].eq(0)]
        return m
