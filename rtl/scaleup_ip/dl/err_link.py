# SPDX-License-Identifier: BSD-2-Clause
"""Error-injecting link: one direction of a PHY between two DLs, with bit errors, error bursts,
flit drops and a programmable delay, for simulation and FPGA tests."""

import dataclasses

from amaranth import Cat, Const, Module, Mux, ResetSignal, Shape, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..config import BlockConfig, ConfiguredComponent, check_int
from ..model.dl import err_link as model
from ..xorshift import Xorshift64
from .layout import BEAT_BITS, phy_beat_layout, phy_stream

__all__ = ["ErrLinkConfig", "ErrorLink", "control_members", "counters_layout"]

assert model.BEAT_BITS == BEAT_BITS

#: Bounds of the configuration: the delay buffer holds ``max_delay + 1`` beats of 513 bits.
MAX_DELAY = 1 << 14
MAX_BURST_LENGTH = (1 << 16) - 1

#: The counters port: 32-bit wrapping counts, in :data:`scaleup_ip.model.dl.err_link.COUNTERS`
#: order.
counters_layout = data.StructLayout({name: model.COUNTER_BITS for name in model.COUNTERS})

#: A beat and its fate, registered between its acceptance and the delay line.
_stage_layout = data.StructLayout({
    "valid": 1,                             # it passes: accepted and not dropped
    "beat": phy_beat_layout,
    "bit_error": 1,
    "bit_position": model.POSITION_BITS,
    "lo": model.POSITION_BITS,              # burst bits lo .. hi-1 of this beat
    "hi": range(BEAT_BITS + 1),
    "burst_start": 1,
    "dropped": 1,                           # accepted and dropped
    "dropped_flit": 1,                      # ... and the first beat of its flit
})

#: Bit positions are decoded in groups of ``2**_SPLIT`` bits (see :func:`_decode`).
_SPLIT = 4
_GROUP_BITS = 1 << _SPLIT
_GROUPS = BEAT_BITS // _GROUP_BITS
_ONES = Const((1 << _GROUP_BITS) - 1, _GROUP_BITS)


def _grouped_layout(above=True):
    """Bits of a beat by groups: ``here`` marks the group of a position, ``above`` the groups
    above it, ``part`` the bits of the marked group."""
    return data.StructLayout({"here": _GROUPS, **({"above": _GROUPS} if above else {}),
                              "part": _GROUP_BITS})


#: A passed beat and its flips, decoded by groups: bits ``lo`` and up, bits ``hi`` and up, and
#: the bit error (no ``here`` without one). The second stage, after :data:`_stage_layout`.
_decoded_layout = data.StructLayout({
    "valid": 1,
    "beat": phy_beat_layout,
    "lo": _grouped_layout(),
    "hi": _grouped_layout(),
    "bit": _grouped_layout(above=False),
    "bit_error": 1,                         # for the counters:
    "burst_start": 1,
    "dropped_flit": 1,
    "flipped": range(BEAT_BITS + 2),        # distinct bits flipped
})

#: Clocks of a beat's latency outside the delay line's age count: acceptance to the stamp's
#: write (the first stage), and release to the transfer on ``o``.
_LEAD = 2


@dataclasses.dataclass(frozen=True)
class ErrLinkConfig(BlockConfig):
    """Parameters of :class:`ErrorLink`.

    Parameters
    ----------
    max_delay : int
        Largest ``delay``, in clocks, 1 to 16384; larger ``delay`` values act as this. It sizes
        the delay buffer (:attr:`depth` beats).
    max_burst_length : int
        Largest ``burst_length``, in bits, 1 to 65535; larger values act as this.
    """
    max_delay: int = 64
    max_burst_length: int = 1024

    def __post_init__(self):
        check_int("ErrorLink", "max_delay", self.max_delay, range(1, MAX_DELAY + 1))
        check_int("ErrorLink", "max_burst_length", self.max_burst_length,
                  range(1, MAX_BURST_LENGTH + 1))

    @property
    def depth(self):
        """Beats the link holds: enough for one beat per clock at the largest latency."""
        return max(self.max_delay, model.MIN_LATENCY) + 1

    def latency(self, delay):
        """Clocks from a beat's acceptance on ``i`` to its transfer on ``o`` with the sink
        ready (see :func:`scaleup_ip.model.dl.err_link.latency`)."""
        return model.latency(delay, self.max_delay)


