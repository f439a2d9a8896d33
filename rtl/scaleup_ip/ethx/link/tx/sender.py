# SPDX-License-Identifier: BSD-2-Clause
"""The lossless link's transmit side: bridge frames and control frames onto the wire."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out, connect, flipped

from ....config import ConfiguredComponent
from ..config import LinkConfig
from .best_effort import BestEffortTx
from .credit import CreditTx
from .control import CtlTx
from ..layout import (
    COUNT_BITS,
    TxState,
    be_side_counts,
    ctl_in_layout,
    ctl_requests_layout,
    eth_stream,
    settings_layout,
    tci_of,
    tx_counts,
)
from .llr import LlrTx
from .queues import TxQueues
from .ring import ReplayRing

__all__ = ["LinkTx"]


class LinkTx(ConfiguredComponent):
    """``i`` (the bridge) → :class:`TxQueues` → :class:`CreditTx` → :class:`ReplayRing` → ``o``
    (the wire), the :class:`LlrTx` keeping the ring's pointers, and the :class:`CtlTx`'s
    control frames put in between frames, before any eligible frame waiting (README §3.2, §4);
    with ``be_bytes``, a :class:`BestEffortTx`'s frames from ``be_i`` when neither has one
    to start (README §6).

    Nothing starts on ``o`` while ``up`` is low; a frame begun is finished.

    Latency: a frame reaches the wire some ``(16 + 8) / eth_bytes`` clocks and the CRC's
    latency after its last beat entered (store and forward: credits need its length).
    Throughput: one beat per clock, frames back to back on ``o``.

    Members
    -------
    i : ``In(eth_stream(eth_width))``; o : ``Out(eth_stream(eth_width))``
    ctl : ``In(ctl_in_layout(config))``
        ACK, NACK, INIT_ECHO and CF_UPDATE received
        (:class:`~scaleup_ip.ethx.link.rx.receiver.LinkRx`).
    want : ``In(ctl_requests_layout)``; sent : ``Out(ctl_requests_layout)``
        The receive side's requests for control frames (its ``init`` bit unused) and the
        pulses that take them.
    last_good, echo_seq : ``In(seq_bits)``; r_cf : ``In(ArrayLayout(20, vcs))``
    node : ``In(16)``; up : ``In(1)``; settings : ``In(settings_layout(config))``
    state : ``Out(TxState)``; counts : ``Out(tx_counts)``
    vc_ready : ``Out(vcs)``
        VCs whose queue has room for a longest frame.
    s_cc, s_cf : ``Out(ArrayLayout(20, vcs))``
        The credit counters, for management and tests.
    kept : ``Out(range(replay_frames + 1))``
        Frames in the replay ring: entered and not acknowledged.
    be_i : ``In(eth_stream(eth_width))``; be_counts : ``Out(be_side_counts)``
        With ``be_bytes`` only: best-effort frames, no FCS; ``BE_TX``, ``BE_TX_MALFORMED``.
    """

    config_class = LinkConfig

    def __init__(self, config):
        counts = data.ArrayLayout(COUNT_BITS, config.vcs)
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)), "o": Out(eth_stream(c.eth_width)),
            "ctl": In(ctl_in_layout(c)),
            "want": In(ctl_requests_layout), "sent": Out(ctl_requests_layout),
            "last_good": In(c.seq_bits), "echo_seq": In(c.seq_bits), "r_cf": In(counts),
            "node": In(16), "up": In(1), "settings": In(settings_layout(c)),
            "state": Out(TxState), "counts": Out(tx_counts), "vc_ready": Out(c.vcs),
            "s_cc": Out(counts), "s_cf": Out(counts), "kept": Out(range(c.replay_frames + 1)),
        } | ({"be_i": In(eth_stream(c.eth_width)), "be_counts": Out(be_side_counts)}
             if c.be_bytes else {}))

    def elaborate(self, platform):
        cfg, s = self.config, self.settings
        m = Module()
        m.submodules.queues = queues = TxQueues(cfg)
        m.submodules.credit = credit = CreditTx(cfg)
        m.submodules.ring = ring = ReplayRing(cfg)
        m.submodules.llr = llr = LlrTx(cfg)
        m.submodules.ctl_tx = ctl_tx = CtlTx(cfg)
        connect(m, flipped(self.i), queues.i)
        m.d.comb += [
            self.vc_ready.eq(queues.vc_ready),
            credit.heads.eq(queues.heads), credit.room.eq(ring.room), credit.cf.eq(self.ctl),
            credit.limits.eq(s.limits), credit.port_limit.eq(s.port_limit),
            credit.cc_period.eq(s.cc_period), credit.node.eq(self.node),
            queues.pick.eq(credit.pick), queues.take.eq(credit.start & ~credit.cc),
            self.s_cc.eq(credit.s_cc), self.s_cf.eq(credit.s_cf),
            ring.seq.eq(llr.next), ring.acked.eq(llr.acked), ring.sent.eq(llr.sent),
            ring.next.eq(llr.next), ring.limit.eq(s.max_outstanding),
            llr.ctl.eq(self.ctl), llr.up.eq(self.up), llr.pushed.eq(ring.pushed),
            llr.started.eq(ring.started),
            llr.replay_timeout.eq(s.replay_timeout), llr.init_period.eq(s.init_period),
            llr.down_max.eq(s.down_max), llr.replay_max.eq(s.replay_max),
            llr.cc_sent.eq(credit.start & credit.cc), llr.cf_got.eq(credit.cf_got),
            llr.credit_errors.eq(credit.credit_errors), llr.malformed.eq(queues.malformed),
            llr.poisoned.eq(ring.poisoned),
            self.state.eq(llr.state), self.counts.eq(llr.counts),
            self.kept.eq((llr.next - llr.acked)[:cfg.seq_bits]),
            ctl_tx.want.eq(self.want),
            ctl_tx.want.init.eq(llr.want_init),     # over the receive side's (never set)
            self.sent.eq(ctl_tx.sent), llr.init_sent.eq(ctl_tx.sent.init),
            ctl_tx.last_good.eq(self.last_good), ctl_tx.echo_seq.eq(self.echo_seq),
            ctl_tx.init_seq.eq(llr.acked), ctl_tx.r_cf.eq(self.r_cf), ctl_tx.node.eq(self.node),
        ]
        self._feed(m, queues, credit, ring)
        if cfg.vlan:
            self._tags(m, credit, ring, ctl_tx)
        be = None
        if cfg.be_bytes:
            m.submodules.be = be = BestEffortTx(cfg)
            connect(m, flipped(self.be_i), be.i)
            if cfg.vlan:
                m.d.comb += be.vid.eq(self.settings.vid)
            m.d.comb += self.be_counts.eq(be.counts)
        self._wire(m, ring, llr, ctl_tx, be)
        return m

    def _feed(self, m, queues, credit, ring):
        """One frame at a time into the ring: a VC's head or a CC_UPDATE, as the credit sender
        starts it."""
        feeding = Signal()
        cc = Signal()
        src = Mux(cc, credit.cc_o.valid, queues.o.valid)
        m.d.comb += [
            credit.idle.eq(~feeding),
            ring.i.valid.eq(feeding & src),
            ring.i.payload.eq(Mux(cc, credit.cc_o.payload, queues.o.payload)),
            credit.cc_o.ready.eq(feeding & cc & ring.i.ready),
            queues.o.ready.eq(feeding & ~cc & ring.i.ready),
        ]
        with m.If(credit.start):
            m.d.sync += [feeding.eq(1), cc.eq(credit.cc)]
        with m.If(ring.i.valid & ring.i.ready & ring.i.p.last):
            m.d.sync += feeding.eq(0)

    def _tags(self, m, credit, ring, ctl_tx):
        """The TCIs (README §1): a data frame's PCP is its VC's, chosen as it starts into the
        ring; control frames and CC_UPDATEs have ``ctl_pcp``."""
        s = self.settings
        tci = Signal(16)
        with m.If(credit.start):
            m.d.sync += tci.eq(tci_of(s, Mux(credit.cc, s.ctl_pcp, s.pcps[credit.pick])))
        m.d.comb += [ring.tci.eq(tci), ctl_tx.tci.eq(tci_of(s, s.ctl_pcp))]

    def _wire(self, m, ring, llr, ctl_tx, be):
        """Between frames, a control frame waiting goes first, then the ring's next frame, then
        a best-effort frame (``be``, if any). Any is chosen in the clock the last beat of a ring
        or best-effort frame leaves; after a control frame, the next choice is a clock later
        (the control sender's next frame is not yet valid).

        An INIT taken by the control sender holds the ring back until it has gone, even when
        its INIT_ECHO has come meanwhile: the far end, told by the INIT to expect ``acked``,
        must not see it after a frame numbered ``acked`` or later (it would take that frame
        again)."""
        o = self.o
        on_ring, on_ctl = Signal(name="on_ring"), Signal(name="on_ctl")
        on_be = Signal(name="on_be")
        ends = o.valid & o.ready & o.p.last
        choose = self.up & ~on_ctl & (~(on_ring | on_be) | ends)
        to_ctl = choose & ctl_tx.o.valid
        m.d.comb += ring.go.eq(choose & ~ctl_tx.o.valid & ~ctl_tx.init_held & llr.may_send)
        with m.If(ends):
            m.d.sync += [on_ring.eq(0), on_ctl.eq(0), on_be.eq(0)]
        with m.If(to_ctl):
            m.d.sync += on_ctl.eq(1)
        with m.If(ring.started):
            m.d.sync += on_ring.eq(1)
        m.d.comb += [
            o.valid.eq((on_ring & ring.o.valid) | (on_ctl & ctl_tx.o.valid)),
            o.payload.eq(Mux(on_ctl, ctl_tx.o.payload, ring.o.payload)),
            ring.o.ready.eq(on_ring & o.ready), ctl_tx.o.ready.eq(on_ctl & o.ready),
        ]
        if be is not None:
            m.d.comb += be.go.eq(choose & ~ctl_tx.o.valid & ~ring.started)
            with m.If(be.started):
                m.d.sync += on_be.eq(1)
            with m.If(on_be):
                m.d.comb += [o.valid.eq(be.o.valid), o.payload.eq(be.o.payload)]
            m.d.comb += be.o.ready.eq(on_be & o.ready)
