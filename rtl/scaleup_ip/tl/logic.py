# SPDX-License-Identifier: BSD-2-Clause
"""Small combinational helpers shared by the TL blocks."""

from amaranth import Array, Const

__all__ = ["and_all", "or_all", "plus_one"]


def or_all(values):
    """The bitwise OR of a non-empty list of values (a balanced tree is left to synthesis)."""
    out = values[0]
    for v in values[1:]:
        out = out | v
    return out


def and_all(values):
    """The bitwise AND of a non-empty list of values."""
    out = values[0]
    for v in values[1:]:
        out = out & v
    return out


def plus_one(n):
    """``n`` + 1 for a small ``n`` (a NumBeats field), as a multiplexer rather than an adder."""
    return Array(Const(x + 1, len(n) + 1) for x in range(1 << len(n)))[n]
