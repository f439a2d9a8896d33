# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the error-injecting Ethernet channel (``rtl/scaleup_ip/ethx/link/channel.py``): which
frame is cut or dropped, which beat gets a flipped bit or an inverted burst, and the counters.

Written from the documentation of :class:`~scaleup_ip.ethx.link.channel.EthxChannel` and
:class:`~scaleup_ip.ethx.link.channel.ChannelConfig` only (cited as ``[channel step n]`` for the
numbered steps of the ``EthxChannel`` docstring and ``[channel]`` for its other paragraphs),
independently of the RTL. It reuses the random generator of :mod:`scaleup_ip.model.dl.err_link`,
which the specification names: each accepted beat takes one
:class:`~scaleup_ip.model.dl.err_link.Draws`.

Beats are integers of ``eth_width`` bits with a ``keep`` byte mask, a ``last`` flag and a
``user`` value; byte ``j`` of a beat is data bits ``8j+7 : 8j``. Nothing here knows about
clocks: the latency and the buffer's back-pressure are not modelled, only the decisions.

Choices the specification leaves open are marked ``[ambiguous: ...]`` where they are made;
``[ours]`` marks what the specification itself labels as the project's own choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from ..dl import err_link
from ..dl.err_link import THRESHOLD_BITS, ZERO_SEED, Draws, Generator, nonzero_seed, probability
from .link import LINK_ETHERTYPE

__all__ = [
    "BURST_BITS",
    "BYTE_BITS",
    "COUNTERS",
    "COUNTER_BITS",
    "CTL_KIND_AT",
    "DELAY_BITS",
    "ETHERTYPE_AT",
    "ETH_WIDTHS",
    "KIND_MASK_BITS",
    "MAX_FRAME_BYTES",
    "MIN_FRAME_BYTES",
    "SEED_BITS",
    "THRESHOLD_BITS",
    "ZERO_SEED",
    "Beat",
    "ChannelModel",
    "Controls",
    "Delivered",
    "Draws",
    "Generator",
    "ber_threshold",
    "beats_of",
    "frame_threshold",
    "max_rows",
    "nonzero_seed",
    "payload_of",
    "probability",
]

#: The counters [channel, ``counters``], in this order [ours], which the RTL's
#: ``channel_counters`` layout follows: frames passed, frames dropped by ``drop_threshold``,
#: frames dropped by ``cut``, control frames dropped by ``ctl_threshold``, oversize frames,
#: beats with a bit error, bursts started, beats inverted by a burst.
COUNTERS = ("frames", "dropped", "cut", "ctl_dropped", "oversize", "error_beats", "bursts",
            "burst_beats")
#: Counter width; they wrap modulo ``2**32`` [channel, ``counters``].
COUNTER_BITS = 32
#: Width of the ``burst_length`` control [channel, ``burst_length : In(16)``].
BURST_BITS = 16
#: Width of the ``ctl_kinds`` control; kinds at or above it never match [channel step 5].
KIND_MASK_BITS = 32
#: Width of the ``seed`` control [channel, ``seed : In(64)``].
SEED_BITS = 64

#: Bits per byte (beat byte ``j`` is data bits ``8j+7 : 8j``).
BYTE_BITS = 8
#: ``eth_width`` values allowed [``ChannelConfig``].
ETH_WIDTHS = (8, 32, 64)
#: Range of ``max_frame_bytes`` [``ChannelConfig``].
MIN_FRAME_BYTES = 64
MAX_FRAME_BYTES = 16384

#: Bytes of a frame holding the EtherType (big-endian: byte 12 is its high byte) [channel step 5].
ETHERTYPE_AT = 12
#: The byte of a frame holding a link-control kind [channel step 5].
CTL_KIND_AT = 14

#: Width of the ``delay`` control: ``max_delay`` is at most 65535 [``ChannelConfig``].
DELAY_BITS = 16

