"""Sequencing state of the TL receiver: the data half-flits still owed and the role of each
half-flit position [UALink 1.0 §5.1]."""

from amaranth import Mux, Signal

from .layout import MsgType, RxError
from .rx_decode import segment_layout

__all__ = ["OWED_SEGMENTS", "Owed", "HalfRole"]

#: Segments owed at most: the last half-flit of one plus the two of a new control half-flit.
OWED_SEGMENTS = 3


class Owed:
    """The data half-flits owed, as a queue of segments (registers or a combinational step)."""

    def __init__(self, name):
        self.segs = [Signal(segment_layout, name=f"{name}_seg{j}") for j in range(OWED_SEGMENTS)]
        self.n = Signal(range(OWED_SEGMENTS + 1), name=f"{name}_n")
        self.name = name

    def signals(self):
        return [*self.segs, self.n]

    def eq(self, other):
        return [a.eq(b) for a, b in zip(self.signals(), other.signals())]

    @property
    def head(self):
        return self.segs[0]

    def at_least_two(self, m):
        two = Signal(name=f"{self.name}_two")
        m.d.comb += two.eq((self.n >= 2) | (self.head.halves + self.head.be >= 2))
        return two

    def advance(self, m, name):
        """The queue after its next half-flit."""
        nxt = Owed(name)
        h = self.head
        gone = Signal(name=f"{name}_gone")
        m.d.comb += gone.eq((self.n != 0) & ((h.halves == 0) | ((h.halves == 1) & ~h.be)))
        with m.If(gone):
            m.d.comb += [nxt.segs[j].eq(self.segs[j + 1]) for j in range(OWED_SEGMENTS - 1)]
            m.d.comb += nxt.n.eq(self.n - 1)
        with m.Else():
            m.d.comb += [nxt.segs[j].eq(self.segs[j]) for j in range(1, OWED_SEGMENTS)]
            m.d.comb += [
                nxt.n.eq(self.n), nxt.head.req.eq(h.req), nxt.head.be.eq(h.be & (h.halves != 0)),
                nxt.head.halves.eq(Mux(h.halves != 0, h.halves - 1, 0)),
            ]
        return nxt

    def append(self, m, name, new):
        """The queue with the non-empty segments of ``new`` added after its own."""
        nxt = Owed(name)
        ne = [Signal(name=f"{name}_ne{q}") for q in range(len(new))]
        m.d.comb += [ne[q].eq((new[q].halves != 0) | new[q].be) for q in range(len(new))]
        for j in range(OWED_SEGMENTS):
            m.d.comb += nxt.segs[j].eq(self.segs[j])
            with m.If(ne[0] & (self.n == j)):
                m.d.comb += nxt.segs[j].eq(new[0])
            with m.If(ne[1] & (self.n + ne[0] == j)):
                m.d.comb += nxt.segs[j].eq(new[1])
        m.d.comb += nxt.n.eq(self.n + ne[0] + ne[1])
        return nxt


class HalfRole:
    """One half-flit position: its role and what it consumes."""

    def __init__(self, m, name, value, message, data_pos):
        self.value, self.message = value, message
        self.type = Signal(8, name=f"{name}_type")
        self.consume = Signal(name=f"{name}_consume")      # a data half (or its poison)
        self.msg = Signal(name=f"{name}_msg")              # a message in its own right
        m.d.comb += [
            self.type.eq(value[:8]),
            self.msg.eq(message & ~(data_pos & (self.type == MsgType.POISONED_DATA.value))),
            self.consume.eq(data_pos & ~self.msg),
        ]

    def message_errors(self, err):
        """Message-role checks into ``err`` (a dict of kind -> list)."""
        t = self.type
        known = (t == MsgType.NOP.value) | (t == MsgType.CREDIT_INIT_DONE.value)
        err[RxError.MISPLACED_POISON].append(self.msg & (t == MsgType.POISONED_DATA.value))
        err[RxError.UNKNOWN_MESSAGE].append(
            self.msg & ~known & (t != MsgType.POISONED_DATA.value))
        return self.msg & (t == MsgType.CREDIT_INIT_DONE.value)
