# SPDX-License-Identifier: BSD-2-Clause
"""The LLR receiver: which eligible frames are accepted, and when ACK, NACK and INIT_ECHO go."""

from amaranth import Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ....counters import count_events
from ..config import LinkConfig
from ..layout import (
    Class,
    Ctl,
    LinkRxCount,
    RxState,
    ctl_requests_layout,
    rx_counts,
    verdict_layout,
)

__all__ = ["LlrRx"]


class LlrRx(ConfiguredComponent):
    """The receiver of README §3.1: expected sequence number, state, ACK pacing, counters.

    A frame is judged the clock its last beat leaves :class:`~scaleup_ip.ethx.link.rx.check.RxCheck`
    (``judge``): ``accept`` is combinational from that verdict, the receive buffer's ``room``
    and the registered state, and everything else changes at the next edge. An ACK or NACK
    asked for stays asked for (``want``) until the control sender takes it (``sent``); it
    carries ``last_good`` (``expected - 1``) as it is then. A NACK replaces an ACK asked for.

    Members
    -------
    judge : ``In(1)``; verdict : ``In(verdict_layout(config))``
        A frame's verdict, valid with ``judge``.
    room : ``In(1)``
        The receive buffer held the whole frame (a DATA frame without it is not accepted:
        ``RX_OVERFLOW``, and NACKed like a bad frame).
    accept : ``Out(1)``
        Accept the judged frame (DATA: commit it; CC: apply its counts; POISONED: drop it and
        free its credits, README §1).
    want : ``Out(ctl_requests_layout)``; sent : ``In(ctl_requests_layout)``
        ACK, NACK and INIT_ECHO asked for; the control sender's pulses when it takes one.
    last_good : ``Out(seq_bits)``; echo_seq : ``Out(seq_bits)``
        What an ACK or NACK carries; what the INIT_ECHO carries.
    ack_bytes, ack_delay : ``In(16)``
        Settings (:func:`~scaleup_ip.ethx.link.layout.settings_layout`).
    state : ``Out(RxState)``; expected : ``Out(seq_bits)``
    counts : ``Out(rx_counts)``
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "judge": In(1), "verdict": In(verdict_layout(c)), "room": In(1),
            "accept": Out(1),
            "want": Out(ctl_requests_layout), "sent": In(ctl_requests_layout),
            "last_good": Out(c.seq_bits), "echo_seq": Out(c.seq_bits),
            "ack_bytes": In(16), "ack_delay": In(16),
            "state": Out(RxState), "expected": Out(c.seq_bits),
            "counts": Out(rx_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        v, state, e = self.verdict, self.state, self.expected
        bits = cfg.seq_bits
        d = Signal(bits)
        m.d.comb += [d.eq(v.seq[:bits] - e), self.last_good.eq(e - 1)]
        eligible = self.judge & v.cls.as_value().matches(Class.DATA, Class.CC, Class.POISONED)
        poisoned = v.cls == Class.POISONED
        synced = state != RxState.OFF
        expected = eligible & (d == 0)
        duplicate = eligible & d[-1]
        ahead = eligible & (d != 0) & ~d[-1]
        no_room = expected & (v.cls == Class.DATA) & ~self.room
        bad = self.judge & (v.cls == Class.BAD)
        init = self.judge & (v.cls == Class.CONTROL) & (v.kind == Ctl.INIT)
        m.d.comb += self.accept.eq(expected & synced & ~no_room)

        nack = (state == RxState.SEND_ACKS) & (bad | ahead | no_room)
        want = self.want
        with m.If(self.accept):
            m.d.sync += [e.eq(e + 1), state.eq(RxState.SEND_ACKS)]
        with m.If(nack):
            m.d.sync += [state.eq(RxState.NACK_SENT), want.nack.eq(1), want.ack.eq(0)]
        with m.Elif(self.sent.nack):
            m.d.sync += want.nack.eq(0)
        with m.If(init):
            m.d.sync += [e.eq(v.seq[:bits]), state.eq(RxState.SEND_ACKS), want.echo.eq(1),
                         self.echo_seq.eq(v.seq[:bits]), want.nack.eq(0), want.ack.eq(0)]
        with m.Elif(self.sent.echo):
            m.d.sync += want.echo.eq(0)
        self._pace(m, duplicate & synced, nack | init)
        count_events(m, self.counts, {
            LinkRxCount.RX_OK: self.accept & ~poisoned,
            LinkRxCount.RX_POISONED: self.accept & poisoned,
            LinkRxCount.RX_DUPLICATE: duplicate & synced,
            LinkRxCount.RX_MISSING: ahead & synced,
            LinkRxCount.RX_BAD: bad | (no_room & synced),
            LinkRxCount.RX_DISCARD: eligible & ~synced,
            LinkRxCount.RX_OVERFLOW: no_room & synced,
            LinkRxCount.RX_FOREIGN: self.judge & (v.cls == Class.FOREIGN),
            LinkRxCount.ACK_TX: self.sent.ack,
            LinkRxCount.NACK_TX: self.sent.nack,
            LinkRxCount.INIT_RX: init,
            LinkRxCount.INIT_ECHO_TX: self.sent.echo,
            LinkRxCount.CF_TX: self.sent.cf,     # counted here with the receiver's others
            LinkRxCount.CC_RX: self.accept & (v.cls == Class.CC),
        })
        return m

    def _pace(self, m, duplicate, cancel):
        """ACKs: once ``ack_bytes`` accepted bytes or ``ack_delay`` clocks have passed since
        the first frame not acknowledged, or at once for a duplicate; only in SEND_ACKS. An
        ACK or NACK taken acknowledges everything accepted before it."""
        cfg, want, sent = self.config, self.want, self.sent
        owed = Signal(range(cfg.max_frame_bytes + (1 << 16)))     # bytes not acknowledged
        age = Signal(16)
        waiting = Signal()                  # a frame accepted and not acknowledged
        gone = sent.ack | sent.nack | cancel
        m.d.sync += [
            owed.eq(Mux(gone, 0, Mux(owed >= 0xFFFF, 0xFFFF, owed))
                    + Mux(self.accept & ~cancel, self.verdict.bytes, 0)),
            waiting.eq(Mux(gone, 0, waiting) | (self.accept & ~cancel)),
            age.eq(Mux(waiting & ~gone & (age != 0xFFFF), age + 1, Mux(waiting & ~gone, age, 0))),
        ]
        due = waiting & ((age + 1 >= self.ack_delay) | (owed >= self.ack_bytes))
        ask = ((due & (self.state == RxState.SEND_ACKS)) | duplicate) & ~gone & ~want.nack
        with m.If(ask):
            m.d.sync += want.ack.eq(1)
        with m.Elif(sent.ack | cancel):
            m.d.sync += want.ack.eq(0)
