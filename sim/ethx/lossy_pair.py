# SPDX-License-Identifier: BSD-2-Clause
"""Two ETH-X bridges, each behind its lossless link, joined by two error-injecting channels:
the top of the lossy system test and of the lossy ``make sim`` scenario.

The top's configuration is the bridges' (built with ``fcs=False``: the link adds and checks
the FCS); the link's and the channels' follow from it (:func:`link_config`,
:func:`channel_config`), so that one configuration names the build.
"""

from amaranth import Module
from amaranth.lib import wiring

from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.ethx import EthxBridge, EthxConfig
from scaleup_ip.ethx.link import EthxChannel, EthxLink, LinkConfig

from sim.ethx.link import pair as ethx_link_pair
from sim.ethx.pair import NODES, add_bridges, pass_ports, port_members

__all__ = ["EthxLossyPair", "channel_config", "link_config"]

#: Bridge ports the pair sets itself; the Ethernet ones go to the link.
_BRIDGE_INTERNAL = ("node", "windows", "tx", "rx")
#: Link ports joined inside the pair.
_LINK_INTERNAL = ("i", "o", "tx", "rx", "node")
#: Channel ports joined inside the pair.
_CHANNEL_INTERNAL = ("i", "o")
#: Virtual channels of the links [ours]: the bridge's AxUSER VC picks one.
VCS = 2
#: Largest channel delay, in clocks.
MAX_DELAY = 1024


def link_config(config):
    """The links' configuration for bridges of ``config``."""
    return LinkConfig(eth_width=config.eth_width, mtu=config.mtu, vcs=VCS)


def channel_config(config):
    """The channels' configuration for bridges of ``config``."""
    return ethx_link_pair.channel_config(link_config(config), max_delay=MAX_DELAY)


class EthxLossyPair(ConfiguredComponent):
    """Bridges ``a`` (node 1) and ``b`` (node 2) as :class:`sim.ethx.pair.EthxPair` (their
    ports ``a_<port>``, ``b_<port>`` but the Ethernet ones), each bridge's Ethernet side through
    an :class:`~scaleup_ip.ethx.link.link.EthxLink` (ports ``<end>_link_<port>``), each link's wire
    to the other's through an :class:`~scaleup_ip.ethx.link.channel.EthxChannel` (ports
    ``<end>_wire_<port>``: the channel from ``end``)."""

    config_class = EthxConfig

    def __init__(self, config):
        if config.fcs:
            raise ValueError("EthxLossyPair: the bridges must be built with fcs=False")
        members = {}
        for end in NODES:
            members |= port_members(EthxBridge(config), end, _BRIDGE_INTERNAL)
            members |= port_members(EthxLink(link_config(config)), f"{end}_link", _LINK_INTERNAL)
            members |= port_members(EthxChannel(channel_config(config)), f"{end}_wire",
                                _CHANNEL_INTERNAL)
        super().__init__(config, members)

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        bridges, links, wires = add_bridges(m, self, _BRIDGE_INTERNAL), {}, {}
        for end, node in NODES.items():
            m.submodules[f"{end}_link"] = links[end] = EthxLink(link_config(cfg))
            m.submodules[f"{end}_wire"] = wires[end] = EthxChannel(channel_config(cfg))
            m.d.comb += links[end].node.eq(node)
            pass_ports(m, self, f"{end}_link", links[end], _LINK_INTERNAL)
            pass_ports(m, self, f"{end}_wire", wires[end], _CHANNEL_INTERNAL)
        for end, far in (("a", "b"), ("b", "a")):
            wiring.connect(m, bridges[end].tx, links[end].i)
            wiring.connect(m, links[end].o, bridges[end].rx)
            wiring.connect(m, links[end].tx, wires[end].i)
            wiring.connect(m, wires[end].o, links[far].rx)
        return m
