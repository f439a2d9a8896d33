"""Flit front end of the TL receiver: half-flit roles, data sequencing, checks and errors."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .layout import (
    HALF_BITS,
    REQ_LIMIT,
    RSP_LIMIT,
    SECTORS_PER_HALF,
    CreditClass,
    RxError,
    TlConfig,
    credit_update_layout,
    flit_layout,
    flit_stream,
    request_layout,
    rx_error_counts,
)
from .rx_decode import REQS_PER_HALF, ControlDecoder, rx_rsp_entry
from .rx_sequence import HalfRole, Owed

__all__ = ["RxFront", "rx_beat_layout"]

#: A received 64-byte data beat: both data half-flits and whether either was poisoned.
rx_beat_layout = data.StructLayout({"data": 2 * HALF_BITS, "error": 1})


class RxFront(wiring.Component):
    """Takes one TL flit per clock, decides what each half-flit is (README §3 flit rule, §4),
    checks it and hands out what it carries.

    Parameters
    ----------
    config : TlConfig
        Sizes of the receive buffers (the pool credits advertised).

    Members
    -------
    flit : In(flit_stream())
        Flits from the data link; ``ready`` is always 1. Registered on entry.
    req_valid, req : Out
        Up to two requests per clock, in sector order.
    rsp_valid, rsp : Out
        Up to eight responses per clock, in sector order.
    req_beat_valid, rsp_beat_valid, beat : Out
        A request or response data beat completed this clock (at most one).
    be_valid, be : Out
        A byte-enable half-flit arrived (at most one per clock).
    grant : Out(credit_update_layout)
        Flow Control credits received, for one clock.
    freed : In(len(CreditClass))
        One pool credit of each class returned this clock (receive buffer space freed).
    peer_init, error, error_counts, poisoned : Out
        Initial Credit Release Complete seen; sticky fatal error; per-kind counters; poisoned
        half-flits.

    Latency: outputs appear the clock after the flit is presented (one input register);
    ``grant`` one clock later. Throughput: one flit per clock. A flit with an error changes
    nothing but ``error`` and its counter, and every later flit is dropped until reset.
    """

    def __init__(self, config):
        if not isinstance(config, TlConfig):
            raise TypeError(f"RxFront config must be a TlConfig, not {config!r}")
        self._config = config
        super().__init__({
            "flit": In(flit_stream()),
            "req_valid": Out(REQS_PER_HALF),
            "req": Out(data.ArrayLayout(request_layout, REQS_PER_HALF)),
            "rsp_valid": Out(SECTORS_PER_HALF),
            "rsp": Out(data.ArrayLayout(rx_rsp_entry, SECTORS_PER_HALF)),
            "req_beat_valid": Out(1),
            "rsp_beat_valid": Out(1),
            "beat": Out(rx_beat_layout),
            "be_valid": Out(1),
            "be": Out(HALF_BITS),
            "grant": Out(credit_update_layout),
            "freed": In(len(CreditClass)),
            "peer_init": Out(1),
            "error": Out(1),
            "error_counts": Out(rx_error_counts),
            "poisoned": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.dec = dec = ControlDecoder()
        fv = Signal()
        f = Signal(flit_layout)
        m.d.comb += self.flit.ready.eq(1)
        m.d.sync += [fv.eq(self.flit.valid), f.eq(self.flit.payload)]
        m.d.comb += dec.half.eq(f.data[0])

        err_lo = {k: [] for k in RxError}
        err_hi = {k: [] for k in RxError}
        s0 = Owed("s0")
        lo = HalfRole(m, "lo", f.data[0], f.msg[0], fv & s0.at_least_two(m))
        control = Signal()
        m.d.comb += control.eq(fv & ~lo.consume & ~f.msg[0])
        s1 = Owed("s1")
        adv0, app0 = s0.advance(m, "adv0"), s0.append(m, "app0", dec.segments)
        with m.If(lo.consume):
            m.d.comb += s1.eq(adv0)
        with m.Elif(control):
            m.d.comb += s1.eq(app0)
        with m.Else():
            m.d.comb += s1.eq(s0)
        hi = HalfRole(m, "hi", f.data[1], f.msg[1], fv & (s1.n != 0))
        s2 = Owed("s2")
        adv1 = s1.advance(m, "adv1")
        with m.If(hi.consume):
            m.d.comb += s2.eq(adv1)
        with m.Else():
            m.d.comb += s2.eq(s1)
        with m.If(fv):
            m.d.sync += s0.eq(s2)

        init = lo.message_errors(err_lo) | hi.message_errors(err_hi)
        err_hi[RxError.MANDATORY_NOP].append(fv & ~(s1.n != 0) & ~f.msg[1] & f.data[1].any())
        poison = self._data(m, lo, s0.head, hi, s1.head, err_lo, err_hi)
        self._control_checks(m, dec, control, fv, err_lo)
        commit = self._errors(m, fv, err_lo, err_hi)
        self._outputs(m, dec, commit, control, init, poison)
        return m

    def _data(self, m, lo, h0, hi, h1, err_lo, err_hi):
        """Beat assembly from the data half-flits consumed; returns poisoned halves."""
        carry = Signal(HALF_BITS)
        carry_p = Signal()
        lo_be, hi_be = h0.halves == 0, h1.halves == 0
        lo_low = Signal()
        lo_high = Signal()
        hi_low = Signal()
        hi_high = Signal()
        m.d.comb += [
            lo_low.eq(lo.consume & ~lo_be & ~h0.halves[0]),
            lo_high.eq(lo.consume & ~lo_be & h0.halves[0]),
            hi_low.eq(hi.consume & ~hi_be & ~h1.halves[0]),
            hi_high.eq(hi.consume & ~hi_be & h1.halves[0]),
        ]
        err_lo[RxError.MISPLACED_POISON].append(lo.consume & lo_be & lo.message)
        err_hi[RxError.MISPLACED_POISON].append(hi.consume & hi_be & hi.message)
        self._beat_req = Signal()
        self._beat_done = Signal()
        with m.If(lo_high):
            m.d.comb += [
                self._beat_done.eq(1), self._beat_req.eq(h0.req),
                self.beat.data.eq(Cat(carry, lo.value)), self.beat.error.eq(carry_p | lo.message),
            ]
        with m.Elif(hi_high):
            low = Mux(lo_low, lo.value, carry)
            low_p = Mux(lo_low, lo.message, carry_p)
            m.d.comb += [
                self._beat_done.eq(1), self._beat_req.eq(h1.req),
                self.beat.data.eq(Cat(low, hi.value)), self.beat.error.eq(low_p | hi.message),
            ]
        with m.If(hi_low):
            m.d.sync += [carry.eq(hi.value), carry_p.eq(hi.message)]
        with m.Elif(lo_low):
            m.d.sync += [carry.eq(lo.value), carry_p.eq(lo.message)]
        self._be_done = Signal()
        m.d.comb += [
            self._be_done.eq((lo.consume & lo_be) | (hi.consume & hi_be)),
            self.be.eq(Mux(lo.consume & lo_be, lo.value, hi.value)),
        ]
        poison = Signal(2)
        m.d.comb += poison.eq((lo.consume & lo.message) + (hi.consume & hi.message))
        return poison

    def _control_checks(self, m, dec, control, fv, err):
        """Decoder errors, catch buffers (source rate limits) and receive buffers (credits)."""
        req_out = Signal(range(REQ_LIMIT + 1))
        rsp_out = Signal(range(RSP_LIMIT + 1))
        for k in RxError:
            err[k].append(control & dec.errors[k])
        err[RxError.CATCH_OVERRUN].append(
            control & ((dec.n_req > REQ_LIMIT - req_out) | (dec.n_rsp > RSP_LIMIT - rsp_out)))
        n_req = Mux(control, dec.n_req, 0)
        n_rsp = Mux(control, dec.n_rsp, 0)
        with m.If(fv):
            m.d.sync += [
                req_out.eq(Mux(req_out + n_req > 0, req_out + n_req - 1, 0)),
                rsp_out.eq(Mux(rsp_out + n_rsp > 0, rsp_out + n_rsp - 1, 0)),
            ]
        arrivals = {CreditClass.REQ_CMD: dec.n_req, CreditClass.RSP_CMD: dec.n_rsp,
                    CreditClass.REQ_DATA: dec.req_data, CreditClass.RSP_DATA: dec.rsp_data}
        self._occ, self._arrivals = [], arrivals
        over = [dec.vc_slot]
        for c in CreditClass:
            limit = self._config.advertised[c]
            occ = Signal(range(limit + 1), name=f"occ_{c.name.lower()}")
            self._occ.append(occ)
            over.append(occ + arrivals[c] > limit)
        err[RxError.BUFFER_OVERRUN].append(control & Cat(*over).any())

    def _errors(self, m, fv, err_lo, err_hi):
        """The flit's error kinds; latch the first; returns whether the flit commits."""
        lo_bits = Signal(len(RxError))
        hi_bits = Signal(len(RxError))
        m.d.comb += [
            lo_bits.eq(Cat(*(Cat(*err_lo[k]).any() if err_lo[k] else Const(0) for k in RxError))),
            hi_bits.eq(Cat(*(Cat(*err_hi[k]).any() if err_hi[k] else Const(0) for k in RxError))),
        ]
        bits = Signal(len(RxError))
        m.d.comb += bits.eq(Mux(lo_bits.any(), lo_bits, hi_bits))
        commit = Signal()
        m.d.comb += commit.eq(fv & ~self.error & ~bits.any())
        with m.If(fv & ~self.error & bits.any()):
            m.d.sync += self.error.eq(1)
            for k in reversed(RxError):                 # lowest kind wins
                with m.If(bits[k]):
                    for j in RxError:
                        cnt = self.error_counts[j]
                        m.d.sync += cnt.eq(Mux(j == k, Mux(cnt == 0xFF, cnt, cnt + 1), cnt))
        return commit

    def _outputs(self, m, dec, commit, control, init, poison):
        take = Signal()
        m.d.comb += take.eq(commit & control)
        m.d.comb += [
            self.req_valid.eq(Mux(take, dec.req_valid, 0)), self.req.eq(dec.req),
            self.rsp_valid.eq(Mux(take, dec.rsp_valid, 0)), self.rsp.eq(dec.rsp),
            self.req_beat_valid.eq(commit & self._beat_done & self._beat_req),
            self.rsp_beat_valid.eq(commit & self._beat_done & ~self._beat_req),
            self.be_valid.eq(commit & self._be_done),
        ]
        m.d.sync += self.grant.eq(Mux(take, dec.grant.as_value(), 0))
        with m.If(commit):
            m.d.sync += self.poisoned.eq(self.poisoned + poison)
            with m.If(init):
                m.d.sync += self.peer_init.eq(1)
        for c, occ in zip(CreditClass, self._occ):
            m.d.sync += occ.eq(occ + Mux(take, self._arrivals[c], 0) - self.freed[c])
