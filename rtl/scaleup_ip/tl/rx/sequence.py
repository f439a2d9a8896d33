# SPDX-License-Identifier: BSD-2-Clause
"""Sequencing state of the TL receiver: the role of each half-flit and what each data half-flit
is [UALink 1.0 §5.1]."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..logic import and_all, or_all
from .decode import QUADS
from .tally import SEGMENT_HALVES, segment_layout

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

    def __init__(self, groups, prefix=""):
        self.ge1 = Signal(name=f"{prefix}ge1")          # at least one half owed
        self.ge2 = Signal(name=f"{prefix}ge2")          # at least two
        self.lp = Signal(name=f"{prefix}lp")            # L, the tail of an older control, owed
        self.lcls = Signal(half_class, name=f"{prefix}lcls")
        self.left = [Signal(range(SEGMENT_HALVES + 1), name=f"{prefix}left{q}")
                     for q in range(groups)]
        self.small = [Signal(_SMALL, name=f"{prefix}small{q}", init=1) for q in range(groups)]
        self.req = Signal(groups, name=f"{prefix}req")  # group q is a request's
        self.be = Signal(groups, name=f"{prefix}be")    # ... with a byte-enable half last
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

    def held_before(self, q, most):
        """``[the groups before q hold exactly s halves, for s in 0 .. most]`` (1 and 0 as
        Python ints where constant)."""
        return _held_before(self.small, q, most)



class HalfSequencer(wiring.Component):
    """Decides, flit by flit, which half-flits are control, data or messages (README §3 flit
    rule) and what each data half-flit carries.

    The owed data half-flits are the tail of one older control half (at most one half, ``L``)
    then the groups of the newest control half (its groups of four sectors, or with an address
    cache its pairs of sectors), each a count of halves left. The lower half-flit is data when
    at least two halves are owed; then the upper too. Otherwise the lower is a control half (or
    a message) and the upper is data when anything is owed after it. A message in a data
    position other than Poisoned Data is a message in its own right and takes no data.

    Parameters
    ----------
    groups : int
        Groups of sectors per control half: 2 (of four sectors) or 4 (pairs).

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

    def __init__(self, groups=QUADS):
        self._groups = groups
        super().__init__({
            "valid": In(1),
            "msg": In(2),
            "poison": In(2),
            "new_nz": In(1),
            "new_ge3": In(1),
            "seg": In(data.ArrayLayout(segment_layout, groups)),
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
        st = _State(self._groups)
        nxt = _State(self._groups, "next_")
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
        seg = self.seg
        with m.If(control):
            m.d.comb += [
                self.hi.req.eq(Mux(one, front.req, _first([g.req for g in seg],
                                                          [g.small[0] for g in seg]))),
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
        last = self._groups - 1
        empty = [g.small[0] for g in seg]
        reqs = [g.req for g in seg]
        # The upper half opens the first non-empty group (the last is not empty if every
        # group before it is and the upper half takes data).
        takes = [and_all([~one, c_hi, *empty[:q], *([~empty[q]] if q < last else [])])
                 for q in range(self._groups)]
        keep = one & ~c_hi                              # L stays first
        take = or_all(takes)
        first_req = _first(reqs, empty)
        # Second after ``take``: the same group's third half, or the next group's first when
        # the group has two halves.
        second_req = first_req
        for q in reversed(range(last)):
            second_req = Mux(takes[q] & seg[q].small[2], _first(reqs[q + 1:], empty[q + 1:]),
                             second_req)
        m.d.comb += [
            nxt.lp.eq(keep), nxt.lcls.eq(st.front),
            nxt.req.eq(Cat(*reqs)), nxt.be.eq(Cat(*(g.be for g in seg))),
            nxt.ge1.eq(self.new_nz | keep),
            nxt.ge2.eq(self.new_nz & (self.new_ge3 | one | ~c_hi)),
            # First: L, or a new group's first or (after ``take``) second half; never a BE.
            nxt.front.eq(Mux(keep, st.front, Cat(first_req, 0, take))),
            # Second: a group's first half after L, its second, or its third (after ``take``;
            # a BE when the group has three halves, the next group's first when two).
            nxt.second.req.eq(second_req),
            nxt.second.be.eq(or_all([t & g.be & g.small[3] for t, g in zip(takes, seg)])),
            nxt.second.high.eq(~keep & ~take),
        ]
        for q, take in enumerate(takes):
            m.d.comb += [
                nxt.left[q].eq(Mux(take, seg[q].size - 1, seg[q].size)),
                nxt.small[q].eq(Mux(take, seg[q].small[1:1 + _SMALL], seg[q].small[:_SMALL])),
            ]

    def _consume(self, m, st, nxt, c_lo, c_hi):
        """No control half: up to two owed halves are taken, from L, then the groups in order.

        Every comparison is made on the registers against constants, then picked by how many
        halves are taken, so none waits for a subtraction."""
        none, both = ~c_lo & ~c_hi, c_lo & c_hi     # 0 or 2 halves taken (else 1)
        some = ~none & ~both
        rest1 = Signal()                            # one half taken from the groups
        rest2 = Signal()                            # two halves taken from the groups
        m.d.comb += [rest1.eq(Mux(st.lp, both, c_lo ^ c_hi)), rest2.eq(~st.lp & both)]
        gives = _gives(m, st, rest1, rest2)

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
        for q, (one, two) in enumerate(gives):
            m.d.comb += nxt.left[q].eq(pick([st.left[q] - x for x in range(3)], one, two))
            is_ = [st.left[q] == x for x in range(_SMALL + 2)]
            for j in range(_SMALL):
                m.d.comb += nxt.small[q][j].eq(pick(is_[j:j + 3], one, two))


def _first(values, empty):
    """The value of the first group that is not ``empty`` (the last group's when all are)."""
    out = values[-1]
    for v, e in zip(reversed(values[:-1]), reversed(empty[:-1])):
        out = Mux(e, out, v)
    return out


def _held_before(small, q, most):
    """``[the groups before q hold exactly s halves, for s in 0 .. most]`` from their
    ``small`` flags (``small[j][a]``: group ``j`` holds ``a``); constants as Python ints."""
    held = [1] + [0] * most                          # before group 0: none
    for j in range(q):
        held = [_or(*(_and(held[a], small[j][s - a]) for a in range(s + 1)))
                for s in range(most + 1)]
    return held


def _gives(m, st, rest1, rest2):
    """``[(group q gives one half, gives two)]`` when the groups give one (``rest1``) or two
    (``rest2``) halves, in order: group ``q`` gives what the groups before it do not hold.
    The last group needs no check of its own count: what is taken is owed."""
    last = len(st.small) - 1
    out = []
    for q, s in enumerate(st.small):
        none, one = st.held_before(q, 1)
        d1, d2 = Signal(name=f"d{q}_1"), Signal(name=f"d{q}_2")
        if q < last:
            m.d.comb += [
                d1.eq(_and(~s[0], _or(_and(none, rest1 | (rest2 & s[1])), _and(one, rest2)))),
                d2.eq(_and(~s[0], ~s[1], none, rest2)),
            ]
        else:
            m.d.comb += [d1.eq(_or(_and(rest1, none), _and(rest2, one))),
                         d2.eq(_and(rest2, none))]
        out.append((d1, d2))
    return out


def _is(term, value):
    return isinstance(term, int) and term == value


def _and(*terms):
    """The AND of ``terms``, where any may be the Python constant 0 or 1."""
    if any(_is(t, 0) for t in terms):
        return 0
    terms = [t for t in terms if not _is(t, 1)]
    return and_all(terms) if terms else 1


def _or(*terms):
    """The OR of ``terms``, where any may be the Python constant 0 or 1."""
    if any(_is(t, 1) for t in terms):
        return 1
    terms = [t for t in terms if not _is(t, 0)]
    return or_all(terms) if terms else 0


def _owed_at_least(st, most):
    """``{j: halves owed >= j}`` for ``j`` in 1 .. ``most``, from the flags alone."""
    # at_least[j]: the groups up to the current one hold at least j halves.
    at_least = [st.ge(0, j) for j in range(most + 1)]
    for q in range(1, len(st.small)):
        at_least = [or_all([at_least[a] & st.ge(q, j - a) for a in range(j + 1)])
                    for j in range(most + 1)]
    return {j: Mux(st.lp, at_least[j - 1], at_least[j]) for j in range(1, most + 1)}


def _class_at(st):
    """``[what owed half p is, for p in 0 .. 3]``, from the flags alone. In a group of ``n``
    halves left, the half ``x`` places on is the upper half of a beat when ``n - x`` is odd
    (one less with a BE half, which is the group's last); half ``x`` is in group ``q`` when
    the groups before hold ``h <= x`` halves and group ``q`` more than ``x - h``."""
    small, groups = st.small, len(st.small)
    held = [st.held_before(q, _POSITIONS - 1) for q in range(groups)]
    out = []
    for p in range(_POSITIONS):
        def at(x):                                  # the groups' half x places on
            where = None
            for q in reversed(range(groups)):
                s = small[q]
                be = _and(st.be[q], ~s[0] if q else 1, _or(*(
                    _and(held[q][h], s[x + 1 - h]) for h in range(x + 1))))
                high = st.left[q][0]
                for j in reversed(range(q)):
                    high = high ^ st.left[j][0]
                high = high ^ st.be[q] ^ (x & 1)
                here = Cat(st.req[q], be, high)
                if where is None:
                    where = here
                else:
                    inside = _or(*(_and(held[q][h], st.ge(q, x + 1 - h))
                                   for h in range(x + 1)))
                    where = Mux(inside, here, where)
            return where
        out.append(Mux(st.lp, st.lcls if p == 0 else at(p - 1), at(p)))
    return out
