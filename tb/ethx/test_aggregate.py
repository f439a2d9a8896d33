# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/aggregate.py: whole records, in order per side, packed into frames of one
destination and VC within the MTU, closed only for the documented reasons."""

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from scaleup_ip.ethx import AggregateCount, Aggregator, EthxConfig, record_word_layout
from sim import harness
from sim.ethx.env import EthxEnv
from sim.streams import LayoutSink, LayoutSource, random_pauses

TIMEOUT_US = 4000


class TB(EthxEnv):
    def __init__(self, dut):
        super().__init__(dut)
        self.sides = [LayoutSource(dut, name, record_word_layout, dut.clk, dut.rst)
                      for name in ("req", "rsp")]
        self.sink = LayoutSink(dut, "o", record_word_layout, dut.clk, dut.rst)
        self.sent = [[], []]        # per side: (node, vc, words) of each record
        self.serial = 0

    def send(self, side, node, vc, length):
        words = [self.serial << 16 | n for n in range(length)]
        self.serial += 1
        for n, word in enumerate(words):
            self.sides[side].send_nowait(data=word, last=int(n == length - 1), node=node, vc=vc,
                                         left=length - n)
        self.sent[side].append((node, vc, words))

    async def frames(self, count_records):
        """Receive frames until ``count_records`` records have come; return them."""
        frames, records = [], 0
        while records < count_records:
            frame = []
            while True:
                beat = await self.sink.recv()
                frame.append((int(beat.node), int(beat.vc), int(beat.data)))
                if beat.last:
                    break
            frames.append(frame)
            records += len({w >> 16 for _, _, w in frame})
        return frames

    async def check(self):
        total = sum(len(s) for s in self.sent)
        frames = await self.frames(total)
        cap = self.config.record_words
        got = {}
        for frame in frames:
            assert len({(n, v) for n, v, _ in frame}) == 1, "a frame with two destinations"
            assert len(frame) <= cap, f"a frame of {len(frame)} words"
            serials = [w >> 16 for _, _, w in frame]
            for serial in dict.fromkeys(serials):
                got[serial] = [w for w in (w for _, _, w in frame) if w >> 16 == serial]
        for side in self.sent:
            order = [words[0] >> 16 for _, _, words in side]
            seen = [s for s in got if s in set(order)]
            assert seen == order, "records of one side out of order"
            for node, vc, words in side:
                assert got[words[0] >> 16] == words, "a record cut or changed"
        for side in self.sides:
            await side.wait()
        await ClockCycles(self.dut.clk, self.config.timeout + 20)
        assert self.sink.empty() and not self.dut.o__valid.value
        c = self.counts(AggregateCount)
        assert c[AggregateCount.FRAMES] == len(frames)
        assert c[AggregateCount.RECORDS] == total
        assert c[AggregateCount.FRAMES] == sum(c[k] for k in (
            AggregateCount.CHANGE, AggregateCount.FULL, AggregateCount.FILL, AggregateCount.TIMEOUT))
        self.sent = [[], []]
        return frames, c


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(idle=[0.0, 0.5], backpressure=[0.0, 0.5])
async def aggregate_random(dut, idle, backpressure):
    """Random records of 1 to 140 words to a few destinations and VCs from both sides."""
    tb = TB(dut)
    for side in tb.sides:
        side.set_idle(random_pauses(tb.rng, idle))
    tb.sink.set_backpressure(random_pauses(tb.rng, backpressure))
    await tb.reset()
    for _ in range(150):
        tb.send(tb.rng.randrange(2), tb.rng.choice([1, 2]), tb.rng.choice([0, 0, 3]),
                tb.rng.choice([1, 1, 2, 17, tb.rng.randrange(1, 141)]))
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def aggregate_fills_frames(dut):
    """A steady stream of 17-word records to one destination fills frames to the watermark or
    the MTU, whichever comes first; never less."""
    tb = TB(dut)
    await tb.reset()
    for _ in range(60):
        tb.send(1, 4, 2, 17)
    frames, c = await tb.check()
    need = -(-tb.config.fill // 8)
    for frame in frames[:-1]:
        assert min(need, tb.config.record_words // 17 * 17) <= len(frame) < need + 17, len(frame)
    assert c[AggregateCount.CHANGE] == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def aggregate_lone_record(dut):
    """A lone record leaves within the timeout (plus a few clocks)."""
    tb = TB(dut)
    await tb.reset()
    tb.send(0, 9, 1, 1)
    start = cocotb.utils.get_sim_time("ns")
    await tb.sink.recv()
    waited = (cocotb.utils.get_sim_time("ns") - start) / 2
    assert waited <= tb.config.timeout + 6, f"{waited} clocks"
    tb.sent = [[], []]


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def aggregate_waits_for_framer(dut):
    """While the framer is busy, the timeout does not close a frame: its records keep coming
    into it (one frame, not one per record); when the framer falls idle it closes at once."""
    tb = TB(dut)
    await tb.reset()
    dut.busy.value = 1
    for _ in range(5):
        tb.send(0, 3, 0, 1)
        await ClockCycles(dut.clk, tb.config.timeout + 30)
    assert tb.counts(AggregateCount)[AggregateCount.FRAMES] == 0
    dut.busy.value = 0
    await ClockCycles(dut.clk, 3)
    assert tb.counts(AggregateCount)[AggregateCount.FRAMES] == 1, "not closed at once"
    frames, c = await tb.check()
    assert [len(f) for f in frames] == [5]
    assert c[AggregateCount.TIMEOUT] == 1


CONFIGS = [EthxConfig(), EthxConfig(timeout=0, fill=512)]


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_aggregate(config):
    harness.run(Aggregator(config), config, toplevel="ethx_aggregate",
                test_module=__name__)
