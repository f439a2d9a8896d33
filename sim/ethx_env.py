"""What the ETH-X bridge's cocotb tests share: configuration, seeded randomness, clock, reset,
counter reading, and the hardware configurations the framing blocks are tested in."""

import random

import cocotb
from cocotb.clock import Clock

from rtl.ethx.config import EthxConfig
from sim.streams import reset

__all__ = ["FRAMING_CONFIGS", "EthxEnv", "words_of"]

#: The framing blocks' configurations: each Ethernet width class, and no FCS with one frame.
FRAMING_CONFIGS = [
    EthxConfig(eth_width=8),
    EthxConfig(eth_width=64),
    EthxConfig(eth_width=512),
    EthxConfig(eth_width=64, fcs=False, tx_frames=1),
]


def words_of(data):
    """Little-endian 8-byte words of ``data`` (a whole number of them)."""
    return [int.from_bytes(data[k:k + 8], "little") for k in range(0, len(data), 8)]


class EthxEnv:
    """The configuration the harness passed, a generator seeded by cocotb's seed, a 2 ns clock."""

    def __init__(self, dut):
        self.dut = dut
        self.config = EthxConfig.from_env()
        self.rng = random.Random(cocotb.RANDOM_SEED)
        Clock(dut.clk, 2, unit="ns").start()

    async def reset(self):
        await reset(self.dut)

    def counts(self, kinds, port="counts"):
        """A counters port (32 bits a counter) read as a dict by counter kind."""
        value = getattr(self.dut, port).value.to_unsigned()
        return {k: value >> (32 * k) & 0xFFFF_FFFF for k in kinds}
