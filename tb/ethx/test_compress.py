# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/compress.py: its output is word for word the golden model's compressed
encoding of the same requests, per destination."""

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from scaleup_ip.ethx import Compress, EthxConfig, record_word_layout
from scaleup_ip.model.ethx import bridge as model
from scaleup_ip.model.ethx.bridge import Attrs, Read, TxState, Write
from sim import harness
from sim.ethx.env import EthxEnv, words_of
from sim.streams import LayoutSink, LayoutSource, random_pauses

TIMEOUT_US = 2000


class TB(EthxEnv):
    def __init__(self, dut):
        super().__init__(dut)
        self.source = LayoutSource(dut, "i", record_word_layout, dut.clk, dut.rst)
        self.sink = LayoutSink(dut, "o", record_word_layout, dut.clk, dut.rst)
        self.model = {}             # the model's state per destination
        self.expected = []

    def request(self):
        rng = self.rng
        addr = rng.choice([0x1_0000_0000, 0x2_0000_0000, 0]) | rng.getrandbits(32)
        attrs = rng.choice([Attrs(), Attrs(), Attrs(prot=2, cache=3)])
        if rng.random() < 0.5:
            return Read(id=rng.randrange(256), addr=addr, len=rng.randrange(16), size=3,
                        attrs=attrs, order=rng.random() < 0.2)
        length = rng.randrange(4)
        return Write(id=rng.randrange(256), addr=addr, len=length, size=3, burst=1,
                     data=rng.randbytes(8 * length + 8), attrs=attrs)

    def send(self, dest, vc, r):
        """Queue ``r`` with its extension word, as the request sides make it."""
        words = words_of(model.encode_records([r], TxState()))       # always with the extension
        for n, word in enumerate(words):
            self.source.send_nowait(data=word, last=int(n == len(words) - 1), node=dest, vc=vc,
                                    left=len(words) - n)
        local = dest < self.config.sources
        state = self.model.setdefault(dest, TxState()) if local else TxState()
        out = words_of(model.encode_records([r], state))
        self.expected += [(w, int(n == len(out) - 1), dest, vc, len(out) - n if n == 0 else None)
                          for n, w in enumerate(out)]

    async def check(self):
        for index, (word, last, dest, vc, left) in enumerate(self.expected):
            got = await self.sink.recv()
            seen = (int(got.data), int(got.last), int(got.node), int(got.vc))
            assert seen == (word, last, dest, vc), f"word {index}: {seen} != {(word, last, dest, vc)}"
            if left is not None:
                assert int(got.left) == left, f"word {index}: left {int(got.left)} != {left}"
        self.expected.clear()
        await self.source.wait()
        await ClockCycles(self.dut.clk, 10)
        assert self.sink.empty() and not self.dut.o__valid.value


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(idle=[0.0, 0.3], backpressure=[0.0, 0.5])
async def compress_random(dut, idle, backpressure):
    """Requests with a few keys to a few destinations (one beyond ``sources``)."""
    tb = TB(dut)
    tb.source.set_idle(random_pauses(tb.rng, idle))
    tb.sink.set_backpressure(random_pauses(tb.rng, backpressure))
    await tb.reset()
    for _ in range(300):
        tb.send(tb.rng.choice([0, 1, 3, tb.config.sources]), tb.rng.randrange(8), tb.request())
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def compress_reset(dut):
    """A reset forgets the state: the next request to a destination carries its extension."""
    tb = TB(dut)
    await tb.reset()
    r = Read(id=1, addr=0x1_0000_0040, len=0, size=3)
    tb.send(1, 0, r)
    tb.send(1, 0, r)
    await tb.check()
    await tb.reset()
    tb.model.clear()
    tb.send(1, 0, r)
    await tb.check()


CONFIGS = [EthxConfig(sources=4)]


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_compress(config):
    harness.run(Compress(config), config, toplevel="ethx_compress",
                test_module=__name__)
