# SPDX-License-Identifier: BSD-2-Clause
"""The UPLI traffic sequence in hardware (README §1-5): random lanes and the items drawn from
them, shared by :class:`~scaleup_ip.tl.traffic.gen.UpliGen` and
:class:`~scaleup_ip.tl.traffic.check.UpliCheck`.
"""

from amaranth import Array, C, Cat, Const, Mux, Signal

from ..layout import BEAT_BYTES, ReqCmd, Status

__all__ = ["Lanes", "Pacing", "count_beats", "ReqData", "ReqHeader", "RdData", "RdHeader", "WrHeader",
           "poisoned", "splitmix64"]

_MASK = (1 << 64) - 1

# Streams and their lanes [README §1].
REQ_HEADER, REQ_DATA, RD_HEADER, RD_DATA, WR, GEN_PACING, CHECK_PACING = range(7)

#: [README §2] Commands by ``h0[0:5]``.
CMDS = ([0x03] * 5 + list(range(0x08, 0x10)) + [0x28] * 4 + [0x29] * 4 + [0x2A]
        + list(range(0x2C, 0x30)) + [0x30, 0x32] + list(range(0x3C, 0x40)))
#: [README §3, §4] Error statuses by their selector bits.
RD_ERRORS = [0x2, 0x3, 0x6, 0x8]
WR_ERRORS = [0x2, 0x3, 0x6, 0x8, 0xF, 0x2, 0x3, 0x6]
#: [README §1] Error beats: ``misc[0:7]`` below this (of 128).
ERROR_BELOW = 10
#: [README §3, §4] OKAY when the status selector is below this (of 16).
OKAY_BELOW = 11
#: The Poisoned Data message type, in bytes 0 and 32 of a poisoned beat as delivered
#: [UALink 1.0 §5.3, Table 5-28].
POISON = 0x20

assert len(CMDS) == 32


def splitmix64(z):
    """Vigna's SplitMix64 output for ``z`` (the lanes' start constants)."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ z >> 30) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ z >> 27) * 0x94D049BB133111EB) & _MASK
    return z ^ z >> 31


def _xorshift(x):
    """Marsaglia's xorshift64 step (13, 7, 17) as XORs of the 64-bit ``x``."""
    x = x ^ (x << 13)[:64]
    x = x ^ (x >> 7)
    return x ^ (x << 17)[:64]


class Lanes:
    """``n`` xorshift64 lanes of ``stream`` in module ``m``: ``words[k]`` is lane ``k``'s word
    (the current draw). ``load`` starts each at ``seed ^ splitmix64(16·stream + k)`` (1 where
    that is 0); otherwise ``advance`` steps every lane once. Out of reset they hold the start
    for seed 0."""

    def __init__(self, m, name, stream, n, seed, load, advance):
        self.words = []
        for k in range(n):
            c = splitmix64(16 * stream + k)
            word = Signal(64, name=f"{name}_{k}", init=c or 1)
            start = seed ^ c
            with m.If(load):
                m.d.sync += word.eq(Mux(start == 0, 1, start))
            with m.Elif(advance):
                m.d.sync += word.eq(_xorshift(word))
            self.words.append(word)

    def __getitem__(self, k):
        return self.words[k]


class Pacing:
    """A lane stepped every clock (stream ``stream``): ``pause(i)`` is 1 in about
    ``level / 256`` of the clocks, from byte ``i`` of the word (one byte per channel)."""

    def __init__(self, m, name, stream, seed, load, level):
        self.lane = Lanes(m, name, stream, 1, seed, load, Const(1))[0]
        self.level = level

    def pause(self, i):
        return self.lane[8 * i:8 * i + 8] < self.level


def _scale(n, k):
    """``1 + (n · k >> 8)``: 1 .. ``k`` [README §2]."""
    return 1 + ((n * k) >> 8)


def _beat(lanes):
    """A beat's 512 data bits from lanes ``0 .. 7``."""
    return Cat(*(lanes[k] for k in range(8)))


def _error(misc):
    return misc[0:7] < ERROR_BELOW


def count_beats(m, k, load, fire, last):
    """Beat index ``k`` of the item in hand: back to 0 on ``load`` or the item's ``last``
    beat taken (``fire``), else one up for each beat taken."""
    with m.If(load | (fire & last)):
        m.d.sync += k.eq(0)
    with m.Elif(fire):
        m.d.sync += k.eq(k + 1)


def poisoned(data, error):
    """``data`` as the far end delivers it: bytes 0 and 32 replaced by the Poisoned Data
    message type when ``error`` [README §5]."""
    half = BEAT_BYTES * 4
    fixed = Cat(C(POISON, 8), data[8:half], C(POISON, 8), data[half + 8:])
    return Mux(error, fixed, data)


