# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the hardware UPLI traffic sequence (``UpliGen`` / ``UpliCheck``).

Written from ``rtl/scaleup_ip/tl/traffic/README.md`` alone (sections 1-5; section 6, pacing, is
hardware only and changes nothing that is sent). Section numbers ``[traffic README §n]`` below refer
to that file. From a 64-bit seed (and the ``cacheable`` mode of §2) the model computes, per channel
and independently of the others, the infinite sequence of UPLI items the generator sends, as the
item classes of :mod:`scaleup_ip.model.tl.flit`, and what the far end of the TL delivers for each
(:func:`as_delivered`).

The UPLI ``pool`` bit is always 0 (:data:`POOL`); the item classes carry no pool field. Beat
level fields of OrigData (``offset = k``, ``last``, ``vc``) follow from the request and are not
stored either: a request holds its beats' data, byte enables and error bits.
"""

from __future__ import annotations

import dataclasses
import itertools

from .flit import OKAY, READ, WRITE_FULL, ReadResponse, Request, WriteResponse

__all__ = [
    "MASK64", "ALL_BYTES", "POOL",
    "REQ_HEADER", "REQ_DATA", "RD_HEADER", "RD_DATA", "WR", "LANES",
    "CMDS", "RD_ERROR_STATUS", "WR_ERROR_STATUS", "OKAY_BELOW", "ERROR_BELOW",
    "xorshift64", "splitmix64", "lane_start", "bits", "Lanes",
    "CACHEABLE_CMDS", "CACHEABLE_DSTS", "CACHEABLE_REGIONS", "CACHEABLE_REGION_BASE",
    "beat_data", "beat_error", "request_shape", "request_fields",
    "is_cacheable_draw", "cacheable_region", "cacheable_request_fields",
    "UpliTraffic", "take",
    "as_delivered", "poisoned_beat", "channel_transfers", "transfers", "CHANNELS",
]

MASK64 = (1 << 64) - 1
ALL_BYTES = MASK64              # byte enables of a WriteFull beat [traffic README §2]
POOL = 0                        # every item and beat [traffic README §2-4]

#: Stream numbers [traffic README §1].
REQ_HEADER, REQ_DATA, RD_HEADER, RD_DATA, WR = 0, 1, 2, 3, 4
#: Lanes per stream [traffic README §1].
LANES = {REQ_HEADER: 3, REQ_DATA: 10, RD_HEADER: 1, RD_DATA: 9, WR: 1}

#: Request commands by ``h0[0:5]`` [traffic README §2].
CMDS = ([0x03] * 5 + [0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F] + [0x28] * 4
        + [0x29] * 4 + [0x2A] + [0x2C, 0x2D, 0x2E, 0x2F] + [0x30, 0x32]
        + [0x3C, 0x3D, 0x3E, 0x3F])
#: Cacheable requests [traffic README §2 "Cacheable requests"]: commands by ``h2[11:13]``
#: (Read, Write, WriteFull, Read); eight destinations ``h2[17:20]`` with four 1 MB regions each,
#: region ``k`` of ``dst_acc`` from ``splitmix64(CACHEABLE_REGION_BASE + 4 * dst_acc + k)``.
CACHEABLE_CMDS = [0x03, 0x28, 0x29, 0x03]
CACHEABLE_DSTS = 8
CACHEABLE_REGIONS = 4
CACHEABLE_REGION_BASE = 256
_REGION_BITS = 37               # ReqAddr[56:20]
_REGION_LSB = 20
#: Non-OKAY statuses by ``r[39:41]`` and ``w[37:40]`` [traffic README §3, §4].
RD_ERROR_STATUS = [0x2, 0x3, 0x6, 0x8]
WR_ERROR_STATUS = [0x2, 0x3, 0x6, 0x8, 0xF, 0x2, 0x3, 0x6]
OKAY_BELOW = 11                 # status OKAY when the 4-bit draw is below (11/16)
ERROR_BELOW = 10                # beat error when misc[0:7] is below (10/128)

#: UPLI channels, the keys of :func:`channel_transfers`.
CHANNELS = ("req", "orig", "rd_rsp", "wr_rsp")

_SPLITMIX_GAMMA = 0x9E3779B97F4A7C15


# --- Random words [traffic README §1] ---------------------------------------------------------

def xorshift64(x: int) -> int:
    """One Marsaglia xorshift step (shifts 13, 7, 17) on 64 bits [traffic README §1]."""
    x &= MASK64
    x ^= (x << 13) & MASK64
    x ^= x >> 7
    x ^= (x << 17) & MASK64
    return x


def splitmix64(z: int) -> int:
    """SplitMix64 of ``z`` (increment first, then mix), modulo 2^64 [traffic README §1]."""
    z = (z + _SPLITMIX_GAMMA) & MASK64
    z = ((z ^ z >> 30) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ z >> 27) * 0x94D049BB133111EB) & MASK64
    return z ^ z >> 31


def lane_start(seed: int, stream: int, k: int) -> int:
    """Start word of lane ``k`` of ``stream``: ``seed ^ splitmix64(16 * stream + k)``, or 1
    where that is 0 [traffic README §1]."""
    return (seed ^ splitmix64(16 * stream + k)) & MASK64 or 1


def bits(w: int, a: int, b: int) -> int:
    """``w[a:b]``: bits ``a .. b-1`` of ``w`` as an unsigned number [traffic README §1]."""
    return (w >> a) & ((1 << (b - a)) - 1)


class Lanes:
    """The ``n`` xorshift lanes of one stream [traffic README §1].

    Parameters
    ----------
    seed : int
        The 64-bit seed.
    stream : int
        Stream number ``s`` (lane ``k`` starts at :func:`lane_start` ``(seed, s, k)``).
    n : int
        Number of lanes.

    Attributes
    ----------
    words : list of int
        The current word of each lane (the next draw).
    """

    def __init__(self, seed: int, stream: int, n: int):
        self.stream = stream
        self.words = [lane_start(seed, stream, k) for k in range(n)]

    def draw(self) -> tuple:
        """The current words ``w[0] .. w[n-1]``; then every lane steps once."""
        words = tuple(self.words)
        self.words = [xorshift64(w) for w in words]
        return words


def beat_data(words) -> bytes:
    """A 64-byte beat from ``d0 .. d7``: the 512-bit ``d0 | d1 << 64 | ... | d7 << 448``,
    little-endian (byte ``j`` = bits ``8j .. 8j+7``) [traffic README §1].

    Parameters
    ----------
    words : sequence of 8 int
        ``d0 .. d7``, the first eight words of a stream 1 or 3 draw.
    """
    words = tuple(words)
    if len(words) != 8:
        raise ValueError("a beat is 8 words d0 .. d7")
    return b"".join((w & MASK64).to_bytes(8, "little") for w in words)


def beat_error(misc: int) -> bool:
    """OrigDataError / RdError of a beat: ``misc[0:7] < 10`` [traffic README §1]."""
    return bits(misc, 0, 7) < ERROR_BELOW


# --- Items [traffic README §2-4] --------------------------------------------------------------

def request_shape(h0: int) -> tuple:
    """``(cmd, offset, nbytes, num_beats)`` of the request with header word ``h0``, per the
    table of [traffic README §2]; ``offset`` is ReqAddr[7:0], ``nbytes`` the length in bytes."""
    cmd = CMDS[bits(h0, 0, 5)]
    o, n = bits(h0, 5, 11), bits(h0, 11, 19)

    def scale(k):
        return 1 + (n * k >> 8)

    if cmd == WRITE_FULL:
        offset = 64 * bits(o, 0, 2)
        nbytes = 64 * scale(4 - bits(o, 0, 2))
        return cmd, offset, nbytes, nbytes // 64 - 1
    if cmd in (0x30, 0x32):                                 # atomic
        return cmd, 4 * o, 4 * scale(16 - o % 16), 0
    offset, nbytes = 4 * o, 4 * scale(64 - o)
    if 0x08 <= cmd <= 0x0F or 0x3C <= cmd <= 0x3F:          # vendor read / vendor atomic
        return cmd, offset, nbytes, bits(h0, 50, 52)
    if cmd & 0x20:                                          # other data commands
        return cmd, offset, nbytes, (offset % 64 + nbytes - 1) >> 6
    return cmd, offset, nbytes, 0                           # Read


def _common_fields(h0, h1):
    """The fields every request takes from ``h0`` and ``h1`` alike [traffic README §2]."""
    return {"vc": bits(h0, 19, 21), "asi": bits(h0, 21, 23), "tag": bits(h0, 23, 34),
            "src_acc": bits(h1, 49, 59)}


def is_cacheable_draw(h2: int) -> bool:
    """Whether, with ``cacheable`` set, the request of a draw is a cacheable one: ``h2[10]``
    is 0 [traffic README §2 "Cacheable requests"]."""
    return bits(h2, 10, 11) == 0


def cacheable_region(dst_acc: int, k: int) -> int:
    """ReqAddr[56:20] of region ``k`` (0..3) of destination ``dst_acc`` (0..7):
    ``splitmix64(256 + 4 * dst_acc + k)[0:37]`` [traffic README §2 "Cacheable requests"]."""
    if not (0 <= dst_acc < CACHEABLE_DSTS and 0 <= k < CACHEABLE_REGIONS):
        raise ValueError("dst_acc is 0..7 and k 0..3")
    return bits(splitmix64(CACHEABLE_REGION_BASE + CACHEABLE_REGIONS * dst_acc + k),
                0, _REGION_BITS)


def request_fields(h0: int, h1: int, h2: int) -> dict:
    """The header fields of the ordinary request of draw ``(h0, h1, h2)`` (everything of a
    :class:`~scaleup_ip.model.tl.flit.Request` but its beats) [traffic README §2]."""
    cmd, offset, nbytes, num_beats = request_shape(h0)
    return dict(cmd=cmd, **_common_fields(h0, h1), attr=bits(h0, 34, 42),
                length=nbytes // 4 - 1, metadata=bits(h0, 42, 50),
                addr=bits(h1, 0, 49) << 8 | offset, dst_acc=bits(h2, 0, 10),
                num_beats=num_beats)


def cacheable_request_fields(h0: int, h1: int, h2: int) -> dict:
    """The header fields of the cacheable request of draw ``(h0, h1, h2)`` (everything of a
    :class:`~scaleup_ip.model.tl.flit.Request` but its beats), whatever ``h2[10]`` is
    [traffic README §2 "Cacheable requests"]:

    ``cmd = CACHEABLE_CMDS[h2[11:13]]``; ``units = 1 + h2[13:15]``, ``bytes = 64 * units``,
    ``len = 16 * units - 1``; ``block = 64 * ((h2[15:17] * (5 - units)) >> 2)``;
    ``dst_acc = h2[17:20]``; ``addr = cacheable_region(dst_acc, h2[20:22]) << 20 |
    h1[0:12] << 8 | block``; ``attr`` 0xFF for Read, else 0; ``metadata = h0[42:45]``;
    ``num_beats = units - 1`` for Write and WriteFull, 0 for Read; ``vc``, ``asi``, ``tag``,
    ``src_acc`` as for every request.
    """
    cmd = CACHEABLE_CMDS[bits(h2, 11, 13)]
    units = 1 + bits(h2, 13, 15)
    block = 64 * ((bits(h2, 15, 17) * (5 - units)) >> 2)
    dst_acc = bits(h2, 17, 20)
    region = cacheable_region(dst_acc, bits(h2, 20, 22))
    return dict(cmd=cmd, **_common_fields(h0, h1), attr=0xFF if cmd == READ else 0x00,
                length=16 * units - 1, metadata=bits(h0, 42, 45),
                addr=region << _REGION_LSB | bits(h1, 0, 12) << 8 | block, dst_acc=dst_acc,
                num_beats=units - 1 if cmd & 0x20 else 0)


def _request(header, data, cacheable=False):
    """The Request of one stream 0 draw ``(h0, h1, h2)``; ``data`` yields stream 1 draws."""
    h0, h1, h2 = header
    if cacheable and is_cacheable_draw(h2):
        fields = cacheable_request_fields(h0, h1, h2)
    else:
        fields = request_fields(h0, h1, h2)
    cmd = fields["cmd"]
    beats = [data.draw() for _ in range(fields["num_beats"] + 1)] if cmd & 0x20 else []
    return Request(
        **fields,
        data=tuple(beat_data(d[:8]) for d in beats),
        byte_en=tuple(ALL_BYTES if cmd == WRITE_FULL else d[8] for d in beats),
        error=tuple(beat_error(d[9]) for d in beats))


def _read_response(r, data):
    """The ReadResponse of one stream 2 word ``r``; ``data`` yields stream 3 draws."""
    num_beats = bits(r, 33, 35)
    status = OKAY if bits(r, 35, 39) < OKAY_BELOW else RD_ERROR_STATUS[bits(r, 39, 41)]
    if num_beats:
        offset, last = 0, True              # a burst: beat k has offset k, last on the final
    else:
        offset, last = bits(r, 41, 43), bool(bits(r, 43, 44))
    beats = [data.draw() for _ in range(num_beats + 1)]
    return ReadResponse(
        vc=bits(r, 0, 2), tag=bits(r, 2, 13), src_acc=bits(r, 13, 23), dst_acc=bits(r, 23, 33),
        num_beats=num_beats, offset=offset, last=last, status=status,
        data=tuple(beat_data(d[:8]) for d in beats),
        error=tuple(beat_error(d[8]) for d in beats))


def _write_response(w):
    """The WriteResponse of one stream 4 word ``w``."""
    status = OKAY if bits(w, 33, 37) < OKAY_BELOW else WR_ERROR_STATUS[bits(w, 37, 40)]
    return WriteResponse(vc=bits(w, 0, 2), tag=bits(w, 2, 13), src_acc=bits(w, 13, 23),
                         dst_acc=bits(w, 23, 33), status=status)


class UpliTraffic:
    """The three item sequences of one seed [traffic README §1-4].

    Each generator method starts from the seed on its own, so the channels are independent:
    drawing from one never changes another.

    Parameters
    ----------
    seed : int
        The 64-bit seed.
    cacheable : bool
        The ``cacheable`` mode [traffic README §2 "Cacheable requests"]: each request whose
        ``h2[10]`` is 0 is replaced by :func:`cacheable_request_fields` of its draw. Responses
        are the same in both modes.
    """

    def __init__(self, seed: int, cacheable: bool = False):
        if not 0 <= seed <= MASK64:
            raise ValueError("the seed is a 64-bit unsigned number")
        self.seed = seed
        self.cacheable = bool(cacheable)

    def requests(self):
        """Infinite iterator of :class:`~scaleup_ip.model.tl.flit.Request`, with their OrigData beats
        [traffic README §2]: one stream 0 draw per request, one stream 1 draw per data beat;
        with :attr:`cacheable`, the cacheable request of each draw whose ``h2[10]`` is 0."""
        header = Lanes(self.seed, REQ_HEADER, LANES[REQ_HEADER])
        data = Lanes(self.seed, REQ_DATA, LANES[REQ_DATA])
        while True:
            yield _request(header.draw(), data, self.cacheable)

    def read_responses(self):
        """Infinite iterator of :class:`~scaleup_ip.model.tl.flit.ReadResponse` [traffic README §3]: one
        stream 2 draw per response, one stream 3 draw per beat; a burst is one object."""
        header = Lanes(self.seed, RD_HEADER, LANES[RD_HEADER])
        data = Lanes(self.seed, RD_DATA, LANES[RD_DATA])
        while True:
            yield _read_response(header.draw()[0], data)

    def write_responses(self):
        """Infinite iterator of :class:`~scaleup_ip.model.tl.flit.WriteResponse` [traffic README §4]: one
        stream 4 draw each."""
        lanes = Lanes(self.seed, WR, LANES[WR])
        while True:
            yield _write_response(lanes.draw()[0])

    def first_requests(self, n: int) -> list:
        """The first ``n`` requests."""
        return take(self.requests(), n)

    def first_read_responses(self, n: int) -> list:
        """The first ``n`` read responses."""
        return take(self.read_responses(), n)

    def first_write_responses(self, n: int) -> list:
        """The first ``n`` write responses."""
        return take(self.write_responses(), n)


def take(iterator, n: int) -> list:
    """The next ``n`` items of ``iterator`` as a list."""
    return list(itertools.islice(iterator, n))


# --- At the far end [traffic README §5] -------------------------------------------------------

def poisoned_beat(beat: bytes) -> bytes:
    """A beat as its Poisoned Data message delivers it: bytes 0 and 32 are 0x20
    [traffic README §5]."""
    return b"\x20" + beat[1:32] + b"\x20" + beat[33:]


def as_delivered(item):
    """What the far end delivers for ``item`` [traffic README §5].

    Beats with the error bit set have bytes 0 and 32 replaced by 0x20 (error bit kept); a
    response with status OKAY has ``src_acc = 0``; a request keeps its ``src_acc``.
    """
    changes = {}
    if not isinstance(item, WriteResponse):
        changes["data"] = tuple(poisoned_beat(b) if e else b
                                for b, e in zip(item.data, item.error))
    if not isinstance(item, Request) and item.status == OKAY:
        changes["src_acc"] = 0
    return dataclasses.replace(item, **changes)


def channel_transfers(item) -> dict:
    """UPLI transfers of ``item`` per channel [traffic README §2-4].

    Returns
    -------
    dict
        ``{"req": .., "orig": .., "rd_rsp": .., "wr_rsp": ..}`` (all four keys): a request
        is 1 request transfer and ``num_beats + 1`` OrigData beats if it has data; a read
        response ``num_beats + 1`` beats; a write response 1 transfer.
    """
    counts = dict.fromkeys(CHANNELS, 0)
    if isinstance(item, Request):
        counts["req"], counts["orig"] = 1, item.beats
    elif isinstance(item, ReadResponse):
        counts["rd_rsp"] = item.num_beats + 1
    elif isinstance(item, WriteResponse):
        counts["wr_rsp"] = 1
    else:
        raise TypeError(f"not a UPLI item: {item!r}")
    return counts


def transfers(item) -> int:
    """All UPLI transfers of ``item``: the sum of :func:`channel_transfers`."""
    return sum(channel_transfers(item).values())
