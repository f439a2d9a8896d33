# SPDX-License-Identifier: BSD-2-Clause
"""Wrap one block so that all its ports are registered and none needs a pin."""

from amaranth import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["BlockHarness"]

#: Bits XORed together per register of the output reduction tree: one LUT4 each.
_FAN_IN = 4


class BlockHarness(wiring.Component):
    """Drive every input of ``block`` from a shift register and fold every output into one bit.

    A chain of flops, one per input bit of the block, shifts in ``din``; each block input reads
    its own slice of the chain. Every block output is captured in a flop; those flops and the
    end of the chain are XOR-reduced in a tree of registers, :data:`_FAN_IN` bits per node, into
    ``dout``. So nothing of the block is constant or unobserved (nothing is optimized away), every
    path into and out of it is a flop-to-flop path of its own clock, and the pin count of the
    package limits nothing. The harness's own cost is exactly :attr:`wrapper_ffs` flops and
    :attr:`wrapper_luts` LUT4s (the tree); the chain flops need no LUT.

    Parameters
    ----------
    block : wiring.Component
        Any component whose ports all belong to the ``sync`` domain.

    Members
    -------
    din : ``In(1)``
        Serial input; connect it to a pin.
    dout : ``Out(1)``
        Registered XOR of everything the block outputs; connect it to a pin.
    """

    def __init__(self, block):
        self._block = block
        ports = [(member.flow, Value.cast(value))
                 for _, member, value in block.signature.flatten(block)]
        self._inputs = [value for flow, value in ports if flow == In]
        self._outputs = [value for flow, value in ports if flow == Out]
        self.in_bits = sum(len(v) for v in self._inputs)
        self.out_bits = sum(len(v) for v in self._outputs)
        self._levels = _tree_levels(self.out_bits + 1)
        super().__init__({"din": In(1), "dout": Out(1)})

    @property
    def wrapper_ffs(self):
        """Flops of the harness: the chain, the captures and the tree (``dout`` included)."""
        return self.in_bits + self.out_bits + sum(self._levels)

    @property
    def wrapper_luts(self):
        """LUT4s of the harness: one per tree node that XORs two bits or more."""
        widths = [self.out_bits + 1, *self._levels]
        return sum(w // _FAN_IN + (w % _FAN_IN > 1) for w in widths[:-1])

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = self._block
        chain = Signal(max(self.in_bits, 1))
        m.d.sync += chain.eq(Cat(self.din, chain[:-1]))
        offset = 0
        for value in self._inputs:
            m.d.comb += value.eq(chain[offset:offset + len(value)])
            offset += len(value)
        captured = Signal(self.out_bits)
        m.d.sync += captured.eq(Cat(*self._outputs))
        bits = [*captured, chain[-1]]
        for level, width in enumerate(self._levels):
            node = Signal(width, name=f"xor{level}")
            m.d.sync += node.eq(Cat(*(Cat(*bits[k:k + _FAN_IN]).xor()
                                      for k in range(0, len(bits), _FAN_IN))))
            bits = list(node)
        m.d.comb += self.dout.eq(bits[0])
        return m


def _tree_levels(width):
    """Register widths of each level of the reduction of ``width`` bits down to one."""
    levels = []
    while not levels or levels[-1] > 1:
        width = -(-width // _FAN_IN)
        levels.append(width)
    return levels
