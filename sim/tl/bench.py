# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the TL benchmark: packer efficiency, flits per clock and latency per mix.

Every figure is counted on the RTL: a monitor records the clock edges at which UPLI items are
accepted and flits leave. Efficiency is the data bytes of the whole burst over the bytes of all
its flits, the drain of the last queued items included. The flits are decoded by the golden
model's receiver, which must deliver every item intact, so a figure cannot come from broken
traffic.
"""

import json
import os

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.model.tl.flit import CLASSES, Request, Unpacker
from sim.tl.env import TlTxEnv, config_credits
from sim.tl.traffic import MIXES, as_received, overhead_bytes, payload_bytes

#: Transaction pairs (a request and a response) per mix; the first WARMUP flits are not counted.
PAIRS = 200
WARMUP = 16
#: Credits granted up front: more than any mix spends.
PLENTY = {cls: {"pool": 4000} for cls in CLASSES}


class FlitCounter:
    """Clock edges at which requests were accepted and flits left."""

    def __init__(self, dut):
        self.dut, self.cycle, self.requests, self.responses, self.flits = dut, 0, [], [], []
        cocotb.start_soon(self._run())

    async def _run(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            self.cycle += 1
            if dut.req__valid.value and dut.req__ready.value:
                self.requests.append(self.cycle)
            for valid, ready in ((dut.rd_rsp__valid, dut.rd_rsp__ready),
                                 (dut.wr_rsp__valid, dut.wr_rsp__ready)):
                if valid.value and ready.value:
                    self.responses.append(self.cycle)
            if dut.flit__valid.value and dut.flit__ready.value:
                self.flits.append(self.cycle)


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def bench(dut):
    env = TlTxEnv(dut)
    counter = FlitCounter(dut)
    rows = []
    for mix, pair in MIXES.items():
        await env.reset()
        await env.grant(PLENTY)
        await env.release(config_credits(env.config))
        items = [item for _ in range(PAIRS) for item in pair(env.rng)]
        received = []
        receiver = cocotb.start_soon(_receive(env, received))
        await ClockCycles(dut.clk, 64)                   # credit advertisement and 0x01 sent
        start = len(counter.flits)
        # Latency: one request into the idle packer; accepted -> its control half leaves.
        env.send(items[0])
        await env.settle(16)
        latency = counter.flits[start] - counter.requests[-1]
        for item in items[1:]:
            env.send(item)
        await env.settle(256)
        receiver.cancel()
        flits = counter.flits[start:]
        u = Unpacker()
        for flit in received:
            u.feed(flit)
        assert u.error is None and u.idle()
        assert u.requests == [as_received(i) for i in items if isinstance(i, Request)]
        assert sorted(map(repr, u.responses)) == sorted(
            repr(as_received(i)) for i in items if not isinstance(i, Request))
        payload = sum(payload_bytes(i) for i in items)
        overhead = sum(overhead_bytes(i) for i in items)
        window = _saturated(counter, start)
        rows.append({
            "mix": mix, "pairs": PAIRS, "flits": len(flits),
            "efficiency": round(payload / (len(flits) * 64), 4),
            "bound": round(payload / (payload + overhead), 4),
            "flits_per_clock": window["flits_per_clock"],
            "window_flits": window["flits"],
            "tx_latency": latency,
        })
        dut._log.info("%s", rows[-1])
    with open(os.environ["BENCH_OUT"], "w") as f:
        json.dump({"config": json.loads(env.config.to_json()), "rows": rows}, f, indent=2)


def _saturated(counter, start):
    """Throughput over the saturated window: from flit WARMUP until the last request or the
    last response enters the packer, whichever is first (then one queue may run dry)."""
    end = min(counter.requests[-1], counter.responses[-1])
    cycles = counter.flits[start:]
    last = max(k for k, cycle in enumerate(cycles) if cycle <= end)
    flits = last - WARMUP + 1
    return {"flits_per_clock": round(flits / (cycles[last] - cycles[WARMUP] + 1), 3),
            "flits": flits}


async def _receive(env, received):
    while True:
        received.append(await env.recv_flit())
