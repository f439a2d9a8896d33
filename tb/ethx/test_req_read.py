# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/requester/read.py: reads of cocotbext-axi's AxiMaster carried as READ records to
remote nodes played by the golden model, their READ_DATA records back as R beats."""

import cocotb
import pytest
from cocotb.queue import Queue
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiMasterRead, AxiReadBus, AxiResp

from scaleup_ip.ethx import (
    EthxConfig,
    ReadCount,
    record_word_layout,
    response_item_layout,
    user_layout,
)
from scaleup_ip.ethx.requester import ReqRead
from scaleup_ip.model.ethx import bridge as model
from scaleup_ip.model.ethx.bridge import Read, ReadData, Resp, TxState
from sim import harness
from sim.ethx.env import EthxEnv, words_of
from sim.streams import LayoutSink, LayoutSource, random_pauses

TIMEOUT_US = 4000
SIZE = 1 << 16              #: each remote node's memory


def decode(words, states, dest):
    decoded = model.decode_words(words, states, node=dest)
    assert decoded.error is None
    return decoded.records


class TB(EthxEnv):
    def __init__(self, dut):
        super().__init__(dut)
        self.master = AxiMasterRead(AxiReadBus.from_prefix(dut, "axi", bus_separator="__"),
                                    dut.clk, dut.rst)
        self.reqs = LayoutSink(dut, "req", record_word_layout, dut.clk, dut.rst)
        self.rsp = LayoutSource(dut, "rsp", response_item_layout, dut.clk, dut.rst)
        self.memory = {d: self.rng.randbytes(SIZE) for d in range(self.config.sources)}
        self.states = {}            # each remote node's compression state for us
        self.records = 0
        self.acquire_open = None    # the acquire whose answer is held back
        self.delay = 0
        self.user = user_layout(self.config)

    def user_bits(self, dest, vc=0, order=0):
        return self.user.const({"node": dest, "vc": vc, "order": order}).as_bits()

    async def remote(self):
        """The remote nodes: each answers its READs in order, after a random delay of its own,
        so that nodes overtake each other."""
        queues = {}
        while True:
            words, node, vc = [], None, None
            while True:
                beat = await self.reqs.recv()
                node, vc = int(beat.node), int(beat.vc)
                words.append(int(beat.data))
                if beat.last:
                    break
            (read,) = decode(words, self.states.setdefault(node, {}), node)
            assert isinstance(read, Read) and not read.stale
            assert self.acquire_open is None, "a READ went out while an acquire was open"
            self.records += 1
            if node not in queues:
                queues[node] = Queue()
                cocotb.start_soon(self.node(node, queues[node]))
            await queues[node].put((read, vc))

    async def node(self, node, queue):
        while True:
            read, vc = await queue.get()
            if read.order:
                self.acquire_open = read
                await ClockCycles(self.dut.clk, 100)
            elif self.delay:
                await ClockCycles(self.dut.clk, self.rng.randrange(1, self.delay))
            for record in self.answer(read, node):
                self.send(record, node, vc)
            if read.order:
                await ClockCycles(self.dut.clk, 1)
                self.acquire_open = None

    def answer(self, r, node):
        mem = self.memory[node]
        step = model.beat_words(r.size) * 8
        per = self.config.read_piece // step
        addrs = model.beat_addresses(r.addr, r.len, r.size, r.burst)
        out = []
        for first in range(0, len(addrs), per):
            chunk = addrs[first:first + per]
            data = b"".join(mem[(model.container(a, r.size) if r.size >= 3 else a & ~7) % SIZE:][:step]
                            for a in chunk)
            out.append(ReadData(id=r.id, resp=Resp.OKAY, last=first + per >= len(addrs),
                                count=len(chunk) - 1, size=r.size, burst=r.burst, len=r.len,
                                addr=chunk[0] & 0xFFF, data=data))
        return out

    def send(self, record, node, vc):
        words = words_of(model.encode_records([record], TxState()))
        for n, word in enumerate(words):
            self.rsp.send_nowait(word=word, first=int(n == 0), last=int(n == len(words) - 1),
                                 node=node, vc=vc)

    async def read(self, dest, addr, length, *, arid=0, size=None, order=0):
        got = await self.master.read(addr, length, arid=arid, size=size,
                                     user=self.user_bits(dest, order=order))
        return got

    async def done(self):
        await ClockCycles(self.dut.clk, 50)
        assert self.reqs.empty() and self.rsp.empty()
        assert not self.dut.acquiring.value


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(pace=[0.0, 0.4])
async def req_read_random(dut, pace):
    """Concurrent reads of random sizes, lengths and IDs to random destinations."""
    tb = TB(dut)
    tb.rsp.set_idle(random_pauses(tb.rng, pace))
    tb.master.r_channel.set_pause_generator(random_pauses(tb.rng, pace))
    tb.delay = 60 if pace else 20
    await tb.reset()
    cocotb.start_soon(tb.remote())
    bus = tb.config.data_width // 8

    async def one(k):
        dest = tb.rng.randrange(min(tb.config.sources, 4))
        size = tb.rng.randrange(bus.bit_length())
        length = tb.rng.choice([1, 8, 64, 128, tb.rng.randrange(1, 2048)])
        addr = tb.rng.randrange(SIZE - length)
        data = await tb.read(dest, addr, length, arid=tb.rng.randrange(1 << tb.config.id_width),
                             size=size)
        assert data.data == tb.memory[dest][addr:addr + length], f"read {k}"
        assert data.resp == AxiResp.OKAY
    tasks = [cocotb.start_soon(one(k)) for k in range(60)]
    for task in tasks:
        await task
    await tb.done()
    counts = tb.counts(ReadCount)
    assert counts[ReadCount.READS] == tb.records and counts[ReadCount.UNEXPECTED] == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def req_read_acquire(dut):
    """An acquire holds back later reads until its data is back."""
    tb = TB(dut)
    await tb.reset()
    cocotb.start_soon(tb.remote())
    first = cocotb.start_soon(tb.read(1, 0x100, 8, order=1))
    await ClockCycles(dut.clk, 5)
    later = [cocotb.start_soon(tb.read(2, 0x200 + 8 * k, 8, arid=k)) for k in range(4)]
    await ClockCycles(dut.clk, 20)
    assert dut.acquiring.value and tb.records == 1
    await first
    for task in later:
        await task
    await tb.done()
    assert tb.counts(ReadCount)[ReadCount.ACQUIRES] == 1


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def req_read_unexpected(dut):
    """READ_DATA records for no outstanding read, or from the wrong node, are dropped."""
    tb = TB(dut)
    await tb.reset()
    cocotb.start_soon(tb.remote())
    stray = ReadData(id=3, resp=0, last=True, count=1, size=3, burst=1, len=1, addr=0,
                     data=bytes(16))
    tb.send(stray, 1, 0)
    data = await tb.read(1, 0x40, 16)
    assert data.data == tb.memory[1][0x40:0x50]
    tb.send(ReadData(**{**stray.__dict__, "id": 0}), 2, 0)     # slot 0, but not from node 2
    await tb.done()
    assert tb.counts(ReadCount)[ReadCount.UNEXPECTED] == 2


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def req_read_no_destination(dut):
    """A read for a node at or above ``sources`` is answered DECERR locally."""
    tb = TB(dut)
    assert (1 << tb.config.node_bits) > tb.config.sources, "a configuration with such nodes"
    await tb.reset()
    cocotb.start_soon(tb.remote())
    data = await tb.read(tb.config.sources, 0x40, 64)
    assert data.resp == AxiResp.DECERR and tb.records == 0
    await tb.done()
    assert tb.counts(ReadCount)[ReadCount.LOCAL] == 1


CONFIGS = [EthxConfig(sources=4), EthxConfig(sources=4, data_width=512, outstanding=4, id_width=2)]


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_req_read(config):
    harness.run(ReqRead(config), config, toplevel="ethx_req_read",
                test_module=__name__)