_THRESHOLD_MAX = (1 << THRESHOLD_BITS) - 1
_BYTE_MASK = (1 << BYTE_BITS) - 1
_COUNTER_MOD = 1 << COUNTER_BITS


def ber_threshold(ber, eth_width):
    """The per-beat ``ber_threshold`` for a bit error rate over beats of ``eth_width`` bits.

    Parameters
    ----------
    ber : float
        Bit error rate, 0 to 1.
    eth_width : int
        Bits per beat.

    Returns
    -------
    int
        ``round(2**32 * (1 - (1 - ber)**eth_width))``, at most ``2**32 - 1``: the channel flips
        one bit per beat at most [channel step 2], so this is the chance that a beat has an
        error (:func:`scaleup_ip.model.dl.err_link.ber_threshold` over ``eth_width`` bits).
    """
    return err_link.ber_threshold(ber, bits=eth_width)


def frame_threshold(p):
    """The 32-bit threshold of an event of probability ``p`` (a frame or control-frame drop,
    a burst start).

    Parameters
    ----------
    p : float
        Probability, 0 to 1.

    Returns
    -------
    int
        ``round(p * 2**32)``, at most ``2**32 - 1`` (so ``p = 1`` misses only draws of
        ``2**32 - 1``).
    """
    if not 0 <= p <= 1:
        raise ValueError(f"probability must be between 0 and 1, not {p!r}")
    return min(round(p * (1 << THRESHOLD_BITS)), _THRESHOLD_MAX)


