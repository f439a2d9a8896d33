"""The lossy ETH-X system with its AXI traffic and memories in hardware
(sim/ethx_lossy_traffic.py, sim/ethx_long.py): bursts both ways while the channels lose and
corrupt frames, every burst read back and checked in hardware, both memories compared word by
word at the end; and the checks themselves seen to fail on a corrupted memory."""

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from rtl.ethx.config import EthxConfig
from sim import harness
from sim.ethx_long import LongEnv
from sim.ethx_lossy_traffic import RAM_WORDS_LOG2, EthxLossyTraffic
from sim.ethx_pair import NODES

#: Frames the bridges receive in the lossy run.
FRAMES = 20_000


@cocotb.test(timeout_time=2000, timeout_unit="ms")
async def hardware_traffic_lossy(dut):
    """Frames lost at 1e-3 and bits flipped at 1e-6 both ways, ACKs, NACKs and credit updates
    too: every burst once, in order and right, both memories as the model says."""
    tb = LongEnv(dut)
    await tb.reset()
    tb.lossy_both(fer=1e-3, ber=1e-6)
    await tb.run(FRAMES)
    dut._log.info("generators %s", {e: tb.generator(e) for e in NODES})
    assert tb.frames() >= FRAMES
    assert sum(tb.wire_counts(e)["dropped"] for e in NODES) > 0
    await tb.check()


@cocotb.test(timeout_time=500, timeout_unit="ms")
async def corruption_is_seen(dut):
    """The checks fail when they should: a word of b's memory overwritten behind the bridge
    after a's traffic is the one row the comparison finds wrong; words overwritten while a's
    bursts go on are read back wrong (the generator counts them)."""
    tb = LongEnv(dut)
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


async def _poke(tb, row):
    """Row ``row`` of b's memory overwritten with a random word, behind the bridge."""
    tb.set("b", ram_poke=1, ram_poke_addr=row,
           ram_poke_data=tb.rng.getrandbits(tb.config.data_width))
    await RisingEdge(tb.dut.clk)
    tb.set("b", ram_poke=0)


CONFIG = EthxConfig(sources=4, fcs=False, timeout=0)


def test_long():
    harness.run(EthxLossyTraffic(CONFIG), CONFIG, toplevel="ethx_lossy_traffic",
                test_module="tb.test_ethx_long")
