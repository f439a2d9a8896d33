# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb environment of a CRC-32 engine: shared by its tests, ``make sim`` and ``make bench``."""

import random

import cocotb
from cocotb.clock import Clock

from scaleup_ip.crc import CrcConfig
from scaleup_ip.types import byte_beat_layout, crc_result_layout
from sim.streams import LayoutSink, LayoutSource, bytes_to_beats, reset

__all__ = ["CrcEnv", "PERIOD_NS"]

#: Clock period in ns; every figure is reported in cycles.
PERIOD_NS = 2


class CrcEnv:
    """Clock, input source, result sink and a seeded random generator for the ``crc32`` top
    built from the :class:`~scaleup_ip.crc.CrcConfig` that the harness passed in."""

    def __init__(self, dut):
        self.dut = dut
        self.config = CrcConfig.from_env()
        self.rng = random.Random(cocotb.RANDOM_SEED)
        Clock(dut.clk, PERIOD_NS, unit="ns").start()
        self.beat_layout = byte_beat_layout(self.config.data_width)
        assert len(dut.i__payload) == self.beat_layout.size
        self.source = LayoutSource(dut, "i", self.beat_layout, dut.clk, dut.rst)
        self.sink = LayoutSink(dut, "o", crc_result_layout, dut.clk, dut.rst)

    async def reset(self):
        await reset(self.dut)

    def send_packet(self, packet):
        """Queue ``packet`` as beats (zeros in the lanes ``keep`` leaves out)."""
        for beat in bytes_to_beats(packet, self.config.bytes_per_beat):
            self.source.send_nowait(**beat)
