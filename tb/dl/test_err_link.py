# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the error-injecting link (``rtl/scaleup_ip/dl/err_link.py``) and its model
(``rtl/scaleup_ip/model/dl/err_link.py``)."""

import copy
import math
import random
from typing import NamedTuple

import cocotb
import pytest
from amaranth import ClockDomain, Module
from amaranth.back import rtlil
from amaranth.sim import Simulator
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.dl import (
    BEATS_PER_FLIT,
    BEAT_BITS,
    ErrLinkConfig,
    ErrorLink,
    counters_layout,
    phy_beat_layout,
)
from scaleup_ip.xorshift import Xorshift64
from scaleup_ip.model.dl import err_link as model
from sim import harness
from sim.stats import plausible
from sim.streams import LayoutSink, LayoutSource, random_pauses, reset

# --- Layer 1: the model and the configuration, no simulator -----------------------------------

#: The first outputs of Marsaglia's ``xor64`` from the seed in its published code,
#: 88172645463325252 [Marsaglia, "Xorshift RNGs", J. Stat. Softw. 8(14), 2003], as independent
#: implementations in several languages pin them in their tests.
_XOR64 = (88172645463325252, (8748534153485358512, 3040900993826735515, 3453997556048239312))


def _sigmas(count, trials, p):
    """How many standard deviations ``count`` successes in ``trials`` lie from ``p``."""
    return abs(count - trials * p) / math.sqrt(max(trials * p * (1 - p), 1e-12))


def _beats(rng, flits, partial=0):
    """Random beats of ``flits`` whole flits and ``partial`` beats of one more."""
    count = flits * BEATS_PER_FLIT + partial
    return [(rng.getrandbits(BEAT_BITS), int(k % BEATS_PER_FLIT == BEATS_PER_FLIT - 1))
            for k in range(count)]


def test_xorshift64_published_sequence():
    x, outputs = _XOR64
    for expected in outputs:
        x = model.xorshift64(x)
        assert x == expected


def test_generator_draws_two_words_per_beat():
    generator, x = model.Generator(12345), 12345
    for _ in range(5):
        first, second = model.xorshift64(x), model.xorshift64(model.xorshift64(x))
        x = second
        draws = generator.next()
        assert draws == model.Draws.from_bits(first | second << 64)
        assert (draws.bit, draws.burst, draws.drop) == (
            first & 0xFFFF_FFFF, second & 0xFFFF_FFFF, second >> 32)
        assert draws.bit_position == (first >> 32) % BEAT_BITS
        assert draws.burst_position == (first >> 41) % BEAT_BITS
    assert model.Generator(0).state == model.ZERO_SEED != 0
    with pytest.raises(ValueError, match="seed must be a 64-bit unsigned integer"):
        model.Generator(1 << 64)


def test_ber_threshold():
    assert model.ber_threshold(0) == 0
    assert model.ber_threshold(1) == (1 << 32) - 1
    assert model.ber_threshold(1e-4) == round((1 - (1 - 1e-4) ** 512) * 2**32)
    assert 0.0499 < model.probability(model.ber_threshold(1e-4)) < 0.0500
    assert model.probability(model.ber_threshold(1e-9)) == pytest.approx(512e-9, rel=1e-3)
    assert model.ber_threshold(1e-13) == 0                  # below the threshold's step
    with pytest.raises(ValueError, match="BER must be between 0 and 1"):
        model.ber_threshold(1.5)


def test_model_rates():
    """Bit errors, bursts and drops happen at their thresholds' rates; positions are uniform."""
    rng = random.Random(7)
    link = model.ErrLinkModel(seed=rng.getrandbits(64), max_burst_length=64)
    link.controls = model.Controls(ber_threshold=model.ber_threshold(1e-4),
                                   burst_threshold=1 << 29, burst_length=1,
                                   drop_threshold=3 << 29)
    flits = 6000
    fates = [link.beat(0, int(k % 10 == 9)) for k in range(flits * BEATS_PER_FLIT)]
    first = [f for f in fates if f.first]
    passed = [f for f in fates if not f.dropped]
    assert _sigmas(sum(f.dropped for f in first), flits, 3 / 8) < 5
    p = model.probability(model.ber_threshold(1e-4))
    assert _sigmas(sum(f.bit_error for f in passed), len(passed), p) < 5
    assert _sigmas(sum(f.burst_start for f in passed), len(passed), 1 / 8) < 5
    for name in ("bit_position", "lo"):
        bins = [0] * 8
        for f in passed:
            if f.bit_error if name == "bit_position" else f.burst_start:
                bins[getattr(f, name) * 8 // BEAT_BITS] += 1
        expected = sum(bins) / 8
        assert sum((n - expected) ** 2 / expected for n in bins) < 30, bins  # chi-square, 7 dof
    assert link.counters["flipped_bits"] == sum(f.mask.bit_count() for f in passed)
    assert link.counters["bursts"] == sum(f.burst_start for f in passed)


def test_model_burst_runs_on():
    """A burst longer than a beat covers the next passed beats from bit 0, whole."""
    link = model.ErrLinkModel(seed=3, max_burst_length=2000)
    link.controls = model.Controls(burst_threshold=(1 << 32) - 1, burst_length=1500)
    fates = [link.beat(0, 0) for _ in range(8)]
    assert fates[0].burst_start and fates[0].hi == BEAT_BITS
    start = fates[0].lo
    runs = BEAT_BITS - start, BEAT_BITS, 1500 - (BEAT_BITS - start) - BEAT_BITS
    for fate, bits in zip(fates[1:3], runs[1:]):
        assert not fate.burst_start and fate.mask == (1 << min(bits, BEAT_BITS)) - 1
    assert fates[3].burst_start                                   # the next one
    assert link.counters["bursts"] == sum(f.burst_start for f in fates)


def test_model_disabled_is_identity():
    link = model.ErrLinkModel(seed=5, max_burst_length=100)
    link.controls = model.Controls(enable=0, ber_threshold=(1 << 32) - 1,
                                   burst_threshold=(1 << 32) - 1, burst_length=100,
                                   drop_threshold=(1 << 32) - 1)
    beats = _beats(random.Random(5), 3, 4)
    assert [(f.out, f.last) for f in (link.beat(*b) for b in beats)] == beats
    assert link.counters == {**dict.fromkeys(model.COUNTERS, 0), "beats": 34, "flits": 3}


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"max_delay": 0}, ValueError, r"ErrorLink max_delay must be 1 \.\. 16384, not 0"),
    ({"max_delay": 16385}, ValueError, r"ErrorLink max_delay must be 1 \.\. 16384"),
    ({"max_delay": 8.0}, TypeError, r"ErrorLink max_delay must be an integer, not 8.0"),
    ({"max_burst_length": 0}, ValueError,
     r"ErrorLink max_burst_length must be 1 \.\. 65535, not 0"),
    ({"max_burst_length": "64"}, TypeError,
     r"ErrorLink max_burst_length must be an integer, not '64'"),
])
def test_config_rejects(kwargs, error, message):
    with pytest.raises(error, match=message):
        ErrLinkConfig(**kwargs)


