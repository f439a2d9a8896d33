# SPDX-License-Identifier: BSD-2-Clause
"""A queue whose oldest entries are all readable at once, kept in banks of distributed RAM."""

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

__all__ = ["BankQueue"]


class BankQueue(wiring.Component):
    """A queue that shows its oldest ``banks`` entries and drops up to ``banks`` of them per
    clock (the slot packer's request and response-unit queues, README §3 *Slot packer*).

    Entry ``k`` is kept in bank ``k mod banks``, a memory of ``depth / banks`` entries read
    without a clock, so the oldest ``banks`` entries are one read of each bank and a turn by
    the head's place: nothing moves when entries leave, and the window after a pop of
    ``banks`` entries is full again in the next clock (a FIFO behind a window of registers
    refills one entry per clock).

    Parameters
    ----------
    layout : data.Layout
        Entry layout.
    depth : int
        Entries held, at least ``banks`` (the banks' rows are rounded up to a power of two).
    banks : int
        Entries visible at once, a power of two.
    amend : data.Layout or None
        A second part of each entry, kept in memories of its own: written with the entry
        (``i_amend``) and rewritten in the newest entry through ``amend``.
    registered : bool
        ``entries`` and ``amends`` come from registers: the banks are read for the next clock
        (at the head after this clock's pop) and the entry written this clock is taken from
        the write, so the window shows the same entries, with none of the read in front of
        what uses it.

    Members
    -------
    i : In(stream.Signature(layout))
        Entries in; ``ready`` is low only while all ``depth`` are held.
    i_amend : In(amend)
        Only with ``amend``: the second part written with an entry taken from ``i``.
    amend : In(stream.Signature(amend))
        Only with ``amend``: rewrites the second part of the newest entry; always ready. Not
        with ``i`` in the same clock, and only while an entry is held.
    entries, amends : Out(ArrayLayout(layout, banks)), Out(ArrayLayout(amend, banks))
        The oldest entries and their second parts, ``entries[0]`` oldest; ``count`` valid.
        Combinational from registers through the memories' read ports (or registered).
    count : Out(range(banks + 1))
        Valid entries in the window (registered).
    level : Out(range(depth + 1))
        Entries held (registered).
    more : Out(1)
        More than ``banks`` entries are held (registered).
    entries_next, amends_next, count_next, more_next : Out
        Only with ``registered``: what ``entries``, ``amends``, ``count`` and ``more`` will
        show in the next clock (combinational), for state that is formed from them a clock
        ahead.
    reads, amend_reads, lane : Out
        Without ``registered``: the window unturned, bank by bank (entry ``j`` of the window is
        in bank ``(lane + j) mod banks``), for a user that turns it in logic it has anyway.
    pop : In(range(banks + 1))
        Entries removed from the front this clock; at most ``count``.

    Latency: an entry accepted at clock ``t`` is shown from ``t + 1``. Throughput: one entry
    in and up to ``banks`` out per clock.
    """

    def __init__(self, layout, depth, banks=4, amend=None, registered=False):
        if banks < 1 or banks & (banks - 1) or depth < banks:
            raise ValueError(f"BankQueue: banks {banks} must be a power of two and depth "
                             f"{depth} at least as many")
        self._layout, self._depth, self._banks, self._amend = layout, depth, banks, amend
        self._registered = registered
        members = {
            "i": In(stream.Signature(layout)),
            "entries": Out(data.ArrayLayout(layout, banks)),
            "count": Out(range(banks + 1)),
            "level": Out(range(depth + 1)),
            "more": Out(1),
            "pop": In(range(banks + 1)),
            "reads": Out(data.ArrayLayout(layout, banks)),
            "lane": Out(range(banks)),
        }
        if registered:
            members.update({
                "entries_next": Out(data.ArrayLayout(layout, banks)),
                "count_next": Out(range(banks + 1)),
                "more_next": Out(1),
            })
            if amend is not None:
                members["amends_next"] = Out(data.ArrayLayout(amend, banks))
        if amend is not None:
            members.update({
                "i_amend": In(amend),
                "amend": In(stream.Signature(amend)),
                "amends": Out(data.ArrayLayout(amend, banks)),
                "amend_reads": Out(data.ArrayLayout(amend, banks)),
            })
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        banks = self._banks
        rows = 1 << ceil_log2(-(-self._depth // banks))
        head = Signal(range(rows * banks))
        tail = Signal(range(rows * banks))
        push = Signal()
        m.d.comb += [self.i.ready.eq(self.level != self._depth),
                     push.eq(self.i.valid & self.i.ready)]
        level_next = Signal.like(self.level)
        m.d.comb += level_next.eq(self.level + push - self.pop)
        count_next = Signal.like(self.count)
        more_next = Signal()
        m.d.comb += [count_next.eq(Array(min(n, banks) for n in range(self._depth + 1))
                                   [level_next]),
                     more_next.eq(level_next > banks)]
        m.d.sync += [head.eq(head + self.pop), tail.eq(tail + push), self.level.eq(level_next),
                     self.count.eq(count_next), self.more.eq(more_next)]
        if self._registered:
            m.d.comb += [self.count_next.eq(count_next), self.more_next.eq(more_next)]
        # With ``registered``, the window is read for the next clock (from the head after this
        # clock's pop) and registered, the entry written this clock taken from the write.
        after = Signal.like(head)
        m.d.comb += after.eq(head + self.pop)
        view = after if self._registered else head
        lanes = view % banks
        # Bank b holds the window's entry (b - lanes) mod banks: in the row after the head's
        # when it lies before the head's bank.
        rd_rows = [view // banks + (b < lanes) for b in range(banks)]
        m.d.comb += self.lane.eq(lanes)
        parts = [(self._layout, self.entries, self.reads, self.i.payload, push, tail)]
        if self._amend is not None:
            newest = Signal.like(tail)
            m.d.comb += [newest.eq(tail - 1), self.amend.ready.eq(1)]
            amend_row = Mux(push, tail, newest)
            data_in = Mux(push, self.i_amend, self.amend.payload)
            parts.append((self._amend, self.amends, self.amend_reads, data_in,
                          push | self.amend.valid, amend_row))
        for k, (layout, window, unturned, w_data, w_en, w_at) in enumerate(parts):
            reads = []
            for b in range(banks):
                mem = m.submodules[f"bank{b}_{k}"] = Memory(shape=layout, depth=rows, init=[])
                wr = mem.write_port()
                rd = mem.read_port(domain="comb")
                m.d.comb += [wr.addr.eq(w_at // banks), wr.data.eq(w_data),
                             wr.en.eq(w_en & (w_at % banks == b)), rd.addr.eq(rd_rows[b])]
                reads.append(rd.data)
                m.d.comb += unturned[b].eq(rd.data)
            if not self._registered:
                for j in range(banks):
                    m.d.comb += window[j].eq(Array(reads)[(lanes + j) % banks])
                continue
            place = Signal.like(head, name=f"written_{k}")     # the write's place in the window
            m.d.comb += place.eq(w_at - after)
            ahead = self.entries_next if k == 0 else self.amends_next
            for j in range(banks):
                m.d.comb += ahead[j].eq(Mux(w_en & (place == j), w_data,
                                            Array(reads)[(lanes + j) % banks]))
                m.d.sync += window[j].eq(ahead[j])
        return m
