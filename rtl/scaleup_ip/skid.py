# SPDX-License-Identifier: BSD-2-Clause
"""A two-entry stream buffer that cuts every combinational path through a valid/ready
handshake, and the one-register pipeline stage."""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SkidBuffer", "register_stage"]


class SkidBuffer(wiring.Component):
    """Stream in, stream out, with ``o.valid`` and ``i.ready`` registered and ``o.payload`` one
    of two registers (or, with ``flop_out``, a register of its own).

    Parameters
    ----------
    shape : shape-like
        The payload.
    flop_out : bool
        ``o.payload`` straight from a register, for a reader whose logic starts from it. That
        register then loads whenever ``o`` is free or moves, so ``o.ready`` reaches its
        enables.

    Members
    -------
    i : In(stream.Signature(shape))
    o : Out(stream.Signature(shape))

    ``i.ready`` is a register of its own, the complement of the full (or skid) flag, which
    also drives the wide payload enables and multiplexers: so the reader of ``i.ready`` is
    not on that high-fanout net.

    Two entries used in turn: a transfer in is written into the entry the write pointer names,
    ``o`` shows the entry the read pointer names, and a transfer out only moves the read
    pointer. So neither ``i.valid`` nor ``o.ready`` reaches the other side in the same clock,
    and neither drives a wide register enable: the free entry takes ``i.payload`` in every
    clock in which one is free, and a transfer in only moves the write pointer.

    With ``flop_out`` the entries are the output register and a skid register: the output
    register takes the skid register if it holds a transfer, else ``i.payload``, in every clock
    in which ``o`` is free or moves; the skid register takes ``i.payload`` in every clock in
    which it is free, and holds it when a transfer in finds the output register taken and not
    moving. ``i.valid`` still reaches no register enable, and ``i.ready`` is still a register.

    Latency: one clock. Throughput: one transfer per clock; ``i.ready`` falls while both
    entries are taken. Nothing is dropped or reordered.
    """

    def __init__(self, shape, *, flop_out=False):
        self._shape, self._flop_out = shape, flop_out
        super().__init__({
            "i": In(stream.Signature(shape)),
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        if self._flop_out:
            self._output_register(m)
            return m
        entries = [Signal(self._shape, name=f"entry{k}") for k in range(2)]
        wr = Signal()
        rd = Signal()
        full = Signal()                  # both entries taken
        ready = Signal(init=1)           # ~full, a register of its own
        m.d.comb += [self.i.ready.eq(ready), self.o.payload.eq(Mux(rd, entries[1], entries[0]))]
        push = self.i.valid & ready
        pop = self.o.valid & self.o.ready
        # The entry the write pointer names is free whenever both are not taken, so it takes
        # ``i.payload`` in every such clock, valid or not: the payload registers' enables are
        # registers alone, and ``i.valid`` moves only the pointer.
        for k in range(2):
            with m.If(~full & (wr == k)):
                m.d.sync += entries[k].eq(self.i.payload)
        with m.If(push):
            m.d.sync += wr.eq(~wr)
        with m.If(pop):
            m.d.sync += rd.eq(~rd)
        with m.If(push & ~pop):
            m.d.sync += [self.o.valid.eq(1), full.eq(self.o.valid),
                         ready.eq(~self.o.valid)]
        with m.Elif(pop & ~push):
            m.d.sync += [full.eq(0), ready.eq(1), self.o.valid.eq(full)]
        return m

    def _output_register(self, m):
        """``flop_out``: the output register and a skid register behind it."""
        skid = Signal(self._shape, name="skid")
        held = Signal()                  # the skid register holds a transfer
        ready = Signal(init=1)           # ~held, a register of its own
        m.d.comb += self.i.ready.eq(ready)
        with m.If(~held):
            m.d.sync += skid.eq(self.i.payload)
        with m.If(~self.o.valid | self.o.ready):
            m.d.sync += [self.o.payload.eq(Mux(held, skid, self.i.payload)),
                         self.o.valid.eq(held | self.i.valid), held.eq(0), ready.eq(1)]
        with m.Elif(self.i.valid & ready):
            m.d.sync += [held.eq(1), ready.eq(0)]


def register_stage(m, i, o):
    """Make ``o`` a register stage after stream ``i``: ``o.valid`` is a flop, ``i.ready`` is
    ``~o.valid | o.ready`` (a combinational path from ``o.ready``, unlike
    :class:`SkidBuffer`). Returns the condition under which the caller loads ``o``'s payload
    (``with m.If(register_stage(m, i, o)): m.d.sync += ...``), so that the payload can be
    worked out on the way in. Latency: one clock; throughput: one transfer per clock."""
    m.d.comb += i.ready.eq(~o.valid | o.ready)
    with m.If(i.ready):
        m.d.sync += o.valid.eq(i.valid)
    return i.ready