class ReqHeader:
    """The request a draw of stream 0 (``h``: three words) stands for [README §2], a cacheable
    one where ``cacheable`` and ``h2[10]`` is 0: ``fields`` (a dict of
    :data:`~scaleup_ip.tl.layout.request_layout` values, ``pool`` 0), ``has_data`` and ``num_beats``."""

    def __init__(self, m, h, cacheable=0):
        h0, h1, h2 = h
        cmd, plain = Signal(6), Signal(6)
        m.d.comb += plain.eq(Array(C(c, 6) for c in CMDS)[h0[0:5]])
        o, n = h0[5:11], h0[11:19]
        full = plain == ReqCmd.WRITE_FULL.value
        atomic = (plain == ReqCmd.ATOMIC_R.value) | (plain == ReqCmd.ATOMIC_NR.value)
        vendor = (plain[3:6] == 0b001) | (plain >= 0x3C)
        units = Signal(7)
        m.d.comb += units.eq(Mux(full, _scale(n, 4 - o[0:2]),
                                 Mux(atomic, _scale(n, 16 - o[0:4]), _scale(n, 64 - o))))
        offset = Mux(full, o[0:2] << 6, o << 2)[:8]
        nbytes = Mux(full, units << 6, units << 2)[:9]
        beats = Signal(2)
        with m.If(full):
            m.d.comb += beats.eq(units - 1)
        with m.Elif(vendor):
            m.d.comb += beats.eq(h0[50:52])
        with m.Elif(plain[5] & ~atomic):
            m.d.comb += beats.eq((offset[:6] + nbytes - 1) >> 6)
        c = _Cacheable(m, h0, h1, h2)
        cached = Signal()
        m.d.comb += [cached.eq(cacheable & ~h2[10]), cmd.eq(Mux(cached, c.cmd, plain))]
        self.has_data = cmd[5]
        self.num_beats = Signal(2)
        m.d.comb += self.num_beats.eq(Mux(cached, c.num_beats, beats))
        self.vc = h0[19:21]
        self.fields = {
            "cmd": cmd, "vc": self.vc, "asi": h0[21:23], "tag": h0[23:34],
            "attr": Mux(cached, c.attr, h0[34:42]),
            "len": Mux(cached, c.len, (nbytes >> 2) - 1),
            "metadata": Mux(cached, h0[42:45], h0[42:50]),
            "addr": Mux(cached, c.addr, Cat(offset, h1[0:49])),
            "src_acc": h1[49:59], "dst_acc": Mux(cached, h2[17:20], h2[0:10]),
            "num_beats": self.num_beats, "pool": 0,
        }


#: [README §2] Cacheable requests' commands by ``h2[11:13]``, and their regions (ReqAddr[56:20])
#: by ``4 · dst_acc + h2[20:22]``.
CACHEABLE_CMDS = [0x03, 0x28, 0x29, 0x03]
REGIONS = [splitmix64(256 + k) & ((1 << 37) - 1) for k in range(32)]


class _Cacheable:
    """The cacheable request of a draw [README §2, Cacheable requests]."""

    def __init__(self, m, h0, h1, h2):
        self.cmd = Signal(6)
        m.d.comb += self.cmd.eq(Array(C(c, 6) for c in CACHEABLE_CMDS)[h2[11:13]])
        read = self.cmd == ReqCmd.READ.value
        units = 1 + h2[13:15]
        block = ((h2[15:17] * (5 - units)) >> 2)[:2]
        region = Signal(37)
        m.d.comb += region.eq(Array(C(r, 37) for r in REGIONS)[Cat(h2[20:22], h2[17:20])])
        self.addr = Cat(C(0, 6), block, h1[0:12], region)
        self.len = (units << 4) - 1
        self.num_beats = Mux(read, 0, units - 1)
        self.attr = Mux(read, 0xFF, 0x00)


class ReqData:
    """OrigData beat ``k`` of the request ``header`` (:class:`ReqHeader`), from a draw of
    stream 1 (``d``: ten words) [README §2]: ``fields`` of
    :data:`~scaleup_ip.tl.layout.orig_data_layout`, and ``last``."""

    def __init__(self, header, d, k):
        full = header.fields["cmd"] == ReqCmd.WRITE_FULL.value
        self.last = k == header.num_beats
        self.fields = {"data": _beat(d), "byte_en": Mux(full, C(-1, 64), d[8]),
                       "offset": k, "last": self.last, "error": _error(d[9]),
                       "vc": header.vc, "pool": 0}


class RdHeader:
    """The read response a draw of stream 2 (``r``: one word) stands for [README §3]."""

    def __init__(self, m, r):
        self.num_beats = r[33:35]
        self.status = Signal(4)
        m.d.comb += self.status.eq(Mux(r[35:39] < OKAY_BELOW, Status.OKAY.value,
                                       Array(C(s, 4) for s in RD_ERRORS)[r[39:41]]))
        self.single_offset, self.single_last = r[41:43], r[43]
        self.fields = {"vc": r[0:2], "pool": 0, "tag": r[2:13], "src_acc": r[13:23],
                       "dst_acc": r[23:33], "num_beats": self.num_beats, "status": self.status}


class RdData:
    """Beat ``k`` of the read response ``header`` (:class:`RdHeader`), from a draw of stream 3
    (``d``: nine words) [README §3]: ``fields`` of :data:`~scaleup_ip.tl.layout.rd_rsp_layout` and
    ``last`` (the response's final beat)."""

    def __init__(self, header, d, k):
        burst = header.num_beats != 0
        self.last = k == header.num_beats
        self.fields = {**header.fields, "data": _beat(d),
                       "offset": Mux(burst, k, header.single_offset),
                       "last": Mux(burst, self.last, header.single_last),
                       "error": _error(d[8])}


class WrHeader:
    """The write response a draw of stream 4 (``w``: one word) stands for [README §4]."""

    def __init__(self, m, w):
        self.status = Signal(4)
        m.d.comb += self.status.eq(Mux(w[33:37] < OKAY_BELOW, Status.OKAY.value,
                                       Array(C(s, 4) for s in WR_ERRORS)[w[37:40]]))
        self.fields = {"vc": w[0:2], "pool": 0, "tag": w[2:13], "src_acc": w[13:23],
                       "dst_acc": w[23:33], "status": self.status}
