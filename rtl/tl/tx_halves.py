"""A queue of ready-made data half-flits between the TL packer's data producer and its emitter."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .layout import HALF_BITS

__all__ = ["HALF_QUEUE_DEPTH", "PUSH_MAX", "HalfQueue", "half_layout"]

#: One data half-flit; ``msg`` set for a Poisoned Data message.
half_layout = data.StructLayout({"data": HALF_BITS, "msg": 1})

#: Half-flits written per clock at most: a data beat's two halves and the byte-enable half-flit
#: that follows a request's last beat.
PUSH_MAX = 3

#: Half-flits held. Writing is allowed while at most ``HALF_QUEUE_DEPTH - PUSH_MAX`` are held,
#: so that the writer never looks at what the reader takes in the same clock; eight keep two
#: halves ready for every clock of a stream of beats (a power of two keeps the pointers plain).
HALF_QUEUE_DEPTH = 8


class HalfQueue(wiring.Component):
    """Data half-flits in order: up to three in, up to two out per clock, written through.

    Members
    -------
    push : In(range(PUSH_MAX + 1))
        Half-flits written this clock, from ``push_data[0]`` on. Only while ``space``.
    push_data : In(ArrayLayout(half_layout, PUSH_MAX))
        The half-flits written, oldest first.
    space : Out(1)
        At most ``HALF_QUEUE_DEPTH - PUSH_MAX`` half-flits are held, so that a push of any size
        fits whatever is taken. Registered.
    halves : Out(ArrayLayout(half_layout, 2))
        The oldest two half-flits, held or written this clock (a half-flit written at ``t`` can
        be read at ``t``).
    avail : Out(range(3))
        How many of ``halves`` are valid: ``min(2, held + push)``.
    take : In(range(3))
        Half-flits read this clock; at most ``avail``.

    Latency: none (written through). Throughput: three in and two out per clock. Overflow: a
    push while ``space`` is low, or a take beyond ``avail``, is not allowed (not checked).
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
        wr = Signal(range(depth))
        rd = Signal(range(depth))
        held = Signal(range(depth + 1))
        for k in range(depth):
            for j in range(PUSH_MAX):
                with m.If((self.push > j) & (((wr + j) % depth) == k)):
                    m.d.sync += mem[k].eq(self.push_data[j])
        head = [Signal(half_layout, name=f"head{i}") for i in range(2)]
        for k in range(depth):
            for i in range(2):
                with m.If(((rd + i) % depth) == k):
                    m.d.comb += head[i].eq(mem[k])
        m.d.comb += [
            self.space.eq(held <= depth - PUSH_MAX),
            self.halves[0].eq(Mux(held != 0, head[0], self.push_data[0])),
            self.halves[1].eq(Mux(held >= 2, head[1],
                                  Mux(held == 1, self.push_data[0], self.push_data[1]))),
            self.avail.eq(Mux((held >= 2) | (self.push >= 2) | ((held == 1) & (self.push != 0)), 2,
                              Mux((held != 0) | (self.push != 0), 1, 0))),
        ]
        m.d.sync += [
            wr.eq(wr + self.push),
            rd.eq(rd + self.take),
            held.eq(held + self.push - self.take),
        ]
        return m