def control_members(config):
    """The error controls of an :class:`ErrorLink` built from ``config`` (an
    :class:`ErrLinkConfig`), by name: ``enable`` and the thresholds, burst length and delay."""
    return {
        "enable": In(1),
        "ber_threshold": In(model.THRESHOLD_BITS),
        "burst_threshold": In(model.THRESHOLD_BITS),
        "burst_length": In(range(config.max_burst_length + 1)),
        "drop_threshold": In(model.THRESHOLD_BITS),
        "delay": In(range(config.max_delay + 1)),
    }


class ErrorLink(ConfiguredComponent):
    """One direction of a link between two DLs: 64-byte beats in, the same beats out, some
    corrupted or dropped, after a programmable delay. Two make a duplex link.

    Each accepted beat, dropped or not, draws 128 random bits: two steps of a xorshift64 generator
    [ours] (:class:`scaleup_ip.model.dl.err_link.Generator`). The generator moves only on accepted
    beats, so one seed and one sequence of beats give the same corruption and drops whatever the
    stalls on either side. :class:`scaleup_ip.model.dl.err_link.ErrLinkModel` is the golden model of
    every decision below.

    * **Drops.** At a flit's first beat (the first after reset or after a ``last``: flits are
      delimited by ``last``, not by counting), where ``enable`` and ``drop < drop_threshold``,
      that beat and the rest of its flit up to its ``last`` beat are dropped. A dropped beat
      gets no error and does not count towards a running burst [ours].
    * **Bit errors.** Where ``enable`` and ``bit < ber_threshold``, bit ``bit_position`` of the
      beat is flipped: at most one per beat [ours]. A testbench sets the threshold from a BER with
      :func:`scaleup_ip.model.dl.err_link.ber_threshold`, ``2**32 (1 - (1 - BER)**512)``: at BER <=
      1e-4 two errors in one beat are rare, and a single flip is always caught by the CRC.
    * **Bursts.** Where ``enable``, no burst is running and ``burst < burst_threshold``, a burst
      of ``burst_length`` consecutive flipped bits (none if 0) starts at bit
      ``burst_position``; past bit 511 it runs on from bit 0 of the next passed beats [ours].
      One burst at a time [ours]; a bit that the burst and the bit error both hit is flipped
      once.
    * ``enable`` low passes every beat untouched (still delayed; a flit whose drop is decided
      is dropped whole) and ends a running burst.

    Controls are levels and may change at any clock; each is sampled when it is used: ``enable``,
    ``ber_threshold``, ``burst_threshold`` and ``burst_length`` at each beat's acceptance,
    ``drop_threshold`` (and ``enable`` for the drop) at a flit's first beat. ``delay`` is compared
    every clock (from the next clock on) with the age of the oldest beat not yet released: a lower
    value lets waiting beats out sooner, in order; a higher one holds those not yet released.
    ``seed`` is loaded while ``rst`` is high and at a ``reseed`` strobe [ours]; a beat accepted in
    the strobe's clock still takes the old draws, the next one the new seed's first. Seed 0 stands
    for :data:`scaleup_ip.model.dl.err_link.ZERO_SEED`. In a domain without reset, the generator
    starts as if seed 0 had been loaded.

    Latency: ``delay`` counts clocks, from a beat's acceptance on ``i`` to its transfer on
    ``o``, and is the whole latency [ours]: a beat accepted at clock ``t`` leaves at
    ``t + max(delay, 4)`` when ``o.ready`` is high (4 clocks at ``delay`` <= 4), never earlier,
    so the round trip of a link is known in clocks. Throughput: one beat per clock at any
    ``delay``. ``i.ready`` is a register; it falls only while :attr:`ErrLinkConfig.depth`
    beats are held (``o`` stalled): nothing overflows, nothing is lost or duplicated but the
    dropped flits, and order is kept. A beat is in the counters two clocks after its
    acceptance.

    Reset leaves no state behind: the held beats (none leaves after it), the flit and burst
    state, the counters and the delay's clock are cleared and the seed is loaded; ``i.ready`` is
    low in the first clock after reset.

    Parameters
    ----------
    config : ErrLinkConfig
        Maximum delay and burst length.

    Members
    -------
    i : ``In(phy_stream())``
        Beats from the transmitting DL, ``last`` on the tenth beat of each flit.
    o : ``Out(phy_stream())``
        Beats to the receiving DL.
    seed : ``In(64)``
        Generator seed, loaded during reset and at ``reseed``.
    reseed : ``In(1)``
        Strobe: load ``seed``.
    enable : ``In(1)``
        Inject errors and drops; low, the link only delays.
    ber_threshold, burst_threshold, drop_threshold : ``In(32)``
        The probability, ``threshold / 2**32``, of a bit error in a beat, of a burst starting
        at a beat, of a flit being dropped.
    burst_length : ``In(range(config.max_burst_length + 1))``
        Bits per burst; a larger value of the port acts as ``max_burst_length``.
    delay : ``In(range(config.max_delay + 1))``
        Latency in clocks (at least 4); a larger value of the port acts as ``max_delay``.
    counters : ``Out(counters_layout)``
        Registered, wrapping 32-bit counts of beats passed, flits passed, flits dropped (at
        their first beat), passed beats with a bit error, bursts started, and bits flipped
        (each flipped bit once).
    """

    config_class = ErrLinkConfig

    def __init__(self, config):
        super().__init__(config, lambda config: {
            "i": In(phy_stream()),
            "o": Out(phy_stream()),
            "seed": In(64),
            "reseed": In(1),
            **control_members(config),
            "counters": Out(counters_layout),
        })

    def elaborate(self, platform):
        # A beat's way: accepted, its fate decided from this clock's draws (``_decide``) and
        # registered (``stage``); its flips decoded by groups of 16 bits (``decoded``); flipped
        # on its way into the delay line, which lets it out ``delay`` clocks after acceptance.
        # The delay line takes its time stamp from ``stage``, so the decoding clock adds no
        # latency. ``i.ready`` counts the beats held (``_admit``).
        m = Module()
        m.submodules.generator = generator = Xorshift64()
        m.submodules.line = line = _DelayLine(self.config)
        accept = self.i.valid & self.i.ready
        m.d.comb += [
            generator.seed.eq(self.seed),
            generator.load.eq(self.reseed | ResetSignal(allow_reset_less=True)),
            generator.advance.eq(accept),
            line.delay.eq(_at_most(self.delay, self.config.max_delay)),
        ]
        fate = self._decide(m, generator.draws, accept)
        stage = Signal(_stage_layout)
        decoded = Signal(_decoded_layout)
        m.d.sync += [stage.eq(fate), *_decode(decoded, stage)]
        m.d.comb += [
            line.arrive.eq(stage.valid),
            line.i.valid.eq(decoded.valid),
            line.i.payload.data.eq(decoded.beat.data ^ _flips(decoded)),
            line.i.payload.last.eq(decoded.beat.last),
        ]
        wiring.connect(m, line.o, wiring.flipped(self.o))
        self._count(m, decoded)
        self._admit(m, accept, stage.dropped, self.o.valid & self.o.ready)
        return m

    def _decide(self, m, draws, accept):
        """Return the fate of the beat on ``i`` (``valid`` if it is accepted and passes) from
        this clock's draws and the flit and burst state, which its acceptance updates."""
        cfg = self.config
        in_flit = Signal()      # a flit's first beat is accepted, its last not yet
        dropping = Signal()     # ... and that flit is dropped
        rest = Signal(range(cfg.max_burst_length + 1))  # burst bits left for later beats
        first = ~in_flit
        drop = Mux(first, self.enable & (draws.drop < self.drop_threshold), dropping)
        length = _at_most(self.burst_length, cfg.max_burst_length)
        running = self.enable & (rest != 0)
        start = (self.enable & (rest == 0) & (length != 0)
                 & (draws.burst < self.burst_threshold))
        # A running burst and a new one, both worked out before the choice between them, so
        # that the comparisons with the thresholds meet no adder after them.
        run_hi = _at_most(rest, BEAT_BITS)
        new_end = draws.burst_position + length
        new_hi = _at_most(new_end, BEAT_BITS)
        hi = Mux(running, run_hi, Mux(start, new_hi, 0))
        with m.If(accept):
            m.d.sync += in_flit.eq(~self.i.payload.last)
            with m.If(first):
                m.d.sync += dropping.eq(drop)
            with m.If(~drop):
                m.d.sync += rest.eq(Mux(running, rest - run_hi,
                                        Mux(start, new_end - new_hi, 0)))
        fate = Signal(_stage_layout)
        m.d.comb += [
            fate.valid.eq(accept & ~drop),
            fate.beat.eq(self.i.payload),
            fate.bit_error.eq(self.enable & (draws.bit < self.ber_threshold)),
            fate.bit_position.eq(draws.bit_position),
            fate.lo.eq(Mux(start, draws.burst_position, 0)),
            fate.hi.eq(hi),
            fate.burst_start.eq(start),
            fate.dropped.eq(accept & drop),
            fate.dropped_flit.eq(accept & first & drop),
        ]
        return fate

    def _count(self, m, decoded):
        """Add the events of the beat in the second stage to the counters."""
        passed = decoded.valid
        events = {
            "beats": passed,
            "flits": passed & decoded.beat.last,
            "dropped_flits": decoded.dropped_flit,
            "bit_error_beats": passed & decoded.bit_error,
            "bursts": passed & decoded.burst_start,
            "flipped_bits": Mux(passed, decoded.flipped, 0),
        }
        for name in model.COUNTERS:
            counter = self.counters[name]
            m.d.sync += counter.eq(counter + events[name])

    def _admit(self, m, into, dropped, out):
        """Keep ``i.ready`` (a register) high while the link holds fewer than
        :attr:`ErrLinkConfig.depth` beats. Each beat is counted from its acceptance, a dropped
        one until it is staged, so that ``i.ready`` waits on no drop decision."""
        depth = self.config.depth
        held = Signal(range(depth + 1))
        after = held + into - dropped - out
        m.d.sync += [held.eq(after), self.i.ready.eq(after < depth)]


