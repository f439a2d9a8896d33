# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/framer.py (with eth_out.py): its frames against the golden model's."""

import itertools

import cocotb
import pytest
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.ethx import EthxConfig, EthxFramer, FramerCount, eth_beat_layout, record_word_layout
from scaleup_ip.model.ethx import bridge as model
from scaleup_ip.model.ethx.bridge import Read, ReadData, TxState, Write, WriteResp
from sim import harness
from sim.ethx.env import FRAMING_CONFIGS, EthxEnv
from sim.streams import LayoutSink, LayoutSource, random_pauses

# --- Layer 1: the configuration, no simulator --------------------------------------------------

@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"eth_width": 16}, ValueError, r"ETH-X eth_width must be one of 8, 32, 64, 128, 256, 512"),
    ({"mtu": 1499}, ValueError, r"ETH-X mtu must be 1500 .. 9000, not 1499"),
    ({"fcs": 1}, TypeError, r"ETH-X fcs must be a bool, not 1"),
    ({"tx_frames": 0}, ValueError, r"ETH-X tx_frames must be one of 1, 2, .*, 8, not 0"),
])
def test_config_rejects(kwargs, error, message):
    with pytest.raises(error, match=message):
        EthxConfig(**kwargs)


def test_config_sizes():
    config = EthxConfig(eth_width=512)
    assert config.record_words == 187 and config.frame_words == 190 and config.frame_rows == 24
    assert config.buffer_rows(2) == 64
    assert EthxConfig(eth_width=8, fcs=False, mtu=9000).frame_words == 1126


# --- Layer 2: cocotb ------------------------------------------------------------------------------

TIMEOUT_US = 2000
NODE = 0x0A05


