"""A FIFO whose first few entries are visible at once, for the TL packer's picking logic."""

from amaranth import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

__all__ = ["WindowQueue"]


class WindowQueue(wiring.Component):
    """A queue that shows its oldest ``window`` entries and drops any number of them per clock.

    Parameters
    ----------
    layout : data.Layout
        Entry layout.
    depth : int
        Total entries held, window included; more than ``window``.
    window : int
        Entries visible at once.

    Members
    -------
    i : In(stream.Signature(layout))
        Entries in. ``ready`` falls only when all ``depth`` entries are taken.
    entries : Out(ArrayLayout(layout, window))
        The oldest entries, ``entries[0]`` oldest; ``count`` of them are valid. Registered.
    entries_next : Out(ArrayLayout(layout, window))
        What ``entries`` will hold in the next clock (for state derived from the window that
        must be registered alongside it).
    count : Out(range(window + 1))
        Valid entries in the window.
    pop : In(range(window + 1))
        Entries removed from the front this clock; must not exceed ``count``.

    Latency: an entry accepted at clock ``t`` is visible from ``t + 1`` when the FIFO behind the
    window is empty. Throughput: one entry in and one entry into the window per clock; the window
    refills at one entry per clock, so it never holds fewer than ``min(window, entries held)``
    minus the entries popped in the previous clock plus one.
    """

    def __init__(self, layout, depth, window):
        if depth <= window:
            raise ValueError(f"WindowQueue depth {depth} must exceed window {window}")
        self._layout, self._depth, self._window = layout, depth, window
        super().__init__({
            "i": In(stream.Signature(layout)),
            "entries": Out(data.ArrayLayout(layout, window)),
            "entries_next": Out(data.ArrayLayout(layout, window)),
            "count": Out(range(window + 1)),
            "pop": In(range(window + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        window = self._window
        m.submodules.fifo = fifo = SyncFIFO(width=len(self.i.payload.as_value()),
                                            depth=self._depth - window)
        kept = Signal(range(window + 1))
        m.d.comb += kept.eq(self.count - self.pop)
        bypass = Signal()                                     # FIFO empty: input goes straight in
        fill = Signal()
        fill_value = Signal(self._layout)
        m.d.comb += [
            bypass.eq(~fifo.r_rdy & (kept < window)),
            fifo.r_en.eq(kept < window),
            fifo.w_data.eq(self.i.payload),
            fifo.w_en.eq(self.i.valid & ~bypass),
            self.i.ready.eq(bypass | fifo.w_rdy),
        ]
        with m.If(fifo.r_rdy):
            m.d.comb += fill_value.eq(fifo.r_data)
        with m.Else():
            m.d.comb += fill_value.eq(self.i.payload)
        m.d.comb += fill.eq((fifo.r_rdy | (bypass & self.i.valid)) & (kept < window))
        nxt = self.entries_next
        m.d.comb += nxt.eq(self.entries)
        with m.Switch(self.pop):
            for pop in range(window + 1):
                with m.Case(pop):
                    for j in range(window - pop):
                        m.d.comb += nxt[j].eq(self.entries[j + pop])
        with m.If(fill):
            m.d.comb += nxt[kept].eq(fill_value)
        m.d.sync += [self.entries.eq(nxt), self.count.eq(kept + fill)]
        return m
