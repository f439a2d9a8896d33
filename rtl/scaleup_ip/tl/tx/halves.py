# SPDX-License-Identifier: BSD-2-Clause
"""A queue of ready-made data half-flits between the TL packer's data producer and its emitter."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..layout import HALF_BITS

__all__ = ["HALF_QUEUE_DEPTH", "PUSH_MAX", "HalfQueue", "half_layout"]

#: One data half-flit; ``msg`` set for a Poisoned Data message.
half_layout = data.StructLayout({"data": HALF_BITS, "msg": 1})

#: Half-flits written per clock at most: a data beat's two halves and the byte-enable half-flit
#: that follows a request's last beat.
PUSH_MAX = 3

#: Half-flits held. Writing is allowed while at most ``HALF_QUEUE_DEPTH - PUSH_MAX`` are held,
#: so that the writer never looks at what the reader takes in the same clock. Eight keep two
#: halves ready in every clock of a stream of beats although a half-flit is seen only the
#: clock after it is written (a power of two keeps the pointers plain).
HALF_QUEUE_DEPTH = 8


class HalfQueue(wiring.Component):
    """Data half-flits in order: up to three in, up to two out per clock, all in registers.

    Members
    -------
    push : In(range(PUSH_MAX + 1))
        Half-flits written this clock, from ``push_data[0]`` on. Only while ``space``.
    push_data : In(ArrayLayout(half_layout, PUSH_MAX))
        The half-flits written, oldest first.
    space : Out(1)
        At most ``HALF_QUEUE_DEPTH - PUSH_MAX`` half-flits are held, so that a push of any size
        fits whatever is taken. From a register.
    halves : Out(ArrayLayout(half_layout, 2))
        The oldest two half-flits held. From registers (selected by the read pointer).
    avail : Out(range(3))
        How many of ``halves`` are valid: ``min(2, held)``. From a register.
    take : In(range(3))
        Half-flits read this clock; at most ``avail``.

    Nothing the reader sees depends on this clock's ``push``, so the writer's logic never
    reaches the reader's. Latency: a half-flit written at ``t`` can be read from ``t + 1``.
    Throughput: three in and two out per clock. Overflow: a push while ``space`` is low, or a
    take beyond ``avail``, is not allowed (not checked).
    """

    def __init__(self):
        super().__init__({
            "push": In(range(PUSH_MAX + 1)),
            "push_data": In(data.ArrayLayout(half_layout, PUSH_MAX)),
            "space": Out(1),
            "halves": Out(data.ArrayLayout(half_layout, 2)),
            "avail": Out(range(3)),
            "take": In(range(3)),
        })

    def elaborate(self, platform):
        m = Module()
        depth = HALF_QUEUE_DEPTH
        mem = [Signal(half_layout, name=f"mem{k}") for k in range(depth)]
        wr = Signal(range(depth))                      # where the next half-flit goes
        rd = Signal(range(depth))                      # the oldest half-flit not read
        count = Signal(range(depth + 1))               # held, not read
        for k in range(depth):
            offset = Signal(range(depth), name=f"offset{k}")
            m.d.comb += offset.eq(k - wr)
            with m.If(offset < self.push), m.Switch(offset):
                for j in range(PUSH_MAX):
                    with m.Case(j):
                        m.d.sync += mem[k].eq(self.push_data[j])
        for i in range(2):
            with m.Switch((rd + i) % depth):
                for k in range(depth):
                    with m.Case(k):
                        m.d.comb += self.halves[i].eq(mem[k])
        m.d.comb += [
            self.space.eq(count <= depth - PUSH_MAX),
            self.avail.eq(Mux(count >= 2, 2, count)),
        ]
        m.d.sync += [
            wr.eq(wr + self.push),
            rd.eq(rd + self.take),
            count.eq(count + self.push - self.take),
        ]
        return m
