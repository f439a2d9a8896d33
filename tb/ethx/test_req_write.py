# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/requester/write.py: writes of cocotbext-axi's AxiMaster carried as WRITE records
to remote nodes played by the golden model, their WRITE_RESPs back as B."""

import cocotb
import pytest
from cocotb.queue import Queue
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiMasterWrite, AxiResp, AxiWriteBus

from scaleup_ip.ethx import (
    EthxConfig,
    WriteCount,
    record_word_layout,
    response_item_layout,
    user_layout,
)
from scaleup_ip.ethx.requester import PIECE_BYTES, ReqWrite
from scaleup_ip.model.ethx import bridge as model
from scaleup_ip.model.ethx.bridge import Resp, TxState, Write, WriteResp
from scaleup_ip.model.ethx.serve import Serve
from sim import harness
from sim.ethx.axi_check import AxiAnswerCheck
from sim.ethx.env import EthxEnv, clocks_until, words_of
from sim.streams import LayoutSink, LayoutSource, random_pauses

TIMEOUT_US = 4000
SIZE = 1 << 16
BAD = 0xF000                #: the remote nodes answer SLVERR from here up


def decode(words, states, dest):
    decoded = model.decode_words(words, states, node=dest)
    assert decoded.error is None
    return decoded.records


class TB(EthxEnv):
    def __init__(self, dut):
        super().__init__(dut)
        self.master = AxiMasterWrite(AxiWriteBus.from_prefix(dut, "axi", bus_separator="__"),
                                     dut.clk, dut.rst)
        self.reqs = LayoutSink(dut, "req", record_word_layout, dut.clk, dut.rst)
        self.rsp = LayoutSource(dut, "rsp", response_item_layout, dut.clk, dut.rst)
        self.memory = {d: bytearray(self.rng.randbytes(SIZE)) for d in range(self.config.sources)}
        self.states = {}
        self.records = 0
        self.unanswered = 0         # records sent by the DUT and not yet answered to it
        self.delay = 0
        self.user = user_layout(self.config)
        self.dead = set()           # nodes that never answer
        self.lost = []              # (write, node) sent to them
        self.check = AxiAnswerCheck(dut, "axi", dut.clk)
        cfg = self.config
        self.serve = {d: Serve(m, [], bus_bytes=cfg.data_width // 8, address_width=cfg.addr_width,
                               read_piece=cfg.read_piece) for d, m in self.memory.items()}

    def user_bits(self, dest, order=0):
        return self.user.const({"node": dest, "vc": 0, "order": order}).as_bits()

    async def remote(self):
        queues = {}
        while True:
            words, node, left = [], None, None
            while True:
                beat = await self.reqs.recv()
                node = int(beat.node)
                left = left or int(beat.left)
                words.append(int(beat.data))
                if beat.last:
                    break
            assert left == len(words), f"left {left} on a record of {len(words)} words"
            (write,) = decode(words, self.states.setdefault(node, {}), node)
            assert isinstance(write, Write) and not write.stale
            assert len(write.data) <= PIECE_BYTES
            if write.order:
                assert self.unanswered == 0, "a release went out before earlier writes' answers"
            self.records += 1
            if node in self.dead:
                self.lost.append((write, node))
                continue
            self.unanswered += 1
            if node not in queues:
                queues[node] = Queue()
                cocotb.start_soon(self.node(node, queues[node]))
            await queues[node].put(write)

    async def node(self, node, queue):
        while True:
            w = await queue.get()
            if self.delay:
                await ClockCycles(self.dut.clk, self.rng.randrange(1, self.delay))
            self.serve[node].write(w)
            self.answer(w, node)
            await self.rsp.wait()
            await ClockCycles(self.dut.clk, 1)
            self.unanswered -= 1

    def answer(self, w, node):
        resp = Resp.SLVERR if w.addr % SIZE >= BAD else Resp.OKAY
        for word in words_of(model.encode_records([WriteResp(id=w.id, resp=resp)], TxState())):
            self.rsp.send_nowait(word=word, first=1, last=1, node=node, vc=0)

    async def write(self, dest, addr, data, *, awid=0, size=None, order=0):
        return await self.master.write(addr, data, awid=awid, size=size,
                                       user=self.user_bits(dest, order=order))

    async def done(self):
        """Wait for every record to be answered (with proxy, B can come long before)."""
        quiet = 0
        for _ in range(1000):                   # quiet in 5 looks 20 clocks apart
            await ClockCycles(self.dut.clk, 20)
            idle = (self.unanswered == 0 and self.reqs.empty() and self.rsp.empty()
                    and not self.dut.req__valid.value)
            quiet = quiet + 1 if idle else 0
            if quiet == 5:
                break
        await ClockCycles(self.dut.clk, 50)
        assert self.reqs.empty() and self.rsp.empty() and self.unanswered == 0
        assert not self.dut.req__valid.value
        self.check.idle()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(pace=[0.0, 0.4])
async def req_write_random(dut, pace):
    """Concurrent writes of random sizes, lengths and IDs to random destinations; each
    destination's memory ends as the writes left it."""
    tb = TB(dut)
    tb.master.w_channel.set_pause_generator(random_pauses(tb.rng, pace))
    tb.delay = 60 if pace else 20
    await tb.reset()
    cocotb.start_soon(tb.remote())
    bus = tb.config.data_width // 8
    expect = {d: bytearray(m) for d, m in tb.memory.items()}
    spans = []

    async def one(k):
        dest = tb.rng.randrange(min(tb.config.sources, 4))
        size = tb.rng.randrange(bus.bit_length())
        length = tb.rng.choice([1, 8, 64, 128, tb.rng.randrange(1, 3000)])
        addr = 0x400 * k + tb.rng.randrange(0x40)         # writes never overlap
        data = tb.rng.randbytes(length)
        expect[dest][addr:addr + length] = data
        result = await tb.write(dest, addr, data, awid=tb.rng.randrange(1 << tb.config.id_width),
                                size=size)
        assert result.resp == AxiResp.OKAY
        spans.append((dest, addr, length))
    tasks = [cocotb.start_soon(one(k)) for k in range(40)]
    for task in tasks:
        await task
    await tb.done()
    for dest, addr, length in spans:
        assert tb.memory[dest][addr:addr + length] == expect[dest][addr:addr + length]
    counts = tb.counts(WriteCount)
    assert counts[WriteCount.WRITES] >= 40 and counts[WriteCount.UNEXPECTED] == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def req_write_release(dut):
    """A release goes out only after every earlier write has its answer; relaxed writes with
    remote errors: their B (or, with proxy, the release's) is SLVERR."""
    tb = TB(dut)
    tb.delay = 50
    await tb.reset()
    cocotb.start_soon(tb.remote())
    # Other AXI IDs than the release's, so that only the release rule holds it back.
    relaxed = [cocotb.start_soon(tb.write(1 + k % 2, 0x100 * k, bytes(64), awid=k % 2))
               for k in range(6)]
    failing = cocotb.start_soon(tb.write(1, BAD, bytes(32), awid=1))
    await ClockCycles(dut.clk, 10)
    release = cocotb.start_soon(tb.write(2, 0x2000, b"flag", awid=3, order=1))
    for task in relaxed:
        assert (await task).resp == AxiResp.OKAY
    failed = await failing
    flag = await release
    if tb.config.proxy:
        assert failed.resp == AxiResp.OKAY and flag.resp == AxiResp.SLVERR
        assert tb.counts(WriteCount)[WriteCount.PROXY_ERRORS] == 1
    else:
        assert failed.resp == AxiResp.SLVERR and flag.resp == AxiResp.OKAY
    await tb.done()
    assert tb.counts(WriteCount)[WriteCount.RELEASES] == 1
    assert not dut.proxy_error.value


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def req_write_no_destination(dut):
    """A write for a node at or above ``sources`` is answered DECERR after its beats."""
    tb = TB(dut)
    await tb.reset()
    cocotb.start_soon(tb.remote())
    result = await tb.write(tb.config.sources, 0x40, bytes(100))
    assert result.resp == AxiResp.DECERR and tb.records == 0
    ok = await tb.write(1, 0x40, b"x" * 100)
    await tb.done()
    assert ok.resp == AxiResp.OKAY and tb.memory[1][0x40:0xA4] == b"x" * 100
    assert tb.counts(WriteCount)[WriteCount.LOCAL] == 1


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def req_write_acquiring(dut):
    """While the read side has an acquire outstanding (``acquiring``), no write goes out; it
    does once the acquire is back."""
    tb = TB(dut)
    await tb.reset()
    cocotb.start_soon(tb.remote())
    dut.acquiring.value = 1
    write = cocotb.start_soon(tb.write(1, 0x80, b"after the acquire"))
    for _ in range(300):
        await ClockCycles(dut.clk, 1)
        assert not dut.req__valid.value, "a write went out while an acquire was outstanding"
    dut.acquiring.value = 0
    assert (await write).resp == AxiResp.OKAY
    await tb.done()
    assert tb.records == 1 and tb.memory[1][0x80:0x91] == b"after the acquire"


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def req_write_timeout(dut):
    """Writes to a dead node complete SLVERR after ``completion_timeout`` (with proxy: their
    early OKAY stands and the next release's B is SLVERR), in AXI ID order; a release waits
    for them only that long; their late answers are dropped and counted."""
    tb = TB(dut)
    limit, proxy = tb.config.completion_timeout, tb.config.proxy
    tb.dead = {2}
    await tb.reset()
    cocotb.start_soon(tb.remote())
    start, result = await clocks_until(dut.clk, cocotb.start_soon(tb.write(2, 0x100, bytes(64),
                                                                             awid=1)))
    assert result.resp == (AxiResp.OKAY if proxy else AxiResp.SLVERR)
    if not proxy:
        assert limit <= start <= limit + limit // 8 + 9 + 40, f"{start} clocks for {limit}"
    # Two writes of one ID (one of three pieces), then a release to a live node.
    tasks = [cocotb.start_soon(tb.write(2, 0x1000, bytes(n), awid=2)) for n in (3000, 8)]
    await ClockCycles(dut.clk, 20)
    release = cocotb.start_soon(tb.write(1, 0x200, b"flag", awid=3, order=1))
    for task in tasks:
        assert (await task).resp == (AxiResp.OKAY if proxy else AxiResp.SLVERR)
    assert (await release).resp == (AxiResp.SLVERR if proxy else AxiResp.OKAY)
    assert tb.memory[1][0x200:0x204] == b"flag"
    assert not dut.proxy_error.value
    # The late answers: dropped; a write after them is answered as usual.
    for write, node in tb.lost:
        tb.answer(write, node)
    assert (await tb.write(1, 0x300, b"later", awid=1)).resp == AxiResp.OKAY
    await tb.done()
    counts = tb.counts(WriteCount)
    # AXI bursts (the master cuts 3000 bytes of 8-byte beats in two) and pieces: all but
    # the release and the last are lost.
    assert counts[WriteCount.TIMEOUTS] == counts[WriteCount.WRITES] - 2
    assert len(tb.lost) == tb.records - 2 == counts[WriteCount.LATE] >= 5
    assert counts[WriteCount.UNEXPECTED] == 0


CONFIGS = [EthxConfig(sources=4, completion_timeout=20_000),
           EthxConfig(sources=4, data_width=512, outstanding=4, id_width=2, proxy=True,
                      completion_timeout=5_000)]


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_req_write(config):
    harness.run(ReqWrite(config), config, toplevel="ethx_req_write",
                test_module=__name__)
