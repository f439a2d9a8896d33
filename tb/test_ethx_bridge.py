"""System tests of two ETH-X bridges (sim/ethx_pair.py) joined by an Ethernet channel model:
AxiMasters on both GPUs' ports, AxiRams as both memories, random traffic both ways at once,
the release litmus, every frame decodable by the golden model."""

import cocotb
import pytest

from rtl.ethx.config import EthxConfig
from sim import harness
from sim.ethx_litmus import release_litmus
from sim.ethx_pair import EthxPair
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
    """Message passing (sim/ethx_litmus.py): whenever B's memory shows the flag written with
    release, it shows the data written before it; 100 rounds."""
    tb = PairEnv(dut, delay=40)
    await tb.reset()
    stale = await release_litmus(tb, 100)
    assert not stale, f"rounds that saw the flag before the data: {stale}"
    tb.check_frames()


CONFIGS = [EthxConfig(sources=4), EthxConfig(sources=4, eth_width=8, data_width=128, proxy=True)]


@pytest.mark.parametrize("config", CONFIGS, ids=EthxConfig.slug)
def test_bridge(config):
    harness.run(EthxPair(config), config, toplevel="ethx_pair", test_module="tb.test_ethx_bridge")
