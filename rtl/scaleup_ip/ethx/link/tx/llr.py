# SPDX-License-Identifier: BSD-2-Clause
"""The LLR transmitter: the replay ring's pointers, its state, the replay timer and the INITs."""

from amaranth import Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ....counters import count_events
from ..config import LinkConfig
from ..layout import Ctl, LinkTxCount, TxState, ctl_in_layout, tx_counts

__all__ = ["LlrTx"]


class LlrTx(ConfiguredComponent):
    """The transmitter of README §3.2, over sequence numbers: ``acked`` (the oldest frame
    kept), ``sent`` (the next to send) and ``next`` (the next to enter the replay ring).

    ``pushed`` (a frame entered the ring) moves ``next``; ``started`` (the sender began the
    frame at ``sent``) moves ``sent``. ACK, NACK and INIT_ECHO arrive on ``ctl`` and take
    effect at the next edge; a NACK or the timer moves ``sent`` back, and a frame already
    begun is finished first. ``flushed`` pulses when a FLUSH drops every kept frame.

    Members
    -------
    ctl : ``In(ctl_in_layout(config))``
    up : ``In(1)``
        The link is up.
    pushed, started : ``In(1)``
    acked, sent, next : ``Out(seq_bits)``
    may_send : ``Out(1)``
        Synchronized, up, in ADVANCE or REPLAY, and a frame at ``sent`` to send.
    want_init : ``Out(1)``; init_sent : ``In(1)``
        An INIT(acked) is due; the control sender took it.
    flushed : ``Out(1)``
    replay_timeout, init_period, down_max : ``In(16)``; replay_max : ``In(8)``
    cc_sent, cf_got, malformed, poisoned : ``In(1)``; credit_errors : ``In(range(vcs + 1))``
        Events of the credit sender and the VC queues, counted here with the transmitter's
        others.
    state : ``Out(TxState)``; counts : ``Out(tx_counts)``
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "ctl": In(ctl_in_layout(c)), "up": In(1),
            "pushed": In(1), "started": In(1),
            "acked": Out(c.seq_bits), "sent": Out(c.seq_bits), "next": Out(c.seq_bits),
            "may_send": Out(1), "want_init": Out(1), "init_sent": In(1), "flushed": Out(1),
            "replay_timeout": In(16), "init_period": In(16), "down_max": In(16),
            "replay_max": In(8),
            "cc_sent": In(1), "cf_got": In(1), "malformed": In(1), "poisoned": In(1),
            "credit_errors": In(range(c.vcs + 1)),
            "state": Out(TxState), "counts": Out(tx_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        bits = cfg.seq_bits
        acked, sent, nxt, state, ctl = self.acked, self.sent, self.next, self.state, self.ctl
        synced = Signal()
        top = Signal(bits)                  # one past the highest frame sent
        tries = Signal(8)                   # replays without progress
        timer = Signal(16)
        down = Signal(16)

        seq = ctl.seq[:bits]
        freed = Signal(bits)
        m.d.comb += freed.eq(seq + 1 - acked)
        outstanding = Signal(bits)          # sent and not acknowledged
        flown = Signal(bits)                # sent at some time and not acknowledged
        m.d.comb += [outstanding.eq(sent - acked), flown.eq(top - acked)]
        ack = ctl.valid & (ctl.kind == Ctl.ACK)
        nack = ctl.valid & (ctl.kind == Ctl.NACK)
        echo = ctl.valid & (ctl.kind == Ctl.INIT_ECHO)
        valid = synced & (freed <= flown)     # up to the highest sent [README §3.2]
        progress = (ack | nack) & valid & (freed != 0)
        go_back = nack & valid & (seq + 1 != sent)
        sending = synced & state.as_value().matches(TxState.ADVANCE, TxState.REPLAY)
        expired = sending & (outstanding != 0) & (timer + 1 >= self.replay_timeout)
        replay = go_back | (expired & ~progress)
        # Progress clears the count of replays without progress before a NACK's replay counts
        # [README §3.2]: a NACK that frees frames starts the count over at one.
        tried = Mux(progress, 0, tries)
        give_up = replay & (tried >= self.replay_max)
        long_down = ~self.up & (self.down_max != 0) & (down + 1 >= self.down_max) & synced
        flush = give_up | long_down
        echo_ok = echo & (state == TxState.INIT) & (seq == acked)

        m.d.comb += [self.may_send.eq(sending & self.up & (sent != nxt)),
                     self.flushed.eq(flush)]
        # Pointers.
        with m.If(self.pushed):
            m.d.sync += nxt.eq(nxt + 1)
        with m.If(self.started):
            m.d.sync += sent.eq(sent + 1)
            with m.If(sent == top):
                m.d.sync += top.eq(top + 1)
        # The oldest frame kept after this clock's ACK or NACK, if any.
        acked_after = Mux((ack | nack) & valid, seq + 1, acked)
        with m.If((ack | nack) & valid):
            m.d.sync += acked.eq(acked_after)
            with m.If(freed > outstanding):     # past a replay still under way
                m.d.sync += sent.eq(seq + 1)
        with m.If(go_back):
            m.d.sync += sent.eq(seq + 1)
        with m.Elif(expired & ~progress):
            m.d.sync += sent.eq(acked)
        with m.If(flush):
            after = nxt + self.pushed
            m.d.sync += [acked.eq(after), sent.eq(after), top.eq(after), synced.eq(0)]
        # Timers and counts of tries.
        m.d.sync += [
            timer.eq(Mux(progress | replay | ~sending | (outstanding == 0), 0, timer + 1)),
            tries.eq(Mux(flush, 0, Mux(replay, tried + 1, tried))),
            down.eq(Mux(self.up, 0, Mux(down == 0xFFFF, down, down + 1))),
        ]
        self._states(m, synced, top, flush, echo_ok, acked_after)
        peak = self.counts[LinkTxCount.PEAK_REPLAY]
        kept = (nxt - acked)[:bits]
        with m.If(kept > peak):
            m.d.sync += peak.eq(kept)
        count_events(m, self.counts, {
            LinkTxCount.TX_OK: self.started & (sent == top),
            LinkTxCount.TX_REPLAYED: self.started & (sent != top),
            LinkTxCount.TX_REPLAY_NACK: go_back,
            LinkTxCount.TX_REPLAY_TIMER: expired & ~progress & ~go_back,
            LinkTxCount.ACK_RX: ack, LinkTxCount.NACK_RX: nack,
            LinkTxCount.INIT_ECHO_RX: echo,
            LinkTxCount.ACK_NACK_SEQ_ERROR: (((ack | nack) & ~valid)
                                             | (echo & (state == TxState.INIT) & ~echo_ok)),
            LinkTxCount.INIT_TX: self.init_sent,
            LinkTxCount.CC_TX: self.cc_sent, LinkTxCount.CF_RX: self.cf_got,
            LinkTxCount.TX_MALFORMED: self.malformed,
            LinkTxCount.TX_POISONED: self.poisoned,
        })
        errors = self.counts[LinkTxCount.CREDIT_ERROR]
        m.d.sync += errors.eq(errors + self.credit_errors)
        with m.If(flush):
            m.d.sync += self.counts[LinkTxCount.TX_FLUSHED].eq(
                self.counts[LinkTxCount.TX_FLUSHED] + (nxt - acked)[:bits] + self.pushed)
        return m

    def _states(self, m, synced, top, flush, echo_ok, acked_after):
        """OFF, INIT, ADVANCE/REPLAY (by ``sent`` against the highest sent), FLUSH for a
        clock; the INIT period. Up again after OFF, the replay starts from the oldest frame
        kept after this clock's ACK or NACK (``acked_after``): never from one it frees."""
        state, up = self.state, self.up
        period = Signal(16)
        m.d.comb += self.want_init.eq((state == TxState.INIT) & (period == 0))
        with m.If(self.init_sent):
            m.d.sync += period.eq(Mux(self.init_period == 0, 0, self.init_period - 1))
        with m.Elif(period != 0):
            m.d.sync += period.eq(period - 1)
        with m.If(flush):
            m.d.sync += [state.eq(TxState.FLUSH), period.eq(0)]
        with m.Elif(~up):
            m.d.sync += state.eq(TxState.OFF)
        with m.Elif(state.as_value().matches(TxState.OFF, TxState.FLUSH)):
            m.d.sync += [state.eq(Mux(synced, TxState.REPLAY, TxState.INIT)), period.eq(0)]
            with m.If(synced):
                m.d.sync += self.sent.eq(acked_after)
        with m.Elif(echo_ok):
            m.d.sync += [state.eq(TxState.ADVANCE), synced.eq(1)]
        with m.Elif(state.as_value().matches(TxState.ADVANCE, TxState.REPLAY)):
            m.d.sync += state.eq(Mux(self.sent == top, TxState.ADVANCE, TxState.REPLAY))
