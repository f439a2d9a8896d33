# SPDX-License-Identifier: BSD-2-Clause
"""The control decoder with an address cache (``rtl/scaleup_ip/tl/rx/decode.py``): the data
beats of all requests of a control half, summed from the sectors' FTYPEs by groups of four,
equal the sum of its beats per pair of sectors (which the unpacker's tests hold to the golden
model), on random control halves whose FTYPEs are mostly those of requests and responses."""

import random

from amaranth.sim import Simulator

from sim import harness
from scaleup_ip.tl import HALF_BITS, SECTOR_BITS, SECTORS_PER_HALF, FType
from scaleup_ip.tl.rx import ControlDecoder

HALVES = 3000


def test_request_beats_sum():
    seed = harness.seed()
    rng = random.Random(seed)
    print(f"seed {seed}")
    dut = ControlDecoder(cached=True)
    types = [t.value for t in FType] + [FType.REQUEST.value, FType.COMPRESSED_REQUEST.value] * 3

    async def bench(ctx):
        kinds = set()
        for _ in range(HALVES):
            half = rng.getrandbits(HALF_BITS)
            for s in range(SECTORS_PER_HALF):
                top = rng.choice(types) if rng.random() < 0.9 else rng.getrandbits(4)
                shift = (s + 1) * SECTOR_BITS - 4         # the sector's top nibble
                half = (half & ~(0xF << shift)) | (top << shift)
            ctx.set(dut.half, half)
            await ctx.tick()
            beats = [ctx.get(dut.req_beats[p]) for p in range(len(dut.req_beats))]
            assert ctx.get(dut.req_data) == sum(beats), (hex(half), beats)
            kinds.add(sum(b != 0 for b in beats))
        assert kinds >= {0, 1, 2, 3}, kinds             # halves with several requests with data

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
