# SPDX-License-Identifier: BSD-2-Clause
"""Data half-flits between the TL packer's data producer and its emitter: whole beats in,
one or two half-flits out per clock, realigned by a carry of at most two."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...skid import SkidBuffer
from ..layout import HALF_BITS

__all__ = ["ITEM_HALVES", "HalfAligner", "half_item", "half_layout"]

#: One data half-flit; ``msg`` set for a Poisoned Data message.
half_layout = data.StructLayout({"data": HALF_BITS, "msg": 1})

#: Half-flits of one item at most: a data beat's two halves and the byte-enable half-flit
#: that follows a request's last beat.
ITEM_HALVES = 3

#: What the data producer hands on per clock: ``count`` half-flits (1 .. 3), oldest first.
half_item = data.StructLayout({
    "count": range(ITEM_HALVES + 1),
    "halves": data.ArrayLayout(half_layout, ITEM_HALVES),
})


class HalfAligner(wiring.Component):
    """Items of one to three half-flits in, the next one or two half-flits out, in order.

    Parameters
    ----------
    strobe : bool
        The compact packer's form. ``avail`` is a register of its own (the slot packer keeps
        the gates, which ABC maps 1.8 k LUT4 smaller there at the same clock), and a read is
        ``take`` half-flits when ``go`` is set, none otherwise (``take`` is then not looked
        at), so that the reader's late ``go`` reaches each carry register through one LUT:
        the carry's next values for a read and for none are formed from registers and
        ``take`` beside it.

    Members
    -------
    i : In(stream.Signature(half_item))
        Items, ``count`` at least 1. ``ready`` is registered (a two-entry
        :class:`~scaleup_ip.skid.SkidBuffer` takes them).
    halves : Out(ArrayLayout(half_layout, 2))
        The next two half-flits in order (valid as ``avail`` says).
    avail : Out(range(3))
        How many of ``halves`` are valid: ``min(2, carried + count of the oldest item)``;
        from registers through a few gates, or with ``strobe`` a register, worked
        out at the end of the clock before from ``take`` and the item counts of the buffer
        kept beside it, so that the reader's choice starts from a flop.
    take : In(range(3))
        Half-flits read this clock; at most ``avail``. With ``strobe``: half-flits a read
        takes; at most ``avail`` when ``go`` is set.
    go : In(1)
        With ``strobe`` only: a read this clock.

    The half-flits of an item left after a read (at most two: a three-half-flit item read one
    half-flit after another's last) are carried in registers; the oldest item is read only
    when the carry does not cover ``take``, and an item of one half-flit moves into an empty
    carry by itself. So whenever two half-flits are held, ``avail`` is 2 by the next clock.
    Nothing the reader sees depends on this clock's ``i``, and ``take`` reaches no wide
    register enable but the carry's.

    Latency: an item accepted at clock ``t`` is readable from ``t + 1``. Throughput: one item
    in per clock, two half-flits out per clock while the items hold two or more. Overflow:
    ``i.ready`` falls while two items wait; a take beyond ``avail`` is not allowed (not
    checked).
    """

    def __init__(self, strobe=False):
        self._strobe = strobe
        ports = {
            "i": In(stream.Signature(half_item)),
            "halves": Out(data.ArrayLayout(half_layout, 2)),
            "avail": Out(range(3)),
            "take": In(range(3)),
        }
        if strobe:
            ports["go"] = In(1)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        m.submodules.skid = skid = SkidBuffer(half_item)
        wiring.connect(m, wiring.flipped(self.i), skid.i)
        item, ready = skid.o.payload, skid.o.valid
        carry = [Signal(half_layout, name=f"carry{k}") for k in range(2)]
        carried = Signal(range(3))
        if self._strobe:
            self._show(m, item, carry, carried)
            self._strobed(m, skid, carry, carried)
            return m
        # ``avail`` = min(2, carried + the oldest item's count), by cases (no adder on the
        # reader's way to ``take``).
        one = ready & (item.count == 1)
        more = ready & (item.count > 1)
        m.d.comb += self.avail.eq(Mux((carried == 2) | more | ((carried == 1) & one), 2,
                                      Mux((carried == 1) | one, 1, 0)))
        self._show(m, item, carry, carried)
        used = Signal(range(3))          # half-flits read from the item
        with m.If(self.take <= carried):
            m.d.sync += carried.eq(carried - self.take)
            with m.If(self.take == 1):
                m.d.sync += carry[0].eq(carry[1])
            # An item of one half-flit with nothing carried goes into the carry, so that the
            # next clock shows it with the item behind it (a reader that waits for two would
            # otherwise wait for ever).
            with m.If((self.take == carried) & ready & (item.count == 1)):
                m.d.comb += skid.o.ready.eq(1)
                m.d.sync += [carry[0].eq(item.halves[0]), carried.eq(1)]
        with m.Else():
            m.d.comb += [used.eq(self.take - carried), skid.o.ready.eq(1)]
            m.d.sync += [
                carried.eq(item.count - used),
                carry[0].eq(Mux(used == 1, item.halves[1], item.halves[2])),
                carry[1].eq(item.halves[2]),
            ]
        return m

    def _show(self, m, item, carry, carried):
        """``halves``: the carried half-flits, then the oldest item's."""
        m.d.comb += [
            self.halves[0].eq(Mux(carried != 0, carry[0], item.halves[0])),
            self.halves[1].eq(Mux(carried == 2, carry[1],
                                  Mux(carried == 1, item.halves[0], item.halves[1]))),
        ]

    def _strobed(self, m, skid, carry, carried):
        """``strobe``: the next carry, ``carried`` and pop for a read of ``take`` and for
        none, each from registers and ``take``, chosen by ``go``."""
        item, one = skid.o.payload, skid.o.valid & (skid.o.payload.count == 1)
        keep = {"keep": 1}
        # ``carry[1]`` is read only while two half-flits are carried, and then a read of
        # one or two leaves at most one: it holds while two are carried and takes the
        # item's third half-flit otherwise, read or not (``go`` does not reach it).
        m.d.sync += carry[1].eq(Mux(carried == 2, carry[1], item.halves[2]))
        # No read: a lone half-flit moves into an empty carry.
        stay_pop = Signal()
        stay_carry = Signal(half_layout, attrs=keep)
        m.d.comb += [stay_pop.eq((carried == 0) & one),
                     stay_carry.eq(Mux(stay_pop, item.halves[0], carry[0]))]
        # A read of ``take``.
        take = self.take
        used = Signal(range(3))
        read_pop = Signal()
        read_carried = Signal(range(3))
        read_carry = Signal(half_layout, attrs=keep)
        with m.If(take <= carried):
            m.d.comb += [read_pop.eq((take == carried) & one),
                         read_carried.eq(Mux(read_pop, 1, carried - take)),
                         read_carry.eq(Mux(read_pop, item.halves[0],
                                           Mux(take == 1, carry[1], carry[0])))]
        with m.Else():
            m.d.comb += [used.eq(take - carried), read_pop.eq(1),
                         read_carried.eq(item.count - used),
                         read_carry.eq(Mux(used == 1, item.halves[1], item.halves[2]))]
        go = self.go
        carried_next = Signal(range(3))
        m.d.comb += [skid.o.ready.eq(Mux(go, read_pop, stay_pop)),
                     carried_next.eq(Mux(go, read_carried, Mux(stay_pop, 1, carried)))]
        m.d.sync += [carry[0].eq(Mux(go, read_carry, stay_carry)), carried.eq(carried_next)]
        self._avail(m, skid, carried_next)

    def _avail(self, m, skid, carried_next):
        """``avail`` as a register: ``min(2, carried + the oldest item's count)`` of the next
        clock, from the counts of the buffer's items kept beside it (0: no item)."""
        counts = [Signal(range(ITEM_HALVES + 1), name=f"count{k}") for k in range(2)]
        push = skid.i.valid & skid.i.ready
        pop = skid.o.valid & skid.o.ready
        new = self.i.payload.count
        after = [Signal.like(c, name=f"count{k}_next") for k, c in enumerate(counts)]
        m.d.comb += [after[0].eq(counts[0]), after[1].eq(counts[1])]
        with m.If(pop):
            m.d.comb += [after[0].eq(Mux(counts[1] != 0, counts[1], Mux(push, new, 0))),
                         after[1].eq(Mux(push & (counts[1] != 0), new, 0))]
        with m.Elif(push):
            with m.If(counts[0] == 0):
                m.d.comb += after[0].eq(new)
            with m.Else():
                m.d.comb += after[1].eq(new)
        total = carried_next + after[0]
        m.d.sync += [counts[0].eq(after[0]), counts[1].eq(after[1]),
                     self.avail.eq(Mux(total > 2, 2, total))]
