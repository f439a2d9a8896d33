# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the CRC engine's hardware traffic (the sequence defined in
``sim/crc/traffic.py``'s docstring): the packets the generator sends, and the digest of the
results an IEEE 802.3 CRC-32 (:func:`zlib.crc32`) gives them. Pure Python, from that text."""

import zlib
from collections import deque

from ..dl.flit import DL_FLIT_BYTES
from ..tl.traffic import bits, lane_start, xorshift64

__all__ = ["packets", "results", "digest", "LAG"]

#: Frames between a frame's bare send (A) and its send with the FCS (B).
LAG = 2
BLOCK_BYTES = DL_FLIT_BYTES
MASK64 = (1 << 64) - 1


class _Lanes:
    """The lanes of one stream: a beat is their words little-endian, then each steps."""

    def __init__(self, seed, stream, n):
        self.words = [lane_start(seed, stream, k) for k in range(n)]

    def beat(self):
        out = b"".join(w.to_bytes(8, "little") for w in self.words)
        self.words = [xorshift64(w) for w in self.words]
        return out

    def take(self, n_bytes, beat_bytes):
        return b"".join(self.beat() for _ in range(-(-n_bytes // beat_bytes)))[:n_bytes]


def packets(seed, items, data_width):
    """The packets in the order sent: a list of (kind, bytes), kind ``"block"``, ``"A"``
    (a frame's body) or ``"B"`` (the body, its FCS, the bit flipped if corrupt)."""
    beat_bytes, lanes = data_width // 8, data_width // 64
    ctl = lane_start(seed, 0, 0)
    blocks, bodies = _Lanes(seed, 1, lanes), _Lanes(seed, 2, lanes)
    out, waiting, frames = [], deque(), 0
    for _ in range(items):
        x, ctl = ctl, xorshift64(ctl)
        if bits(x, 0, 8) < 102:
            out.append(("block", blocks.take(BLOCK_BYTES, beat_bytes)))
            continue
        n = 60 + (bits(x, 8, 24) * 1455 >> 16)
        body = bodies.take(n, beat_bytes)
        out.append(("A", body))
        corrupt, flip = bits(x, 24, 32) < 5, bits(x, 32, 48) * 8 * (n + 4) >> 16
        waiting.append((body, corrupt, flip))
        if frames >= LAG:
            out.append(("B", _b(*waiting.popleft())))
        frames += 1
    out.extend(("B", _b(*frame)) for frame in waiting)
    return out


def _b(body, corrupt, flip):
    packet = bytearray(body + zlib.crc32(body).to_bytes(4, "little"))
    if corrupt:
        packet[flip // 8] ^= 1 << (flip % 8)
    return bytes(packet)


def results(sent):
    """The engine's result for each packet: (crc, ok, malformed)."""
    return [(zlib.crc32(p), len(p) >= 4 and zlib.crc32(p) == 0x2144DF1C, False)
            for _, p in sent]


def digest(results_):
    """The digest of results in order: rotate left by one, XOR ``crc | ok << 32 |
    malformed << 33``."""
    d = 0
    for crc, ok, malformed in results_:
        d = ((d << 1 | d >> 63) & MASK64) ^ (crc | int(ok) << 32 | int(malformed) << 33)
    return d
