# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the error-injecting Ethernet channel (rtl/scaleup_ip/ethx/link/channel.py) against its golden
model (rtl/scaleup_ip/model/ethx/channel.py): every beat out and every counter as the model says,
under random controls, stalls on both sides, reseeds and reset; the latency and the throughput the
docstring states."""

import dataclasses
import itertools
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.ethx.link import ChannelConfig, EthxChannel, channel_counters, eth_beat_layout
from scaleup_ip.model.ethx import channel as model
from scaleup_ip.model.ethx.link import LINK_ETHERTYPE
from sim import harness
from sim.ethx.env import EthxEnv
from sim.streams import LayoutSink, LayoutSource, random_pauses

TIMEOUT_US = 4000
#: A threshold every draw but ``2**32 - 1`` is below.
ALWAYS = model.frame_threshold(1)


class TB(EthxEnv):
    config_class = ChannelConfig

    def __init__(self, dut, seed):
        super().__init__(dut)
        cfg = self.config
        layout = eth_beat_layout(cfg.eth_width)
        self.source = LayoutSource(dut, "i", layout, dut.clk, dut.rst)
        self.sink = LayoutSink(dut, "o", layout, dut.clk, dut.rst)
        self.model = model.ChannelModel(cfg.eth_width, cfg.max_frame_bytes, seed=seed)
        self.got = []
        dut.seed.value = seed
        dut.reseed.value = 0
        self.controls(model.Controls())

    def controls(self, controls):
        """Set the ports and the model's controls alike."""
        self.model.controls = controls
        for name in model.Controls.WIDTHS:
            getattr(self.dut, name).value = getattr(controls, name)

    async def collect(self):
        while True:
            beat = await self.sink.recv()
            self.got.append(model.Beat(int(beat.data), int(beat.keep), int(beat.last),
                                       int(beat.user)))

    async def send(self, frame, user=0):
        """Offer ``frame``; wait until its last beat is taken."""
        for beat in model.beats_of(frame, self.config.eth_width, user):
            self.source.send_nowait(**beat._asdict())
        await self.source.wait()

    def counters(self):
        value = self.dut.counters.value.to_unsigned()
        return {name: value >> channel_counters[name].offset & 0xFFFF_FFFF
                for name in model.COUNTERS}

    def frame(self, control=0.5, kind=None):
        """A random frame: mostly bridge-like, some (``control``) link control frames of any
        kind byte, some short, some oversize; with ``kind``, a link control frame of that kind
        byte, 64 bytes to ``max_frame_bytes``."""
        cfg, rng = self.config, self.rng
        if kind is not None:
            frame = bytearray(rng.randbytes(rng.randrange(64, cfg.max_frame_bytes + 1)))
            frame[12:15] = LINK_ETHERTYPE.to_bytes(2, "big") + bytes([kind])
            return bytes(frame)
        size = rng.choice([rng.randrange(64, 200), rng.randrange(1, 64),
                           rng.randrange(64, cfg.max_frame_bytes + 1),
                           cfg.max_frame_bytes, cfg.max_frame_bytes + rng.randrange(1, 20)])
        frame = bytearray(rng.randbytes(size))
        if size > 14 and rng.random() < control:
            frame[12:14] = LINK_ETHERTYPE.to_bytes(2, "big")
            frame[14] = rng.choice([rng.randrange(20), rng.randrange(256)])
        return bytes(frame)

    def random_controls(self):
        rng, width = self.rng, self.config.eth_width
        level = rng.choice([0.0, 0.01, 0.1, 0.5])
        return model.Controls(
            enable=int(rng.random() < 0.9), cut=int(rng.random() < 0.05),
            ber_threshold=model.ber_threshold(rng.choice([0, 1e-4, 1e-2]), width),
            burst_threshold=model.frame_threshold(rng.choice([0, 0.01, 0.2])),
            burst_length=rng.choice([0, 1, 3, 40, 70000 % (1 << model.BURST_BITS)]),
            drop_threshold=model.frame_threshold(level),
            ctl_threshold=model.frame_threshold(rng.choice([0.0, 0.5, 1.0])),
            ctl_kinds=rng.getrandbits(model.KIND_MASK_BITS),
            delay=rng.randrange(self.config.max_delay + 1))


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def matches_model(dut):
    """Random frames under random controls (changed between frames), stalls on both sides,
    reseeds between frames: beats and counters as the model's. Every case at least once, for
    certain where a draw decides: in the block of every error, the first frame is dropped
    (``drop_threshold`` at its top) and the second, a control frame, dropped as one."""
    tb = TB(dut, seed=random.Random(cocotb.RANDOM_SEED).getrandbits(64))
    await tb.reset()
    tb.source.set_idle(random_pauses(tb.rng, 0.2))
    tb.sink.set_backpressure(random_pauses(tb.rng, 0.3))
    cocotb.start_soon(tb.collect())
    expect = []
    frames = 300 if tb.config.eth_width == 64 else 120
    for k in range(frames):
        if k % 10 == 0:
            controls = tb.random_controls()
            controls.cut |= k == 10             # each case at least once
            controls.enable &= k != 20
            if k == 30:                         # every error, control frames of any kind dropped
                controls = model.Controls(
                    ber_threshold=model.ber_threshold(1e-2, tb.config.eth_width),
                    burst_threshold=model.frame_threshold(0.2), burst_length=3,
                    drop_threshold=model.frame_threshold(0.2),
                    ctl_threshold=model.frame_threshold(1.0),
                    ctl_kinds=(1 << model.KIND_MASK_BITS) - 1, delay=controls.delay)
            tb.controls(controls)
        if k in (30, 31, 32):       # 30 dropped; 31, a control frame, left to be dropped as one
            drop = {30: ALWAYS, 31: 0}.get(k, controls.drop_threshold)
            tb.controls(dataclasses.replace(controls, drop_threshold=drop))
        if k % 37 == 36:            # a reseed strobe with no beat taken in its clock
            seed = tb.rng.getrandbits(64)
            dut.seed.value = seed
            tb.source.set_idle(None)
            await RisingEdge(dut.clk)
            dut.reseed.value = 1
            await RisingEdge(dut.clk)
            dut.reseed.value = 0
            tb.model.reseed(seed)
            tb.source.set_idle(random_pauses(tb.rng, 0.2))
        frame = tb.frame(control=0.9 if 30 <= k < 40 else 0.5,
                         kind=tb.rng.randrange(20) if k == 31 else None)
        user = tb.rng.getrandbits(1)
        beats = tb.model.frame_beats(frame, user)
        expect += beats or []
        await tb.send(frame, user)
    for _ in range(tb.config.max_delay + 100 * len(expect)):
        if len(tb.got) >= len(expect):
            break
        await RisingEdge(dut.clk)
    await ClockCycles(dut.clk, tb.config.max_delay + 20)
    assert tb.got == expect
    assert tb.sink.empty()
    await ReadOnly()
    assert tb.counters() == tb.model.counters
    counts = tb.model.counters
    dut._log.info("counters %s", counts)
    for name in model.COUNTERS:             # the stimulus reaches every case
        assert counts[name] > 0, name


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def latency_and_rate(dut):
    """With ``o`` ready, a frame's first beat is offered from the ``delay + 1``-th edge after
    the one that takes its last beat (the third at ``delay`` 1 or 2; ``max_delay`` for larger
    values); back-to-back frames of one length go in and out at a beat a clock."""
    tb = TB(dut, seed=1)
    await tb.reset()
    cfg = tb.config
    cocotb.start_soon(tb.collect())
    for delay in sorted({1, 2, 7, cfg.max_delay, (1 << len(dut.delay)) - 1}):
        tb.controls(model.Controls(delay=delay))
        beats = model.beats_of(tb.rng.randbytes(100), cfg.eth_width)
        for beat in beats:
            tb.source.send_nowait(**beat._asdict())
        taken, offered = await _timing(dut)
        assert offered - taken == max(min(delay, cfg.max_delay), 2) + 1, delay
        while len(tb.got) < len(beats):
            await RisingEdge(dut.clk)
        assert tb.got == beats
        tb.got.clear()
    # Rate: many frames back to back; count the clocks each side is busy.
    tb.controls(model.Controls(delay=20))
    size = tb.rng.randrange(64, min(300, cfg.max_frame_bytes))
    frames = [tb.rng.randbytes(size) for _ in range(30)]
    beats = sum(len(model.beats_of(f, cfg.eth_width)) for f in frames)
    for frame in frames:
        for beat in model.beats_of(frame, cfg.eth_width):
            tb.source.send_nowait(**beat._asdict())
    stalls, outs, first, clock = 0, 0, None, 0
    while outs < beats:
        await RisingEdge(dut.clk)
        await ReadOnly()
        if int(dut.i__valid.value) and not int(dut.i__ready.value):
            stalls += 1
        if int(dut.o__valid.value):
            first = first if first is not None else clock
            outs += 1
        clock += 1
    assert stalls == 0
    assert clock - first == beats        # a beat every clock once started
    await ClockCycles(dut.clk, 2)
    assert tb.counters()["frames"] == len(frames) + 5


