# SPDX-License-Identifier: BSD-2-Clause
"""The lossless link's receive side: frames from the wire to the bridge, control messages to
the transmit side."""

from amaranth import Module
from amaranth.lib import data
from amaranth.lib.wiring import In, Out, connect, flipped

from ....config import ConfiguredComponent
from ..config import LinkConfig
from .best_effort import BestEffortRx
from .credit import CreditRx
from ..layout import (
    COUNT_BITS,
    Class,
    Ctl,
    be_side_counts,
    RxState,
    ctl_in_layout,
    ctl_requests_layout,
    eth_stream,
    rx_counts,
    settings_layout,
)
from .llr import LlrRx
from .check import RxCheck
from .store import RxStore

__all__ = ["LinkRx"]


class LinkRx(ConfiguredComponent):
    """``i`` (the wire) → :class:`RxCheck` → :class:`RxStore` → ``o`` (the bridge), with the
    :class:`LlrRx` judging every frame and the :class:`CreditRx` counting credits (README
    §3.1, §4); with ``be_bytes``, a :class:`BestEffortRx` beside the store takes the frames
    that are not the link's to ``be_o`` (README §6).

    Latency: a frame reaches ``o`` a few clocks after its last beat arrived (store and
    forward: the FCS decides; a register between the checker and the judge). Throughput: one
    beat per clock in and out.

    Members
    -------
    i : ``In(eth_stream(eth_width))``; o : ``Out(eth_stream(eth_width))``
    ctl : ``Out(ctl_in_layout(config))``
        ACK, NACK, INIT_ECHO and CF_UPDATE as they arrive (good FCS), for the transmit side.
    want : ``Out(ctl_requests_layout)``; sent : ``In(ctl_requests_layout)``
        Control frames this side asks for (all but INIT); the control sender's pulses as it
        takes them.
    last_good, echo_seq : ``Out(seq_bits)``; r_cc, r_cf : ``Out(ArrayLayout(20, vcs))``
        What they carry (``r_cc`` for management and tests).
    settings : ``In(settings_layout(config))``
    state : ``Out(RxState)``; expected : ``Out(seq_bits)``; counts : ``Out(rx_counts)``
    be_o : ``Out(eth_stream(eth_width))``; be_counts : ``Out(be_side_counts)``
        With ``be_bytes`` only: best-effort frames, no FCS; ``BE_RX``, ``BE_RX_DROPPED``.
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)), "o": Out(eth_stream(c.eth_width)),
            "ctl": Out(ctl_in_layout(c)),
            "want": Out(ctl_requests_layout), "sent": In(ctl_requests_layout),
            "last_good": Out(c.seq_bits), "echo_seq": Out(c.seq_bits),
            "r_cc": Out(data.ArrayLayout(COUNT_BITS, c.vcs)),
            "r_cf": Out(data.ArrayLayout(COUNT_BITS, c.vcs)),
            "settings": In(settings_layout(c)),
            "state": Out(RxState), "expected": Out(c.seq_bits), "counts": Out(rx_counts),
        } | ({"be_o": Out(eth_stream(c.eth_width)), "be_counts": Out(be_side_counts)}
             if c.be_bytes else {}))

    def elaborate(self, platform):
        cfg, s = self.config, self.settings
        m = Module()
        m.submodules.check = check = RxCheck(cfg)
        m.submodules.store = store = RxStore(cfg)
        m.submodules.llr = llr = LlrRx(cfg)
        m.submodules.credit = credit = CreditRx(cfg)
        connect(m, flipped(self.i), check.i)
        if cfg.vlan:
            m.d.comb += check.settings.eq(s)
        # A register between the checker and the judge (the store is always ready) [Fmax].
        m.d.comb += check.o.ready.eq(1)
        m.d.sync += [store.i.valid.eq(check.o.valid), store.i.payload.eq(check.o.payload)]
        connect(m, store.o, flipped(self.o))
        if cfg.be_bytes:
            m.submodules.be = be = BestEffortRx(cfg)
            m.d.comb += [be.i.valid.eq(store.i.valid), be.i.payload.eq(store.i.payload),
                         self.be_counts.eq(be.counts)]
            connect(m, be.o, flipped(self.be_o))
        v = store.verdict
        m.d.comb += [
            llr.judge.eq(store.judge), llr.verdict.eq(v), llr.room.eq(store.room),
            store.accept.eq(llr.accept),
            llr.ack_bytes.eq(s.ack_bytes), llr.ack_delay.eq(s.ack_delay),
            credit.judge.eq(store.judge), credit.accept.eq(llr.accept), credit.cls.eq(v.cls),
            credit.vc.eq(v.vc), credit.nbytes.eq(v.bytes), credit.counts.eq(v.counts),
            credit.freed.eq(store.freed),
            credit.cf_bytes.eq(s.cf_bytes), credit.cf_period.eq(s.cf_period),
            self.want.eq(llr.want), self.want.cf.eq(credit.want),
            llr.sent.eq(self.sent), credit.sent.eq(self.sent.cf),
            self.last_good.eq(llr.last_good), self.echo_seq.eq(llr.echo_seq),
            self.r_cc.eq(credit.r_cc), self.r_cf.eq(credit.r_cf),
            self.state.eq(llr.state), self.expected.eq(llr.expected), self.counts.eq(llr.counts),
        ]
        to_tx = (store.judge & (v.cls == Class.CONTROL) & (v.kind != Ctl.INIT))
        m.d.sync += [self.ctl.valid.eq(to_tx), self.ctl.kind.eq(v.kind), self.ctl.seq.eq(v.seq),
                     self.ctl.counts.eq(v.counts)]
        return m
