# SPDX-License-Identifier: BSD-2-Clause
"""Priority selection shared by the blocks."""

from amaranth import Signal

__all__ = ["lowest_set"]


def lowest_set(m, mask, count, name):
    """The number of the lowest set bit of ``mask`` (``count`` bits; 0 when none is), as a
    signal named ``name``."""
    first = Signal(range(count), name=name)
    for k in reversed(range(count)):
        with m.If(mask[k]):
            m.d.comb += first.eq(k)
    return first
