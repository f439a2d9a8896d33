"""A two-entry stream register that cuts every combinational path through a valid/ready
handshake."""

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SkidBuffer"]


class SkidBuffer(wiring.Component):
    """Stream in, stream out, with ``o.valid``, ``o.payload`` and ``i.ready`` all registered.

    Parameters
    ----------
    shape : shape-like
        The payload.

    Members
    -------
    i : In(stream.Signature(shape))
    o : Out(stream.Signature(shape))

    Latency: one clock. Throughput: one transfer per clock; a transfer that arrives while
    ``o`` is stalled waits in a second register, and ``i.ready`` falls until it has moved on.
    Nothing is dropped or reordered.
    """

    def __init__(self, shape):
        self._shape = shape
        super().__init__({
            "i": In(stream.Signature(shape)),
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        skid = Signal(self._shape)
        skid_valid = Signal()
        m.d.comb += self.i.ready.eq(~skid_valid)
        with m.If(~self.o.valid | self.o.ready):
            with m.If(skid_valid):
                m.d.sync += [self.o.valid.eq(1), self.o.payload.eq(skid), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.eq(self.i.payload)]
        with m.Elif(self.i.valid & self.i.ready):
            m.d.sync += [skid.eq(self.i.payload), skid_valid.eq(1)]
        return m
