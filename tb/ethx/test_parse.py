# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/ethx/parse.py: the records the golden model decodes from each frame, with the
compression state restored, and every record error dropping the rest of its frame."""

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from scaleup_ip.ethx import (
    EthxConfig,
    ParseCount,
    RecordParse,
    record_word_layout,
    request_item_layout,
    response_item_layout,
)
from scaleup_ip.model.ethx import bridge as model
from scaleup_ip.model.ethx.bridge import Attrs, Read, ReadData, TxState, Write, WriteResp
from sim import harness
from sim.ethx.env import EthxEnv, words_of
from sim.streams import LayoutSink, LayoutSource, random_pauses

TIMEOUT_US = 4000
NODE = 1


class TB(EthxEnv):
    def __init__(self, dut):
        super().__init__(dut)
        self.source = LayoutSource(dut, "i", record_word_layout, dut.clk, dut.rst)
        self.req = LayoutSink(dut, "req", request_item_layout, dut.clk, dut.rst)
        self.rsp = LayoutSink(dut, "rsp", response_item_layout, dut.clk, dut.rst)
        self.tx = {}                    # senders' compression state, per source
        self.rx = {}                    # the receiver's, as the model keeps it
        self.want_req, self.want_rsp = [], []
        self.tally = {kind: 0 for kind in ParseCount}

    def record(self):
        rng = self.rng
        kind = rng.randrange(4)
        size, length = rng.randrange(7), rng.choice([0, 1, 3, rng.randrange(16)])
        addr = rng.choice([0x10_0000_0000, 0x7_0000_0000]) | rng.getrandbits(32)
        attrs = Attrs(cache=rng.randrange(16)) if rng.random() < 0.2 else Attrs()
        if kind == 0:
            return Read(id=rng.randrange(256), addr=addr, len=length, size=size,
                        burst=rng.randrange(3), order=rng.random() < 0.3, attrs=attrs)
        if kind == 1:
            nbytes = model.data_bytes(length, size)
            return Write(id=rng.randrange(256), addr=addr, len=length, size=size,
                         burst=rng.randrange(3), data=rng.randbytes(nbytes),
                         strb=-1 if rng.random() < 0.5 else rng.getrandbits(nbytes),
                         order=rng.random() < 0.3, attrs=attrs)
        if kind == 2:
            count = rng.randrange(length + 1)
            return ReadData(id=rng.randrange(256), resp=rng.randrange(4), last=rng.random() < 0.5,
                            count=count, size=size, burst=rng.randrange(3), len=length,
                            addr=rng.getrandbits(12),
                            data=None if rng.random() < 0.2 else rng.randbytes(model.data_bytes(count, size)))
        return WriteResp(id=rng.randrange(256), resp=rng.randrange(4))

    def frame(self, src, records, tail=b""):
        """The record words of a frame from ``src`` (with ``tail`` words after the records)."""
        body = model.encode_records(records, self.tx.setdefault(src, TxState())) + tail
        body += bytes(max(0, 48 - len(body)))
        return body

    def send(self, src, vc, body, *, lost=False):
        """Queue a frame's words; expect what the model decodes (nothing if ``lost``)."""
        if lost:
            return
        words = words_of(body)
        for n, word in enumerate(words):
            self.source.send_nowait(data=word, last=int(n == len(words) - 1), node=src, vc=vc,
                                    left=len(words) - n)
        header = model.header(NODE, src, vc)
        decoded = model.decode_frame(header + body, NODE, self.rx, fcs=False)
        assert not isinstance(decoded, model.FrameError), f"the test made a bad frame: {decoded!r}"
        foreign = src >= self.config.sources
        for record in decoded.records:
            if isinstance(record, (Read, Write)):
                self.expect_request(record, src, vc, foreign)
            else:
                self.tally[ParseCount.RESPONSES] += 1
                words = words_of(model.encode_records([record], TxState()))
                for n, word in enumerate(words):
                    self.want_rsp.append((word, int(n == 0), int(n == len(words) - 1), src, vc))
        if decoded.error:
            self.tally[ParseCount(decoded.error + 3)] += 1

    def expect_request(self, r, src, vc, foreign):
        write = isinstance(r, Write)
        strb = write and not r.elided()
        a = r.attrs
        head = dict(write=int(write), id=r.id, len=r.len, size=r.size, burst=r.burst,
                    order=int(r.order), strb=int(strb), addr=r.addr,
                    attrs=dict(prot=a.prot, cache=a.cache, lock=a.lock, qos=a.qos, region=a.region),
                    node=src, vc=vc, stale=int(r.stale or foreign), foreign=int(foreign))
        self.tally[ParseCount.REQUESTS] += 1
        self.tally[ParseCount.STALE] += int(r.stale and not foreign)
        self.tally[ParseCount.FOREIGN] += int(foreign)
        body = []
        if write:
            body = [(w, 0) for w in words_of(r.data)]
            if strb:
                sbytes = r.strobes().to_bytes(len(r.data) // 8, "little")
                body += [(w, 1) for w in words_of(sbytes + bytes(-len(sbytes) % 8))]
        items = [(head, 0, 1, 0, int(not body))]
        items += [(head, w, 0, s, int(n == len(body) - 1)) for n, (w, s) in enumerate(body)]
        stale_unknown = r.stale or foreign
        for item in items:
            self.want_req.append((item, stale_unknown))

    async def check(self):
        for index, ((head, word, first, strobe, last), vague) in enumerate(self.want_req):
            got = await self.req.recv()
            h = got.head
            seen = dict(write=int(h.write), id=int(h.id), len=int(h.len), size=int(h.size),
                        burst=int(h.burst), order=int(h.order), strb=int(h.strb),
                        addr=int(h.addr), attrs=dict(prot=int(h.attrs.prot), cache=int(h.attrs.cache),
                                                     lock=int(h.attrs.lock), qos=int(h.attrs.qos),
                                                     region=int(h.attrs.region)),
                        node=int(h.node), vc=int(h.vc), stale=int(h.stale), foreign=int(h.foreign))
            if vague:           # a refused request's restored address and attributes are moot
                seen["attrs"], seen["addr"] = head["attrs"], head["addr"]
            assert seen == head, f"request item {index}: {seen} != {head}"
            assert (int(got.first), int(got.strobe), int(got.last)) == (first, strobe, last), index
            if not first:
                assert int(got.word) == word, f"request item {index}: word"
        for index, want in enumerate(self.want_rsp):
            got = await self.rsp.recv()
            seen = (int(got.word), int(got.first), int(got.last), int(got.node), int(got.vc))
            assert seen == want, f"response word {index}: {seen} != {want}"
        self.want_req.clear()
        self.want_rsp.clear()
        await self.source.wait()
        await ClockCycles(self.dut.clk, 20)
        assert self.req.empty() and self.rsp.empty()
        got = self.counts(ParseCount)
        assert got == self.tally, f"counters {got}, expected {self.tally}"


async def _random_frames(tb, frames, bad=0.0, lost=0.0):
    cap = tb.config.record_words
    for _ in range(frames):
        src = tb.rng.choice([2, 3, 5, 0x1234])
        records, used = [], 0
        while used < cap:
            r = tb.record()
            need = model.record_words(r, ext=True)
            if used + need > cap or tb.rng.random() < 0.15:
                break
            records.append(r)
            used += need
        tail = b""
        if tb.rng.random() < bad:
            tail = tb.rng.choice(_BAD)(tb.rng)
        # The bad tail's words count against the frame's room (a frame over the MTU is the
        # deframer's to drop, never this block's input): records make room for it.
        while records and used + len(tail) // model.WORD > cap:
            used -= model.record_words(records.pop(), ext=True)
        tb.send(src, tb.rng.randrange(8), tb.frame(src, records, tail),
                lost=tb.rng.random() < lost)


_BAD = [
    lambda rng: (rng.randrange(5, 16) | rng.getrandbits(60) << 4).to_bytes(8, "little"),
    lambda rng: (1 | 1 << 7).to_bytes(8, "little"),                     # reserved bit
    lambda rng: (2 | 3 << 27).to_bytes(8, "little"),                    # burst 3
    lambda rng: (1 | 1 << 5).to_bytes(8, "little"),                     # a READ with strobes
    lambda rng: (3 | 1 << 50).to_bytes(8, "little"),                    # READ_DATA zero bits
    lambda rng: (4 | 1 << 4).to_bytes(8, "little"),                     # WRITE_RESP zero bits
    lambda rng: (1 | 1 << 4).to_bytes(8, "little") + (1 << 60).to_bytes(8, "little"),  # ext
    lambda rng: (2 | 255 << 16 | 6 << 24 | 1 << 27).to_bytes(8, "little") + bytes(8),  # too long
    lambda rng: (3 | 200 << 16 | 3 << 24).to_bytes(8, "little"),        # READ_DATA too long
    # 256 beats of 128 bytes: 4096 data words, which a 12-bit count would take for none
    lambda rng: (2 | 255 << 16 | 7 << 24 | 1 << 27).to_bytes(8, "little") + bytes(8),
    lambda rng: (3 | 255 << 16 | 7 << 24).to_bytes(8, "little"),
    lambda rng: bytes(8) + (7).to_bytes(8, "little"),                    # PAD, then anything
    # too long, and a reserved bit in its extension: TRUNCATED, the length is checked first
    lambda rng: (2 | 1 << 4 | 255 << 16 | 3 << 24 | 1 << 27).to_bytes(8, "little")
    + (1 << 60).to_bytes(8, "little"),
]


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(idle=[0.0, 0.3], backpressure=[0.0, 0.5])
async def parse_random(dut, idle, backpressure):
    """Random frames of every record kind, from known and foreign sources, some ending in a
    bad record."""
    tb = TB(dut)
    tb.source.set_idle(random_pauses(tb.rng, idle))
    tb.req.set_backpressure(random_pauses(tb.rng, backpressure))
    tb.rsp.set_backpressure(random_pauses(tb.rng, backpressure))
    await tb.reset()
    await _random_frames(tb, 40, bad=0.3)
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def parse_lost_frames(dut):
    """Frames lost on the way leave compressed requests without their state: stale, counted."""
    tb = TB(dut)
    await tb.reset()
    await _random_frames(tb, 60, lost=0.3)
    # For certain: a frame that arrives puts both ends on one key and generation (lost frames
    # may have left them any number of generations apart, a multiple of eight among them);
    # then a new key in a lost frame, and a request compressed against it.
    tb.send(3, 0, tb.frame(3, [Read(id=0, addr=0x8_0000_0000, len=0, size=3)]))
    tb.send(3, 0, tb.frame(3, [Read(id=1, addr=0x9_0000_0000, len=0, size=3)]), lost=True)
    tb.send(3, 0, tb.frame(3, [Read(id=2, addr=0x9_0000_0040, len=0, size=3)]))
    await tb.check()
    assert tb.tally[ParseCount.STALE] > 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def parse_every_error(dut):
    """Each bad record after a good one: the good one passes, the rest of the frame does not."""
    tb = TB(dut)
    await tb.reset()
    for bad in _BAD:
        good = [WriteResp(id=1, resp=0), Read(id=2, addr=0x1000, len=0, size=3)]
        tb.send(2, 0, tb.frame(2, good, bad(tb.rng) + (4).to_bytes(8, "little")))
    await tb.check()
    errors = sum(tb.tally[k] for k in (ParseCount.UNKNOWN_KIND, ParseCount.MALFORMED,
                                       ParseCount.TRUNCATED))
    assert errors == len(_BAD) - 1


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def parse_truncated_sets_no_state(dut):
    """A request whose record runs past its frame sets no compression state with its
    extension word: a request compressed against that word's key is stale."""
    tb = TB(dut)
    await tb.reset()
    new_key = model.encode_records([Write(id=1, addr=0x7_0000_0000, len=0, size=3, burst=1,
                                          data=bytes(8))], model.TxState())
    header = int.from_bytes(new_key[:8], "little") | 127 << 16         # 128 beats claimed
    tb.send(2, 0, tb.frame(2, [WriteResp(id=1, resp=0)],
                           header.to_bytes(8, "little") + new_key[8:16]))
    compressed = model.encode_records([Read(id=3, addr=0x7_0000_0040, len=0, size=3)],
                                      model.TxState())
    compressed = (int.from_bytes(compressed[:8], "little") & ~(1 << 4)).to_bytes(8, "little")
    tb.send(2, 0, tb.frame(2, [], compressed))
    await tb.check()
    assert tb.tally[ParseCount.TRUNCATED] == 1 and tb.tally[ParseCount.STALE] == 1


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def parse_reset(dut):
    """A reset forgets the compression state: the next compressed request is stale."""
    tb = TB(dut)
    await tb.reset()
    tb.send(2, 0, tb.frame(2, [Read(id=2, addr=0x5_0000_1000, len=0, size=3)]))
    await tb.check()
    await tb.reset()
    tb.rx.clear()
    tb.tally = {kind: 0 for kind in ParseCount}
    tb.send(2, 0, tb.frame(2, [Read(id=3, addr=0x5_0000_2000, len=0, size=3)]))
    await tb.check()
    assert tb.tally[ParseCount.STALE] == 1


CONFIGS = [EthxConfig(), EthxConfig(sources=4)]
#: Cases that once failed, run every time with their seed: at 1196167711 this one made a
#: frame of records filled to the MTU and then a bad record's words (a frame the model drops whole).
#: At 709019086 the random frames' losses left the two ends eight generations apart, so the
#: request compressed against a lost key was taken for current (a 3-bit generation's aliasing).
SEEDS = [("parse_random/idle=0.3/backpressure=0.0", 1196167711),
         ("parse_lost_frames", 709019086)]


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_parse(config):
    harness.run(RecordParse(config), config, toplevel="ethx_parse",
                test_module=__name__)


@pytest.mark.parametrize("testcase, seed", SEEDS)
def test_parse_seeds(testcase, seed):
    config = CONFIGS[0]
    harness.run(RecordParse(config), config, toplevel="ethx_parse",
                test_module=__name__, testcase=testcase, seed_value=seed,
                run_name=f"{testcase}-{seed}")
