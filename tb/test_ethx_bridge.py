"""System tests of two ETH-X bridges (sim/ethx_pair.py) joined by an Ethernet channel model:
AxiMasters on both GPUs' ports, AxiRams as both memories, random traffic both ways at once,
the release litmus, every frame decodable by the golden model."""

import cocotb
import pytest
from cocotb.queue import Queue
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiMaster, AxiRam, AxiResp

from rtl.ethx.config import EthxConfig
from rtl.ethx.layout import DeframerCount, ParseCount, eth_beat_layout, user_layout
from rtl.model import ethx as model
from sim import harness
from sim.ethx_env import EthxEnv
from sim.ethx_pair import NODES, EthxPair
from sim.streams import LayoutSink, LayoutSource, bytes_to_beats

TIMEOUT_US = 20000
SIZE = 1 << 20


class TB(EthxEnv):
    def __init__(self, dut, delay=20):
        super().__init__(dut)
        cfg = self.config
        self.gpu = {e: AxiMaster(AxiBus.from_prefix(dut, f"{e}_s_axi", bus_separator="__"),
                                 dut.clk, dut.rst) for e in NODES}
        self.ram = {e: AxiRam(AxiBus.from_prefix(dut, f"{e}_m_axi", bus_separator="__"),
                              dut.clk, dut.rst, size=SIZE) for e in NODES}
        for ram in self.ram.values():
            ram.write(0, self.rng.randbytes(SIZE))
        layout = eth_beat_layout(cfg.eth_width)
        self.frames = {e: [] for e in NODES}        # every frame each end sent
        self.delay = delay
        for src, dst in (("a", "b"), ("b", "a")):
            sink = LayoutSink(dut, f"{src}_tx", layout, dut.clk, dut.rst)
            source = LayoutSource(dut, f"{dst}_rx", layout, dut.clk, dut.rst)
            cocotb.start_soon(self.channel(src, sink, source))
        self.user = user_layout(cfg)

    async def channel(self, src, sink, source):
        """Frames from ``src`` to the other end, each ``delay`` clocks late, none lost."""
        queue = Queue()

        async def deliver():
            while True:
                when, frame = await queue.get()
                while self.cycle < when:
                    await RisingEdge(self.dut.clk)
                for beat in bytes_to_beats(frame, self.config.eth_bytes):
                    source.send_nowait(user=0, **beat)
        cocotb.start_soon(deliver())
        while True:
            frame = b""
            while True:
                beat = await sink.recv()
                keep = int(beat.keep)
                frame += int(beat.data).to_bytes(self.config.eth_bytes, "little")[:keep.bit_length()]
                if beat.last:
                    break
            self.frames[src].append(frame)
            await queue.put((self.cycle + self.delay, frame))

    @property
    def cycle(self):
        return int(cocotb.utils.get_sim_time("ns")) // 2

    def user_bits(self, dest, order=0):
        return self.user.const({"node": dest, "vc": 0, "order": order}).as_bits()

    def check_no_errors(self):
        """No end dropped a frame or a record, or refused a request."""
        for e in NODES:
            for port, kinds in ((f"{e}_counts_deframer", DeframerCount),
                                (f"{e}_counts_parse", ParseCount)):
                counts = self.counts(kinds, port)
                bad = {k.name: v for k, v in counts.items()
                       if v and k not in (DeframerCount.FRAMES, ParseCount.REQUESTS,
                                          ParseCount.RESPONSES)}
                assert not bad, f"{port}: {bad}"

    def check_frames(self):
        """Every frame each end sent is a good frame of the golden model's format."""
        for src, frames in self.frames.items():
            dst = NODES["b" if src == "a" else "a"]
            states = {}
            for frame in frames:
                decoded = model.decode_frame(frame, dst, states, fcs=self.config.fcs,
                                             mtu=self.config.mtu)
                assert isinstance(decoded, model.Decoded) and decoded.error is None, decoded
                assert decoded.src == NODES[src]
                assert not any(getattr(r, "stale", False) for r in decoded.records)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def bridge_random_both_ways(dut):
    """Random reads and writes from both GPUs to the other node's memory at once."""
    tb = TB(dut)
    await tb.reset()
    bus = tb.config.data_width // 8
    expect = {e: bytearray(tb.ram[e].read(0, SIZE)) for e in NODES}

    async def traffic(end, other, count):
        mem = expect[other]
        for k in range(count):
            size = tb.rng.randrange(bus.bit_length())
            length = tb.rng.choice([1, 8, 64, 128, tb.rng.randrange(1, 2500)])
            addr = 0x10000 * (1 + (end == "b")) + 0x1000 * (k % 8) + tb.rng.randrange(0x100)
            user = tb.user_bits(NODES[other])
            if tb.rng.random() < 0.5:
                data = tb.rng.randbytes(length)
                result = await tb.gpu[end].write(addr, data, awid=tb.rng.randrange(4), size=size,
                                                 user=user)
                assert result.resp == AxiResp.OKAY
                mem[addr:addr + length] = data
            else:
                result = await tb.gpu[end].read(addr, length, arid=tb.rng.randrange(4),
                                                size=size, user=user)
                assert result.resp == AxiResp.OKAY
                assert result.data == bytes(mem[addr:addr + length]), f"{end} read {k}"
    tasks = [cocotb.start_soon(traffic(e, o, 40)) for e, o in (("a", "b"), ("b", "a"))]
    for task in tasks:
        await task
    for _ in range(100):                # with write proxy, writes land after their B
        await ClockCycles(dut.clk, 200)
        if all(tb.ram[e].read(0, SIZE) == bytes(expect[e]) for e in NODES):
            break
    for e in NODES:
        assert tb.ram[e].read(0, SIZE) == bytes(expect[e]), f"memory of {e}"
    tb.check_frames()
    tb.check_no_errors()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def bridge_release_litmus(dut):
    """Message passing: A writes data to B's memory (relaxed, several IDs), then a flag
    (release). Whenever B's memory shows the flag, it shows the data: repeated 100 times."""
    tb = TB(dut, delay=40)
    await tb.reset()
    flag_at, data_at = 0x8000, 0x9000
    b_mem = tb.ram["b"]
    stale = []

    async def watch(round_, data):
        while b_mem.read(flag_at, 4) != round_.to_bytes(4, "little"):
            await RisingEdge(dut.clk)
        if b_mem.read(data_at, len(data)) != data:
            stale.append(round_)

    for round_ in range(1, 101):
        data = tb.rng.randbytes(tb.rng.choice([64, 256, 1024]))
        watcher = cocotb.start_soon(watch(round_, data))
        # Queued in this order (init_write keeps the order of the calls).
        writes = [tb.gpu["a"].init_write(data_at + 64 * k, data[64 * k:64 * k + 64],
                                         awid=k % 4, user=tb.user_bits(2))
                  for k in range(len(data) // 64)]
        flag = tb.gpu["a"].init_write(flag_at, round_.to_bytes(4, "little"), awid=3,
                                      user=tb.user_bits(2, order=1))
        for event in writes + [flag]:
            await event.wait()
            assert event.data.resp == AxiResp.OKAY
        await watcher
    assert not stale, f"rounds that saw the flag before the data: {stale}"
    tb.check_frames()


CONFIGS = [EthxConfig(sources=4), EthxConfig(sources=4, eth_width=8, data_width=128, proxy=True)]


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_bridge(config):
    harness.run(EthxPair(config), config, toplevel="ethx_pair", test_module="tb.test_ethx_bridge")
