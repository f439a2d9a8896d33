# SPDX-License-Identifier: BSD-2-Clause
"""Flit front end of the TL receiver: a three-stage pipeline from the flit to what it carries,
checked."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
    HALF_BITS,
    REQ_LIMIT,
    RSP_LIMIT,
    SECTORS_PER_HALF,
    CreditClass,
    MsgType,
    RxError,
    TlConfig,
    credit_update_layout,
    flit_layout,
    flit_stream,
    message_half,
    rx_error_counts,
)
from ..logic import or_all
from .decode import ControlDecoder, request_groups, rx_req_entry, rx_rsp_entry
from .sequence import HalfSequencer
from .tally import ControlTally

__all__ = ["RxFront", "rx_beat_layout"]

#: A received 64-byte data beat: both data half-flits and whether either was poisoned.
rx_beat_layout = data.StructLayout({"data": 2 * HALF_BITS, "error": 1})

#: What the first stage finds in each half-flit when it is a message: M bit, type byte
#: decoded, and (for the MANDATORY NOP check) whether any bit is set.
_msg_flags = data.StructLayout({
    "m": 1, "poison": 1, "init": 1, "unknown": 1, "nz": 1,
    "bad_data": 1,      # an error in a data position (a message of unknown type)
    "bad_msg": 1,       # an error in a message position (unknown type or Poisoned Data)
    "bad_nop": 1,       # not a message, not all zeros: an error where a MANDATORY NOP belongs
    "poisoned": 1,      # a Poisoned Data message
})


class RxFront(wiring.Component):
    """Takes one TL flit per clock, decides what each half-flit is (README §3 flit rule, §4),
    checks it and hands out what it carries.

    The flit goes through three stages: the control decoder's two (:class:`ControlDecoder`,
    :class:`ControlTally`), the first on the flit as presented, and the sequencing stage, where
    the role of each half-flit (:class:`HalfSequencer`), the checks that need state (catch and
    receive buffer room, data positions), the flit's commit and the data beats are decided.
    The flit is not registered on entry: it should come from a register (the data link's
    output), as every block of this library presents its streams.

    Parameters
    ----------
    config : TlConfig
        Sizes of the receive buffers (the pool credits advertised); with ``cache_ways``,
        compressed requests are fields (up to four requests per control half).

    Members
    -------
    flit : In(flit_stream())
        Flits from the data link; ``ready`` is always 1.
    commit : Out(1)
        The flit in the last stage is good: what it carries is to be taken.
    take : Out(1)
        ``commit`` and that flit's lower half is a control half: its requests and responses
        are to be taken.
    req_n, req : Out
        Up to two requests of that control half (four with an address cache), packed in
        sector order (:func:`~scaleup_ip.tl.rx.decode.rx_req_entry`).
    rsp_n, rsp : Out
        Up to eight responses, packed in sector order.
    req_beat, rsp_beat, beat : Out
        A request or response data beat completes (at most one per clock). Written ahead of
        ``commit``: a buffer may store it at once and count it only with ``commit``.
    be_valid, be : Out
        A byte-enable half-flit arrives (at most one per clock); same rule.
    grant : Out(credit_update_layout)
        Flow Control credits received, for one clock.
    freed : In(len(CreditClass))
        One pool credit of each class returned (receive buffer space freed) some clocks ago.
    peer_init, error, error_counts, poisoned : Out
        Initial Credit Release Complete seen; sticky fatal error; per-kind counters; poisoned
        half-flits.
    cache_error : In(1)
        With an address cache only: a request that could not be expanded was reached (a
        pulse); it is a ``compressed_request`` error, latched and counted like the others
        (``error`` the next clock), unless an error is latched already.

    Latency: a flit presented at clock ``t`` is in the decoder's stages at ``t`` and
    ``t + 1``, and its outputs (``commit`` and what it carries) are valid at ``t + 2``;
    ``grant`` and ``error`` follow at ``t + 3``, ``error_counts``, ``poisoned`` and
    ``peer_init`` at ``t + 4``. Throughput: one flit per
    clock. A flit with an error commits nothing and changes nothing but ``error`` and its
    counter; every later flit is dropped until reset.
    """

    def __init__(self, config):
        if not isinstance(config, TlConfig):
            raise TypeError(f"RxFront config must be a TlConfig, not {config!r}")
        self._config = config
        self._cached = cached = config.rx_cache is not None
        self._groups = groups = request_groups(cached)
        super().__init__({
            **({"cache_error": In(1)} if cached else {}),
            "flit": In(flit_stream()),
            "commit": Out(1),
            "take": Out(1),
            "req_n": Out(range(groups + 1)),
            "req": Out(data.ArrayLayout(rx_req_entry(cached), groups)),
            "rsp_n": Out(range(SECTORS_PER_HALF + 1)),
            "rsp": Out(data.ArrayLayout(rx_rsp_entry, SECTORS_PER_HALF)),
            "req_beat": Out(1),
            "rsp_beat": Out(1),
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
        m.submodules.dec = dec = ControlDecoder(self._cached)
        m.submodules.tally = tally = ControlTally(self._cached)
        m.submodules.seq = seq = HalfSequencer(self._groups)
        # Stage 1 (decoder) on the flit as presented, stage 2 (tally); flit and flags follow.
        v = [Signal(name=f"v{k}") for k in range(3)]
        f = [Signal(flit_layout, name=f"f{k}") for k in range(3)]
        flags = [Signal(data.ArrayLayout(_msg_flags, 2), name=f"flags{k}") for k in (1, 2)]
        m.d.comb += self.flit.ready.eq(1)
        m.d.comb += [v[0].eq(self.flit.valid), f[0].eq(self.flit.payload)]
        m.d.sync += [v[k + 1].eq(v[k]) for k in range(2)]
        m.d.sync += [f[k + 1].eq(f[k]) for k in range(2)]
        for h in range(2):
            self._message(m, f[0].data[h], f[0].msg[h], flags[0][h])
        m.d.sync += flags[1].eq(flags[0])
        lo_takes = Signal()             # a flit whose lower half is data if in a data position
        m.d.sync += lo_takes.eq(v[1] & ~(flags[0][0].m & ~flags[0][0].poison))
        m.d.comb += [
            dec.half.eq(f[0].data[0]), tally.half.eq(f[1].data[0]),
            tally.rsp_valid.eq(dec.rsp_valid), tally.rsp.eq(dec.rsp),
            tally.rsp_pick.eq(dec.rsp_pick), tally.rsp_n_in.eq(dec.rsp_n),
            tally.rsp_beats.eq(dec.rsp_beats), tally.pair_beats.eq(dec.pair_beats),
            tally.req_valid.eq(dec.req_valid),
            tally.fc_valid.eq(dec.fc_valid), tally.errors.eq(dec.errors),
        ]
        if self._cached:
            m.d.comb += [tally.creq_valid.eq(dec.creq_valid), tally.req_pick.eq(dec.req_pick),
                         tally.req_n_in.eq(dec.req_n), tally.req_beats.eq(dec.req_beats),
                         tally.req_be.eq(dec.req_be), tally.req_data_in.eq(dec.req_data)]
        # Stage 3: roles, checks, commit, data.
        fl = flags[1]
        m.d.comb += [
            seq.valid.eq(v[2]), seq.msg.eq(Cat(fl[0].m, fl[1].m)),
            seq.poison.eq(Cat(fl[0].poison, fl[1].poison)),
            seq.new_nz.eq(tally.new_nz), seq.new_ge3.eq(tally.new_ge3),
            seq.seg.eq(tally.seg),
        ]
        err_lo = {k: [] for k in RxError}
        err_hi = {k: [] for k in RxError}
        self._message_errors(m, seq, fl, v[2], err_lo, err_hi)
        over = self._control_checks(m, seq, tally, err_lo)
        self._data(m, seq, f[2], fl, lo_takes, err_lo, err_hi)
        # Whether the flit has any error, from terms each a few levels deep (the same as the
        # kinds below, regrouped so that commit is shallow).
        bad = Signal()
        m.d.comb += bad.eq(
            (v[2] & (Mux(seq.lo_data, fl[0].bad_data, fl[0].bad_msg)
                     | Mux(seq.hi_data, fl[1].bad_data, fl[1].bad_msg | fl[1].bad_nop)))
            | (seq.control & (tally.errors_any | over))
            | (seq.pos_be & lo_takes & fl[0].m)
            | (seq.hi_data & fl[1].poisoned & seq.hi.be))
        commit = self._errors(m, v[2], bad, err_lo, err_hi)
        self._outputs(m, seq, tally, fl, commit)
        return m

    @staticmethod
    def _message(m, value, m_bit, flags):
        """Stage 1: the half-flit read as a message."""
        t = data.View(message_half, value).type
        poison = t == MsgType.POISONED_DATA
        init = t == MsgType.CREDIT_INIT_DONE
        unknown = ~poison & ~init & (t != MsgType.NOP)
        nz = value.any()
        m.d.sync += [
            flags.m.eq(m_bit), flags.poison.eq(poison), flags.init.eq(init),
            flags.unknown.eq(unknown), flags.nz.eq(nz),
            flags.bad_data.eq(m_bit & unknown), flags.bad_msg.eq(m_bit & (unknown | poison)),
            flags.bad_nop.eq(~m_bit & nz), flags.poisoned.eq(m_bit & poison),
        ]

    @staticmethod
    def _message_errors(m, seq, fl, v, err_lo, err_hi):
        """Message-role checks and the MANDATORY NOP (README §4)."""
        for h, err, pos in ((0, err_lo, seq.lo_data), (1, err_hi, seq.hi_data)):
            f = fl[h]
            err[RxError.MISPLACED_POISON].append(v & ~pos & f.m & f.poison)
            err[RxError.UNKNOWN_MESSAGE].append(v & f.m & f.unknown)
        err_hi[RxError.MANDATORY_NOP].append(v & ~seq.hi_data & ~fl[1].m & fl[1].nz)

    def _control_checks(self, m, seq, tally, err):
        """Decoder errors, catch buffers (source rate limits) and receive buffers (credits);
        returns whether either buffer would overrun.

        The rate and credit counters count every control half, committed or not: after an
        error nothing is checked any more, and before it every control half commits."""
        control = seq.control
        for k in RxError:
            if k not in (RxError.CATCH_OVERRUN, RxError.BUFFER_OVERRUN):
                err[k].append(control & tally.errors_out[k])
        rate = []
        nxt = tally.arrivals_next
        for n, n_next, most, limit, name in (
                (tally.req_n, nxt.req_n, self._groups, REQ_LIMIT, "req"),
                (tally.rsp_n, nxt.rsp_n, SECTORS_PER_HALF, RSP_LIMIT, "rsp")):
            rate.append(self._rate_limit(m, seq, n, n_next, most, limit, name))
        err[RxError.CATCH_OVERRUN].append(control & Cat(*rate).any())
        arrivals = {CreditClass.REQ_CMD: (tally.req_n, nxt.req_n),
                    CreditClass.RSP_CMD: (tally.rsp_n, nxt.rsp_n),
                    CreditClass.REQ_DATA: (tally.req_data, nxt.req_data),
                    CreditClass.RSP_DATA: (tally.rsp_data, nxt.rsp_data)}
        over = [tally.vc_slot]
        for c in CreditClass:
            over.append(self._short_of_credits(m, control, c, *arrivals[c]))
        err[RxError.BUFFER_OVERRUN].append(control & Cat(*over).any())
        any_over = Signal()
        m.d.comb += any_over.eq(Cat(*rate, *over).any())
        return any_over

    def _short_of_credits(self, m, control, c, arrived, arriving):
        """Whether the ``arrived`` fields or beats of class ``c`` exceed the receive buffer
        space left (``free``, the credits advertised less those spent plus ``freed``), as a
        register: ``slack`` = free − arrived is kept instead of ``free`` and updated with
        ``arriving``, what the control half behind takes into ``arrived``; its sign is the
        answer, with no comparison after the registers. Before the first error ``free``
        stays within 0 .. advertised, and after it nothing is checked any more."""
        limit = self._config.advertised[c]
        most = (1 << len(arrived)) - 1
        slack = Signal(range(-most, limit + 1), name=f"slack_{c.name.lower()}", init=limit)
        m.d.sync += slack.eq(slack + Mux(control, 0, arrived) + self.freed[c] - arriving)
        return slack[-1]

    @staticmethod
    def _rate_limit(m, seq, n, n_next, most, limit, name):
        """The peer's outstanding count of one source rate limit [§5.7], one-hot: every flit
        retires one, a control half adds its ``n`` (at most ``most``). Returns whether ``n``
        more overrun it, as a register formed a clock ahead from the next count and
        ``n_next`` (what ``n`` takes at the clock's end), as the credit check is: only
        registers in front of the flit's verdict."""
        out = Signal(limit + 1, name=f"{name}_out", init=1)     # one-hot outstanding count
        is_n = [n == k for k in range(most + 1)]

        def over(count, k):
            return or_all([count[x] & (k > limit - x) for x in range(limit + 1)
                           if limit - x < most])
        add = Cat(*(or_all([out[x] & is_n[k] for x in range(limit + 1) for k in range(most + 1)
                            if min(limit, max(0, x + k - 1)) == y])
                    for y in range(limit + 1)))
        retire = Cat(out[0] | out[1], out[2:])
        nxt = Signal.like(out, name=f"{name}_out_next")
        ahead = Signal(name=f"{name}_over")
        m.d.comb += nxt.eq(Mux(seq.control, add, Mux(seq.valid, retire, out)))
        m.d.sync += [out.eq(nxt), ahead.eq(over(nxt, n_next))]
        return ahead

    def _data(self, m, seq, f, fl, lo_takes, err_lo, err_hi):
        """Beat assembly from the data half-flits consumed. The wide multiplexers are steered
        by two registers each (``seq.pos_*`` and ``lo_takes``)."""
        hi = seq.hi
        hi_c = seq.hi_consume
        carry = Signal(HALF_BITS)
        carry_p = Signal()
        lo_low, lo_high, lo_be = Signal(), Signal(), Signal()
        hi_low, hi_high, hi_be = Signal(), Signal(), Signal()
        m.d.comb += [
            lo_low.eq(seq.pos_low & lo_takes), lo_high.eq(seq.pos_high & lo_takes),
            lo_be.eq(seq.pos_be & lo_takes),
            hi_low.eq(hi_c & ~hi.be & ~hi.high), hi_high.eq(hi_c & ~hi.be & hi.high),
            hi_be.eq(hi_c & hi.be),
        ]
        err_lo[RxError.MISPLACED_POISON].append(lo_be & fl[0].m)
        err_hi[RxError.MISPLACED_POISON].append(hi_be & fl[1].m)
        lo_v, hi_v = f.data[0], f.data[1]
        m.d.comb += [
            self.beat.data.eq(Cat(Mux(lo_low, lo_v, carry), Mux(lo_high, lo_v, hi_v))),
            self.beat.error.eq(Mux(lo_low, fl[0].m, carry_p) | Mux(lo_high, fl[0].m, fl[1].m)),
            self.req_beat.eq((lo_high & seq.lo.req) | (hi_high & hi.req)),
            self.rsp_beat.eq((lo_high & ~seq.lo.req) | (hi_high & ~hi.req)),
            self.be_valid.eq(lo_be | hi_be), self.be.eq(Mux(lo_be, lo_v, hi_v)),
        ]
        with m.If(hi_low):
            m.d.sync += [carry.eq(hi_v), carry_p.eq(fl[1].m)]
        with m.Elif(lo_low):
            m.d.sync += [carry.eq(lo_v), carry_p.eq(fl[0].m)]
        self._poison = Signal(2)
        m.d.comb += self._poison.eq((seq.lo_consume & fl[0].m) + (hi_c & fl[1].m))

    def _errors(self, m, v, bad, err_lo, err_hi):
        """Latch the first error; count its kind a clock later; returns commit. A request that
        could not be expanded (``cache_error``) belongs to a flit committed earlier than the
        one in the sequencing stage, so it wins when both come in one clock."""
        lo_bits = Signal(len(RxError))
        hi_bits = Signal(len(RxError))
        m.d.comb += [
            lo_bits.eq(Cat(*(Cat(*err_lo[k]).any() if err_lo[k] else 0 for k in RxError))),
            hi_bits.eq(Cat(*(Cat(*err_hi[k]).any() if err_hi[k] else 0 for k in RxError))),
        ]
        commit = Signal()
        m.d.comb += [
            commit.eq(v & ~self.error & ~bad),
            self.commit.eq(commit),
        ]
        first = Signal()
        lo_seen, hi_seen = Signal.like(lo_bits), Signal.like(hi_bits)
        bits = Signal(len(RxError))
        new = v & ~self.error & bad
        if self._cached:
            cache_first = Signal()
            m.d.sync += cache_first.eq(self.cache_error & ~self.error)
            with m.If(self.cache_error):
                m.d.sync += self.error.eq(1)
            new = new & ~self.cache_error
        m.d.sync += [first.eq(new), lo_seen.eq(lo_bits), hi_seen.eq(hi_bits)]
        m.d.comb += bits.eq(Mux(lo_seen.any(), lo_seen, hi_seen))     # the lower half first
        with m.If(v & bad):
            m.d.sync += self.error.eq(1)
        if self._cached:
            with m.If(cache_first):
                cnt = self.error_counts[RxError.COMPRESSED_REQUEST]
                m.d.sync += cnt.eq(Mux(cnt == 0xFF, cnt, cnt + 1))
        with m.If(first):
            for k in reversed(RxError):                 # lowest kind wins
                with m.If(bits[k]):
                    for j in RxError:
                        cnt = self.error_counts[j]
                        m.d.sync += cnt.eq(Mux(j == k, Mux(cnt == 0xFF, cnt, cnt + 1), cnt))
        return commit

    def _outputs(self, m, seq, tally, fl, commit):
        take = Signal()
        m.d.comb += [
            take.eq(commit & seq.control),
            self.take.eq(take),
            self.req_n.eq(tally.req_n), self.req.eq(tally.reqs),
            self.rsp_n.eq(tally.rsp_n), self.rsp.eq(tally.rsps),
        ]
        took = Signal()
        grant = Signal.like(tally.grant)
        m.d.sync += [took.eq(take), grant.eq(tally.grant)]
        m.d.comb += self.grant.eq(Mux(took, grant.as_value(), 0))
        init = Signal()
        poison = Signal(2)
        m.d.sync += [
            init.eq(commit & ((fl[0].m & fl[0].init) | (fl[1].m & fl[1].init))),
            poison.eq(Mux(commit, self._poison, 0)),
        ]
        m.d.sync += self.poisoned.eq(self.poisoned + poison)
        with m.If(init):
            m.d.sync += self.peer_init.eq(1)
