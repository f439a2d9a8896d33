"""Sequencing state of the TL receiver: the role of each half-flit and what each data half-flit
is [UALink 1.0 §5.1]."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .logic import or_all
from .rx_decode import QUADS
from .rx_tally import SEGMENT_HALVES, segment_layout

__all__ = ["HalfSequencer", "half_class"]

#: What a data half-flit is: request or response data (``req``), the byte-enable half of a
#: request (``be``), else the upper 32 bytes of a beat (``high``) or the lower.
half_class = data.StructLayout({"req": 1, "be": 1, "high": 1})

#: Remaining sizes of a group flagged by the state (``small[j]``: ``j`` halves left).
_SMALL = 5
#: Owed positions whose byte-enable flag the state needs: the two halves of the next flit
#: after up to two taken now.
_POSITIONS = 4


class _State:
    """The registers of :class:`HalfSequencer` (or, with ``prefix``, their next values)."""

    def __init__(self, prefix=""):
        self.ge1 = Signal(name=f"{prefix}ge1")          # at least one half owed
        self.ge2 = Signal(name=f"{prefix}ge2")          # at least two
        self.lp = Signal(name=f"{prefix}lp")            # L, the tail of an older control, owed
        self.lcls = Signal(half_class, name=f"{prefix}lcls")
        self.left = [Signal(range(SEGMENT_HALVES + 1), name=f"{prefix}left{q}")
                     for q in range(QUADS)]
        self.small = [Signal(_SMALL, name=f"{prefix}small{q}", init=1) for q in range(QUADS)]
        self.req = Signal(QUADS, name=f"{prefix}req")   # group q is a request's
        self.be = Signal(QUADS, name=f"{prefix}be")     # ... with a byte-enable half last
        self.front = Signal(half_class, name=f"{prefix}front")     # the first owed half
        self.second = Signal(half_class, name=f"{prefix}second")   # ... the second

    def eq(self, other):
        return [a.eq(b) for a, b in zip(self._all(), other._all())]

    def _all(self):
        return [self.ge1, self.ge2, self.lp, self.lcls, *self.left, *self.small, self.req,
                self.be, self.front, self.second]

    def ge(self, q, x):
        """Group ``q`` has at least ``x`` halves left."""
        return 1 if x <= 0 else ~Cat(*self.small[q][:x]).any()



class HalfSequencer(wiring.Component):
    """Decides, flit by flit, which half-flits are control, data or messages (README §3 flit
    rule) and what each data half-flit carries.

    The owed data half-flits are the tail of one older control half (at most one half, ``L``)
    then the two groups of the newest control half, each a count of halves left. The lower
    half-flit is data when at least two halves are owed; then the upper too. Otherwise the
    lower is a control half (or a message) and the upper is data when anything is owed after
    it. A message in a data position other than Poisoned Data is a message in its own right
    and takes no data.

    Members
    -------
    valid : In(1), msg : In(2), poison : In(2)
        A flit is present, its M0/M1 bits, and which halves have the Poisoned Data type byte.
    new_nz, new_ge3, seg : In
        What the flit's lower half calls for if it is a control half (:class:`ControlTally`).
    control : Out(1)
        The lower half is a control half.
    lo_data, hi_data : Out(1)
        The lower / upper half is in a data position.
    lo_consume, hi_consume : Out(1)
        The lower / upper half is data (or its Poisoned Data message).
    lo, hi : Out(half_class)
        What the lower / upper data half is.
    pos_low, pos_high, pos_be : Out(1)
        The lower half is in a data position and, if it is data, the lower or upper half of a
        beat or a byte-enable half (registers, for the wide data multiplexers).

    Latency: outputs are combinational from the inputs and the state, which every flit updates
    at the clock's end. The roles are one logic level from registers, the ``be`` flags two;
    every count is compared with constants only. Throughput: one flit per clock.
    """

    def __init__(self):
        super().__init__({
            "valid": In(1),
            "msg": In(2),
            "poison": In(2),
            "new_nz": In(1),
            "new_ge3": In(1),
            "seg": In(data.ArrayLayout(segment_layout, QUADS)),
            "control": Out(1),
            "lo_data": Out(1),
            "hi_data": Out(1),
            "lo_consume": Out(1),
            "hi_consume": Out(1),
            "lo": Out(half_class),
            "hi": Out(half_class),
            "pos_low": Out(1),
            "pos_high": Out(1),
            "pos_be": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        st = _State()
        nxt = _State("next_")
        m.d.comb += nxt.eq(st)
        m.d.sync += st.eq(nxt)
        v, msg, poison = self.valid, self.msg, self.poison
        c_lo, c_hi, control, one = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            self.lo_data.eq(v & st.ge2),
            control.eq(v & ~st.ge2 & ~msg[0]),
            one.eq(st.ge1 & ~st.ge2),
            c_lo.eq(v & st.ge2 & ~(msg[0] & ~poison[0])),
            self.hi_data.eq(v & (st.ge1 | (control & self.new_nz))),
            c_hi.eq(self.hi_data & (~msg[1] | poison[1])),
            self.control.eq(control), self.lo_consume.eq(c_lo), self.hi_consume.eq(c_hi),
        ]
        front, second = st.front, st.second
        m.d.comb += self.lo.eq(front)
        with m.If(control):
            m.d.comb += [
                self.hi.req.eq(Mux(one, front.req, Mux(self.seg[0].small[0], self.seg[1].req,
                                                       self.seg[0].req))),
                self.hi.be.eq(one & front.be), self.hi.high.eq(one & front.high),
            ]
            self._load(m, st, nxt, one, c_hi)
        with m.Else():
            m.d.comb += self.hi.eq(Mux(c_lo, second, front))
            with m.If(v):
                self._consume(m, st, nxt, c_lo, c_hi)
        # What the next lower half is if it is data, ready in registers for the beat path.
        f = nxt.front
        m.d.sync += [
            self.pos_low.eq(nxt.ge2 & ~f.be & ~f.high),
            self.pos_high.eq(nxt.ge2 & ~f.be & f.high),
            self.pos_be.eq(nxt.ge2 & f.be),
        ]
        return m

    def _load(self, m, st, nxt, one, c_hi):
        """A control half: the owed half (if any) becomes L, the new groups follow; the upper
        half takes the first owed half."""
        seg = self.seg
        take0 = ~one & c_hi & ~seg[0].small[0]          # the upper half opens group 0
        take1 = ~one & c_hi & seg[0].small[0]           # ... or group 1
        keep = one & ~c_hi                              # L stays first
        take = take0 | take1
        first_req = Mux(seg[0].small[0], seg[1].req, seg[0].req)
        m.d.comb += [
            nxt.lp.eq(keep), nxt.lcls.eq(st.front),
            nxt.req.eq(Cat(seg[0].req, seg[1].req)), nxt.be.eq(Cat(seg[0].be, seg[1].be)),
            nxt.ge1.eq(self.new_nz | keep),
            nxt.ge2.eq(self.new_nz & (self.new_ge3 | one | ~c_hi)),
            # First: L, or a new group's first or (after ``take``) second half; never a BE.
            nxt.front.eq(Mux(keep, st.front, Cat(first_req, 0, take))),
            # Second: a group's first half after L, its second, or its third (after ``take``;
            # a BE when the group has three halves, the next group's first when two).
            nxt.second.req.eq(Mux(take0 & seg[0].small[2], seg[1].req, first_req)),
            nxt.second.be.eq((take0 & seg[0].be & seg[0].small[3])
                             | (take1 & seg[1].be & seg[1].small[3])),
            nxt.second.high.eq(~keep & ~take),
        ]
        for q, take in enumerate((take0, take1)):
            m.d.comb += [
                nxt.left[q].eq(Mux(take, seg[q].size - 1, seg[q].size)),
                nxt.small[q].eq(Mux(take, seg[q].small[1:1 + _SMALL], seg[q].small[:_SMALL])),
            ]

    def _consume(self, m, st, nxt, c_lo, c_hi):
        """No control half: up to two owed halves are taken, from L, then group 0, then 1.

        Every comparison is made on the registers against constants, then picked by how many
        halves are taken, so none waits for a subtraction."""
        none, both = ~c_lo & ~c_hi, c_lo & c_hi     # 0 or 2 halves taken (else 1)
        some = ~none & ~both
        rest1 = Signal()                            # one half taken from the groups
        rest2 = Signal()                            # two halves taken from the groups
        m.d.comb += [rest1.eq(Mux(st.lp, both, c_lo ^ c_hi)), rest2.eq(~st.lp & both)]
        s0 = st.small[0]
        d0_1, d0_2, d1_1, d1_2 = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            d0_1.eq(~s0[0] & (rest1 | (rest2 & s0[1]))),     # group 0 gives one half
            d0_2.eq(~s0[0] & ~s0[1] & rest2),                # ... or two
            d1_1.eq((rest1 & s0[0]) | (rest2 & s0[1])),
            d1_2.eq(rest2 & s0[0]),
        ]

        def pick(values, one, two):
            return Mux(two, values[2], Mux(one, values[1], values[0]))

        owed = _owed_at_least(st, _POSITIONS)
        at = _class_at(st)
        m.d.comb += [
            nxt.lp.eq(st.lp & none),
            nxt.ge1.eq(pick([owed[1], owed[2], owed[3]], some, both)),
            nxt.ge2.eq(pick([owed[2], owed[3], owed[4]], some, both)),
            nxt.front.eq(pick(at[0:3], some, both)),
            nxt.second.eq(pick(at[1:4], some, both)),
        ]
        for q, (one, two) in enumerate(((d0_1, d0_2), (d1_1, d1_2))):
            m.d.comb += nxt.left[q].eq(pick([st.left[q] - x for x in range(3)], one, two))
            is_ = [st.left[q] == x for x in range(_SMALL + 2)]
            for j in range(_SMALL):
                m.d.comb += nxt.small[q][j].eq(pick(is_[j:j + 3], one, two))


def _owed_at_least(st, most):
    """``{j: halves owed >= j}`` for ``j`` in 1 .. ``most``, from the flags alone."""
    def groups(j):
        return or_all([st.ge(0, a) & st.ge(1, j - a) for a in range(j + 1)])
    return {j: Mux(st.lp, groups(j - 1), groups(j)) for j in range(1, most + 1)}


def _class_at(st):
    """``[what owed half p is, for p in 0 .. 3]``, from the flags alone. In a group of ``n``
    halves left, the half ``x`` places on is the upper half of a beat when ``n - x`` is odd
    (one less with a BE half, which is the group's last)."""
    s0, s1 = st.small
    out = []
    for p in range(_POSITIONS):
        def at(x):                                  # the groups' half x places on
            in0 = ~Cat(*s0[:x + 1]).any()           # group 0 has more than x halves left
            be0 = st.be[0] & s0[x + 1]
            be1 = st.be[1] & ~s1[0] & or_all([s0[a] & s1[x + 1 - a] for a in range(x + 1)])
            high0 = st.left[0][0] ^ st.be[0] ^ (x & 1)
            high1 = st.left[1][0] ^ st.left[0][0] ^ st.be[1] ^ (x & 1)
            return Mux(in0, Cat(st.req[0], be0, high0), Cat(st.req[1], be1, high1))
        out.append(Mux(st.lp, st.lcls if p == 0 else at(p - 1), at(p)))
    return out
