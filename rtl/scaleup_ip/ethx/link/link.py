# SPDX-License-Identifier: BSD-2-Clause
"""The lossless link: link-level retry and credit-based flow control between a bridge and the
wire."""

from amaranth import Cat, Module
from amaranth.lib import data
from amaranth.lib.wiring import In, Out, connect, flipped

from ...config import ConfiguredComponent
from .config import LinkConfig
from .layout import (COUNT_BITS, RxState, TxState, be_counts, eth_stream, rx_counts,
                     settings_layout, tx_counts)
from .rx.receiver import LinkRx
from .tx.sender import LinkTx

__all__ = ["EthxLink"]


class EthxLink(ConfiguredComponent):
    """A bridge built with ``fcs=False`` on one side (``i``, ``o``), an Ethernet MAC on the
    other (``tx``, ``rx``): every frame the bridge sends reaches the peer's bridge once and in
    order, whatever the wire loses, as long as the link comes back up (README).

    With ``vlan``, the link's frames go with an 802.1Q tag whose PCP names their VC, and the
    receiver takes a tagged data frame's VC from its PCP (README §1).

    Latency and throughput: :class:`~scaleup_ip.ethx.link.tx.sender.LinkTx` and
    :class:`~scaleup_ip.ethx.link.rx.receiver.LinkRx`. Every frame dropped is counted in
    ``tx_counts`` or ``rx_counts`` (README §5).

    Members
    -------
    i : ``In(eth_stream(eth_width))``
        Frames from the bridge, no FCS.
    o : ``Out(eth_stream(eth_width))``
        Frames to the bridge, no FCS, ``keep`` all ones.
    tx : ``Out(eth_stream(eth_width))``; rx : ``In(eth_stream(eth_width))``
        The wire, FCS included; ``rx.user`` on a last beat: the MAC found the frame bad.
    node : ``In(16)``
        This node's ID (the SA of control frames).
    up : ``In(1)``
        The wire is up (the PHY's link status).
    settings : ``In(settings_layout(config))``
        See :func:`~scaleup_ip.ethx.link.layout.default_settings`.
    tx_state : ``Out(TxState)``; rx_state : ``Out(RxState)``
        The transmitter's and receiver's states (README §2).
    tx_counts : ``Out(tx_counts)``; rx_counts : ``Out(rx_counts)``
        Transmit and receive counters, 32-bit wrapping, by :class:`LinkTxCount` and
        :class:`LinkRxCount`.
    vc_ready : ``Out(vcs)``
        VCs whose transmit queue has room for a longest frame.
    s_cc, s_cf, r_cc, r_cf : ``Out(ArrayLayout(20, vcs))``
        Credit counters (README §4), for management and tests.
    kept : ``Out(range(replay_frames + 1))``
        Frames in the replay ring, not yet acknowledged.
    be_i : ``In(eth_stream(eth_width))``; be_o : ``Out(eth_stream(eth_width))``
        With ``be_bytes`` only: the best-effort path (README §6), frames that are not the
        link's, without FCS, sent between the link's frames after them and received with a
        good FCS; never replayed, without credits, dropped when corrupted.
    be_counts : ``Out(be_counts)``
        With ``be_bytes`` only: by :class:`~scaleup_ip.ethx.link.layout.BeCount`, 32-bit wrapping.
    """

    config_class = LinkConfig

    def __init__(self, config):
        counts = data.ArrayLayout(COUNT_BITS, config.vcs)
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)), "o": Out(eth_stream(c.eth_width)),
            "tx": Out(eth_stream(c.eth_width)), "rx": In(eth_stream(c.eth_width)),
            "node": In(16), "up": In(1), "settings": In(settings_layout(c)),
            "tx_state": Out(TxState), "rx_state": Out(RxState),
            "tx_counts": Out(tx_counts), "rx_counts": Out(rx_counts),
            "vc_ready": Out(c.vcs),
            "s_cc": Out(counts), "s_cf": Out(counts), "r_cc": Out(counts),
            "r_cf": Out(counts),
            "kept": Out(range(c.replay_frames + 1)),
        } | ({"be_i": In(eth_stream(c.eth_width)), "be_o": Out(eth_stream(c.eth_width)),
              "be_counts": Out(be_counts)} if c.be_bytes else {}))

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        m.submodules.tx = tx = LinkTx(cfg)
        m.submodules.rx = rx = LinkRx(cfg)
        connect(m, flipped(self.i), tx.i)
        connect(m, tx.o, flipped(self.tx))
        connect(m, flipped(self.rx), rx.i)
        connect(m, rx.o, flipped(self.o))
        m.d.comb += [
            tx.ctl.eq(rx.ctl), tx.want.eq(rx.want), rx.sent.eq(tx.sent),
            tx.last_good.eq(rx.last_good), tx.echo_seq.eq(rx.echo_seq), tx.r_cf.eq(rx.r_cf),
            tx.node.eq(self.node), tx.up.eq(self.up),
            tx.settings.eq(self.settings), rx.settings.eq(self.settings),
            self.tx_state.eq(tx.state), self.rx_state.eq(rx.state),
            self.tx_counts.eq(tx.counts), self.rx_counts.eq(rx.counts),
            self.vc_ready.eq(tx.vc_ready),
            self.s_cc.eq(tx.s_cc), self.s_cf.eq(tx.s_cf),
            self.r_cc.eq(rx.r_cc), self.r_cf.eq(rx.r_cf),
            self.kept.eq(tx.kept),
        ]
        if cfg.be_bytes:
            connect(m, flipped(self.be_i), tx.be_i)
            connect(m, rx.be_o, flipped(self.be_o))
            m.d.comb += self.be_counts.eq(Cat(tx.be_counts, rx.be_counts))
        return m