def test_config():
    config = ErrLinkConfig(max_delay=100, max_burst_length=1100)
    assert ErrLinkConfig.from_json(config.to_json()) == config
    assert config.slug() == "max_delay-100_max_burst_length-1100"
    assert config.depth == 101 and ErrLinkConfig(max_delay=2).depth == model.MIN_LATENCY + 1
    assert [config.latency(d) for d in (0, 4, 5, 100, 127)] == [4, 4, 5, 100, 100]


def test_component():
    with pytest.raises(TypeError, match=r"ErrorLink config must be a ErrLinkConfig, not 5"):
        ErrorLink(5)
    dut = ErrorLink(ErrLinkConfig(max_delay=100, max_burst_length=1100))
    dut._MustUse__silence = True          # inspected, never elaborated
    assert dut.i.payload.shape() == dut.o.payload.shape() == phy_beat_layout
    assert dut.counters.shape() == counters_layout
    assert (len(dut.delay), len(dut.burst_length), len(dut.seed)) == (7, 11, 64)


def test_elaborates_without_reset():
    """The link builds in a reset-less ``sync`` domain (as on a board without a reset)."""
    m = Module()
    m.domains.sync = ClockDomain(reset_less=True)
    m.submodules.link = link = ErrorLink(ErrLinkConfig(max_delay=2, max_burst_length=40))
    rtlil.convert(m, ports=[link.i.valid, link.o.valid])


