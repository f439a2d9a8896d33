# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/completer/completer.py (with completer/read.py, completer/write.py, merge.py): requests done on
an AxiRam, answered with the records the golden model expects; refusals never touch memory."""

import cocotb
import pytest
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiBus, AxiRam

from scaleup_ip.ethx.completer import Completer, DATA_WORDS
from scaleup_ip.ethx import (
    CompleterCount,
    EthxConfig,
    record_word_layout,
    request_item_layout,
    window_layout,
)
from scaleup_ip.model.ethx import bridge as model
from scaleup_ip.model.ethx.bridge import Burst, Read, ReadData, Resp, Write, WriteResp
from scaleup_ip.model.ethx.serve import DATA_WORDS as SERVE_DATA_WORDS
from scaleup_ip.model.ethx.serve import Refusal, Serve, Window
from sim import harness
from sim.ethx.env import EthxEnv, words_of
from sim.streams import LayoutSink, LayoutSource, random_pauses

TIMEOUT_US = 4000
BASE = 0x1_0000_0000        #: window 0: 64 KB for sources 2 and 3
RAM = 1 << 20


def decode_records(words):
    """Records from their words, read by the golden model."""
    decoded = model.decode_words(words, {})
    assert decoded.error is None, decoded.error
    return decoded.records


class TB(EthxEnv):
    def __init__(self, dut):
        super().__init__(dut)
        cfg = self.config
        self.source = LayoutSource(dut, "req", request_item_layout, dut.clk, dut.rst)
        self.sink = LayoutSink(dut, "rsp", record_word_layout, dut.clk, dut.rst)
        self.ram = AxiRam(AxiBus.from_prefix(dut, "mem", bus_separator="__"), dut.clk, dut.rst,
                          size=RAM)
        self.image = bytearray(self.rng.randbytes(RAM))      # what memory must hold
        self.ram.write(0, bytes(self.image))
        self.bus = cfg.data_width // 8
        self.reads, self.writes = [], []                     # expected records, in order
        self.tally = {k: 0 for k in CompleterCount}
        layout = window_layout(cfg)
        windows = [dict(base=BASE, size_log2=16, sources=0b1100, enable=1),
                   dict(base=BASE + 0x10000, size_log2=12, sources=0b0100, enable=1)]
        windows += [dict(base=0, size_log2=0, sources=0, enable=0)] * (cfg.windows - 2)
        value = sum(layout.const(w).as_bits() << (k * layout.size)
                    for k, w in enumerate(windows[:cfg.windows]))
        dut.windows.value = value
        self.serve = Serve(self.image, [Window(**w) for w in windows[:cfg.windows]],
                           bus_bytes=self.bus, address_width=cfg.addr_width,
                           read_piece=cfg.read_piece)

    def refusal(self, r, node, stale=False):
        """The counter that refuses ``r`` from ``node``, or None (the serving model's rules)."""
        if stale:
            return CompleterCount.STALE
        why = self.serve.refusal(r, node)
        return None if why is None else {Refusal.DENIED: CompleterCount.DENIED,
                                         Refusal.ILLEGAL: CompleterCount.ILLEGAL}[why]

    def send(self, r, node, vc=0, *, stale=False):
        why = self.refusal(r, node, stale)
        write = isinstance(r, Write)
        a = r.attrs
        head = dict(write=int(write), id=r.id, len=r.len, size=r.size, burst=r.burst,
                    order=int(r.order), strb=int(write and not r.elided()), addr=r.addr,
                    attrs=dict(prot=a.prot, cache=a.cache, lock=a.lock, qos=a.qos, region=a.region),
                    node=node, vc=vc, stale=int(stale), foreign=0)
        body = []
        if write:
            body = [(w, 0) for w in words_of(r.data)]
            if not r.elided():
                sbytes = r.strobes().to_bytes(len(r.data) // 8, "little")
                body += [(w, 1) for w in words_of(sbytes + bytes(-len(sbytes) % 8))]
        self.source.send_nowait(head=head, first=1, last=int(not body))
        for n, (word, strobe) in enumerate(body):
            self.source.send_nowait(head=head, word=word, strobe=strobe,
                                    last=int(n == len(body) - 1))
        if why is not None:
            self.tally[why] += 1
        if write:
            self.tally[CompleterCount.WRITES] += why is None
            if why is None:
                self.apply(r)
            self.writes.append((node, vc, WriteResp(id=r.id, resp=Resp.DECERR if why else Resp.OKAY)))
        else:
            self.tally[CompleterCount.READS] += why is None
            for rec in self.read_records(r, why is not None):
                self.reads.append((node, vc, rec))

    def apply(self, w):
        self.serve.write(w)

    def read_records(self, r, refused):
        return Serve.refused(r) if refused else self.serve.read(r)

    async def check(self):
        got_reads, got_writes = [], []
        while len(got_reads) < len(self.reads) or len(got_writes) < len(self.writes):
            words, node, vc = [], None, None
            while True:
                beat = await self.sink.recv()
                if not words:
                    assert int(beat.left) >= 1
                    left = int(beat.left)
                    node, vc = int(beat.node), int(beat.vc)
                assert int(beat.left) == left - len(words), "left counts down the record"
                words.append(int(beat.data))
                if beat.last:
                    break
            assert len(words) == left
            (record,) = decode_records(words)
            (got_reads if isinstance(record, ReadData) else got_writes).append((node, vc, record))
        assert got_reads == self.reads
        assert got_writes == self.writes
        self.reads.clear()
        self.writes.clear()
        await self.source.wait()
        await ClockCycles(self.dut.clk, 50)
        assert self.sink.empty() and not self.dut.rsp__valid.value
        assert self.ram.read(0, RAM) == bytes(self.image), "memory differs from the model"
        got = self.counts(CompleterCount)
        assert got == self.tally, f"counters {got}, expected {self.tally}"

    def random_request(self, *, reads, writes):
        rng = self.rng
        top = self.bus.bit_length() - 1
        size = rng.choice([rng.randrange(top + 1), top, 3 if top >= 3 else top])
        burst = rng.choice([Burst.INCR, Burst.INCR, Burst.WRAP, Burst.FIXED])
        length = rng.choice([0, 1, 3, 7, 15]) if burst != Burst.INCR else rng.choice(
            [0, 3, 15, rng.randrange(64)])
        region = reads if rng.random() < 0.5 else writes
        addr = region + rng.randrange(0x8000 - 0x1000)
        if burst == Burst.WRAP:
            addr = model.container(addr, size)
        if burst == Burst.INCR:
            room = 0x1000 - (addr % 0x1000)
            length = min(length, max(0, room // (1 << size) - 1))
        if region == reads:
            return Read(id=rng.randrange(256), addr=addr, len=length, size=size, burst=burst)
        nbytes = model.data_bytes(length, size)
        strb = -1 if rng.random() < 0.5 else rng.getrandbits(nbytes)
        return Write(id=rng.randrange(256), addr=addr, len=length, size=size, burst=burst,
                     data=rng.randbytes(nbytes), strb=strb)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(idle=[0.0, 0.3], backpressure=[0.0, 0.5])
async def completer_random(dut, idle, backpressure):
    """Random reads and writes of every burst type and size in the window, to separate halves."""
    tb = TB(dut)
    tb.source.set_idle(random_pauses(tb.rng, idle))
    tb.sink.set_backpressure(random_pauses(tb.rng, backpressure))
    await tb.reset()
    for _ in range(80):
        tb.send(tb.random_request(reads=BASE, writes=BASE + 0x8000), tb.rng.choice([2, 3]),
                tb.rng.randrange(8))
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def completer_refusals(dut):
    """Stale, denied (no window, wrong source, disabled window) and illegal requests among good
    ones: DECERR in their place, memory untouched, each counted."""
    tb = TB(dut)
    await tb.reset()
    good = lambda: tb.random_request(reads=BASE, writes=BASE + 0x8000)
    w = Write(id=5, addr=BASE + 0x9000, len=0, size=3, burst=Burst.INCR, data=bytes(8))
    r = Read(id=6, addr=BASE + 0x100, len=3, size=3, burst=Burst.INCR)
    cases = [
        (w, 2, True), (r, 3, True),                                   # stale
        (Write(**{**w.__dict__, "addr": 0x5000}), 2, False),           # no window
        (r, 5, False),                                                 # wrong source
        (Read(**{**r.__dict__, "addr": BASE + 0x10010}), 3, False),    # window 1 is node 2's
        (Read(**{**r.__dict__, "addr": BASE + 0x10010}), 2, False),    # ... so this one is good
        (Read(**{**r.__dict__, "burst": Burst.WRAP, "len": 2}), 2, False),       # WRAP length
        (Read(**{**r.__dict__, "addr": BASE + 0xFF8, "len": 1}), 2, False),      # across 4 KB
        (Read(**{**r.__dict__, "size": 7}), 2, False),                           # too wide
        (Write(id=1, addr=BASE + 0x8000, len=255, size=3, burst=Burst.INCR,
               data=bytes(2048)), 2, False),                           # longer than the buffer
    ]
    for request, node, stale in cases:
        tb.send(good(), 2)
        tb.send(request, node, stale=stale)
    tb.send(good(), 3)
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def completer_narrow_strobes(dut):
    """Narrow writes whose strobes name every byte of the word: only each beat's container is
    written (a byte, two, four) [AXI4 A3.4.3]."""
    tb = TB(dut)
    await tb.reset()
    for k, (offset, size) in enumerate([(5, 0), (2, 1), (6, 1), (4, 2), (1, 2)]):
        addr = BASE + 0x8000 + 0x40 * k + offset
        tb.send(Write(id=k, addr=addr, len=0, size=size, burst=Burst.INCR,
                      data=tb.rng.randbytes(8), strb=0xFF), 2)
        tb.send(Write(id=k, addr=addr, len=3, size=size, burst=Burst.FIXED,
                      data=tb.rng.randbytes(32), strb=(1 << 32) - 1), 3)
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def completer_long_reads(dut):
    """Reads longer than read_piece come back in several records."""
    tb = TB(dut)
    await tb.reset()
    top = tb.bus.bit_length() - 1
    for size in sorted({3, top}):
        tb.send(Read(id=1, addr=BASE + 0x2000, len=255 >> max(0, size - 3 - 1) if size > 3 else 255,
                     size=size, burst=Burst.INCR), 2)
    await tb.check()


CONFIGS = [EthxConfig(), EthxConfig(data_width=512, windows=3, outstanding=4)]


def test_serving_model_buffer():
    """The serving model's write buffer is the completer's."""
    assert SERVE_DATA_WORDS == DATA_WORDS


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_completer(config):
    harness.run(Completer(config), config, toplevel="ethx_completer",
                test_module=__name__)
