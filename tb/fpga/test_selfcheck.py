# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the ULX3S CRC self-test logic (fpga/source.py, fpga/selfcheck.py, fpga/pll.py)."""

import random

import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from fpga import selfcheck
from fpga.pll import Ecp5Pll
from fpga.selfcheck import CrcSelfCheck
from fpga.source import PacketSource, SelfTestConfig, expected_result, selftest_packet
from scaleup_ip.model.crc import crc32 as model
from scaleup_ip.types import byte_stream, crc_result_stream

#: A small engine keeps Amaranth's Python simulator fast; the logic is width-independent.
CONFIG = SelfTestConfig(data_width=64, pipeline=1, packet_bytes=100)


def test_packet_replica():
    packet = selftest_packet(CONFIG)
    assert len(packet) == CONFIG.packet_bytes
    assert CONFIG.last_bytes == 100 - 12 * 8
    result = expected_result(CONFIG)
    assert result.crc == model.crc32(packet) and not result.malformed


def test_source_replays_packet_under_backpressure():
    rng = random.Random(7)
    dut = PacketSource(CONFIG)
    received = bytearray()
    packets = []

    async def bench(ctx):
        while len(packets) < 3:
            ready = rng.random() < 0.6
            ctx.set(dut.o.ready, ready)
            beat = ctx.get(dut.o.payload)
            if ready and ctx.get(dut.o.valid):
                lanes = beat.data.to_bytes(CONFIG.crc.bytes_per_beat, "little")
                received.extend(lanes[:beat.keep.bit_length()])
                if beat.last:
                    packets.append(bytes(received))
                    received.clear()
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert packets == [selftest_packet(CONFIG)] * 3


def _status(dut, cycles):
    status = {}

    async def bench(ctx):
        await ctx.tick().repeat(cycles)
        status.update(passed=ctx.get(dut.passed), failed=ctx.get(dut.failed),
                      packets=ctx.get(dut.packets))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return status


def test_selfcheck_passes():
    status = _status(CrcSelfCheck(CONFIG), 8 * CONFIG.beats)
    assert status["packets"] >= 6 and status["passed"] == 1 and status["failed"] == 0


def test_selfcheck_catches_a_wrong_result(monkeypatch):
    def wrong(config):
        good = expected_result(config)
        return good.shape().from_bits(good.as_bits() ^ 1)           # one CRC bit off

    monkeypatch.setattr(selfcheck, "expected_result", wrong)
    status = _status(CrcSelfCheck(CONFIG), 4 * CONFIG.beats)
    assert status["packets"] >= 2 and status["passed"] == 0 and status["failed"] == 1


def test_selfcheck_catches_a_silent_engine(monkeypatch):
    """An engine that takes packets and never answers trips the watchdog."""
    class Silent(wiring.Component):
        def __init__(self, config):
            super().__init__({"i": In(byte_stream(config.data_width)),
                              "o": Out(crc_result_stream())})

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.i.ready.eq(1)
            return m

    monkeypatch.setattr(selfcheck, "Crc32", Silent)
    dut = CrcSelfCheck(CONFIG)
    status = _status(dut, dut.watchdog_cycles + 2)
    assert status["packets"] == 0 and status["passed"] == 0 and status["failed"] == 1


def test_pll_for_board_clock():
    pll = Ecp5Pll.for_output(25e6, 125e6)
    pll._MustUse__silence = True
    assert pll.clkop_hz == 125e6
    assert 400e6 <= pll.vco_hz <= 800e6          # ECP5 VCO range [ECP5 data sheet, PLL]
    with pytest.raises(ValueError, match=r"no EHXPLLL setting makes exactly"):
        Ecp5Pll.for_output(25e6, 123.456789e6)


def test_config_rejects():
    with pytest.raises(ValueError, match=r"self-test data_width must be one of 32, 64, 128, 256, "
                                         r"512, not 8"):
        SelfTestConfig(data_width=8)
    with pytest.raises(ValueError, match=r"packet_bytes must be a positive integer, not 0"):
        SelfTestConfig(packet_bytes=0)
