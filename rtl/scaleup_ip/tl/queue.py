# SPDX-License-Identifier: BSD-2-Clause
"""A FIFO whose first few entries are visible at once, for the TL packer's picking logic."""

from amaranth import Module, Mux, Signal
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
        Total entries held, window included; at least ``held``.
    window : int
        Entries visible at once.
    held : int
        Entries kept in registers, window included (default ``window``); the rest wait in a
        FIFO that moves one entry into the registers per clock. With ``held = depth`` every
        entry is in registers, and the window shows ``min(window, entries held)`` after every
        clock, however many were dropped the clock before.

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
    hidden : Out(1)
        Entries wait behind the registers (so ``count`` is below ``window`` only until they
        move up).
    pop : In(range(window + 1))
        Entries removed from the front this clock; must not exceed ``count``.

    Latency: an entry accepted at clock ``t`` is visible from ``t + 1`` when the FIFO behind the
    registers is empty. Throughput: one entry in per clock; the registers refill from the FIFO
    at one entry per clock.
    """

    def __init__(self, layout, depth, window, held=None):
        held = window if held is None else held
        if not window <= held <= depth or depth == window:
            raise ValueError(f"WindowQueue needs window {window} <= held {held} <= depth "
                             f"{depth}, and depth above window")
        self._layout, self._depth, self._window, self._held = layout, depth, window, held
        super().__init__({
            "i": In(stream.Signature(layout)),
            "entries": Out(data.ArrayLayout(layout, window)),
            "entries_next": Out(data.ArrayLayout(layout, window)),
            "count": Out(range(window + 1)),
            "hidden": Out(1),
            "pop": In(range(window + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        window, held = self._window, self._held
        regs = Signal(data.ArrayLayout(self._layout, held))
        level = Signal(range(held + 1))                       # entries in the registers
        kept = Signal(range(held + 1))
        m.d.comb += kept.eq(level - self.pop)
        fill = Signal()
        fill_value = Signal(self._layout)
        if self._depth > held:
            m.submodules.fifo = fifo = SyncFIFO(width=len(self.i.payload.as_value()),
                                                depth=self._depth - held)
            bypass = Signal()                                 # FIFO empty: input goes straight in
            m.d.comb += [
                bypass.eq(~fifo.r_rdy & (kept < held)),
                fifo.r_en.eq(kept < held),
                fifo.w_data.eq(self.i.payload),
                fifo.w_en.eq(self.i.valid & ~bypass),
                self.i.ready.eq(bypass | fifo.w_rdy),
                fill_value.eq(Mux(fifo.r_rdy, fifo.r_data, self.i.payload)),
                fill.eq((fifo.r_rdy | (bypass & self.i.valid)) & (kept < held)),
                self.hidden.eq(fifo.r_rdy),
            ]
        else:
            m.d.comb += [self.i.ready.eq(kept < held), fill_value.eq(self.i.payload),
                         fill.eq(self.i.valid & (kept < held))]
        nxt = Signal.like(regs)
        m.d.comb += nxt.eq(regs)
        with m.Switch(self.pop):
            for pop in range(window + 1):
                with m.Case(pop):
                    for j in range(held - pop):
                        m.d.comb += nxt[j].eq(regs[j + pop])
        with m.If(fill):
            m.d.comb += nxt[kept].eq(fill_value)
        level_next = Signal.like(level)
        m.d.comb += [
            level_next.eq(kept + fill),
            *(self.entries_next[j].eq(nxt[j]) for j in range(window)),
            *(self.entries[j].eq(regs[j]) for j in range(window)),
        ]
        # ``count`` is min(level, window), registered on its own: the decision reads it.
        m.d.sync += [regs.eq(nxt), level.eq(level_next),
                     self.count.eq(Mux(level_next > window, window, level_next))]
        return m
