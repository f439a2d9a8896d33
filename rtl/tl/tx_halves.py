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
#: so that the writer never looks at what the reader takes in the same clock. Four keep two
#: halves ready in every clock of a stream of beats, as the reader also sees the half-flits
#: being written (a power of two keeps the pointers plain).
HALF_QUEUE_DEPTH = 4


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
        fits whatever is taken. From a register.
    halves : Out(ArrayLayout(half_layout, 2))
        The oldest two half-flits, held or written this clock (a half-flit written at ``t`` can
        be read at ``t``).
    avail : Out(range(3))
        How many of ``halves`` are valid: ``min(2, held + push)``.
    take : In(range(3))
        Half-flits read this clock; at most ``avail``.

    The half-flits written wait one clock in an input register before they are stored, so the
    storage's write enables come from registers; the reader sees the stored ones, then those
    waiting, then those being written. Latency: none (written through). Throughput: three in
    and two out per clock. Overflow: a push while ``space`` is low, or a take beyond ``avail``,
    is not allowed (not checked).
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
        wr = Signal(range(depth))                      # where staged[0] is stored
        rd = Signal(range(depth))                      # the oldest half-flit not read
        # wr - rd: half-flits in ``mem`` not read; negative when the reader has read staged
        # ones (they are stored all the same, behind it).
        lead = Signal(range(-PUSH_MAX, depth + 1))
        count = Signal(range(depth + 1))               # not read: stored and staged
        staged = Signal(data.ArrayLayout(half_layout, PUSH_MAX))
        staged_n = Signal(range(PUSH_MAX + 1))
        m.d.sync += [staged.eq(self.push_data), staged_n.eq(self.push)]
        # Which entries the staged half-flits go to, and which of them each takes, worked out
        # a clock ahead: each entry's write enable is a register of its own.
        write = Signal(depth)
        pick = [Signal(range(PUSH_MAX), name=f"pick{k}") for k in range(depth)]
        base = Signal(range(depth))                    # where this clock's push will go
        m.d.comb += base.eq(wr + staged_n)
        for k in range(depth):
            offset = Signal(range(depth), name=f"offset{k}")
            m.d.comb += offset.eq(k - base)
            m.d.sync += [write[k].eq(offset < self.push), pick[k].eq(offset)]
            with m.If(write[k]), m.Switch(pick[k]):
                for j in range(PUSH_MAX):
                    with m.Case(j):
                        m.d.sync += mem[k].eq(staged[j])
        for i in range(2):
            self._view(m, i, mem, rd, lead, staged, staged_n)
        m.d.comb += [
            self.space.eq(count <= depth - PUSH_MAX),
            self.avail.eq(Mux((count >= 2) | (self.push >= 2) | ((count == 1) & (self.push != 0)),
                              2, Mux((count != 0) | (self.push != 0), 1, 0))),
        ]
        m.d.sync += [
            wr.eq(wr + staged_n),
            rd.eq(rd + self.take),
            lead.eq(lead + staged_n - self.take),
            count.eq(count + self.push - self.take),
        ]
        return m

    def _view(self, m, i, mem, rd, lead, staged, staged_n):
        """``halves[i]``: a stored half-flit, a staged one or one written now; which one is
        chosen from registers only."""
        depth = HALF_QUEUE_DEPTH
        past = Signal(range(-depth, PUSH_MAX + 2), name=f"past{i}")   # i - lead
        m.d.comb += past.eq(i - lead)
        with m.If(past < 0):
            for k in range(depth):
                with m.If(((rd + i) % depth) == k):
                    m.d.comb += self.halves[i].eq(mem[k])
        for j in range(i + PUSH_MAX + 1):
            with m.Elif(past == j):
                # The j-th half-flit behind the stored ones: staged, or written now.
                half = staged[j] if j < PUSH_MAX else self.push_data[0]
                for n in range(max(0, j - PUSH_MAX + 1), min(j, PUSH_MAX) + 1):
                    half = Mux(staged_n == n, self.push_data[j - n], half)
                m.d.comb += self.halves[i].eq(half)
