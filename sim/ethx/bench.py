# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benchmark of the ETH-X bridge (``make bench``, :func:`sim.bench.bench_ethx`): two
bridges (:class:`sim.ethx.pair.EthxPair`) over channels at line rate, node A's GPU loading
node B's memory with one kind of access at a time (and, for :data:`BOTH_WAYS`, both GPUs
loading each other's memory at once).

For each workload of :data:`WORKLOADS`, under load (every access queued at once on the GPU port, AXI
IDs in turn): the payload bytes, the bytes of every frame both ways while it ran, the efficiency on
the full wire (payload / frame bytes + FCS + preamble + gap) and by the white paper's metric
(payload / frame bytes without FCS), the naive encoding's figures for the same access
(:func:`scaleup_ip.model.ethx.bridge.naive_bytes`), payload bytes per clock; then, unloaded (one
access at a time), the clocks from the AR (AW) handshake on A's port to the first and the last R
beat (the B). Read data is checked against B's memory. Writes the JSON named by ``BENCH_OUT``.
"""

import json
import os
import statistics
from pathlib import Path

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiResp

from scaleup_ip.model.ethx import bridge as model

from sim.ethx.env import cycle
from sim.ethx.pair import NODES, other
from sim.ethx.pair_env import PairEnv

#: (name, read, bytes per access, accesses under load). 4 KB at a 64-bit bus is two bursts
#: of 256 beats (the GPU's AxiMaster splits it).
WORKLOADS = [
    ("128 B loads", True, 128, 1500),
    ("128 B stores", False, 128, 1500),
    ("4 KB reads", True, 4096, 60),
    ("4 KB writes", False, 4096, 60),
    ("8 B loads", True, 8, 1500),
    ("8 B stores", False, 8, 1500),
]
#: Workloads also run from both GPUs at once: requests then share frames with responses.
BOTH_WAYS = ("128 B loads", "128 B stores")
#: Scale the accesses under load (``BENCH_SCALE``, for a quick run).
SCALE = float(os.environ.get("BENCH_SCALE", "1"))
#: Accesses measured one at a time for the latency.
LATENCY_SAMPLES = 8
#: One-way delay of the channels, clocks.
DELAY = 20


class Bench(PairEnv):
    def __init__(self, dut):
        super().__init__(dut, delay=DELAY, line_rate=True, quiet=True)
        self.ids = 1 << self.config.id_width
        self.handshakes = None

    def sent(self):
        return {e: len(c.frames) for e, c in self.channel.items()}

    async def quiet(self):
        """Wait until no frame has been sent for a while (aggregation timeouts expired)."""
        calm = 2 * (self.config.timeout + DELAY) + 200
        while True:
            before = self.sent()
            await ClockCycles(self.dut.clk, calm)
            if self.sent() == before and all(c.idle() for c in self.channel.values()):
                return

    def access(self, end, read, address, nbytes, k):
        gpu, user = self.gpu[end], self.user_bits(NODES[other(end)])
        if read:
            return gpu.init_read(address, nbytes, arid=k % self.ids, user=user)
        return gpu.init_write(address, self.rng.randbytes(nbytes), awid=k % self.ids, user=user)

    def address(self, nbytes, k):
        return (k * max(nbytes, 64)) % (1 << 19) + (1 << 19)

    async def check(self, end, read, event, address, nbytes):
        await event.wait()
        assert event.data.resp == AxiResp.OKAY
        if read:
            memory = self.ram[other(end)]
            assert event.data.data == memory.read(address, nbytes), f"read at {address:#x}"

    async def loaded(self, name, read, nbytes, count, ends="a"):
        """``count`` accesses queued at once on the GPU port of each of ``ends``."""
        count = max(1, round(count * SCALE))
        await self.quiet()
        start, first = self.sent(), cycle()
        events = [(end, self.access(end, read, self.address(nbytes, k), nbytes, k),
                   self.address(nbytes, k)) for k in range(count) for end in ends]
        for end, event, address in events:
            await self.check(end, read, event, address, nbytes)
        clocks = cycle() - first
        await self.quiet()
        frames = [f for e, c in self.channel.items() for _, f in c.frames[start[e]:]]
        # Each frame's bytes without FCS (the white paper's count), and on the wire.
        mac_fcs = 0 if self.config.fcs else model.FCS_BYTES
        paper = sum(len(f) + mac_fcs - model.FCS_BYTES for f in frames)
        wire = sum(model.wire_bytes(len(f) + mac_fcs) for f in frames)
        payload = count * nbytes * len(ends)
        request, response = (0, nbytes) if read else (nbytes, 0)
        naive_wire = model.naive_bytes(nbytes, request_data=request, response_data=response,
                                        mtu=self.config.mtu)
        naive_paper = model.naive_bytes(nbytes, request_data=request, response_data=response,
                                        wire=False, mtu=self.config.mtu)
        return {"workload": name, "both_ways": len(ends) == 2, "read": read,
                "access_bytes": nbytes, "accesses": count,
                "payload_bytes": payload, "frames": len(frames),
                "frames_a_to_b": len(self.channel["a"].frames) - start["a"],
                "frame_bytes": paper, "wire_bytes": wire, "clocks": clocks,
                "wire_efficiency": payload / wire, "paper_efficiency": payload / paper,
                "naive_wire_efficiency": naive_wire[1], "naive_paper_efficiency": naive_paper[1],
                "bytes_per_clock": payload / clocks}

    async def watch(self):
        """Record the clock of every AR, AW, R-first, R-last and B handshake on A's port."""
        dut, first = self.dut, True
        while True:
            await RisingEdge(dut.clk)
            if self.handshakes is None:
                continue
            h = self.handshakes
            if dut.a_s_axi__arvalid.value and dut.a_s_axi__arready.value:
                h["ar"].append(cycle())
            if dut.a_s_axi__awvalid.value and dut.a_s_axi__awready.value:
                h["aw"].append(cycle())
            if dut.a_s_axi__rvalid.value and dut.a_s_axi__rready.value:
                if first:
                    h["r_first"].append(cycle())
                first = bool(dut.a_s_axi__rlast.value)
                if first:
                    h["r_last"].append(cycle())
            if dut.a_s_axi__bvalid.value and dut.a_s_axi__bready.value:
                h["b"].append(cycle())

    async def unloaded(self, name, read, nbytes):
        await self.quiet()
        self.handshakes = {k: [] for k in ("ar", "aw", "r_first", "r_last", "b")}
        for k in range(LATENCY_SAMPLES):
            address = self.address(nbytes, 7 * k)
            await self.check("a", read, self.access("a", read, address, nbytes, k), address,
                             nbytes)
            await self.quiet()
        h, self.handshakes = self.handshakes, None
        if read:
            first = [r - a for a, r in zip(h["ar"], h["r_first"], strict=True)]
            last = [r - a for a, r in zip(h["ar"], h["r_last"], strict=True)]
        else:
            first = last = [b - a for a, b in zip(h["aw"], h["b"], strict=True)]
        return {"access": name, "read": read, "access_bytes": nbytes,
                "first_clocks": statistics.median(first), "last_clocks": statistics.median(last),
                "min_clocks": min(first), "max_clocks": max(last)}


@cocotb.test()
async def bench(dut):
    tb = Bench(dut)
    await tb.reset()
    cocotb.start_soon(tb.watch())
    rows = [await tb.loaded(*workload) for workload in WORKLOADS]
    rows += [await tb.loaded(*workload, ends="ab") for workload in WORKLOADS
             if workload[0] in BOTH_WAYS]
    latency = [await tb.unloaded(*access) for access in (
        ("8 B load", True, 8), ("128 B load", True, 128), ("8 B store", False, 8),
        ("128 B store", False, 128))]
    tb.check_no_errors()
    tb.check_frames()
    result = {"config": json.loads(tb.config.to_json()), "seed": cocotb.RANDOM_SEED,
              "delay_clocks": DELAY, "rows": rows, "latency": latency}
    Path(os.environ["BENCH_OUT"]).write_text(json.dumps(result, indent=2))