def test_generator_rtl_matches_model():
    """The RTL generator (in Amaranth's simulator): without a reset it starts as if seed 0 had
    been loaded; then it follows the model through advances, loads, and both at once."""
    dut = Xorshift64()

    async def bench(ctx):
        state = model.nonzero_seed(0)           # the state whose draws the RTL must show
        for step in range(12):
            assert ctx.get(dut.draws.as_value()) == model.draw_words(state), step
            load, advance = step in (5, 9), step not in (0, 6)
            seed = 0 if step == 9 else 0x1234_5678_9ABC_DEF0
            ctx.set(dut.load, load)
            ctx.set(dut.advance, advance)
            ctx.set(dut.seed, seed)
            await ctx.tick()
            if load:
                state = model.nonzero_seed(seed)
            elif advance:
                state = model.draw_words(state) >> 64

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


# --- Layer 2: cocotb tests, run inside the simulator ------------------------------------------

PERIOD_NS = 10
ALWAYS = (1 << 32) - 1
#: The control levels, as ports and as :class:`scaleup_ip.model.dl.err_link.Controls` fields.
LEVELS = ("enable", "ber_threshold", "burst_threshold", "burst_length", "drop_threshold",
          "delay")


class Entry(NamedTuple):
    """A beat accepted on ``i``, with the clock and the control levels of its acceptance."""
    clock: int
    data: int
    last: int
    levels: model.Controls


def replay(link, entries, reseeds):
    """Run the model ``link`` over logged beats, each with the levels of its own clock, and
    logged ``(clock, seed)`` reseeds after the beats of their clocks; return each beat's
    ``(data, last, fate)``."""
    events = sorted([(e.clock, 0, e) for e in entries] + [(c, 1, seed) for c, seed in reseeds],
                    key=lambda event: event[:2])
    expected = []
    for _, is_reseed, item in events:
        if is_reseed:
            link.reseed(item)
            continue
        link.controls = item.levels
        expected.append((item.data, item.last, link.beat(item.data, item.last)))
    return expected


