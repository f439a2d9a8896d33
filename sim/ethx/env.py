# SPDX-License-Identifier: BSD-2-Clause
"""What the ETH-X bridge's cocotb tests share: configuration, seeded randomness, clock, reset,
counter reading, and the hardware configurations the framing blocks are tested in."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotb.utils import get_sim_time

from scaleup_ip.ethx import EthxConfig
from sim.streams import reset

__all__ = ["CLOCK_NS", "FRAMING_CONFIGS", "EthxEnv", "clocks_until", "cycle", "words_of"]

#: The clock period of every ETH-X test.
CLOCK_NS = 2

#: The framing blocks' configurations: each Ethernet width class, and no FCS with one frame.
FRAMING_CONFIGS = [
    EthxConfig(eth_width=8),
    EthxConfig(eth_width=64),
    EthxConfig(eth_width=512),
    EthxConfig(eth_width=64, fcs=False, tx_frames=1),
]


def cycle():
    """Clocks since the simulation began."""
    return int(get_sim_time("ns")) // CLOCK_NS


async def clocks_until(clk, *tasks, step=1):
    """Clocks of ``clk`` (counted ``step`` at a time) until every task of ``tasks`` is done,
    and the result of the first."""
    clocks = 0
    while not all(task.done() for task in tasks):
        await ClockCycles(clk, step)
        clocks += step
    return clocks, tasks[0].result()


def words_of(data):
    """Little-endian 8-byte words of ``data`` (a whole number of them)."""
    return [int.from_bytes(data[k:k + 8], "little") for k in range(0, len(data), 8)]


class EthxEnv:
    """The configuration the harness passed, a generator seeded by cocotb's seed, a 2 ns clock."""

    #: The configuration class the harness passed (the link's blocks use another).
    config_class = EthxConfig

    def __init__(self, dut):
        self.dut = dut
        self.config = self.config_class.from_env()
        self.rng = random.Random(cocotb.RANDOM_SEED)
        Clock(dut.clk, CLOCK_NS, unit="ns").start()

    async def reset(self):
        await reset(self.dut)

    def set(self, prefix, **levels):
        """Each input ``<prefix>_<name>`` of the top set to its value."""
        for name, value in levels.items():
            getattr(self.dut, f"{prefix}_{name}").value = value

    def get(self, prefix, name):
        """The top's port ``<prefix>_<name>``, unsigned."""
        return int(getattr(self.dut, f"{prefix}_{name}").value)

    def counts(self, kinds, port="counts"):
        """A counters port (32 bits a counter) read as a dict by counter kind."""
        value = getattr(self.dut, port).value.to_unsigned()
        return {k: value >> (32 * k) & 0xFFFF_FFFF for k in kinds}