class TB(EthxEnv):
    def __init__(self, dut):
        super().__init__(dut)
        self.source = LayoutSource(dut, "i", record_word_layout, dut.clk, dut.rst)
        self.sink = LayoutSink(dut, "o", eth_beat_layout(self.config.eth_width), dut.clk, dut.rst)
        self.states = {}            # the input's compression state per destination
        self.model_states = {}      # the same, for the expected frames
        self.expected = []
        self.words = 0
        dut.node.value = NODE

    def random_records(self, words):
        """Random records taking about ``words`` words at most."""
        records, used = [], 0
        while True:
            size = self.rng.randrange(0, 7)
            length = self.rng.randrange(0, 8)
            kind = self.rng.randrange(4)
            addr = self.rng.getrandbits(34)
            if kind == 0:
                r = Read(id=self.rng.randrange(256), addr=addr, len=length, size=size)
            elif kind == 1:
                r = Write(id=1, addr=addr, len=length, size=size, burst=1,
                          data=self.rng.randbytes(model.data_bytes(length, size)))
            elif kind == 2:
                r = ReadData(id=2, resp=0, last=True, count=length, size=size, burst=1,
                             len=length, addr=0, data=self.rng.randbytes(model.data_bytes(length, size)))
            else:
                r = WriteResp(id=self.rng.randrange(256), resp=self.rng.randrange(4))
            need = model.record_words(r, ext=True)
            if used + need > words:
                return records or [WriteResp(id=0, resp=0)]
            records.append(r)
            used += need

    def send(self, dst, vc, records, *, extra=()):
        """Queue a frame's records (and ``extra`` words after them, past the MTU)."""
        body = model.encode_records(records, self.states.setdefault(dst, TxState()))
        words = [int.from_bytes(body[k:k + 8], "little") for k in range(0, len(body), 8)]
        words += list(extra)
        for n, word in enumerate(words):
            self.source.send_nowait(data=word, last=int(n == len(words) - 1), node=dst, vc=vc, left=0)
        self.words += len(words)
        frame = model.encode_frame(dst, NODE, vc, records, self.model_states.setdefault(
            dst, TxState()), fcs=self.config.fcs, mtu=self.config.mtu)
        self.expected.append(frame)

    async def recv_frame(self):
        nbytes, frame = self.config.eth_bytes, b""
        while True:
            beat = await self.sink.recv()
            keep = int(beat.keep)
            assert keep & (keep + 1) == 0 and (keep or beat.last), f"keep {keep:#x}"
            assert keep == (1 << nbytes) - 1 or beat.last, "a partial beat before the last"
            assert not beat.user
            frame += int(beat.data).to_bytes(nbytes, "little")[:keep.bit_length()]
            if beat.last:
                return frame

    async def check(self):
        for index, want in enumerate(self.expected):
            got = await self.recv_frame()
            first = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), None)
            assert got == want, (f"frame {index}: {len(got)} bytes, expected {len(want)}, first "
                                 f"difference at byte {first}: got {got.hex()}, expected {want.hex()}")
        await ClockCycles(self.dut.clk, 100)
        assert self.source.empty() and self.sink.empty() and not self.dut.o__valid.value
        counts = self.counts(FramerCount)
        assert counts[FramerCount.FRAMES] == len(self.expected)
        return counts


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(idle=[0.0, 0.4], backpressure=[0.0, 0.5])
async def framer_random(dut, idle, backpressure):
    """Random frames of 1 to 187 record words to random destinations and VCs, the smallest padded."""
    tb = TB(dut)
    tb.source.set_idle(random_pauses(tb.rng, idle))
    tb.sink.set_backpressure(random_pauses(tb.rng, backpressure))
    await tb.reset()
    for _ in range(30):
        words = tb.rng.choice([1, 3, 6, 12, tb.rng.randrange(1, tb.config.record_words + 1)])
        tb.send(tb.rng.choice([1, 2, 0xFFFF]), tb.rng.randrange(8), tb.random_records(words))
    counts = await tb.check()
    assert counts[FramerCount.WORDS] == tb.words


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def framer_line_rate(dut):
    """Full frames back to back: the output pauses only between frames."""
    tb = TB(dut)
    await tb.reset()
    rd = ReadData(id=0, resp=0, last=True, count=15, size=3, burst=1, len=15, addr=0,
                  data=bytes(range(128)))
    for _ in range(6):
        tb.send(3, 1, [rd] * 11)
    gaps, active, seen = 0, False, 0
    layout = eth_beat_layout(tb.config.eth_width)

    async def watch():
        nonlocal gaps, active, seen
        while seen < 6:
            await RisingEdge(dut.clk)
            await ReadOnly()
            if dut.o__valid.value and dut.o__ready.value:
                beat = layout.from_bits(dut.o__payload.value.to_unsigned())
                active = not beat.last
                seen += 1 - active
            elif active:
                gaps += 1
    watcher = cocotb.start_soon(watch())
    await tb.check()
    await watcher
    assert gaps == 0, f"{gaps} clocks without a beat inside a frame"


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def framer_cut_at_mtu(dut):
    """A frame longer than the MTU is cut there and the rest dropped, counted; the next is whole."""
    tb = TB(dut)
    await tb.reset()
    cap = tb.config.record_words
    records = [WriteResp(id=k % 256, resp=0) for k in range(cap)]
    tb.send(7, 0, records, extra=[(4 | k << 8) for k in range(5)])
    tb.send(7, 0, [WriteResp(id=1, resp=1)])
    counts = await tb.check()
    assert counts[FramerCount.CUT] == 1


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def framer_reset_mid_frame(dut):
    """A reset with a frame waiting to go out and the next half taken leaves nothing behind."""
    tb = TB(dut)
    await tb.reset()
    tb.sink.set_backpressure(itertools.repeat(1))
    tb.send(1, 0, tb.random_records(20))       # small: the next fits even a 1-frame buffer
    for k in range(30):                         # a frame that the reset cuts (no last word)
        tb.source.send_nowait(data=k, last=0, node=1, vc=0, left=0)
    await tb.source.wait()
    await ClockCycles(dut.clk, 10)
    assert dut.o__valid.value, "the first frame should be waiting"
    await tb.reset()
    tb.sink.set_backpressure(None)
    while not tb.sink.empty():                  # beats of the frame the reset cut
        await tb.sink.recv()
    tb.states.clear()
    tb.model_states.clear()
    tb.expected.clear()
    await ClockCycles(dut.clk, 5)
    assert not dut.o__valid.value
    tb.send(2, 3, tb.random_records(20))
    tb.send(1, 0, tb.random_records(8))
    await tb.check()


CONFIGS = FRAMING_CONFIGS


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_framer(config):
    harness.run(EthxFramer(config), config, toplevel="ethx_framer",
                test_module=__name__)
