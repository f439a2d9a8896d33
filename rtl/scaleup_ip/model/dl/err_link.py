# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the error-injecting link (``rtl/scaleup_ip/dl/err_link.py``): its random generator and
which beat gets which flipped bits, which flit is dropped, and the counters.

Written from the :class:`~scaleup_ip.dl.err_link.ErrorLink` documentation. Beats are integers of
:data:`BEAT_BITS` bits plus a ``last`` flag; nothing here knows about clocks, except
:func:`latency`, which states the documented timing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = [
    "BEAT_BITS",
    "COUNTERS",
    "COUNTER_BITS",
    "DRAW_FIELDS",
    "MIN_LATENCY",
    "POSITION_BITS",
    "THRESHOLD_BITS",
    "XORSHIFT_SHIFTS",
    "ZERO_SEED",
    "Controls",
    "Draws",
    "ErrLinkModel",
    "Fate",
    "Generator",
    "ber_threshold",
    "draw_words",
    "latency",
    "nonzero_seed",
    "probability",
    "xorshift64",
]

#: Bits per beat (64 bytes, as ``scaleup_ip.dl.layout.BEAT_BITS``).
BEAT_BITS = 512
#: Bits of a uniformly drawn bit position within a beat.
POSITION_BITS = (BEAT_BITS - 1).bit_length()
#: Width of the thresholds and of the draws compared with them: an event happens where
#: ``draw < threshold``, so its probability is ``threshold / 2**32``.
THRESHOLD_BITS = 32
_MASK64 = (1 << 64) - 1

#: Marsaglia's xorshift64 (shift left 13, right 7, left 17): period 2**64 - 1 over the non-zero
#: states. [Marsaglia, "Xorshift RNGs", J. Stat. Softw. 8(14), 2003, the ``xor64`` example]
XORSHIFT_SHIFTS = (13, 7, 17)
#: [ours] Seed 0 would lock xorshift at 0; it stands for this state (the 64-bit golden ratio).
ZERO_SEED = 0x9E37_79B9_7F4A_7C15

#: [ours] The draws of one beat, least significant first: two consecutive 64-bit words of the
#: generator, the first in bits 0..63. ``bit``/``burst``/``drop`` are compared with the
#: thresholds; the positions select a bit of the beat.
DRAW_FIELDS = (
    ("bit", THRESHOLD_BITS),
    ("bit_position", POSITION_BITS),
    ("burst_position", POSITION_BITS),
    ("spare", 64 - THRESHOLD_BITS - 2 * POSITION_BITS),
    ("burst", THRESHOLD_BITS),
    ("drop", THRESHOLD_BITS),
)
assert sum(width for _, width in DRAW_FIELDS) == 128

#: [ours] Clocks from a beat's acceptance on ``i`` to its transfer on ``o`` at ``delay`` <= this
#: (the sink ready).
MIN_LATENCY = 4

#: The counters, in the order of the RTL's counter layout: beats passed, flits passed, flits
#: dropped, passed beats with a bit error, bursts started, bits flipped.
COUNTERS = ("beats", "flits", "dropped_flits", "bit_error_beats", "bursts", "flipped_bits")
#: Counter width; they wrap.
COUNTER_BITS = 32


def xorshift64(x):
    """Return the state after ``x`` in Marsaglia's xorshift64 (also its output)."""
    left, right, left2 = XORSHIFT_SHIFTS
    x ^= (x << left) & _MASK64
    x ^= x >> right
    x ^= (x << left2) & _MASK64
    return x


def nonzero_seed(seed):
    """The generator state a 64-bit ``seed`` loads: the seed itself, :data:`ZERO_SEED` for 0."""
    if not 0 <= seed <= _MASK64:
        raise ValueError(f"seed must be a 64-bit unsigned integer, not {seed!r}")
    return seed or ZERO_SEED


def ber_threshold(ber, bits=BEAT_BITS):
    """The per-beat threshold for a bit error rate ``ber``: ``2**32`` times the probability
    ``1 - (1 - ber)**bits`` that a beat of ``bits`` bits has an error, rounded, at most
    ``2**32 - 1``.

    [ours] The link flips at most one bit per beat for it. At ``ber`` <= 1e-4 two errors in one
    beat have probability ``(bits * ber)**2 / 2`` (<= 1.3e-3 per beat), so the model stays close,
    and a single flip is one the CRC always catches. The threshold's step, ``2**-32`` per beat,
    is a BER step of about 4.5e-13.
    """
    if not 0 <= ber <= 1:
        raise ValueError(f"BER must be between 0 and 1, not {ber!r}")
    beat_error = -math.expm1(bits * math.log1p(-ber)) if ber < 1 else 1.0
    return min(round(beat_error * (1 << THRESHOLD_BITS)), (1 << THRESHOLD_BITS) - 1)


def probability(threshold):
    """The probability of an event whose draw is compared with ``threshold``."""
    return threshold / (1 << THRESHOLD_BITS)


def latency(delay, max_delay):
    """Clocks from a beat's acceptance to its transfer out, the sink being ready: ``delay``
    (at most ``max_delay``), or :data:`MIN_LATENCY` if that is more."""
    return max(min(delay, max_delay), MIN_LATENCY)


@dataclass(frozen=True)
class Draws:
    """The random fields one accepted beat consumes (see :data:`DRAW_FIELDS`)."""
    bit: int
    bit_position: int
    burst_position: int
    spare: int
    burst: int
    drop: int

    @classmethod
    def from_bits(cls, value):
        """Split 128 bits of draws (:func:`draw_words`) into their fields."""
        fields = {}
        for name, width in DRAW_FIELDS:
            fields[name] = value & ((1 << width) - 1)
            value >>= width
        return cls(**fields)


