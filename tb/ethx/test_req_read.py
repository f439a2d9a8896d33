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
from scaleup_ip.model.ethx.bridge import Read, ReadData, TxState
from scaleup_ip.model.ethx.serve import Serve
from sim import harness
from sim.ethx.axi_check import AxiAnswerCheck
from sim.ethx.env import EthxEnv, clocks_until, words_of
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
        self.check = AxiAnswerCheck(dut, "axi", dut.clk)
        cfg = self.config
        self.serve = {d: Serve(m, [], bus_bytes=cfg.data_width // 8, address_width=cfg.addr_width,
                               read_piece=cfg.read_piece) for d, m in self.memory.items()}

    def user_bits(self, dest, vc=0, order=0):
        return self.user.const({"node": dest, "vc": vc, "order": order}).as_bits()

    async def remote(self):
        """The remote nodes: each answers its READs in order, after a random delay of its own,
        so that nodes overtake each other."""
        queues = {}
        while True:
            read, node, vc = await self.take_read()
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
        """The READ_DATA records ``node`` answers ``r`` with, from its memory."""
        return self.serve[node].read(r)

    def send(self, record, node, vc):
        words = words_of(model.encode_records([record], TxState()))
        for n, word in enumerate(words):
            self.rsp.send_nowait(word=word, first=int(n == 0), last=int(n == len(words) - 1),
                                 node=node, vc=vc)

    async def read(self, dest, addr, length, *, arid=0, size=None, order=0):
        got = await self.master.read(addr, length, arid=arid, size=size,
                                     user=self.user_bits(dest, order=order))
        return got

    async def take_read(self):
        """The next READ record the requester sends, its node and its VC."""
        words = []
        while True:
            beat = await self.reqs.recv()
            words.append(int(beat.data))
            if beat.last:
                break
        node, vc = int(beat.node), int(beat.vc)
        (read,) = decode(words, self.states.setdefault(node, {}), node)
        return read, node, vc

    async def done(self):
        await ClockCycles(self.dut.clk, 50)
        assert self.reqs.empty() and self.rsp.empty()
        assert not self.dut.acquiring.value
        self.check.idle()


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
async def req_read_mismatched(dut):
    """READ_DATA records for an outstanding read that do not continue its burst (more beats,
    fewer beats with ``last``, another size, length, burst or address, ``last`` early) are
    dropped and counted; the read then completes from its true answer, whole."""
    tb = TB(dut)
    await tb.reset()
    task = cocotb.start_soon(tb.read(1, 0x100, 32, size=3))      # 4 beats of 8 bytes
    read, node, _ = await tb.take_read()
    true = tb.answer(read, node)
    assert len(true) == 1 and true[0].count == 3
    t = true[0].__dict__
    forged = [ReadData(**{**t, "count": 4, "data": bytes(40)}),
              ReadData(**{**t, "count": 1, "data": bytes(16)}),
              ReadData(**{**t, "count": 1, "last": False, "addr": 0x108, "data": bytes(16)}),
              ReadData(**{**t, "size": 7, "count": 0, "data": bytes(128)}),
              ReadData(**{**t, "len": 4}),
              ReadData(**{**t, "burst": 2}),
              ReadData(**{**t, "last": False})]
    for record in forged:
        tb.send(record, node, 0)
    tb.send(true[0], node, 0)
    got = await task
    assert got.data == tb.memory[1][0x100:0x120] and got.resp == AxiResp.OKAY
    await tb.done()
    counts = tb.counts(ReadCount)
    assert counts[ReadCount.MISMATCHED] == len(forged) and counts[ReadCount.UNEXPECTED] == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def req_read_split_answer(dut):
    """A read answered in several records (as the serving side splits one), each continuing
    the burst, is taken whole."""
    tb = TB(dut)
    await tb.reset()
    task = cocotb.start_soon(tb.read(2, 0x204, 24, size=2))     # 6 beats of 4 bytes
    read, node, _ = await tb.take_read()
    (whole,) = tb.answer(read, node)
    addrs = model.beat_addresses(read.addr, read.len, read.size, read.burst)
    for first, count in ((0, 1), (1, 3), (4, 2)):
        tb.send(ReadData(**{**whole.__dict__, "count": count - 1, "last": first + count == 6,
                            "addr": addrs[first] & 0xFFF,
                            "data": whole.data[8 * first:8 * (first + count)]}), node, 0)
    got = await task
    assert got.data == tb.memory[2][0x204:0x21C] and got.resp == AxiResp.OKAY
    await tb.done()
    assert tb.counts(ReadCount)[ReadCount.MISMATCHED] == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def req_read_timeout(dut):
    """Reads to a dead node complete SLVERR after ``completion_timeout`` (their beats still
    due, in AXI ID order, an acquire too, which then lets later reads go), their slots come
    back, and their late answers are dropped and counted, also after the slot is reused."""
    tb = TB(dut)
    limit = tb.config.completion_timeout
    await tb.reset()
    dead = []

    async def serve():
        while True:
            read, node, _ = await tb.take_read()
            if node == 1:
                for record in tb.answer(read, node):
                    tb.send(record, node, 0)
            else:
                dead.append((read, node))
    cocotb.start_soon(serve())
    # One read: nothing comes back.
    clocks, got = await clocks_until(dut.clk, cocotb.start_soon(tb.read(2, 0x40, 32, arid=1,
                                                                         size=3)))
    assert got.resp == AxiResp.SLVERR and len(got.data) == 32
    assert limit <= clocks <= limit + limit // 8 + 9 + 20, f"{clocks} clocks for {limit}"
    # Part of an answer (2 beats of 4), then nothing: the 2 beats, then 2 SLVERR beats.
    task = cocotb.start_soon(tb.read(2, 0x80, 32, arid=1, size=3))
    while len(dead) < 2:
        await ClockCycles(dut.clk, 1)
    read, node = dead[1]
    (whole,) = tb.answer(read, node)
    tb.send(ReadData(**{**whole.__dict__, "count": 1, "last": False, "data": whole.data[:16]}),
            node, 0)
    got = await task
    assert got.data[:16] == tb.memory[2][0x80:0x90] and got.resp == AxiResp.SLVERR
    # Two reads of one ID, and an acquire; a read to a live node waits for the acquire.
    tasks = [cocotb.start_soon(tb.read(3, 0x100, 8 * n, arid=2, size=3)) for n in (4, 1)]
    await ClockCycles(dut.clk, 20)
    acquire = cocotb.start_soon(tb.read(3, 0x200, 16, arid=3, order=1, size=3))
    await ClockCycles(dut.clk, 20)
    after = cocotb.start_soon(tb.read(1, 0x300, 64, arid=3))
    for task in tasks + [acquire]:
        got = await task
        assert got.resp == AxiResp.SLVERR
    got = await after
    assert got.resp == AxiResp.OKAY and got.data == tb.memory[1][0x300:0x340]
    # The late answers, and again once their slots serve new reads.
    for read, node in dead[:2]:
        for record in tb.answer(read, node):
            tb.send(record, node, 0)
    await tb.rsp.wait()
    fresh = [cocotb.start_soon(tb.read(1, 0x400 + 64 * k, 64, arid=k)) for k in range(4)]
    for read, node in dead[2:]:
        for record in tb.answer(read, node):
            tb.send(record, node, 0)
    for k, task in enumerate(fresh):
        got = await task
        assert got.resp == AxiResp.OKAY and got.data == tb.memory[1][0x400 + 64 * k:][:64]
    await tb.done()
    counts = tb.counts(ReadCount)
    assert counts[ReadCount.TIMEOUTS] == 5 and len(dead) == 5
    assert counts[ReadCount.LATE] == 5 and counts[ReadCount.UNEXPECTED] == 0


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


CONFIGS = [EthxConfig(sources=4, completion_timeout=20_000),
           EthxConfig(sources=4, data_width=512, outstanding=4, id_width=2,
                      completion_timeout=5_000)]


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_req_read(config):
    harness.run(ReqRead(config), config, toplevel="ethx_req_read",
                test_module=__name__)
