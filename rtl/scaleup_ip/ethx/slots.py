# SPDX-License-Identifier: BSD-2-Clause
"""The outstanding-transaction slots the requesting side's reads and writes each keep."""

from amaranth import Array, Cat, Const, Mux, Signal

from ..select import lowest_set
from .layout import NODE_BITS

__all__ = ["Slots", "TIMEOUT_TICKS", "gen_bits", "slot_bits"]

#: A slot expires on its ninth tick of ``completion_timeout / 8`` clocks [ours, README §5].
TIMEOUT_TICKS = 9


def slot_bits(count):
    """Bits of a record ``id`` that name one of ``count`` slots (its low bits)."""
    return max(1, (count - 1).bit_length())


def gen_bits(count):
    """Bits of a record ``id`` above the slot: the slot's generation."""
    return 8 - slot_bits(count)


class Slots:
    """``count`` slots, each with its ``live`` bit, the AXI ID and the destination of the
    transaction that holds it (README §5: the record's ``id`` is the slot number and the
    slot's generation above it), its place in its AXI ID's order, and its age.

    Order: the live slots of one AXI ID form a queue (``head``, ``tail``, ``next``); only the
    head takes a response or expires, so an ID's answers, and its timeouts, keep AXI order.
    Age: a tick every ``ceil(timeout / 8)`` clocks ages each slot in ``aging``; a head that
    has seen :data:`TIMEOUT_TICKS` ticks is ``due``: between ``timeout`` and
    ``1.125 · timeout + 9`` clocks after it began aging. ``timeout`` 0: nothing expires.
    The generation advances when a slot expires, so a late answer names a generation that
    is no longer the slot's.
    """

    def __init__(self, count, id_width, timeout):
        self.count = count
        self.slot_bits = slot_bits(count)
        self.gen_bits = gen_bits(count)
        self.timeout = timeout
        self.live = Signal(count)
        self.ids = Array(Signal(id_width, name=f"id{k}") for k in range(count))
        self.dests = Array(Signal(NODE_BITS, name=f"dest{k}") for k in range(count))
        self.gens = Array(Signal(self.gen_bits, name=f"gen{k}") for k in range(count))
        self.nexts = Array(Signal(self.slot_bits, name=f"next{k}") for k in range(count))
        self.head = Signal(count)
        self.tail = Signal(count)
        self.ages = [Signal(range(TIMEOUT_TICKS + 1), name=f"age{k}") for k in range(count)]
        self._freed = Signal(count)         # the slot freed this clock
        self._same = Signal(count)

    def admit(self, m, axid, node, local):
        """For a request of AXI ID ``axid`` to ``node``, answered by the bridge when ``local``:
        whether it must wait for its ID's other destination (AXI order: an ID has outstanding
        requests to one destination at a time, and a local answer waits for all of them), the
        first free slot and whether there is one."""
        m.d.comb += self._same.eq(Cat(self.live[k] & (self.ids[k] == axid)
                                      for k in range(self.count)))
        waits = Cat(self._same[k] & (local | (self.dests[k] != node))
                    for k in range(self.count)) != 0
        return waits, lowest_set(m, ~self.live, self.count, "free"), ~self.live != 0

    def take(self, m, slot, axid, node):
        """Give ``slot`` to a request of ``axid`` (the one :meth:`admit` was asked about): it
        joins the tail of its ID's queue (a slot freed in the same clock is not in it)."""
        same_tail = self._same & self.tail & ~self._freed
        first = same_tail == 0
        m.d.sync += [self.live.bit_select(slot, 1).eq(1), self.ids[slot].eq(axid),
                     self.dests[slot].eq(node), self.head.bit_select(slot, 1).eq(first),
                     self.tail.bit_select(slot, 1).eq(1)]
        for k in range(self.count):
            with m.If(same_tail[k]):
                m.d.sync += [self.nexts[k].eq(slot), self.tail[k].eq(0)]
        for k, age in enumerate(self.ages):
            with m.If(slot == k):
                m.d.sync += age.eq(0)

    def free(self, m, slot, *, expired=False):
        """Free ``slot`` (a head): the next of its ID becomes the head. ``expired``: its
        generation advances."""
        m.d.comb += self._freed.bit_select(slot, 1).eq(1)
        m.d.sync += [self.live.bit_select(slot, 1).eq(0), self.head.bit_select(slot, 1).eq(0)]
        with m.If(~self.tail.bit_select(slot, 1)):
            m.d.sync += self.head.bit_select(self.nexts[slot], 1).eq(1)
        if expired:
            m.d.sync += self.gens[slot].eq(self.gens[slot] + 1)

    def record_id(self, slot, gen=None):
        """The record ``id`` of a request in ``slot``: the slot and its generation (the
        slot's now, or ``gen``)."""
        return Cat(slot[:self.slot_bits], self.gens[slot] if gen is None else gen)

    def split(self, record_id):
        """The slot and generation a response's ``id`` names."""
        return record_id[:self.slot_bits], record_id[self.slot_bits:8]

    def answers(self, record_id, node):
        """For a response of ``record_id`` from ``node``: its slot, whether it answers that
        slot's live head from ``node`` in its current generation, and whether it names an
        earlier generation (a late answer to an expired request)."""
        slot, gen = self.split(record_id)
        exists = slot < self.count if self.count < (1 << self.slot_bits) else Const(1)
        current = gen == self.gens[slot]
        ok = exists & current & self.live.bit_select(slot, 1) & self.head.bit_select(slot, 1) \
            & (self.dests[slot] == node)
        return slot, ok, exists & ~current

    def aging(self, m, aging):
        """Ages the slots in ``aging`` (a mask) and returns ``(due, slot)``: a head that has
        timed out, the lowest-numbered one."""
        if not self.timeout:
            return Const(0), Const(0, range(self.count))
        due = Signal(self.count)
        period = -(-self.timeout // 8)
        prescale = Signal(range(period))
        tick = prescale == period - 1
        m.d.sync += prescale.eq(Mux(tick, 0, prescale + 1))
        for k, age in enumerate(self.ages):
            with m.If(tick & aging[k] & (age != TIMEOUT_TICKS)):
                m.d.sync += age.eq(age + 1)
            m.d.comb += due[k].eq(self.live[k] & self.head[k] & (age == TIMEOUT_TICKS))
        return due != 0, lowest_set(m, due, self.count, "due_slot")
