"""Two ETH-X bridges, nodes 1 and 2, whose Ethernet ports the testbench joins: the top of the
bridge system test."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from rtl.config import ConfiguredComponent
from rtl.ethx.bridge import EthxBridge
from rtl.ethx.config import EthxConfig
from rtl.ethx.layout import window_layout

__all__ = ["NODES", "EthxPair"]

#: The two nodes' IDs.
NODES = {"a": 1, "b": 2}

#: Ports the pair sets itself rather than passing on.
_INTERNAL = ("node", "windows")


class EthxPair(ConfiguredComponent):
    """Bridges ``a`` (node 1) and ``b`` (node 2), every port passed on as ``a_<port>`` and
    ``b_<port>`` except ``node`` and ``windows``: each serves the other and itself anywhere
    (one window over the whole address space)."""

    config_class = EthxConfig

    def __init__(self, config):
        members = {}
        for end in NODES:
            for name, member in EthxBridge(config).signature.members.items():
                if name not in _INTERNAL:
                    members[f"{end}_{name}"] = member
        super().__init__(config, members)

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        layout = window_layout(cfg)
        everywhere = layout.const({"base": 0, "size_log2": cfg.addr_width,
                                   "sources": (1 << cfg.sources) - 1, "enable": 1}).as_bits()
        for end, node in NODES.items():
            m.submodules[end] = bridge = EthxBridge(cfg)
            m.d.comb += [bridge.node.eq(node), bridge.windows.eq(everywhere)]
            for name, member in bridge.signature.members.items():
                if name in _INTERNAL:
                    continue
                ours, theirs = getattr(self, f"{end}_{name}"), getattr(bridge, name)
                if member.is_port:
                    pairs = [(ours, theirs, member.flow)]
                else:
                    pairs = [(getattr(ours, n), getattr(theirs, n), sub.flow)
                             for n, sub in member.signature.members.items()]
                for o, t, flow in pairs:
                    m.d.comb += (t.eq(o) if flow == In else o.eq(t))
        return m
