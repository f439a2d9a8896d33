# SPDX-License-Identifier: BSD-2-Clause
"""Counter helpers shared by the blocks."""

__all__ = ["count_events"]


def count_events(m, counts, events):
    """Each counter ``counts[kind]`` counts up by one in the clocks its ``events[kind]`` is 1
    (the event an enable, not an operand of the adder)."""
    for kind, event in events.items():
        with m.If(event):
            m.d.sync += counts[kind].eq(counts[kind] + 1)