class _DelayLine(wiring.Component):
    """Hold each beat until ``delay - 2`` clocks (``_LEAD``) after its ``arrive`` strobe, then
    release it to ``o``, in order. ``delay`` is taken a clock before it is used.

    Two queues: time stamps, written at ``arrive``, and beats, written from ``i`` a clock later
    (a clock the owner spends on the beat without adding to the latency: the beat still
    reaches the head of its queue before its stamp is released). The head stamp leaves its
    queue once it is old enough, whatever ``o`` does, so the ages compared never exceed the
    largest delay and a stamp of a few bits more never wraps; ``released`` counts the beats
    let out. ``i`` is always ready: the owner never holds more than ``depth`` beats.
    """

    def __init__(self, config):
        self._depth = config.depth
        self._stamp_bits = (config.depth + model.MIN_LATENCY).bit_length() + 1
        super().__init__({
            "arrive": In(1),
            "i": In(stream.Signature(phy_beat_layout, always_ready=True)),
            "o": Out(phy_stream()),
            "delay": In(range(config.max_delay + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        now = Signal(self._stamp_bits)
        m.d.sync += now.eq(now + 1)
        m.submodules.stamps = stamps = SyncFIFOBuffered(width=len(now), depth=self._depth)
        m.submodules.beats = beats = SyncFIFOBuffered(
            width=Shape.cast(phy_beat_layout).width, depth=self._depth)
        released = Signal(range(self._depth + 1))
        # The newest stamp old enough to be released, worked out a clock ahead. Ages and
        # delays stay below half the stamps' range, so the sign of the difference tells.
        horizon = Signal(len(now))
        m.d.sync += horizon.eq(now + 1 + _LEAD - self.delay)
        due = ~(horizon - stamps.r_data)[len(now) - 1]
        leave = self.o.valid & self.o.ready
        m.d.comb += [
            stamps.w_en.eq(self.arrive),
            stamps.w_data.eq(now),
            beats.w_en.eq(self.i.valid),
            beats.w_data.eq(self.i.payload),
            stamps.r_en.eq(due),
            self.o.valid.eq(beats.r_rdy & (released != 0)),
            self.o.payload.eq(beats.r_data),
            beats.r_en.eq(leave),
        ]
        m.d.sync += released.eq(released + (stamps.r_rdy & stamps.r_en) - leave)
        return m


def _at_most(value, limit):
    """``min(value, limit)``, folded where the width of ``value`` keeps it below ``limit``."""
    if limit >= (1 << len(value)) - 1:
        return value
    return Mux(value > limit, limit, value)


def _below(value, limit):
    """``value < limit``, folded where the width of ``value`` makes it constant."""
    if limit <= 0 or limit > (1 << len(value)) - 1:
        return Const(int(limit > 0), 1)
    return value < limit


def _at_least(code, x):
    """Set ``code`` to the thermometer code of ``x`` (0 to 512), bit ``j`` set where
    ``j >= x``, by groups."""
    high = x >> _SPLIT
    return [code.here.eq(Cat(high == g for g in range(_GROUPS))),
            code.above.eq(Cat(_below(high, g) for g in range(_GROUPS))),
            code.part.eq(_ONES << x[:_SPLIT])]


def _decode(decoded, stage):
    """Set the second stage ``decoded`` from ``stage``: the beat, and its flips decoded by
    groups (comparisons of a few bits: two LUT levels)."""
    high = stage.bit_position >> _SPLIT
    covered = (stage.bit_position >= stage.lo) & (stage.bit_position < stage.hi)
    return [decoded.valid.eq(stage.valid),
            decoded.beat.eq(stage.beat),
            *_at_least(decoded.lo, stage.lo),
            *_at_least(decoded.hi, stage.hi),
            decoded.bit.here.eq(Cat(stage.bit_error & (high == g) for g in range(_GROUPS))),
            decoded.bit.part.eq(Const(1, 1) << stage.bit_position[:_SPLIT]),
            decoded.bit_error.eq(stage.bit_error),
            decoded.burst_start.eq(stage.burst_start),
            decoded.dropped_flit.eq(stage.dropped_flit),
            decoded.flipped.eq(stage.hi - stage.lo + (stage.bit_error & ~covered))]


def _flips(decoded):
    """The bits the decoded beat gets flipped: burst bits ``lo .. hi-1`` and the bit error
    (a few LUTs per bit)."""
    def at_least(code, g):
        return Mux(code.here[g], code.part, Mux(code.above[g], _ONES, 0))

    return Cat(*((at_least(decoded.lo, g) & ~at_least(decoded.hi, g))
                 | Mux(decoded.bit.here[g], decoded.bit.part, 0) for g in range(_GROUPS)))
