# SPDX-License-Identifier: BSD-2-Clause
"""The ETH-X system with its AXI traffic, litmus and memories in hardware
(sim/ethx/traffic_system.py, sim/ethx/run.py): over lossless links, bursts both ways while the
channels lose and corrupt frames, then the message-passing litmus, every burst read back and
checked in hardware, both memories compared word by word at the end; the plain pair (bridges
framing Ethernet themselves) the same without losses; and the checks themselves seen to fail on
a corrupted memory and on a litmus without its release and acquire bits."""

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from scaleup_ip.ethx import EthxConfig
from sim import harness
import pytest

from sim.ethx.axi_litmus import DATA_OFFSET, mp_word
from sim.ethx.pair import NODES
from sim.ethx.run import TrafficEnv
from sim.ethx.traffic_system import RAM_WORDS_LOG2, EthxTrafficSystem, litmus_flag_at

#: Frames the bridges receive in the traffic runs (the long form's at ``make soak``), and
#: litmus rounds after them.
FRAMES, ROUNDS = harness.long_form(10_000, 20_000), 100


@cocotb.test(timeout_time=2000, timeout_unit="ms")
async def hardware_traffic(dut):
    """Over links: frames lost at 1e-3 and bits flipped at 1e-6 both ways, ACKs, NACKs and
    credit updates too; without: a clean wire. Every burst once, in order and right, the
    litmus's rounds all seen in order, both memories as the model says."""
    tb = TrafficEnv(dut)
    await tb.reset()
    if tb.links:
        tb.lossy_both(fer=1e-3, ber=1e-6)
    await tb.run(FRAMES)
    await tb.run_litmus(ROUNDS)
    dut._log.info("generators %s, litmus %s", {e: tb.generator(e) for e in NODES}, tb.litmus())
    assert tb.frames() >= FRAMES
    assert tb.litmus()["flags_seen"] > 1
    if tb.links:
        assert sum(tb.wire_counts(e)["dropped"] for e in NODES) > 0
    await tb.check()


@cocotb.test(timeout_time=500, timeout_unit="ms")
async def litmus_failures_are_seen(dut):
    """The litmus's checks fail when they should: without the release and acquire bits the
    data read passes the flag's (bad acquire); a data word set back to round 0 behind the
    bridge is stale; one with another word's index (and the newest round) is out of place
    (bad index)."""
    tb = TrafficEnv(dut)
    await tb.reset()
    tb.set("a", litmus_relaxed=1)
    await tb.start_litmus(40)
    await _wait_done(tb)
    litmus = tb.litmus()
    dut._log.info("relaxed: %s", litmus)
    assert litmus["bad_acquire"] > 0 and litmus["bad_index"] == 0, litmus
    tb.set("a", select=0, litmus_enable=0, litmus_relaxed=0)
    lanes = tb.config.bus_words
    row = (litmus_flag_at(tb.config) + DATA_OFFSET) // (8 * lanes) + 1   # the data's words
    wrong = {"stale": [mp_word(0, lanes + lane) for lane in range(lanes)],
             "bad_index": [mp_word(2**32 - 1, 3 * lanes + lane) for lane in range(lanes)]}
    for kind, words in wrong.items():
        await tb.reset()
        await tb.start_litmus(1000)
        while tb.litmus()["flags_seen"] < 2:
            await ClockCycles(dut.clk, 100)
        assert not tb.bad(), tb.litmus()
        value = sum(w << (64 * lane) for lane, w in enumerate(words))
        for _ in range(2000):
            await ClockCycles(dut.clk, tb.rng.randrange(1, 40))
            await _poke(tb, row, value)
            if tb.litmus()[kind]:
                break
        litmus = tb.litmus()
        dut._log.info("%s: %s", kind, litmus)
        assert litmus[kind] > 0, litmus
        assert litmus["stale" if kind == "bad_index" else "bad_index"] == 0, litmus
        tb.set("a", select=0, litmus_enable=0)


async def _wait_done(tb):
    for _ in range(1000):
        if tb.get("a", "litmus_done"):
            return
        await ClockCycles(tb.dut.clk, 100)
    raise AssertionError("the litmus did not finish")


@cocotb.test(timeout_time=500, timeout_unit="ms")
async def corruption_is_seen(dut):
    """The checks fail when they should: a word of b's memory overwritten behind the bridge
    after a's traffic is the one row the comparison finds wrong; words overwritten while a's
    bursts go on are read back wrong (the generator counts them)."""
    tb = TrafficEnv(dut)
    await tb.reset()
    tb.set("a", gen_enable=1)
    await ClockCycles(dut.clk, 5000)
    await tb.stop()
    assert tb.get("a", "gen_checked") > 0 and await tb.wrong_words("b") == []
    row = tb.rng.getrandbits(RAM_WORDS_LOG2)
    await _poke(tb, row)
    assert [w[0] for w in await tb.wrong_words("b")] == [row]
    tb.set("a", gen_enable=1)
    for _ in range(5000):
        await ClockCycles(dut.clk, tb.rng.randrange(1, 40))
        await _poke(tb, tb.rng.getrandbits(RAM_WORDS_LOG2))
        if tb.get("a", "gen_bad_data"):
            break
    assert tb.get("a", "gen_bad_data") > 0


async def _poke(tb, row, value=None):
    """Row ``row`` of b's memory overwritten with ``value`` (a random word by default),
    behind the bridge."""
    tb.set("b", ram_poke=1, ram_poke_addr=row,
           ram_poke_data=tb.rng.getrandbits(tb.config.data_width) if value is None else value)
    await RisingEdge(tb.dut.clk)
    tb.set("b", ram_poke=0)


#: Over links (the build of ``make sim``'s ``ethx_lossy`` and ``ethx_long``), and the plain
#: pair (``ethx``).
CONFIGS = {"links": EthxConfig(sources=4, fcs=False, timeout=0),
           "plain": EthxConfig(sources=4)}


#: Both run in ``make soak`` only (the regression's time budget: each is a two-minute build for
#: a quarter-minute run): ``make sim``'s ``ethx_lossy`` runs the links' scenario, the bridges and
#: links are in the regression through tb/ethx/test_bridge.py, test_lossy.py and link/.
@pytest.mark.parametrize("wire", [pytest.param(wire, marks=pytest.mark.soak_only)
                                  for wire in CONFIGS])
def test_traffic(wire):
    config = CONFIGS[wire]
    harness.run(EthxTrafficSystem(config), config, toplevel="ethx_traffic_system",
                test_module=__name__)
