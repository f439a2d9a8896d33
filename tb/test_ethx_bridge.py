"""System tests of two ETH-X bridges (sim/ethx_pair.py) joined by an Ethernet channel model:
AxiMasters on both GPUs' ports, AxiRams as both memories, random traffic both ways at once,
the release litmus, every frame decodable by the golden model."""

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiResp

from rtl.ethx.config import EthxConfig
from sim import harness
from sim.ethx_pair import NODES, EthxPair
from sim.ethx_pair_env import PairEnv

TIMEOUT_US = 20000


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def bridge_random_both_ways(dut):
    """Random reads and writes of every burst type and size, several at once from both GPUs
    to the other node's memory, with AXI IDs shared among them."""
    tb = PairEnv(dut)
    await tb.reset()
    await tb.traffic(25)
    tb.check_frames()
    tb.check_no_errors()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def bridge_release_litmus(dut):
    """Message passing: A writes data to B's memory (relaxed, several IDs), then a flag
    (release). Whenever B's memory shows the flag, it shows the data: repeated 100 times."""
    tb = PairEnv(dut, delay=40)
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