class TB:
    """Clock, stream drivers, the model, and a log of every handshake on ``i`` and ``o``."""

    def __init__(self, dut):
        self.dut = dut
        self.config = ErrLinkConfig.from_env()
        self.rng = random.Random(cocotb.RANDOM_SEED)
        Clock(dut.clk, PERIOD_NS, unit="ns").start()
        assert len(dut.i__payload) == phy_beat_layout.size
        self.source = LayoutSource(dut, "i", phy_beat_layout, dut.clk, dut.rst)
        self.sink = LayoutSink(dut, "o", phy_beat_layout, dut.clk, dut.rst)
        self.model = model.ErrLinkModel(seed=self.rng.getrandbits(64),
                                        max_burst_length=self.config.max_burst_length)
        self.expected = []          # (data, last, fate) of the beats sent, in order
        self.accepted = []          # an :class:`Entry` per transfer on ``i`` out of reset
        self.left = []              # clock of each transfer on ``o``
        self.reseeds = []           # (clock, seed) of each ``reseed`` strobe out of reset
        self.clock = 0
        cocotb.start_soon(self._watch())

    async def _watch(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            self.clock += 1         # the values now are those the next edge samples
            if dut.rst.value:
                continue
            if dut.i__valid.value and dut.i__ready.value:
                beat = phy_beat_layout.from_bits(dut.i__payload.value.to_unsigned())
                levels = model.Controls(**{name: int(getattr(dut, name).value)
                                           for name in LEVELS})
                self.accepted.append(Entry(self.clock, int(beat.data), int(beat.last), levels))
            if dut.reseed.value:
                self.reseeds.append((self.clock, dut.seed.value.to_unsigned()))
            if dut.o__valid.value and dut.o__ready.value:
                self.left.append(self.clock)

    async def reset(self):
        """Reset the link and the model; the link loads the model's seed."""
        self.dut.seed.value = self.model.seed
        self.dut.reseed.value = 0
        self.control()
        await reset(self.dut)
        self.model.reset()
        self.dut._log.info(f"generator seed {self.model.seed:#018x}")

    async def reseed(self, seed):
        """Strobe ``reseed`` with ``seed`` (only while no beat is being accepted)."""
        self.dut.seed.value = seed
        self.dut.reseed.value = 1
        await RisingEdge(self.dut.clk)
        self.dut.reseed.value = 0
        self.model.reseed(seed)
        self.dut._log.info(f"generator reseeded {seed:#018x}")

    def control(self, **levels):
        """Set the control levels (the others to their defaults) on the link and the model."""
        self.model.controls = controls = model.Controls(**levels)
        for name in LEVELS:
            getattr(self.dut, name).value = getattr(controls, name)

    def stalls(self, idle, backpressure):
        self.source.set_idle(random_pauses(self.rng, idle))
        self.sink.set_backpressure(random_pauses(self.rng, backpressure))

    def send(self, flits, partial=0, beats=None):
        """Queue ``beats`` (random ones: ``flits`` flits and ``partial`` beats); the model
        says what comes out. Returns the beats' fates."""
        fates = []
        for data, last in beats or _beats(self.rng, flits, partial):
            self.source.send_nowait(data=data, last=last)
            fates.append(self.model.beat(data, last))
            self.expected.append((data, last, fates[-1]))
        return fates

    async def check(self):
        """Receive every beat the model passes and compare it with the model's; then require
        that nothing else comes, nothing is left to send, and the counters match. Returns the
        data received and how many beats were corrupted."""
        await self.source.wait()
        received = []
        self.expected = [beat for beat in self.expected if not beat[2].dropped]
        for index, (data, last, fate) in enumerate(self.expected):
            beat = await self.sink.recv()
            received.append(int(beat.data))
            assert (received[-1], int(beat.last)) == (fate.out, last), (
                f"beat {index} of {len(self.expected)}: flipped {received[-1] ^ data:#x} last "
                f"{int(beat.last)}, expected flipped {fate.mask:#x} last {last}")
        corrupted = sum(out != data for out, (data, *_) in zip(received, self.expected))
        self.expected = []
        await ClockCycles(self.dut.clk, 2 * self.config.latency(self.config.max_delay))
        assert self.source.empty() and self.sink.empty(), "beats left over"
        assert not self.dut.o__valid.value, "a beat nobody sent"
        counters = self.counters()
        self.dut._log.info(f"counters {counters}")
        assert counters == self.model.counters
        return received, corrupted

    def counters(self):
        value = counters_layout.from_bits(self.dut.counters.value.to_unsigned())
        return {name: int(getattr(value, name)) for name in model.COUNTERS}

    def latencies(self, start, fates):
        """Clocks from entry to exit of each passed beat of ``fates``, the beats accepted and
        sent from log positions ``start``."""
        entries = [entry.clock for entry, fate in zip(self.accepted[start[0]:], fates,
                                                      strict=True) if not fate.dropped]
        return [out - entry for entry, out in zip(entries, self.left[start[1]:], strict=True)]

    def marks(self):
        return len(self.accepted), len(self.left)


async def _start(dut):
    tb = TB(dut)
    await tb.reset()
    return tb


def _consecutive(clocks):
    return clocks == list(range(clocks[0], clocks[0] + len(clocks)))


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def err_link_disabled(dut):
    """``enable`` low: every beat passes untouched under random stalls, whatever the
    thresholds; with no stalls, one beat per clock in and out."""
    tb = await _start(dut)
    tb.control(enable=0, ber_threshold=ALWAYS, burst_threshold=ALWAYS,
               burst_length=(1 << len(dut.burst_length)) - 1, drop_threshold=ALWAYS)
    for idle, backpressure in ((0.3, 0.5), (0.0, 0.7), (0.6, 0.0)):
        tb.stalls(idle, backpressure)
        tb.send(8, partial=3)
        received, corrupted = await tb.check()
        assert corrupted == 0 and len(received) == 83
    tb.stalls(0, 0)
    start = tb.marks()
    tb.send(20)
    await tb.check()
    assert _consecutive([e.clock for e in tb.accepted[start[0]:]]), "input not at full rate"
    assert _consecutive(tb.left[start[1]:]), "output not at full rate"
    assert len(tb.left) - start[1] == 200


@cocotb.test(timeout_time=4, timeout_unit="ms")
async def err_link_bit_errors(dut):
    """Bit errors only: the output differs from the input exactly where the model says, one bit
    per corrupted beat, at the threshold's rate."""
    tb = await _start(dut)
    tb.stalls(0.3, 0.3)
    for threshold in (model.ber_threshold(1e-4), 1 << 30, ALWAYS):
        tb.control(ber_threshold=threshold)
        fates = tb.send(100)
        assert all(f.mask.bit_count() == f.bit_error for f in fates)
        received, corrupted = await tb.check()
        p = model.probability(threshold)
        assert plausible(corrupted, len(received), p), (corrupted, len(received), p)


@cocotb.test(timeout_time=4, timeout_unit="ms")
async def err_link_drops(dut):
    """Drops remove whole flits exactly as the model says, and nothing else."""
    tb = await _start(dut)
    tb.stalls(0.3, 0.3)
    count = 60
    for threshold in (1 << 29, 1 << 31, ALWAYS):
        tb.control(drop_threshold=threshold)
        fates = tb.send(count)
        flits = [fates[k:k + BEATS_PER_FLIT] for k in range(0, len(fates), BEATS_PER_FLIT)]
        assert all(len({f.dropped for f in flit}) == 1 for flit in flits)
        dropped = sum(flit[0].dropped for flit in flits)
        received, corrupted = await tb.check()
        assert corrupted == 0 and len(received) == (count - dropped) * BEATS_PER_FLIT
        assert plausible(dropped, count, model.probability(threshold)), (dropped, count)


@cocotb.test(timeout_time=6, timeout_unit="ms")
async def err_link_bursts(dut):
    """Bursts of several lengths, some longer than a beat and some capped by
    ``max_burst_length``; then bursts, bit errors and drops together: the output is the
    model's."""
    tb = await _start(dut)
    tb.stalls(0.3, 0.3)
    top = tb.config.max_burst_length
    for length in sorted({1, 7, min(33, top), min(600, top), top,
                          (1 << len(dut.burst_length)) - 1}):
        tb.control(burst_threshold=1 << 29, burst_length=length)
        running = tb.model.rest
        fates = tb.send(25)
        await tb.check()
        flipped = sum(f.mask.bit_count() for f in fates)
        bursts = sum(f.burst_start for f in fates)
        assert flipped == running + bursts * min(length, top) - tb.model.rest
    tb.control(burst_threshold=1 << 29, burst_length=min(700, top),
               ber_threshold=1 << 30, drop_threshold=1 << 30)
    tb.send(60, partial=5)
    await tb.check()


@cocotb.test(timeout_time=6, timeout_unit="ms")
async def err_link_delay(dut):
    """Each beat leaves exactly ``max(delay, 4)`` clocks after it entered when the sink never
    stalls; full rate at the largest delay; in order, complete and as the model says under
    stalls and while ``delay`` changes."""
    tb = await _start(dut)
    top = tb.config.max_delay
    largest = (1 << len(dut.delay)) - 1           # above ``max_delay`` unless it is 2**n - 1
    for delay in sorted(d for d in {0, 1, 3, 4, 5, top // 2, top - 1, top, largest}
                        if d <= largest):
        tb.control(enable=0, delay=delay)
        tb.stalls(0.3, 0)
        start = tb.marks()
        fates = tb.send(3)
        await tb.check()
        assert set(tb.latencies(start, fates)) == {tb.config.latency(delay)}, delay
    tb.stalls(0, 0)
    start = tb.marks()
    fates = tb.send(20)
    await tb.check()
    assert _consecutive([e.clock for e in tb.accepted[start[0]:]]), "not at full rate"
    assert set(tb.latencies(start, fates)) == {tb.config.latency(top)}
    tb.control(ber_threshold=1 << 30, drop_threshold=1 << 29, burst_threshold=1 << 29,
               burst_length=min(100, tb.config.max_burst_length))
    tb.stalls(0.3, 0.5)
    start = tb.marks()
    fates = tb.send(50)
    changing = cocotb.start_soon(_vary_delay(tb))
    await tb.check()
    changing.cancel()
    assert min(tb.latencies(start, fates)) >= model.MIN_LATENCY


async def _vary_delay(tb):
    """Set ``delay`` to a random value every few clocks."""
    while True:
        await ClockCycles(tb.dut.clk, tb.rng.randrange(1, 40))
        tb.dut.delay.value = tb.rng.randrange(1 << len(tb.dut.delay))


def _random_levels(tb, enable=1):
    """Random levels, each kind of error at a rate that makes it near certain in a few runs of
    20 flits: bit errors 1/16 to 1/2 of beats, bursts starting at 1/16 to 1/4 (``burst_length``
    not 0), drops 1/4 to 1/2 of flits. (Without floors, a tiny threshold left the run with no
    drop about one run in 1500.) Over the four runs of ``err_link_counters`` with levels of
    their own, some kind missing has odds below 1e-12."""
    rng = tb.rng
    return {"enable": enable, "ber_threshold": rng.randrange(1 << 28, 1 << 31),
            "burst_threshold": rng.randrange(1 << 28, 1 << 30),
            "burst_length": rng.randrange(1, 1 << len(tb.dut.burst_length)),
            "drop_threshold": rng.randrange(1 << 30, 1 << 31),
            "delay": rng.randrange(min(8, 1 << len(tb.dut.delay)))}


@cocotb.test(timeout_time=6, timeout_unit="ms")
async def err_link_counters(dut):
    """Runs with random levels and stalls, seeds loaded by ``reseed`` (0 among them) and
    ``enable`` toggled between runs: the counters equal the model's after each; the same seed,
    levels and beats give the same output again."""
    tb = await _start(dut)
    seed, beats, levels = tb.rng.getrandbits(64), _beats(tb.rng, 20), _random_levels(tb)
    outputs = {}
    for run in range(7):
        if run in (1, 4, 6):
            await tb.reseed(0 if run == 1 else seed)
        # Runs 3 and 5 pass whole flits with ``enable`` low, which ends any burst: so runs 4
        # and 6 start from the same state.
        tb.control(**(levels if run in (4, 6) else _random_levels(tb, int(run not in (3, 5)))))
        tb.stalls(tb.rng.random() * 0.5, tb.rng.random() * 0.5)
        tb.send(20, beats=beats if run in (4, 6) else None)
        outputs[run], _ = await tb.check()
    assert outputs[4] == outputs[6]
    assert all(tb.counters().values())


@cocotb.test(timeout_time=4, timeout_unit="ms")
async def err_link_levels_change(dut):
    """Every control level, and the seed by ``reseed``, changed at random clocks while beats
    flow with stalls on both sides: each beat takes the levels of its acceptance clock (a drop
    those of its flit's first beat), a reseed acts from the next beat on; the output and the
    counters are the model's replay of the log."""
    tb = await _start(dut)
    tb.control(**_random_levels(tb))
    tb.stalls(0.3, 0.3)
    marks, clock = tb.marks(), tb.clock
    for data, last in _beats(tb.rng, 150, partial=7):
        tb.source.send_nowait(data=data, last=last)
    changing = cocotb.start_soon(_vary_levels(tb))
    await tb.source.wait()
    changing.cancel()
    dut.reseed.value = 0
    reseeds = [(c, seed) for c, seed in tb.reseeds if c > clock]
    assert len(reseeds) > 3
    tb.expected = replay(tb.model, tb.accepted[marks[0]:], reseeds)
    await tb.check()
    assert all(tb.counters().values()), "some kind of error never happened"


async def _vary_levels(tb):
    """Every few clocks, set one control level at random or strobe ``reseed``."""
    dut = tb.dut
    while True:
        await ClockCycles(dut.clk, tb.rng.randrange(1, 12))
        name = tb.rng.choice(LEVELS + ("reseed",))
        if name == "reseed":
            dut.seed.value = tb.rng.choice([0, tb.rng.getrandbits(64)])
            dut.reseed.value = 1
            await RisingEdge(dut.clk)
            dut.reseed.value = 0
        elif name == "enable":
            dut.enable.value = int(tb.rng.random() < 0.8)
        elif name.endswith("threshold"):
            getattr(dut, name).value = tb.rng.choice(
                [0, tb.rng.getrandbits(29), tb.rng.getrandbits(32), ALWAYS])
        else:
            getattr(dut, name).value = tb.rng.randrange(1 << len(getattr(dut, name)))


@cocotb.test(timeout_time=4, timeout_unit="ms")
async def err_link_reset(dut):
    """Resets with beats held inside, mid-flit, and more waiting at the source: none of the
    held beats comes out after it; the link starts again from the seed, empty, with a fresh
    flit (the next beat is a first beat: with every flit dropped, none of the flit cut short
    passes), as the model says."""
    tb = await _start(dut)
    levels = {"ber_threshold": 1 << 30, "burst_threshold": 1 << 30,
              "burst_length": min(700, tb.config.max_burst_length), "delay": tb.config.max_delay}
    for _ in range(3):
        tb.control(**levels, drop_threshold=1 << 29)
        tb.stalls(0.2, 0.8)
        begin = tb.marks()
        for data, last in _beats(tb.rng, 6, partial=5):
            tb.source.send_nowait(data=data, last=last)
        await ClockCycles(dut.clk, tb.rng.randrange(20, 40))
        for _ in range(1000):
            await RisingEdge(dut.clk)
            link = copy.deepcopy(tb.model)
            out = [(d, last, f) for d, last, f in replay(link, tb.accepted[begin[0]:], [])
                   if not f.dropped]
            if len(out) > len(tb.left) - begin[1] and link.in_flit and not tb.source.empty():
                break
        else:
            raise AssertionError("never held beats mid-flit with more to send")
        cut = tb.marks()
        tb.control(**levels, drop_threshold=ALWAYS)
        await reset(dut)
        assert tb.marks() == cut
        for _, _, fate in out[:cut[1] - begin[1]]:
            assert int((await tb.sink.recv()).data) == fate.out
        assert tb.sink.empty()
        tb.model.reset()
        tb.stalls(0.3, 0)
        await tb.source.wait()
        tb.control(**levels)
        for data, last in _beats(tb.rng, 3):
            tb.source.send_nowait(data=data, last=last)
        await tb.source.wait()
        tb.expected = replay(tb.model, tb.accepted[cut[0]:], [])
        fates = [fate for *_, fate in tb.expected]
        await tb.check()
        # The sink ready, each beat after the reset takes the full delay: no stale timing.
        assert set(tb.latencies(cut, fates)) == {tb.config.latency(tb.config.max_delay)}


# --- Layer 3: the hardware configurations -----------------------------------------------------

CONFIGS = [
    ErrLinkConfig(max_delay=2, max_burst_length=40),        # below the minimum latency
    ErrLinkConfig(max_delay=100, max_burst_length=1100),    # bursts over three beats
]


@pytest.mark.sim
@pytest.mark.parametrize("config", CONFIGS, ids=ErrLinkConfig.slug)
def test_err_link(config):
    harness.run(ErrorLink(config), config, toplevel="err_link",
                test_module=__name__)
