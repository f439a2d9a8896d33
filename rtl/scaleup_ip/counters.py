# SPDX-License-Identifier: BSD-2-Clause
"""Counter helpers shared by the blocks."""

from amaranth import Signal

__all__ = ["count_events"]


def count_events(m, counts, events, *, late=False):
    """Each counter ``counts[kind]`` counts up by one in the clocks its ``events[kind]`` is 1
    (the event an enable, not an operand of the adder). With ``late``, each event is
    registered first: the counters move a clock after their events, and no event's logic is
    on a counter's enable."""
    for kind, event in events.items():
        if late:
            registered = Signal(name=f"{kind.name.lower()}_event")
            m.d.sync += registered.eq(event)
            event = registered
        with m.If(event):
            m.d.sync += counts[kind].eq(counts[kind] + 1)