async def _timing(dut):
    """The clocks (counted from now) whose edges take a frame's last beat and first see a
    beat offered on ``o``."""
    clock, taken = 0, None
    while True:
        await RisingEdge(dut.clk)
        clock += 1
        await ReadOnly()
        if int(dut.o__valid.value):
            return taken, clock
        if int(dut.i__valid.value) and int(dut.i__ready.value) and _last(dut, "i"):
            taken = clock + 1


def _last(dut, port):
    beat = eth_beat_layout(ChannelConfig.from_env().eth_width).from_bits(
        getattr(dut, f"{port}__payload").value.to_unsigned())
    return int(beat.last)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def reset_forgets(dut):
    """Reset with frames held: none leaves after it, counters clear, the seed is loaded."""
    tb = TB(dut, seed=5)
    await tb.reset()
    tb.sink.set_backpressure(itertools.repeat(True))      # the frames stay in the channel
    for _ in range(3):
        for beat in model.beats_of(tb.rng.randbytes(80), tb.config.eth_width):
            tb.source.send_nowait(**beat._asdict())
    await tb.source.wait()
    await ClockCycles(dut.clk, tb.config.max_delay + 10)
    assert int(dut.o__valid.value) and tb.counters()["frames"] == 3
    await tb.reset()
    tb.sink.set_backpressure(None)
    cocotb.start_soon(tb.collect())
    await ClockCycles(dut.clk, 400)
    assert tb.got == [] and tb.counters() == dict.fromkeys(model.COUNTERS, 0)
    # After reset, the draws start again from the seed: the model from scratch agrees.
    tb.model = model.ChannelModel(tb.config.eth_width, tb.config.max_frame_bytes, seed=5)
    tb.controls(model.Controls(ber_threshold=model.ber_threshold(1e-2, tb.config.eth_width),
                               drop_threshold=model.frame_threshold(0.3), delay=10))
    expect = []
    for _ in range(20):
        frame = tb.rng.randbytes(100)
        expect += tb.model.frame_beats(frame) or []
        await tb.send(frame)
    await ClockCycles(dut.clk, 300)
    assert tb.got == expect


CONFIGS = [ChannelConfig(eth_width=64, max_frame_bytes=600, max_delay=100),
           ChannelConfig(eth_width=8, max_frame_bytes=200, max_delay=64)]


@pytest.mark.parametrize("config", CONFIGS, ids=ChannelConfig.slug)
def test_channel(config):
    harness.run(EthxChannel(config), config, toplevel="ethx_channel",
                test_module=__name__)
