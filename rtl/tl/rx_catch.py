"""Catch buffer of the TL receiver [§5.7]: several entries in per clock, one out."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CatchBuffer"]


class CatchBuffer(wiring.Component):
    """A register queue taking up to ``inputs`` entries per clock, giving one per clock.

    Parameters
    ----------
    layout : data.Layout
        Entry layout.
    inputs : int
        Entries offered per clock; the valid ones are queued lowest index first.
    depth : int
        Entries held: the source rate limit (REQ_LIMIT or RSP_LIMIT) [§5.7].

    Members
    -------
    i_valid : In(inputs), i : In(ArrayLayout(layout, inputs))
        Entries in; no back-pressure.
    o : Out(stream.Signature(layout))
        Entries out, oldest first; ``valid`` when anything is held.

    Latency: an entry taken at clock ``t`` is on ``o`` from ``t + 1``. Throughput: one entry out
    per clock; the out slot freed in a clock is reusable in the same clock. Overflow: entries
    beyond ``depth`` are dropped (the receiver has already flagged ``catch_overrun`` then, since
    the rate limit of one drain per flit keeps a well-behaved source within ``depth``).
    """

    def __init__(self, layout, inputs, depth):
        self._layout, self._inputs, self._depth = layout, inputs, depth
        super().__init__({
            "i_valid": In(inputs),
            "i": In(data.ArrayLayout(layout, inputs)),
            "o": Out(stream.Signature(layout)),
        })

    def elaborate(self, platform):
        m = Module()
        depth, inputs = self._depth, self._inputs
        entries = [Signal(self._layout, name=f"entry{j}") for j in range(depth)]
        count = Signal(range(depth + 1))
        pop = Signal()
        kept = Signal(range(depth + 1))
        m.d.comb += [
            self.o.valid.eq(count != 0), self.o.payload.eq(entries[0]),
            pop.eq(self.o.valid & self.o.ready), kept.eq(count - pop),
        ]
        idx = []
        for i in range(inputs):
            pos = Signal(range(depth + inputs + 1), name=f"pos{i}")
            m.d.comb += pos.eq(kept + sum(self.i_valid[k] for k in range(i)) if i else kept)
            idx.append(pos)
        for j in range(depth):
            nxt = Signal(self._layout, name=f"next{j}")
            keep = entries[j + 1] if j + 1 < depth else entries[j]
            m.d.comb += nxt.eq(Mux(pop, keep, entries[j]))
            for i in range(inputs):
                with m.If(self.i_valid[i] & (idx[i] == j)):
                    m.d.comb += nxt.eq(self.i[i])
            m.d.sync += entries[j].eq(nxt)
        total = Signal(range(depth + inputs + 1))
        m.d.comb += total.eq(kept + sum(self.i_valid[i] for i in range(inputs)))
        m.d.sync += count.eq(Mux(total > depth, depth, total))
        return m
