"""UPLI channel receiver (``rtl/tl/upli_rx.py``): credit release, returns, overrun."""

import dataclasses
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from rtl.config import BlockConfig
from rtl.tl.layout import upli_credit_layout, wr_rsp_layout
from rtl.tl.upli_rx import UpliReceiver
from sim import harness
from sim.streams import LayoutSink, random_pauses, reset
from sim.tl_env import PERIOD_NS

DEPTH = 6


@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """The one configuration built: a write-response channel of ``depth`` beats."""
    depth: int = DEPTH


class Sender:
    """A UPLI sender that counts the credits it is given and spends them (pool first)."""

    def __init__(self, dut, rng):
        self.dut, self.rng = dut, rng
        self.pool, self.vc = 0, [0, 0, 0, 0]
        self.init_done, self.sent, self.returned_pool = False, [], 0
        dut.vld.value = 0
        cocotb.start_soon(self._credits())

    async def _credits(self):
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            credit = upli_credit_layout.from_bits(int(self.dut.credit.value))
            if credit.vld & 1:
                n = int(credit.num[0]) + 1
                if credit.pool & 1:
                    self.pool += n
                    self.returned_pool += n
                else:
                    self.vc[int(credit.vc[0])] += n
            self.init_done = bool(credit.init_done & 1)

    def beat(self, force=False):
        """A random beat if a credit allows it (or ``force``); spends the credit."""
        vc = self.rng.randrange(4)
        if self.vc[vc]:
            self.vc[vc] -= 1
            pool = 0
        elif self.pool or force:
            self.pool -= 1
            pool = 1
        else:
            return None
        return {"vc": vc, "pool": pool, "tag": self.rng.randrange(1 << 11),
                "src_acc": self.rng.randrange(1024), "dst_acc": self.rng.randrange(1024),
                "status": self.rng.randrange(16)}

    async def drive(self, beat):
        self.dut.payload.value = wr_rsp_layout.const(beat).as_bits()
        self.dut.vld.value = 1
        self.sent.append(beat)
        await RisingEdge(self.dut.clk)
        self.dut.vld.value = 0


async def _start(dut):
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    sender = Sender(dut, rng)
    sink = LayoutSink(dut, "o", wr_rsp_layout, dut.clk, dut.rst)
    await reset(dut)
    while not sender.init_done:
        await RisingEdge(dut.clk)
    return rng, sender, sink


def _fields(view):
    return {name: int(getattr(view, name)) for name, _ in wr_rsp_layout}


@cocotb.test(timeout_time=200, timeout_unit="us")
async def upli_credits_balance(dut):
    """Released credits equal the depth; a sender that obeys them never overruns; every beat
    comes out once, in order; every credit comes back with the attributes it was spent with."""
    rng, sender, sink = await _start(dut)
    assert sender.pool == DEPTH and sender.vc == [0, 0, 0, 0]
    sink.set_backpressure(random_pauses(rng, 0.5))
    got = []
    for _ in range(300):
        beat = sender.beat() if rng.random() < 0.7 else None
        if beat:
            await sender.drive(beat)
        else:
            await RisingEdge(dut.clk)
        while not sink.empty():
            got.append(_fields(await sink.recv()))
    sink.set_backpressure(None)
    for _ in range(16):
        await RisingEdge(dut.clk)
    while not sink.empty():
        got.append(_fields(await sink.recv()))
    assert got == sender.sent
    assert int(dut.overrun.value) == 0
    # pool credits spent come back as pool credits; VC credits were never released
    assert sender.pool == DEPTH and sender.vc == [0, 0, 0, 0]


@cocotb.test(timeout_time=200, timeout_unit="us")
async def upli_overrun_counted(dut):
    """Beats beyond the credits are counted and dropped; the buffered ones still come out."""
    rng, sender, sink = await _start(dut)
    sink.set_backpressure(random_pauses(rng, 1.0))
    for _ in range(DEPTH + 3):
        await sender.drive(sender.beat(force=True))
    for _ in range(4):
        await RisingEdge(dut.clk)
    assert int(dut.overrun.value) == 3
    sink.set_backpressure(None)
    for _ in range(DEPTH + 8):
        await RisingEdge(dut.clk)
    got = []
    while not sink.empty():
        got.append(_fields(await sink.recv()))
    assert got == sender.sent[:DEPTH]


def test_upli_receiver():
    config = _Config()
    harness.run(UpliReceiver(wr_rsp_layout, config.depth), config, toplevel="upli_rx",
                test_module="tb.test_tl_upli")


def test_upli_receiver_rejects_depth():
    with pytest.raises(ValueError, match="depth"):
        UpliReceiver(wr_rsp_layout, 0)
