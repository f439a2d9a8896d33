# SPDX-License-Identifier: BSD-2-Clause
"""AXI4 burst arithmetic shared by the bridge's blocks [AXI4 A3.4.1; README §2.1]."""

from amaranth import Cat, Const, Mux

from ..model.ethx.bridge import Burst

__all__ = ["beat_words", "container_strobes", "first_lane", "illegal", "next_address", "record_words",
           "strobe_words"]


def _ones(size, width=12):
    """``2**size - 1`` as a ``width``-bit value."""
    return ((Const(1, width + 1) << size) - 1)[:width]


def next_address(addr, size, length, burst):
    """Bits 11:0 of the address of the beat after one at ``addr`` (bits 11:0): INCR goes to the
    next container, WRAP wraps at ``(length + 1) * 2**size`` bytes, FIXED stays. A burst never
    crosses 4 KB, so the bits above 11 never change."""
    low = addr[:12]
    step = (Const(1, 13) << size)[:12]
    aligned = low & ~_ones(size)
    incr = (aligned + step)[:12]
    total = ((length + 1) << size)[:12]      # WRAP: at most 16 beats of 128 bytes
    wrap_mask = (total - 1)[:12]
    wrapped = (low & ~wrap_mask) | (incr & wrap_mask)
    return Mux(burst == Burst.FIXED, low, Mux(burst == Burst.WRAP, wrapped, incr))


def beat_words(size):
    """Words a beat carries: ``max(1, 2**size / 8)``."""
    return Mux(size > 3, (Const(1, 4) << (size - 3).as_unsigned()[:2])[:4], 1)


def first_lane(addr, size, bus_words):
    """The bus's first 8-byte lane a beat at ``addr`` occupies: its word, aligned down to the
    beat's words."""
    if bus_words == 1:
        return Const(0, 1)
    bits = bus_words.bit_length() - 1
    lane = addr[3:3 + bits]
    return lane & ~(beat_words(size) - 1)[:bits]


def container_strobes(addr, size):
    """The 8 strobe bits of the word holding a beat at ``addr``: its container's bytes
    (all 8 from 8-byte beats up)."""
    return Mux(size == 0, (Const(1, 8) << addr[:3])[:8],
               Mux(size == 1, (Const(0b11, 8) << Cat(Const(0, 1), addr[1:3]))[:8],
                   Mux(size == 2, Mux(addr[2], 0xF0, 0x0F), 0xFF)))


def record_words(length, size):
    """Data words of ``length + 1`` beats."""
    return (length + 1) << Mux(size > 3, (size - 3).as_unsigned()[:3], 0)


def strobe_words(length, size):
    """Strobe words of ``length + 1`` beats, ``ceil(record_words / 8)``, worked out from
    ``length`` directly (one 9-bit add per beat size, in parallel) rather than from
    :func:`record_words`, so that it does not follow that sum."""
    n = length + 1
    return Mux(size <= 3, (length + 8) >> 3,
               Mux(size == 4, (length + 4) >> 2,
                   Mux(size == 5, (length + 2) >> 1, Mux(size == 6, n, n << 1))))


def illegal(addr, length, size, burst, *, bus_bytes):
    """Whether a burst breaks an AXI4 rule (the golden model's :func:`~scaleup_ip.model.ethx.bridge.axi_error`
    without the address-width check): wider than the bus, reserved burst, WRAP length or
    alignment, FIXED longer than 16, INCR across 4 KB."""
    too_wide = size > (bus_bytes.bit_length() - 1)
    wrap = burst == Burst.WRAP
    bad_wrap = wrap & (~((length == 1) | (length == 3) | (length == 7) | (length == 15))
                       | ((addr[:12] & _ones(size)) != 0))
    # The last byte: the first container's last byte plus ``length`` containers; one carry
    # chain, as the container's bytes below ``size`` never carry.
    last = (addr[:12] | _ones(size)) + (length << size)     # 13+ bits
    crosses = (burst == Burst.INCR) & (last[12:] != 0)
    return too_wide | (burst == 3) | bad_wrap | ((burst == Burst.FIXED) & (length > 15)) | crosses
