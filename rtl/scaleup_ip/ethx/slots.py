# SPDX-License-Identifier: BSD-2-Clause
"""The outstanding-transaction slots the requesting side's reads and writes each keep."""

from amaranth import Array, Cat, Signal

from .layout import NODE_BITS

__all__ = ["Slots"]


class Slots:
    """``count`` slots, each with its ``live`` bit, the AXI ID and the destination of the
    transaction that holds it (README §5: the slot number is the record's ``id``)."""

    def __init__(self, count, id_width):
        self.count = count
        self.live = Signal(count)
        self.ids = Array(Signal(id_width, name=f"id{k}") for k in range(count))
        self.dests = Array(Signal(NODE_BITS, name=f"dest{k}") for k in range(count))

    def admit(self, m, axid, node, local):
        """For a request of AXI ID ``axid`` to ``node``, answered by the bridge when ``local``:
        whether it must wait for its ID's other destination (AXI order: an ID has outstanding
        requests to one destination at a time, and a local answer waits for all of them), the
        first free slot and whether there is one."""
        same = Cat(self.live[k] & (self.ids[k] == axid) for k in range(self.count))
        waits = Cat(same[k] & (local | (self.dests[k] != node))
                    for k in range(self.count)) != 0
        free = Signal(range(self.count))
        for k in reversed(range(self.count)):
            with m.If(~self.live[k]):
                m.d.comb += free.eq(k)
        return waits, free, ~self.live != 0

    def take(self, m, slot, axid, node):
        """Statements that give ``slot`` to a request."""
        return [self.live.bit_select(slot, 1).eq(1), self.ids[slot].eq(axid),
                self.dests[slot].eq(node)]

    def expects(self, slot, node):
        """Whether a response for ``slot`` from ``node`` answers a live transaction."""
        return self.live.bit_select(slot, 1) & (self.dests[slot] == node)
