"""Data half-flit sequencer of the TL packer."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .layout import BEAT_BYTES, HALF_BITS, REQS_PER_CONTROL, MsgType
from .tx_place import schedule_layout

__all__ = ["DataSequencer", "half_layout", "req_beat_layout", "rsp_beat_layout"]

#: A request data beat as queued: data, its byte enables and OrigDataError.
req_beat_layout = data.StructLayout({"data": 2 * HALF_BITS, "byte_en": BEAT_BYTES, "error": 1})
#: A read response data beat as queued.
rsp_beat_layout = data.StructLayout({"data": 2 * HALF_BITS, "error": 1})
#: One data half-flit leaving the sequencer; ``msg`` set for a Poisoned Data message.
half_layout = data.StructLayout({"data": HALF_BITS, "msg": 1})


class _State:
    """The sequencer's registers, or the values they would take after some half-flits."""

    def __init__(self, name, sched):
        self.carry = Signal(half_layout, name=f"{name}_carry")
        self.carry_valid = Signal(name=f"{name}_carry_valid")
        self.beats = [Signal(3, name=f"{name}_r{i}_beats") for i in range(REQS_PER_CONTROL)]
        self.be = [Signal(name=f"{name}_r{i}_be") for i in range(REQS_PER_CONTROL)]
        self.rsp_beats = Signal(6, name=f"{name}_rsp_beats")
        self.acc = Signal(4 * 64, name=f"{name}_acc")
        self.sched = sched

    def signals(self):
        return [self.carry, self.carry_valid, *self.beats, *self.be, self.rsp_beats, self.acc]

    def idle(self):
        return ~(self.carry_valid | self.beats[0].any() | self.be[0] | self.beats[1].any()
                 | self.be[1] | self.rsp_beats.any())


def _poison(beat_half, error):
    """A data half, or the Poisoned Data message replacing it (bytes 1..31 kept) [§5.3]."""
    return Mux(error, Cat(Const(MsgType.POISONED_DATA.value, 8), beat_half[8:]), beat_half)


