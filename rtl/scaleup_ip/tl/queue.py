# SPDX-License-Identifier: BSD-2-Clause
"""A FIFO whose first few entries are visible at once, for the TL packer's picking logic."""

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

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
        Entries visible at once, a power of two.
    held : int
        Entries kept in registers, window included (default ``window``); the rest wait in a
        FIFO that moves one entry into the registers per clock. With ``held = depth`` every
        entry is in registers, and the window shows ``min(window, entries held)`` after every
        clock, however many were dropped the clock before.
    ready_registered : bool
        ``i.ready`` from registers alone: an entry goes straight into the registers (the FIFO
        empty) only when they had room before this clock's ``pop``, so ``pop`` never reaches
        ``i.ready`` (the writer's logic starts from a register). Otherwise it goes through the
        FIFO, a clock later.

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

    With ``held`` above ``window``, the registers are a ring (``held`` rounded up to a power of
    two) that only a new entry writes, read in ``window`` banks and turned, so nothing moves
    when entries are dropped: the window is a registered copy of the ring's oldest entries as
    they will be (for 16 response entries and a window of 8, 10 k LUT4 where shifting all 16
    took 26 k). With ``held = window`` the window is the registers, shifted (smaller there).

    Latency: an entry accepted at clock ``t`` is visible from ``t + 1`` when the FIFO behind the
    registers is empty. Throughput: one entry in per clock; the registers refill from the FIFO
    at one entry per clock.
    """

    def __init__(self, layout, depth, window, held=None, *, ready_registered=False):
        held = window if held is None else held
        if ready_registered and depth == held:
            raise ValueError("WindowQueue with ready_registered needs depth above held")
        self._ready_registered = ready_registered
        if not window <= held <= depth or depth == window or window & (window - 1):
            raise ValueError(f"WindowQueue needs window {window} <= held {held} <= depth "
                             f"{depth}, depth above window and window a power of two")
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
                bypass.eq(~fifo.r_rdy & ((level if self._ready_registered else kept) < held)),
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
        if held > window:
            self._ring(m, level, kept, fill, fill_value)
        else:
            self._shift(m, kept, fill, fill_value)
        level_next = Signal.like(level)
        m.d.comb += level_next.eq(kept + fill)
        # ``count`` is min(level, window), registered on its own: the decision reads it.
        m.d.sync += [self.entries.eq(self.entries_next), level.eq(level_next),
                     self.count.eq(level_next if held == window
                                   else Mux(level_next > window, window, level_next))]
        return m

    def _shift(self, m, kept, fill, fill_value):
        """The window is all the registers: shifted by ``pop``, the new entry after those
        kept."""
        nxt = self.entries_next
        m.d.comb += nxt.eq(self.entries)
        with m.Switch(self.pop):
            for pop in range(self._window + 1):
                with m.Case(pop):
                    for k in range(self._window - pop):
                        m.d.comb += nxt[k].eq(self.entries[k + pop])
        with m.If(fill):
            m.d.comb += nxt[kept].eq(fill_value)

    def _ring(self, m, level, kept, fill, fill_value):
        """The entries sit in a ring of registers that only the new entry writes; the window
        is read from the ring as it will be."""
        size = 1 << ceil_log2(self._held)
        ring = [Signal(self._layout, name=f"ring{k}") for k in range(size)]
        head = Signal(range(size))                            # the oldest entry
        tail = Signal(range(size))                            # where a new entry goes
        head_next = Signal(range(size))
        m.d.comb += [tail.eq(head + level), head_next.eq(head + self.pop)]
        m.d.sync += head.eq(head_next)
        for k in range(size):
            with m.If(fill & (tail == k)):
                m.d.sync += ring[k].eq(fill_value)
        ahead = self._read(m, ring, head_next)
        for k in range(self._window):
            m.d.comb += self.entries_next[k].eq(Mux(fill & (kept == k), fill_value, ahead[k]))

    def _read(self, m, ring, first):
        """Ring entries ``first .. first + window - 1``, in banks: entry ``k`` of the ring is in
        bank ``k mod window``, so each bank gives one entry (the slot after ``first``'s for the
        banks below ``first``'s) and the window is the banks turned by ``first``."""
        window = self._window
        low = exact_log2(window)
        slots = len(ring) // window
        banks = [Signal(self._layout, name=f"bank{b}") for b in range(window)]
        for b, bank in enumerate(banks):
            slot = Signal(range(slots), name=f"slot{b}")
            later = first[:low] > b if b < window - 1 else 0   # the bank is past the turn
            m.d.comb += slot.eq(first[low:] + later if slots > 1 else 0)
            with m.Switch(slot):
                for k in range(slots):
                    with m.Case(k):
                        m.d.comb += bank.eq(ring[k * window + b])
        out = [Signal(self._layout, name=f"ahead{k}") for k in range(window)]
        with m.Switch(first[:low]):
            for h in range(window):
                with m.Case(h):
                    m.d.comb += [o.eq(banks[(h + k) % window]) for k, o in enumerate(out)]
        return out
