# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the CRC benchmark: throughput by packet size, and latency.

A monitor counts clock edges and records every accepted input beat and every delivered result,
so the figures are exact cycle counts taken from the RTL, not from any formula.
"""

import json
import os

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from sim.crc.env import CrcEnv

#: Packet sizes measured: minimum Ethernet frame, one byte over a 64-byte beat, a UALink DL flit,
#: a maximum Ethernet frame. [IEEE 802.3 §4.4.2; UALink 1.0 §6.3]
SIZES = (64, 65, 640, 1518)
PACKETS_PER_SIZE = 200


class Counter:
    """Edge counter with the edges at which input beats and results were handed over."""

    def __init__(self, dut):
        self.dut, self.cycle, self.beats, self.lasts, self.results = dut, 0, [], [], []
        cocotb.start_soon(self._run())

    async def _run(self):
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            self.cycle += 1
            if self.dut.i__valid.value and self.dut.i__ready.value:
                self.beats.append(self.cycle)
            if self.dut.o__valid.value and self.dut.o__ready.value:
                self.results.append(self.cycle)


@cocotb.test(timeout_time=10, timeout_unit="ms")
async def bench(dut):
    env = CrcEnv(dut)
    config, rng, source, sink = env.config, env.rng, env.source, env.sink
    counter = Counter(dut)        # before any traffic: it samples the edge after each read
    await env.reset()
    rows = []

    # Latency: one packet into an idle engine, last beat accepted -> result taken.
    for size in (1, config.bytes_per_beat + 1):
        env.send_packet(rng.randbytes(size))
        await sink.recv()
        await ClockCycles(dut.clk, 2)
        latency = counter.results[-1] - counter.beats[-1]
        rows.append({"measure": "latency", "packet_bytes": size, "cycles": latency,
                     "documented": config.latency})

    # Throughput: back-to-back packets of one size, first beat accepted -> last beat accepted.
    for size in SIZES:
        first = len(counter.beats)
        for _ in range(PACKETS_PER_SIZE):
            env.send_packet(rng.randbytes(size))
        for _ in range(PACKETS_PER_SIZE):
            await sink.recv()
        cycles = counter.beats[-1] - counter.beats[first] + 1
        beats_per_packet = -(-size // config.bytes_per_beat)
        rows.append({
            "measure": "throughput", "packet_bytes": size, "packets": PACKETS_PER_SIZE,
            "cycles": cycles,
            "bytes_per_cycle": round(size * PACKETS_PER_SIZE / cycles, 3),
            "beats_per_cycle": round(beats_per_packet * PACKETS_PER_SIZE / cycles, 3),
            "lane_fill": round(size / (beats_per_packet * config.bytes_per_beat), 3),
        })
    await ClockCycles(dut.clk, 4 * config.latency)
    assert source.empty() and sink.empty() and not dut.o__valid.value
    with open(os.environ["BENCH_OUT"], "w") as f:
        json.dump({"config": json.loads(config.to_json()), "rows": rows}, f, indent=2)
