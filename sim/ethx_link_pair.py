"""Two lossless links, ends ``a`` (node 1) and ``b`` (node 2), whose wires the testbench joins:
the top of the link pair test."""

from amaranth import Module

from rtl.config import ConfiguredComponent
from rtl.ethx.link.config import LinkConfig
from rtl.ethx.link.link import EthxLink

from .ethx_pair import pass_ports

__all__ = ["NODES", "EthxLinkPair"]

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
