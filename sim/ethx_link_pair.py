"""Two lossless links, ends ``a`` (node 1) and ``b`` (node 2), whose wires the testbench joins
(the top of the link pair test) or error-injecting channels join (the link benchmark's)."""

from amaranth import Module
from amaranth.lib import wiring

from rtl.config import ConfiguredComponent
from rtl.ethx.link.channel import ChannelConfig, EthxChannel
from rtl.ethx.link.config import LinkConfig
from rtl.ethx.link.link import EthxLink

from .ethx_pair import pass_ports

__all__ = ["NODES", "EthxLinkPair", "EthxLinkWire", "channel_config"]

#: Link ports the wired pair joins itself.
_LINK_INTERNAL = ("node", "tx", "rx")

#: The two ends' node IDs.
NODES = {"a": 1, "b": 2}


class EthxLinkPair(ConfiguredComponent):
    """Links ``a`` and ``b``, every port passed on as ``a_<port>`` and ``b_<port>`` but
    ``node``."""

    config_class = LinkConfig

    def __init__(self, config):
        link = EthxLink(config)
        link._MustUse__silence = True           # built for its signature only
        members = {f"{end}_{name}": member
                   for end in NODES for name, member in link.signature.members.items()
                   if name != "node"}
        super().__init__(config, members)

    def elaborate(self, platform):
        m = Module()
        for end, node in NODES.items():
            m.submodules[end] = link = EthxLink(self.config)
            m.d.comb += link.node.eq(node)
            pass_ports(m, self, end, link, ("node",))
        return m


class EthxLinkWire(ConfiguredComponent):
    """Links ``a`` and ``b`` as :class:`EthxLinkPair` (ports ``<end>_<port>`` but ``node``,
    ``tx`` and ``rx``), each one's wire to the other's through an
    :class:`~rtl.ethx.link.channel.EthxChannel` (ports ``<end>_wire_<port>``: the channel from
    ``end``), of :func:`channel_config`: the top of the link benchmark."""

    config_class = LinkConfig

    def __init__(self, config):
        link = EthxLink(config)
        link._MustUse__silence = True           # built for its signature only
        channel = EthxChannel(channel_config(config))
        channel._MustUse__silence = True
        members = {}
        for end in NODES:
            members |= {f"{end}_{name}": member for name, member in link.signature.members.items()
                        if name not in _LINK_INTERNAL}
            members |= {f"{end}_wire_{name}": member
                        for name, member in channel.signature.members.items()
                        if name not in ("i", "o")}
        super().__init__(config, members)

    def elaborate(self, platform):
        m = Module()
        links, wires = {}, {}
        for end, node in NODES.items():
            m.submodules[end] = links[end] = EthxLink(self.config)
            m.submodules[f"{end}_wire"] = wires[end] = EthxChannel(channel_config(self.config))
            m.d.comb += links[end].node.eq(node)
            pass_ports(m, self, end, links[end], _LINK_INTERNAL)
            pass_ports(m, self, f"{end}_wire", wires[end], ("i", "o"))
        for end, far in (("a", "b"), ("b", "a")):
            wiring.connect(m, links[end].tx, wires[end].i)
            wiring.connect(m, wires[end].o, links[far].rx)
        return m


def channel_config(config, max_delay=1024):
    """The channels' configuration for links of ``config``: frames up to the longest wire
    frame."""
    return ChannelConfig(eth_width=config.eth_width, max_frame_bytes=config.max_wire_bytes,
                         max_delay=max_delay)