class DataSequencer(wiring.Component):
    """Emits the data half-flits that control half-flits call for, two per clock at most.

    Members
    -------
    req_data, rsp_data : In(stream)
        Heads of the request-data and response-data queues, one 64-byte beat each.
    halves : Out(ArrayLayout(half_layout, 2))
        The next two data half-flits in sequence order (valid as ``avail`` says).
    avail : Out(range(3))
        Half-flits available now: a half that needs a beat not yet queued is not available.
    take : In(range(3))
        Half-flits consumed this clock (at most ``avail``).
    schedule : In(schedule_layout), fresh : In(1)
        The data a candidate control half-flit calls for. With ``fresh`` set and nothing owed,
        ``halves`` and ``avail`` already describe ``schedule``.
    load : In(1)
        The candidate control half-flit is placed this clock: ``schedule`` follows the old one
        after ``take`` half-flits (or starts now, see ``fresh``).
    idle : Out(1)
        Nothing owed.

    Byte enables of a request's beats are gathered as its beats pass and sent in one half-flit
    after them (README §1); a beat with ``error`` set is sent as two Poisoned Data messages.
    """

    def __init__(self):
        super().__init__({
            "req_data": In(stream.Signature(req_beat_layout)),
            "rsp_data": In(stream.Signature(rsp_beat_layout)),
            "halves": Out(data.ArrayLayout(half_layout, 2)),
            "avail": Out(range(3)),
            "take": In(range(3)),
            "load": In(1),
            "fresh": In(1),
            "schedule": In(schedule_layout),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        sched = Signal(schedule_layout)
        reg = _State("reg", sched)
        m.d.comb += self.idle.eq(reg.idle())
        fresh = _State("fresh", self.schedule)          # a new schedule, nothing sent yet
        m.d.comb += [
            *(fresh.beats[i].eq(self.schedule.req[i].beats) for i in range(REQS_PER_CONTROL)),
            *(fresh.be[i].eq(self.schedule.req[i].be) for i in range(REQS_PER_CONTROL)),
            fresh.rsp_beats.eq(self.schedule.rsp_beats),
        ]
        start_fresh = Signal()
        m.d.comb += start_fresh.eq(self.fresh & reg.idle())
        cur = _State("cur", Signal(schedule_layout, name="cur_sched"))
        m.d.comb += [a.eq(Mux(start_fresh, b, c))
                     for a, b, c in zip(cur.signals() + [cur.sched],
                                        fresh.signals() + [fresh.sched],
                                        reg.signals() + [reg.sched])]
        one, out1, ok1, pop1 = self._step(m, "one", cur)
        two, out2, ok2, pop2 = self._step(m, "two", one)
        m.d.comb += [
            self.halves[0].eq(out1), self.halves[1].eq(out2),
            self.avail.eq(Mux(ok1, Mux(ok2, 2, 1), 0)),
        ]
        after = [cur, one, two]
        with m.Switch(self.take):
            for k in range(3):
                with m.Case(k):
                    req_pop = Cat(pop1[0], pop2[0])[:k].any() if k else 0
                    rsp_pop = Cat(pop1[1], pop2[1])[:k].any() if k else 0
                    m.d.comb += [self.req_data.ready.eq(req_pop), self.rsp_data.ready.eq(rsp_pop)]
                    with m.If(self.load & ~start_fresh):
                        m.d.sync += [a.eq(b) for a, b in zip(reg.signals(), fresh.signals())]
                        m.d.sync += sched.eq(self.schedule)
                    with m.Elif(self.load | (self.take != 0)):
                        m.d.sync += [a.eq(b) for a, b in zip(reg.signals(), after[k].signals())]
                        m.d.sync += sched.eq(cur.sched)
        return m

    def _step(self, m, name, s):
        """One data half-flit from state ``s``: returns the state after it, the half-flit,
        whether it can be sent now and which queue (request, response) it pops."""
        n = _State(name, s.sched)
        out = Signal(half_layout, name=f"{name}_out")
        ok, pop_req, pop_rsp = Signal(name=f"{name}_ok"), Signal(name=f"{name}_pop_req"), \
            Signal(name=f"{name}_pop_rsp")
        m.d.comb += [a.eq(b) for a, b in zip(n.signals(), s.signals())]
        req, rsp = self.req_data.payload, self.rsp_data.payload
        with m.If(s.carry_valid):
            m.d.comb += [out.eq(s.carry), ok.eq(1), n.carry_valid.eq(0)]
        for i in range(REQS_PER_CONTROL):
            with m.Elif(s.beats[i].any()):
                pos = Signal(2, name=f"{name}_r{i}_pos")
                m.d.comb += [
                    pos.eq(s.sched.req[i].be_pos + s.sched.req[i].beats - s.beats[i]),
                    ok.eq(self.req_data.valid), pop_req.eq(1),
                    out.data.eq(_poison(req.data[:HALF_BITS], req.error)), out.msg.eq(req.error),
                    n.carry.data.eq(_poison(req.data[HALF_BITS:], req.error)),
                    n.carry.msg.eq(req.error), n.carry_valid.eq(1),
                    n.beats[i].eq(s.beats[i] - 1),
                    n.acc.eq(Mux(s.be[i], s.acc | (req.byte_en << (pos * BEAT_BYTES)), 0)),
                ]
            with m.Elif(s.be[i]):
                m.d.comb += [out.data.eq(s.acc), ok.eq(1), n.be[i].eq(0), n.acc.eq(0)]
        with m.Elif(s.rsp_beats.any()):
            m.d.comb += [
                ok.eq(self.rsp_data.valid), pop_rsp.eq(1),
                out.data.eq(_poison(rsp.data[:HALF_BITS], rsp.error)), out.msg.eq(rsp.error),
                n.carry.data.eq(_poison(rsp.data[HALF_BITS:], rsp.error)),
                n.carry.msg.eq(rsp.error), n.carry_valid.eq(1),
                n.rsp_beats.eq(s.rsp_beats - 1),
            ]
        return n, out, ok, (pop_req, pop_rsp)
