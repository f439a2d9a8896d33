"""Receiving end of one UPLI channel: credit-based UPLI in, valid/ready stream out."""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from .layout import upli_channel

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
        leaves on ``o`` returns one credit with the beat's ``pool`` and ``vc`` (§2.6: the
        receiver plays back the attributes the sender used).
    o : Out(stream.Signature(layout))
        Beats toward the TL core. Nothing leaves before ``init_done``.
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
            "o": Out(stream.Signature(layout)),
            "overrun": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=self._layout.size, depth=self._depth)
        m.d.comb += [fifo.w_data.eq(self.i.payload), fifo.w_en.eq(self.i.vld)]
        with m.If(self.i.vld & ~fifo.w_rdy & (self.overrun != (1 << 16) - 1)):
            m.d.sync += self.overrun.eq(self.overrun + 1)

        unreleased = Signal(range(self._depth + 1), init=self._depth)
        done = Signal()
        step = Signal(range(_NUM_MAX + 1))
        m.d.comb += step.eq(Mux(unreleased > _NUM_MAX, _NUM_MAX, unreleased))
        out = self.o.payload
        m.d.comb += [
            out.eq(fifo.r_data),
            self.o.valid.eq(fifo.r_rdy & done),
            fifo.r_en.eq(self.o.ready & done),
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
        with m.Elif(self.o.valid & self.o.ready):
            m.d.comb += [self.i.credit.vld[0].eq(1), self.i.credit.pool[0].eq(out.pool),
                         self.i.credit.vc[0].eq(out.vc), self.i.credit.num[0].eq(0)]
        return m
