# SPDX-License-Identifier: BSD-2-Clause
"""A second model of the CRC engine's hardware traffic, written by another engineer from the
docstring of ``sim/crc/traffic.py`` and section 1 of ``rtl/scaleup_ip/tl/traffic/README.md`` alone
(it shares no code with ``rtl/scaleup_ip/model/crc/traffic.py``): ``tb/crc/test_traffic.py`` checks
that both
models give the same packets and digests."""

import zlib

M64 = (1 << 64) - 1
LAG = 2


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def xorshift64(x):
    x ^= (x << 13) & M64
    x ^= x >> 7
    x ^= (x << 17) & M64
    return x & M64


def bits(x, a, b):
    return (x >> a) & ((1 << (b - a)) - 1)


class Stream:
    def __init__(self, seed, s, nlanes):
        self.lanes = []
        for k in range(nlanes):
            v = (seed ^ splitmix64(16 * s + k)) & M64
            self.lanes.append(v if v else 1)

    def draw(self):
        words = list(self.lanes)
        self.lanes = [xorshift64(w) for w in self.lanes]
        return words

    def beat_bytes(self):
        return b"".join(w.to_bytes(8, "little") for w in self.draw())

    def take(self, n):
        out = bytearray()
        while len(out) < n:          # ceil(n / beat_bytes) beats
            out += self.beat_bytes()
        return bytes(out[:n])


def packets(seed, items, width_bits):
    assert width_bits % 64 == 0 and 64 <= width_bits <= 512
    seed &= M64
    nl = width_bits // 64
    s0 = Stream(seed, 0, 1)
    s1 = Stream(seed, 1, nl)
    s2 = Stream(seed, 2, nl)
    out = []
    frames = []  # (body, corrupt, flipbit)

    def make_b(fr):
        body, corrupt, flip = fr
        fcs = zlib.crc32(body)  # the engine's crc of A
        pkt = bytearray(body + fcs.to_bytes(4, "little"))
        if corrupt:
            pkt[flip >> 3] ^= 1 << (flip & 7)
        return ("B", bytes(pkt))

    nxt_b = 0
    for _ in range(items):
        x = s0.draw()[0]
        if bits(x, 0, 8) < 102:
            out.append(("block", s1.take(640)))
            continue
        j = len(frames)
        n = 60 + ((bits(x, 8, 24) * 1455) >> 16)
        body = s2.take(n)
        corrupt = bits(x, 24, 32) < 5
        flip = (bits(x, 32, 48) * 8 * (n + 4)) >> 16
        frames.append((body, corrupt, flip))
        out.append(("A", body))
        if j >= LAG:
            out.append(make_b(frames[j - LAG]))
            nxt_b = j - LAG + 1
    while nxt_b < len(frames):
        out.append(make_b(frames[nxt_b]))
        nxt_b += 1
    return out


def result(pkt):
    crc = zlib.crc32(pkt)
    ok = int(len(pkt) >= 4 and zlib.crc32(pkt[:-4]) == int.from_bytes(pkt[-4:], "little"))
    return crc, ok, 0


def digest(pkts):
    d = 0
    for _, p in pkts:
        crc, ok, mal = result(p)
        d = ((d << 1) | (d >> 63)) & M64
        d ^= crc | (ok << 32) | (mal << 33)
    return d
