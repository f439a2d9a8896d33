# SPDX-License-Identifier: BSD-2-Clause
"""One ETH-X node: the bridge over the lossless Ethernet link."""

import dataclasses

from amaranth import Module
from amaranth.lib import wiring

from ..compose import other_ports, part_config, pass_ports, port_members
from ..config import ConfiguredComponent
from .bridge import EthxBridge
from .config import EthxConfig
from .link import EthxLink, LinkConfig

__all__ = ["EthxNode", "EthxNodeConfig"]

#: Bridge ports joined inside the node (``node`` is the node's own, given to both).
_BRIDGE_INTERNAL = ("tx", "rx", "node")
#: Link ports joined inside the node.
_LINK_INTERNAL = ("i", "o", "node")
#: The link's Ethernet side, passed on without a prefix.
_ETHERNET = ("tx", "rx")


@dataclasses.dataclass(frozen=True)
class EthxNodeConfig(EthxConfig, LinkConfig):
    """An ETH-X node's parameters: the bridge's (:class:`~scaleup_ip.ethx.EthxConfig`) and the
    link's (:class:`~scaleup_ip.ethx.link.LinkConfig`) fields in one configuration, each checked
    as there; ``eth_width`` and ``mtu`` are both's. ``fcs`` must be ``False``: the link sends
    and checks the FCS of its wire frames, so the bridge's frames go to it without one."""
    fcs: bool = False

    def __post_init__(self):
        EthxConfig.__post_init__(self)
        LinkConfig.__post_init__(self)
        if self.fcs:
            raise ValueError("ETH-X node fcs must be False: the link adds and checks the FCS")

    @property
    def bridge(self):
        """The bridge's configuration."""
        return part_config(EthxConfig, self)

    @property
    def link(self):
        """The link's configuration."""
        return part_config(LinkConfig, self)


class EthxNode(ConfiguredComponent):
    """An :class:`~scaleup_ip.ethx.EthxBridge` whose Ethernet side goes through an
    :class:`~scaleup_ip.ethx.link.EthxLink`: AXI4 on one side, a lossless Ethernet port for a
    MAC on the other [ours; link after UEC link-level retry and credit-based flow control].

    The bridge's frames go to the link's ``i`` and the link's ``o`` to the bridge, both at the
    node's own ``node`` ID; latency and throughput are the two blocks' added. Overflow: none;
    the AXI ports stall, the link holds frames until the far end has credit for them and
    replays what was lost.

    Parameters
    ----------
    config : EthxNodeConfig

    Members
    -------
    s_axi, m_axi, windows, proxy_error, counts_framer, ..., counts_write
        As :class:`~scaleup_ip.ethx.EthxBridge`'s.
    node : In(16)
        This node's ID, the bridge's and the link's.
    tx, rx
        Wire frames to and from the MAC (FCS included), as
        :class:`~scaleup_ip.ethx.link.EthxLink`'s.
    link_up, link_settings, link_tx_state, ..., link_kept
        The link's other ports, as :class:`~scaleup_ip.ethx.link.EthxLink`'s without the prefix.
    """

    config_class = EthxNodeConfig

    def __init__(self, config):
        super().__init__(config, _members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.bridge = bridge = EthxBridge(self.config.bridge)
        m.submodules.link = link = EthxLink(self.config.link)
        for prefix, part, skip in _parts(bridge, link):
            pass_ports(m, self, prefix, part, skip)
        m.d.comb += [bridge.node.eq(self.node), link.node.eq(self.node)]
        wiring.connect(m, bridge.tx, link.i)
        wiring.connect(m, link.o, bridge.rx)
        return m


def _members(config):
    bridge, link = EthxBridge(config.bridge), EthxLink(config.link)
    members = port_members(link, "", other_ports(link, ("node",)))
    for prefix, part, skip in _parts(bridge, link):
        members |= port_members(part, prefix, skip)
    return members


def _parts(bridge, link):
    """(prefix, component, ports not passed on) for each group of the node's ports."""
    return [("", bridge, _BRIDGE_INTERNAL), ("", link, other_ports(link, _ETHERNET)),
            ("link", link, _LINK_INTERNAL + _ETHERNET)]
