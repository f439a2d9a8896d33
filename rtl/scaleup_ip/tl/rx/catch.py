# SPDX-License-Identifier: BSD-2-Clause
"""Catch buffer of the TL receiver [§5.7]: several entries in per clock, one out."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..logic import or_all

__all__ = ["CatchBuffer"]


class CatchBuffer(wiring.Component):
    """A ring of registers taking up to ``inputs`` entries per clock, giving one per clock.

    Write and read positions are one-hot registers, so a slot's input is picked by a one-hot
    multiplexer and nothing depends on the count of entries held.

    Parameters
    ----------
    layout : data.Layout
        Entry layout.
    inputs : int
        Entries offered per clock, packed: ``i[0 .. i_n-1]``.
    depth : int
        Entries held: the source rate limit (REQ_LIMIT or RSP_LIMIT) [§5.7].

    Members
    -------
    i : In(ArrayLayout(layout, inputs)), i_n : In(range(inputs + 1))
        Entries offered. They are written into free slots whether or not they are taken.
    take : In(1)
        The entries offered are kept. No back-pressure.
    skip : In(1)
        With ``take``, the first entry offered is taken elsewhere (the caller's bypass when
        everything behind the buffer is empty); only meaningful while the buffer is empty.
    o : Out(stream.Signature(layout))
        Entries out, oldest first.
    empty : Out(1)
        Nothing held.

    Latency: an entry taken at clock ``t`` is on ``o`` from ``t + 1``. Throughput: one entry out
    per clock; the slot read in a clock is writable in the same clock. Overflow: an entry offered
    for a slot still held is not written (the receiver then flags ``catch_overrun`` and takes
    nothing; a well-behaved source keeps within ``depth`` since one entry drains per flit).
    """

    def __init__(self, layout, inputs, depth):
        if depth < inputs:
            raise ValueError(f"CatchBuffer depth {depth} is below its {inputs} inputs")
        self._layout, self._inputs, self._depth = layout, inputs, depth
        super().__init__({
            "i": In(data.ArrayLayout(layout, inputs)),
            "i_n": In(range(inputs + 1)),
            "take": In(1),
            "skip": In(1),
            "o": Out(stream.Signature(layout)),
            "empty": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        depth, inputs = self._depth, self._inputs
        entries = [Signal(self._layout, name=f"entry{j}") for j in range(depth)]
        held = Signal(depth)
        wp = Signal(depth, init=1)
        rp = Signal(depth, init=1)
        pop = Signal()
        m.d.comb += [
            self.o.valid.eq((held & rp).any()),
            self.o.payload.eq(or_all([Mux(rp[j], entries[j].as_value(), 0)
                                       for j in range(depth)])),
            pop.eq(self.o.valid & self.o.ready),
            self.empty.eq(~held.any()),
        ]
        more = [self.i_n > k for k in range(inputs)]
        for j in range(depth):
            src = [wp[(j - k) % depth] for k in range(inputs)]      # slot j gets input k
            write = Signal(name=f"write{j}")
            # A held slot is never written, except the one read now (held at rp means the
            # buffer drains this clock: what follows it always has room, README §4 credits).
            m.d.comb += write.eq(Cat(*(s & g for s, g in zip(src, more))).any()
                                 & ~(held[j] & ~rp[j]))
            with m.If(write):
                m.d.sync += entries[j].eq(or_all([Mux(s, self.i[k].as_value(), 0)
                                                   for k, s in enumerate(src)]))
            keep = held[j] & ~(pop & rp[j])
            new = self.take & write & ~(self.skip & wp[j])
            m.d.sync += held[j].eq(keep | new)
        with m.If(self.take):
            m.d.sync += wp.eq(_rotate(wp, self.i_n, inputs))
        with m.If(self.take & self.skip & (self.i_n != 0)):
            m.d.sync += rp.eq(_rotate(wp, 1, 1))
        with m.Elif(pop):
            m.d.sync += rp.eq(_rotate(rp, 1, 1))
        return m


def _rotate(onehot, by, most):
    """``onehot`` rotated up by ``by`` (0 .. ``most``) places."""
    n = len(onehot)
    ways = [Cat(onehot[n - k % n:], onehot[:n - k % n]) for k in range(most + 1)]
    if isinstance(by, int):
        return ways[by]
    return or_all([Mux(by == k, w, 0) for k, w in enumerate(ways)])
