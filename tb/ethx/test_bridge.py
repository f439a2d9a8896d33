# SPDX-License-Identifier: BSD-2-Clause
"""System tests of two ETH-X bridges (sim/ethx/pair.py) joined by an Ethernet channel model:
AxiMasters on both GPUs' ports, AxiRams as both memories, random traffic both ways at once,
the release litmus, every frame decodable by the golden model."""

import os

import cocotb
import pytest

from scaleup_ip.ethx import EthxConfig
from sim import harness
from sim.ethx.litmus import message_passing, release_litmus
from sim.ethx.pair import EthxPair
from sim.ethx.pair_env import PairEnv

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
    """Message passing (sim/ethx/litmus.py): whenever B's memory shows the flag written with
    release, it shows the data written before it; RELEASE_ROUNDS rounds."""
    tb = PairEnv(dut, delay=40)
    await tb.reset()
    stale = await release_litmus(tb, int(os.environ.get("RELEASE_ROUNDS", "100")))
    assert not stale, f"rounds that saw the flag before the data: {stale}"
    tb.check_frames()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def bridge_message_passing(dut):
    """Release and acquire (sim/ethx/litmus.py): the consumer's data read reaches B's memory
    only after its acquire of the flag is back, and never reads data older than the flag;
    MP_ROUNDS rounds of the producer."""
    tb = PairEnv(dut, delay=40, quiet=True)
    await tb.reset()
    rounds = int(os.environ.get("MP_ROUNDS", "1000"))
    reads, seen, failures = await message_passing(tb, rounds)
    dut._log.info(f"message passing: {rounds} rounds, {reads} reads, {seen} flag values seen")
    assert not failures, failures[:10]
    assert seen > rounds // 4, f"the consumer saw only {seen} of {rounds} flag values"
    tb.check_frames()
    tb.check_no_errors()


#: Configurations, each with its rounds of message passing (about 4 ms of simulation a thousand):
#: the longer counts are the long forms (``make soak``).
CONFIGS = [(EthxConfig(sources=4), harness.long_form(100, 1000)),
           (EthxConfig(sources=4, eth_width=8, data_width=128, proxy=True),
            harness.long_form(50, 200))]

#: Rounds of the release litmus, each configuration (the long form's at ``make soak``).
RELEASE_ROUNDS = harness.long_form(40, 100)


@pytest.mark.soak
@pytest.mark.parametrize("config,rounds", CONFIGS, ids=[c.slug() for c, _ in CONFIGS])
def test_bridge(config, rounds):
    harness.run(EthxPair(config), config, toplevel="ethx_pair", test_module=__name__,
                extra_env={"MP_ROUNDS": str(rounds), "RELEASE_ROUNDS": str(RELEASE_ROUNDS)})