def draw_words(state):
    """The 128 bits of draws that follow ``state``: the next two words, the first in bits
    0..63. The new state is the second word."""
    first = xorshift64(state)
    return first | xorshift64(first) << 64


class Generator:
    """The link's generator: two xorshift64 steps per accepted beat.

    Loading ``seed`` sets the state to :func:`nonzero_seed`; the ``k``-th beat after (from 0)
    draws words ``2k+1`` and ``2k+2`` of the sequence (word 0 being the loaded state):
    :func:`draw_words` of the state.
    """

    def __init__(self, seed):
        self.load(seed)

    def load(self, seed):
        self.state = nonzero_seed(seed)

    def next(self):
        """Return the draws of the next accepted beat."""
        words = draw_words(self.state)
        self.state = words >> 64
        return Draws.from_bits(words)


@dataclass
class Controls:
    """The control levels of the link (ports of the same names)."""
    enable: int = 1
    ber_threshold: int = 0
    burst_threshold: int = 0
    burst_length: int = 0
    drop_threshold: int = 0
    delay: int = 0


@dataclass(frozen=True)
class Fate:
    """What happened to one accepted beat."""
    #: The beat as it leaves (``data`` with ``mask`` flipped), or ``None`` if dropped.
    out: int | None
    last: int
    #: First beat of its flit.
    first: bool
    dropped: bool
    #: Bits flipped (a set bit per flipped bit).
    mask: int = 0
    #: The bit error event fired (its bit may also lie in the burst).
    bit_error: bool = False
    bit_position: int = 0
    #: A burst starts in this beat.
    burst_start: bool = False
    #: Burst bits ``lo .. hi-1`` of this beat (a new burst or one running on).
    lo: int = 0
    hi: int = 0


@dataclass
class ErrLinkModel:
    """The decisions of :class:`~scaleup_ip.dl.err_link.ErrorLink`, one accepted beat at a time.

    Per accepted beat, in order, with the controls as they are at that beat:

    1. The generator gives the beat's :class:`Draws` (dropped or not, enabled or not).
    2. A flit's first beat (the first beat after reset or after a ``last``) is dropped, with
       the rest of its flit up to and including its ``last`` beat, where ``enable`` and
       ``drop < drop_threshold``. A dropped beat changes nothing else below.
    3. With ``enable`` low, nothing is flipped and a burst running on is ended. Otherwise:
       a burst running on from earlier beats covers bits ``0 .. min(rest, 512) - 1``; with none
       running, a burst of ``min(burst_length, max_burst_length)`` bits (none if 0) starts at
       bit ``burst_position`` where ``burst < burst_threshold``, and covers up to bit 511; the
       rest runs on into the next beats that pass. Bit ``bit_position`` is flipped where
       ``bit < ber_threshold`` (once, even where the burst covers it).
    4. Counters: every passed beat, passed flit (beat with ``last``), dropped flit (at its first
       beat), passed beat with a bit error, burst started, and bit flipped (distinct bits).
       They wrap at ``2**32``.
    """
    seed: int
    max_burst_length: int
    controls: Controls = field(default_factory=Controls)

    def __post_init__(self):
        self.generator = Generator(self.seed)
        self.reset()

    def reset(self):
        """The link's reset: the generator loads :attr:`seed`; all state and counters clear."""
        self.generator.load(self.seed)
        self.in_flit = False
        self.dropping = False
        self.rest = 0               # bits of a burst still to flip in later beats
        self.counters = dict.fromkeys(COUNTERS, 0)

    def reseed(self, seed):
        """A ``reseed`` strobe: load ``seed`` (which a later :meth:`reset` loads too)."""
        self.seed = seed
        self.generator.load(seed)

    def beat(self, data, last):
        """Pass one accepted beat; return its :class:`Fate`."""
        c, draws = self.controls, self.generator.next()
        first = not self.in_flit
        if first:
            self.dropping = bool(c.enable) and draws.drop < c.drop_threshold
            self._count("dropped_flits", self.dropping)
        self.in_flit = not last
        if self.dropping:
            return Fate(out=None, last=last, first=first, dropped=True)
        start, lo, end = False, 0, 0            # burst bits lo .. end-1 from this beat on
        length = min(c.burst_length, self.max_burst_length)
        if c.enable and self.rest:
            end = self.rest
        elif c.enable and length and draws.burst < c.burst_threshold:
            start, lo = True, draws.burst_position
            end = lo + length
        hi = min(end, BEAT_BITS)
        self.rest = end - hi
        mask = (1 << hi) - (1 << lo)
        flipped = hi - lo
        bit = bool(c.enable) and draws.bit < c.ber_threshold
        if bit:
            flipped += not (mask >> draws.bit_position) & 1
            mask |= 1 << draws.bit_position
        for name, amount in (("beats", 1), ("flits", last), ("bit_error_beats", bit),
                             ("bursts", start), ("flipped_bits", flipped)):
            self._count(name, amount)
        return Fate(out=data ^ mask, last=last, first=first, dropped=False, mask=mask,
                    bit_error=bit, bit_position=draws.bit_position, burst_start=start,
                    lo=lo, hi=hi)

    def _count(self, name, amount):
        self.counters[name] = (self.counters[name] + int(amount)) % (1 << COUNTER_BITS)
