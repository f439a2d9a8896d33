# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/deframer.py (with frame_reader.py): good frames' record words out, every
kind of bad frame dropped and counted as the golden model classifies it."""

import itertools

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from scaleup_ip.ethx import (
    DeframerCount,
    EthxConfig,
    EthxDeframer,
    eth_beat_layout,
    record_word_layout,
)
from scaleup_ip.model.ethx import bridge as model
from scaleup_ip.model.ethx.bridge import FrameError, Read, ReadData, TxState, WriteResp
from sim import harness
from sim.ethx.env import FRAMING_CONFIGS, EthxEnv
from sim.streams import LayoutSink, LayoutSource, bytes_to_beats, random_pauses

TIMEOUT_US = 4000
NODE = 1


class TB(EthxEnv):
    def __init__(self, dut):
        super().__init__(dut)
        self.source = LayoutSource(dut, "i", eth_beat_layout(self.config.eth_width), dut.clk,
                                   dut.rst)
        self.sink = LayoutSink(dut, "o", record_word_layout, dut.clk, dut.rst)
        self.tx = {}
        self.expected = []          # (src, vc, words) of each good frame
        self.tally = {kind: 0 for kind in DeframerCount}
        dut.node.value = NODE

    def good_frame(self, words=None):
        cap = self.config.record_words
        words = words or self.rng.choice([1, 5, 6, 7, 40, self.rng.randrange(1, cap + 1)])
        records, used = [], 0
        while True:
            kind = self.rng.randrange(3)
            if kind == 0:
                r = Read(id=self.rng.randrange(256), addr=self.rng.getrandbits(36), len=3, size=3)
            elif kind == 1:
                count = self.rng.randrange(16)
                r = ReadData(id=1, resp=0, last=True, count=count, size=3, burst=1, len=15,
                             addr=0, data=self.rng.randbytes(8 * count + 8))
            else:
                r = WriteResp(id=self.rng.randrange(256), resp=self.rng.randrange(4))
            need = model.record_words(r, ext=True)
            if used + need > words:
                break
            records.append(r)
            used += need
        src = self.rng.choice([2, 3, 0x1234])
        return model.encode_frame(NODE, src, self.rng.randrange(8), records or [WriteResp(0, 0)],
                                  self.tx.setdefault(src, TxState()), fcs=self.config.fcs,
                                  mtu=self.config.mtu)

    def refcs(self, body):
        return body + model.fcs_of(body) if self.config.fcs else body

    def strip(self, frame):
        return frame[:-4] if self.config.fcs else frame

    def bad_frame(self, kind):
        """A frame the model drops for ``kind``."""
        frame = self.strip(self.good_frame())
        if kind == FrameError.RUNT:
            return self.rng.randbytes(self.rng.randrange(1, 64 if self.config.fcs else 60))
        if kind == FrameError.OVERSIZED:
            return self.refcs(frame + self.rng.randbytes(self.config.mtu + 14 - len(frame) + self.rng.randrange(1, 80)))
        if kind == FrameError.BAD_FCS:
            full = bytearray(self.refcs(frame))
            full[self.rng.randrange(len(full))] ^= 1 << self.rng.randrange(8)
            return bytes(full)
        if kind == FrameError.ETHERTYPE:
            return self.refcs(frame[:12] + self.rng.choice([b"\x08\x00", b"\x88\xb6"]) + frame[14:])
        if kind == FrameError.DESTINATION:
            return self.refcs(self.rng.choice([model.mac(7), b"\xff" * 6, b"\x03" + frame[1:6]]) + frame[6:])
        if kind == FrameError.SOURCE:
            return self.refcs(frame[:6] + b"\x01\x00\x5e\x00\x00\x01" + frame[12:])
        if kind == FrameError.VERSION:
            return self.refcs(frame[:14] + self.rng.choice([b"\x02\x00", b"\x81\x00", b"\x01\x02"]) + frame[16:])
        if kind == FrameError.LENGTH:
            return self.refcs(self.rng.choice([frame + self.rng.randbytes(self.rng.randrange(1, 8)),
                                               frame[:60 + 4 * (not self.config.fcs)]]))
        raise ValueError(kind)

    def send(self, frame, *, user=0, beats=None):
        """Queue a frame and what the model expects of it."""
        for beat in beats or bytes_to_beats(frame, self.config.eth_bytes):
            self.source.send_nowait(user=user if beat["last"] else 0, **beat)
        verdict = model.decode_frame(frame, NODE, {}, fcs=self.config.fcs, mtu=self.config.mtu)
        if user and verdict not in (FrameError.RUNT, FrameError.OVERSIZED):
            verdict = DeframerCount.MAC_ERROR
        if isinstance(verdict, model.Decoded):
            body = self.strip(frame)[16:]
            words = [int.from_bytes(body[k:k + 8], "little") for k in range(0, len(body), 8)]
            self.expected.append((verdict.src, verdict.vc, words))
            self.tally[DeframerCount.FRAMES] += 1
        else:
            self.tally[DeframerCount(int(verdict))] += 1

    async def check(self):
        for index, (src, vc, words) in enumerate(self.expected):
            for n, word in enumerate(words):
                got = await self.sink.recv()
                want = (word, int(n == len(words) - 1), src, vc, len(words) - n)
                seen = (int(got.data), int(got.last), int(got.node), int(got.vc), int(got.left))
                assert seen == want, f"frame {index} word {n}: got {seen}, expected {want}"
        self.expected.clear()
        await self.source.wait()                # the last beats may be of dropped frames
        await ClockCycles(self.dut.clk, 200)
        assert self.source.empty() and self.sink.empty() and not self.dut.o__valid.value
        got = self.counts(DeframerCount)
        assert got == self.tally, f"counters {got}, expected {self.tally}"


def _kinds(config):
    kinds = [k for k in FrameError if config.fcs or k != FrameError.BAD_FCS]
    return kinds


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(idle=[0.0, 0.3], backpressure=[0.0, 0.6])
async def deframer_mixed(dut, idle, backpressure):
    """Good frames of every size among bad ones of every kind, and MAC-flagged ones."""
    tb = TB(dut)
    tb.source.set_idle(random_pauses(tb.rng, idle))
    tb.sink.set_backpressure(random_pauses(tb.rng, backpressure))
    await tb.reset()
    kinds = _kinds(tb.config)
    for _ in range(60):
        roll = tb.rng.random()
        if roll < 0.5:
            tb.send(tb.good_frame())
        elif roll < 0.55:
            tb.send(tb.good_frame(), user=1)
        else:
            tb.send(tb.bad_frame(tb.rng.choice(kinds)))
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def deframer_every_error(dut):
    """Each kind of bad frame alone between two good frames: dropped, counted, no harm."""
    tb = TB(dut)
    await tb.reset()
    for kind in _kinds(tb.config):
        tb.send(tb.good_frame())
        tb.send(tb.bad_frame(kind))
    tb.send(tb.good_frame(6))
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def deframer_bad_keep(dut):
    """A beat whose keep breaks the stream rules fails the frame: BAD_FCS when the FCS is checked
    (the CRC engine marks it), LENGTH otherwise."""
    tb = TB(dut)
    await tb.reset()
    frame = tb.good_frame(20)
    beats = bytes_to_beats(frame, tb.config.eth_bytes)
    beats[1]["keep"] >>= 1
    for beat in beats:
        tb.source.send_nowait(user=0, **beat)
    tb.tally[DeframerCount.BAD_FCS if tb.config.fcs else DeframerCount.LENGTH] += 1
    tb.send(tb.good_frame())
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def deframer_full_buffer(dut):
    """With o stalled the buffer fills and i.ready falls; nothing is lost when o resumes."""
    tb = TB(dut)
    await tb.reset()
    tb.sink.set_backpressure(itertools.repeat(1))
    for _ in range(3 * tb.config.rx_frames + 2):
        tb.send(tb.good_frame(tb.config.record_words))
    await ClockCycles(dut.clk, 3000)
    assert not tb.source.empty(), "the buffer should have filled"
    tb.sink.set_backpressure(None)
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def deframer_reset_mid_frame(dut):
    """A reset with frames stored and one half received leaves nothing behind."""
    tb = TB(dut)
    await tb.reset()
    tb.sink.set_backpressure(itertools.repeat(1))
    tb.send(tb.good_frame(30))
    half = bytes_to_beats(tb.good_frame(100), tb.config.eth_bytes)
    for beat in half[:len(half) // 2]:
        tb.source.send_nowait(user=0, **{**beat, "last": 0})
    await tb.source.wait()
    await ClockCycles(dut.clk, 5)
    await tb.reset()
    tb.sink.set_backpressure(None)
    tb.expected.clear()
    tb.tally = {kind: 0 for kind in DeframerCount}
    await ClockCycles(dut.clk, 5)
    assert not dut.o__valid.value
    tb.send(tb.good_frame(12))
    tb.send(tb.bad_frame(FrameError.LENGTH))
    await tb.check()


CONFIGS = FRAMING_CONFIGS


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_deframer(config):
    harness.run(EthxDeframer(config), config, toplevel="ethx_deframer",
                test_module=__name__)