def max_rows(eth_width, max_frame_bytes):
    """Beats of the longest frame passed: ``ceil(max_frame_bytes / W)``, ``W = eth_width/8``
    (``ChannelConfig.max_rows``; beat ``max_rows`` from 0 makes a frame oversize
    [channel step 4])."""
    return math.ceil(max_frame_bytes / (eth_width // BYTE_BITS))


class Beat(NamedTuple):
    """One beat of the stream: ``data`` (``eth_width`` bits), ``keep`` (a bit per byte),
    ``last``, ``user``."""
    data: int
    keep: int
    last: int
    user: int = 0


class Delivered(NamedTuple):
    """A frame that passed: its bytes (the bytes ``keep`` marks of each beat, in order), its
    beats as they leave, and the ``user`` of its last beat."""
    data: bytes
    beats: tuple
    user: int


def beats_of(payload, eth_width, user=0):
    """Split ``payload`` into the beats that carry it.

    Parameters
    ----------
    payload : bytes
        The frame, at least one byte.
    eth_width : int
        Bits per beat.
    user : int
        ``user`` of every beat [ours: the frame's ``user`` is held on all its beats; the channel
        passes each beat's unchanged, so only the receiver's reading of it matters].

    Returns
    -------
    list of Beat
        Beat ``k`` carries bytes ``k*W .. k*W+W-1`` (byte ``j`` in bits ``8j+7 : 8j``); the last
        beat's unused bytes are zero and left out of its ``keep`` [channel].
    """
    width = eth_width // BYTE_BITS
    if not payload:
        raise ValueError("a frame has at least one byte")
    beats = []
    for at in range(0, len(payload), width):
        chunk = payload[at:at + width]
        last = int(at + width >= len(payload))
        beats.append(Beat(int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, last, user))
    return beats


def payload_of(beats, eth_width):
    """The bytes ``beats`` deliver: those ``keep`` marks, beat by beat, in byte order."""
    out = bytearray()
    for beat in beats:
        for j in range(eth_width // BYTE_BITS):
            if beat.keep >> j & 1:
                out.append(beat.data >> (BYTE_BITS * j) & _BYTE_MASK)
    return bytes(out)


@dataclass
class Controls:
    """The control levels of the channel (ports of the same names) [channel, members].

    Each is sampled where it is used [channel]: ``cut`` and ``drop_threshold`` at a frame's
    first beat, ``ctl_threshold`` and ``ctl_kinds`` at its last beat, the others at every beat.
    ``delay`` is only carried (timing is not modelled).
    """
    enable: int = 1
    cut: int = 0
    ber_threshold: int = 0
    burst_threshold: int = 0
    burst_length: int = 0
    drop_threshold: int = 0
    ctl_threshold: int = 0
    ctl_kinds: int = 0
    delay: int = 0

    #: Port widths, to reject values the ports cannot carry.
    WIDTHS = {"enable": 1, "cut": 1, "ber_threshold": THRESHOLD_BITS,
              "burst_threshold": THRESHOLD_BITS, "burst_length": BURST_BITS,
              "drop_threshold": THRESHOLD_BITS, "ctl_threshold": THRESHOLD_BITS,
              "ctl_kinds": KIND_MASK_BITS, "delay": DELAY_BITS}

    def check(self):
        """Raise :class:`ValueError` where a control does not fit its port."""
        for name, width in self.WIDTHS.items():
            value = getattr(self, name)
            if not 0 <= value < 1 << width:
                raise ValueError(f"{name} = {value!r} does not fit {width} bits")


@dataclass
class ChannelModel:
    """The decisions of :class:`~scaleup_ip.ethx.link.channel.EthxChannel`, one accepted beat at a time.

    Per accepted beat, in order, with :attr:`controls` as they are at that beat:

    0. The generator gives the beat's :class:`Draws`, whatever becomes of the beat [channel].
    1. At a frame's first beat (the first after reset or after a ``last``), the frame is
       dropped whole if ``cut`` (counted ``cut``), or else if ``enable`` and
       ``drop < drop_threshold`` (counted ``dropped``) [channel step 1].
    4. (Checked here, before 2-3: see below.) A frame's beat :attr:`max_rows` (from 0) drops the
       frame, counted ``oversize`` once [channel step 4].

       A beat of a frame dropped at 1 or 4 (this one or an earlier one) stops here: no error,
       no part in a burst, not counted [channel steps 1, 4].
    2. Where ``enable`` and ``bit < ber_threshold``, data bit ``bit_position % eth_width`` is
       flipped (counted ``error_beats``, whatever ``keep``) [channel step 2].
    3. With ``enable`` low a running burst ends. Otherwise, with no burst running,
       ``burst_length`` not 0 and ``burst < burst_threshold``, a burst of ``burst_length`` beats
       starts (counted ``bursts``). A beat in a burst gets all ``eth_width`` data bits inverted,
       on top of step 2 (counted ``burst_beats``); bursts run on across frames, over the beats
       that reach this step only [channel step 3].
    5. At a frame's last beat, the frame having taken beat ``14 // W``: where its bytes 12-13 as
       they came in are :data:`~scaleup_ip.model.ethx.link.LINK_ETHERTYPE` and byte 14 is a kind
       ``k < 32`` with bit ``k`` of ``ctl_kinds`` set, the frame is dropped if ``enable`` and
       this beat's ``drop < ctl_threshold`` (counted ``ctl_dropped``) [channel step 5].
    6. Otherwise, at its last beat, the frame passes (counted ``frames``), appended to
       :attr:`out` with ``keep``, ``last`` and ``user`` as they came in [channel step 6].

    Counters wrap at ``2**32``.

    Parameters
    ----------
    eth_width : int
        Bits per beat: 8, 32 or 64.
    max_frame_bytes : int
        Longest frame passed, 64 to 16384 bytes.
    seed : int
        The generator's 64-bit seed (0 stands for :data:`~scaleup_ip.model.dl.err_link.ZERO_SEED`).
    controls : Controls
        The control levels; change its fields between beats as the ports would change.

    Attributes
    ----------
    out : list of Delivered
        The frames that passed, in order (a log: :meth:`reset` does not clear it).
    counters : dict
        Counter name (:data:`COUNTERS`) to value.
    """
    eth_width: int
    max_frame_bytes: int
    seed: int = 0
    controls: Controls | None = field(default_factory=Controls)

    def __post_init__(self):
        if self.eth_width not in ETH_WIDTHS:
            raise ValueError(f"eth_width must be one of {ETH_WIDTHS}, not {self.eth_width!r}")
        if not MIN_FRAME_BYTES <= self.max_frame_bytes <= MAX_FRAME_BYTES:
            raise ValueError(f"max_frame_bytes must be {MIN_FRAME_BYTES} to {MAX_FRAME_BYTES}, "
                             f"not {self.max_frame_bytes!r}")
        if self.controls is None:
            self.controls = Controls()
        self.width = self.eth_width // BYTE_BITS        # bytes per beat, W
        self.max_rows = max_rows(self.eth_width, self.max_frame_bytes)
        self.generator = Generator(self.seed)
        self.out = []
        self.reset()

    # --- State ------------------------------------------------------------------------------

    def reset(self):
        """The channel's reset [channel, reset paragraph]: the frame and burst state and the
        counters clear, the generator loads :attr:`seed`; a frame partly taken is forgotten
        (the buffer empties)."""
        self.generator.load(self.seed)
        self.in_frame = False           # a frame's first beat was taken, not yet its last
        self.index = 0                  # beat number of the next beat within its frame
        self.dropping = False           # the current frame is dropped (steps 1, 4)
        self.burst_left = 0             # beats of the running burst still to invert
        self.pending = []               # beats of the current frame as they will leave
        self.header = {}                # bytes 12-14 as they came in: byte number -> value
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.draws = None               # the draws of the last beat (for inspection)

    def reseed(self, seed):
        """A ``reseed`` strobe: load ``seed`` now (a later :meth:`reset` loads it too).

        The beat accepted in the strobe's clock takes the old draws [channel]: call this after
        that beat's :meth:`beat`.
        """
        self.generator.load(nonzero_seed(seed))    # checks the seed before keeping it
        self.seed = seed

    # --- Beats ------------------------------------------------------------------------------

    def beat(self, data, keep, last, user=0):
        """Take one accepted beat with the current :attr:`controls`.

        Parameters
        ----------
        data : int
            ``eth_width`` data bits.
        keep : int
            A bit per byte of the beat in the frame.
        last : int
            The frame's last beat.
        user : int
            Passed unchanged.

        Returns
        -------
        Beat or None
            The beat as it will leave if its frame passes (it may still be dropped at step 5),
            or ``None`` where it is dropped (steps 1, 4). A frame that passes is appended to
            :attr:`out` at its last beat.
        """
        c = self.controls
        c.check()
        if not 0 <= data < 1 << self.eth_width or not 0 <= keep < 1 << self.width:
            raise ValueError("data or keep wider than the beat")
        draws = self.draws = self.generator.next()
        if not self.in_frame:
            self._first_beat(draws)
        index = self.index
        self.index += 1
        self.in_frame = not last
        # [ambiguous: step 4 is listed after steps 2-3, but "from that beat on, its beats are
        # ... dropped as those of step 1 (no error, no part in a burst)". Ours: the oversize
        # beat itself is dropped before steps 2-3 (no error counted, no burst beat used or
        # started); the frame's earlier beats went through steps 2-3 and stay counted.]
        # [ambiguous: a frame already dropped at step 1 is not counted oversize: its beats
        # "are not counted but in the generator".]
        if not self.dropping and index == self.max_rows:
            self.dropping = True
            self.pending = []
            self._count("oversize")
        if self.dropping:
            return None
        self._capture(index, data)
        out = self._corrupt(data, draws)
        beat = Beat(out, keep, int(bool(last)), user)
        self.pending.append(beat)
        if last:
            self._last_beat(draws)
        return beat

    def frame_beats(self, payload, user=0):
        """Feed the frame ``payload`` (:func:`beats_of`) through :meth:`beat`.

        Returns
        -------
        list of Beat or None
            The frame's beats as they leave, or ``None`` if it was dropped.
        """
        if self.in_frame:
            raise ValueError("a frame is partly taken: finish it with beat() first")
        passed = len(self.out)
        for beat in beats_of(payload, self.eth_width, user):
            self.beat(*beat)
        return list(self.out[-1].beats) if len(self.out) > passed else None

    def frame(self, payload, user=0):
        """Feed the frame ``payload`` through :meth:`beat`; return the bytes delivered (those
        ``keep`` marks: a bit error in a byte ``keep`` leaves out changes nothing here but is
        counted), or ``None`` if the frame was dropped."""
        beats = self.frame_beats(payload, user)
        return None if beats is None else payload_of(beats, self.eth_width)

    # --- Steps ------------------------------------------------------------------------------

    def _first_beat(self, draws):
        """Step 1 at a frame's first beat; also start the frame's state."""
        c = self.controls
        self.index = 0
        self.pending = []
        self.header = {}
        self.dropping = False
        if c.cut:
            self.dropping = True
            self._count("cut")
        elif c.enable and draws.drop < c.drop_threshold:
            self.dropping = True
            self._count("dropped")

    def _capture(self, index, data):
        """Keep bytes 12-14 of the frame as they came in (for step 5).

        [ambiguous: the specification asks for beat ``14 // W`` to be taken, not for ``keep`` to
        cover bytes 12-14. Ours: ``keep`` is not looked at; the bytes are read from the data
        bits of the beats holding them, so a frame ending within byte 12-14 but whose beat
        ``14 // W`` is taken is judged on the beat's data there (zero where :func:`beats_of`
        pads).]
        """
        for at in range(ETHERTYPE_AT, CTL_KIND_AT + 1):
            if at // self.width == index:
                self.header[at] = data >> (BYTE_BITS * (at % self.width)) & _BYTE_MASK

    def _corrupt(self, data, draws):
        """Steps 2 and 3 on a beat that reaches them; return its data as it leaves."""
        c = self.controls
        if c.enable and draws.bit < c.ber_threshold:
            data ^= 1 << draws.bit_position % self.eth_width
            self._count("error_beats")
        if not c.enable:
            self.burst_left = 0
            # [ambiguous: "enable low ends a running burst" is read at the beats that reach
            # step 3, as the rest of the step; a beat of a dropped frame (steps 1, 4) takes no
            # part in a burst even to end it, and enable is sampled at beats only.]
        else:
            if not self.burst_left and c.burst_length and draws.burst < c.burst_threshold:
                # [ambiguous: burst_length is sampled where the burst starts; a change while
                # it runs does not change its length.]
                self.burst_left = c.burst_length
                self._count("bursts")
            if self.burst_left:
                # [ambiguous: "every data bit inverted (over the bit error)" is read as the
                # inversion applied to the beat after step 2, so a bit error's bit comes out
                # as it came in: data ^ bit ^ all-ones.]
                data ^= (1 << self.eth_width) - 1
                self.burst_left -= 1
                self._count("burst_beats")
        return data

    def _last_beat(self, draws):
        """Steps 5 and 6 at the last beat of a frame not dropped."""
        c = self.controls
        if self._is_ctl_kind(c.ctl_kinds) and c.enable and draws.drop < c.ctl_threshold:
            self._count("ctl_dropped")
        else:
            beats = tuple(self.pending)
            self.out.append(Delivered(payload_of(beats, self.eth_width), beats, beats[-1].user))
            self._count("frames")
        self.pending = []

    def _is_ctl_kind(self, kinds):
        """Step 5's frame test: byte 14 taken, bytes 12-13 the link's EtherType, byte 14 a kind
        below :data:`KIND_MASK_BITS` with its bit set in ``kinds``."""
        if CTL_KIND_AT not in self.header:      # beat 14 // W not taken
            return False
        ethertype = self.header[ETHERTYPE_AT] << BYTE_BITS | self.header[ETHERTYPE_AT + 1]
        kind = self.header[CTL_KIND_AT]
        return ethertype == LINK_ETHERTYPE and kind < KIND_MASK_BITS and bool(kinds >> kind & 1)

    def _count(self, name):
        self.counters[name] = (self.counters[name] + 1) % _COUNTER_MOD
