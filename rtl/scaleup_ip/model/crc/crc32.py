# SPDX-License-Identifier: BSD-2-Clause
"""IEEE 802.3 CRC-32, bit-serial, written from the standard's description."""

__all__ = [
    "POLYNOMIAL", "REFLECTED_POLYNOMIAL", "PRESET", "FINAL_XOR", "CHECK", "RESIDUE",
    "advance", "retreat", "register", "crc32", "fcs", "is_good",
]

#: Generator polynomial G(x) = x^32+x^26+x^23+x^22+x^16+x^12+x^11+x^10+x^8+x^7+x^5+x^4+x^2+x+1.
#: [IEEE 802.3 §3.2.9]
POLYNOMIAL = 0x04C1_1DB7
#: The same polynomial for a shift register whose bit 0 holds x^31 (802.3 sends bit 0 of each
#: octet first, so the register is kept bit-reversed and shifts right).
REFLECTED_POLYNOMIAL = int(f"{POLYNOMIAL:032b}"[::-1], 2)
#: "The first 32 bits of the frame are complemented": a preset of all ones. [IEEE 802.3 §3.2.9 a]
PRESET = 0xFFFF_FFFF
#: "The bit sequence is complemented and the result is the CRC". [IEEE 802.3 §3.2.9 e]
FINAL_XOR = 0xFFFF_FFFF
#: CRC of the ASCII string "123456789" (reveng catalogue, CRC-32/ISO-HDLC "check").
CHECK = 0xCBF4_3926
#: Register contents (before the final complement) after a frame followed by its own FCS.
#: (reveng catalogue, CRC-32/ISO-HDLC "residue" 0xDEBB20E3)
RESIDUE = 0xDEBB_20E3


def advance(state, data, nbits):
    """Shift ``nbits`` bits of ``data`` (bit 0 first) through the register ``state``.

    This is the bare linear update: no preset, no final complement. It is linear over GF(2) in
    ``(state, data)``, which is what lets hardware process a whole beat at once.
    """
    for i in range(nbits):
        feedback = (state ^ (data >> i)) & 1
        state >>= 1
        if feedback:
            state ^= REFLECTED_POLYNOMIAL
    return state


def retreat(state, nbits):
    """Undo ``nbits`` steps of :func:`advance` with zero data.

    After a zero-data step, bit 31 of the register is set exactly when the polynomial was added
    (the shift itself clears bit 31), and then the bit shifted out was a one.
    """
    for _ in range(nbits):
        if state & (1 << 31):
            state = ((state ^ REFLECTED_POLYNOMIAL) << 1) | 1
        else:
            state <<= 1
    return state


def register(data, state=PRESET):
    """Return the register after ``data`` (bytes), starting from ``state``."""
    return advance(state, int.from_bytes(bytes(data), "little"), 8 * len(data))


def crc32(data):
    """Compute the CRC-32 of ``data`` as an integer (same value as :func:`zlib.crc32`)."""
    return register(data) ^ FINAL_XOR


def fcs(data):
    """Return the 4 FCS octets to append to ``data``; the lowest CRC bit goes first."""
    return crc32(data).to_bytes(4, "little")


def is_good(frame_with_fcs):
    """Check a frame that ends in its FCS by its residue, as a receiver does."""
    return register(frame_with_fcs) == RESIDUE
