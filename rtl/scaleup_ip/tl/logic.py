# SPDX-License-Identifier: BSD-2-Clause
"""Small combinational helpers shared by the TL blocks."""

from amaranth import Array, Cat, Const, Value

__all__ = ["above", "and_all", "or_all", "plus_one", "thermometer"]


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


def above(value, const):
    """``value > const`` for an unsigned ``value`` and a constant, from AND and OR terms of its
    bits (from the least significant up: greater when the bit is set and the constant's is
    not, or the bits below are greater and the bit equals the constant's), so that synthesis
    makes LUTs of it rather than a carry chain."""
    bits = Value.cast(value)
    if const < 0:
        return Const(1)
    if const >> len(bits):
        return Const(0)
    greater = Const(0)
    for k, bit in enumerate(bits):
        greater = bit & greater if (const >> k) & 1 else bit | greater
    return greater


def thermometer(value, width):
    """Bit ``i`` set when ``value > i`` (for ``i`` below ``width``; a negative ``value`` sets
    none). Built from AND and OR terms of ``value``'s bits (:func:`above`), so that synthesis
    makes LUTs of it instead of a carry chain per bit."""
    value = Value.cast(value)
    bits = value[:-1] if value.shape().signed else value
    low = max(1, (width - 1).bit_length())
    high = bits[low:].any() if len(bits) > low else Const(0)
    positive = ~value[-1] if value.shape().signed else Const(1)
    return Cat(*(positive & (high | above(bits[:low], i)) for i in range(width)))
