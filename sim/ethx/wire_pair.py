# SPDX-License-Identifier: BSD-2-Clause
"""Two ETH-X bridges that frame Ethernet themselves (``fcs=True``), each one's Ethernet port
joined to the other's by an :class:`~scaleup_ip.ethx.link.channel.EthxChannel` (a delay, and errors
if asked): the plain pair of :class:`sim.ethx.pair.EthxPair` with its wire in hardware, for the
ETH-X scenario whose traffic lives in hardware (:class:`sim.ethx.traffic_system.
EthxTrafficSystem`)."""

from amaranth import Module
from amaranth.lib import wiring

from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.ethx import EthxBridge, EthxConfig
from scaleup_ip.ethx.link import ChannelConfig, EthxChannel

from sim.ethx.pair import NODES, add_bridges, pass_ports, port_members

__all__ = ["EthxWirePair", "wire_config"]

#: Bridge ports the pair sets or joins itself.
_BRIDGE_INTERNAL = ("node", "windows", "tx", "rx")
#: Channel ports joined inside the pair.
_CHANNEL_INTERNAL = ("i", "o")


def wire_config(config):
    """The channels' configuration for bridges of ``config``: frames up to the longest the
    bridges send, delays up to 1024 clocks."""
    return ChannelConfig(eth_width=config.eth_width, max_frame_bytes=config.max_frame_bytes,
                         max_delay=1024)


class EthxWirePair(ConfiguredComponent):
    """Bridges ``a`` (node 1) and ``b`` (node 2) as :class:`sim.ethx.pair.EthxPair` (their
    ports ``a_<port>``, ``b_<port>`` but the Ethernet ones); the channel from ``end`` (ports
    ``<end>_wire_<port>``) takes its bridge's ``tx`` to the other bridge's ``rx``."""

    config_class = EthxConfig

    def __init__(self, config):
        if not config.fcs:
            raise ValueError("EthxWirePair: the bridges must be built with fcs=True")
        members = {}
        for end in NODES:
            members |= port_members(EthxBridge(config), end, _BRIDGE_INTERNAL)
            members |= port_members(EthxChannel(wire_config(config)), f"{end}_wire",
                                    _CHANNEL_INTERNAL)
        super().__init__(config, members)

    def elaborate(self, platform):
        m = Module()
        bridges, wires = add_bridges(m, self, _BRIDGE_INTERNAL), {}
        for end in NODES:
            m.submodules[f"{end}_wire"] = wires[end] = EthxChannel(wire_config(self.config))
            pass_ports(m, self, f"{end}_wire", wires[end], _CHANNEL_INTERNAL)
        for end, far in (("a", "b"), ("b", "a")):
            wiring.connect(m, bridges[end].tx, wires[end].i)
            wiring.connect(m, wires[end].o, bridges[far].rx)
        return m
