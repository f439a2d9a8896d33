"""Two ETH-X bridges, nodes 1 and 2, whose Ethernet ports the testbench joins: the top of the
bridge system test."""

from amaranth import Module
from amaranth.lib import data
from amaranth.lib.wiring import In

from rtl.config import ConfiguredComponent
from rtl.ethx.bridge import EthxBridge
from rtl.ethx.config import EthxConfig
from rtl.ethx.layout import window_layout

__all__ = ["NODES", "WINDOW_LOG2", "EthxPair", "add_bridges", "other", "pair_windows",
           "pass_ports", "port_members"]

#: The two nodes' IDs.
NODES = {"a": 1, "b": 2}


def other(end):
    """The pair's other end."""
    return "b" if end == "a" else "a"

#: Each serving side's one access window: bytes 0 .. 2^WINDOW_LOG2 - 1, open to the two nodes.
WINDOW_LOG2 = 20

#: Ports the pair sets itself rather than passing on.
_INTERNAL = ("node", "windows")


class EthxPair(ConfiguredComponent):
    """Bridges ``a`` (node 1) and ``b`` (node 2), every port passed on as ``a_<port>`` and
    ``b_<port>`` except ``node`` and ``windows``: each serves nodes 1 and 2 in its first
    window, the lowest 2^:data:`WINDOW_LOG2` bytes; its other windows are disabled."""

    config_class = EthxConfig

    def __init__(self, config):
        members = {}
        for end in NODES:
            members |= port_members(EthxBridge(config), end, _INTERNAL)
        super().__init__(config, members)

    def elaborate(self, platform):
        m = Module()
        add_bridges(m, self, _INTERNAL)
        return m


def add_bridges(m, outer, skip):
    """Bridges ``a`` and ``b`` of ``outer``'s configuration into ``m``, each with its node ID
    and :func:`pair_windows`, their ports but ``skip`` (which holds ``node`` and ``windows``)
    passed on to ``outer``'s ``<end>_<port>``; returns them by end."""
    windows = pair_windows(outer.config)
    bridges = {}
    for end, node in NODES.items():
        m.submodules[end] = bridges[end] = EthxBridge(outer.config)
        m.d.comb += [bridges[end].node.eq(node), bridges[end].windows.eq(windows)]
        pass_ports(m, outer, end, bridges[end], skip)
    return bridges


def pair_windows(config):
    """The windows of each bridge of the pair: its first open to both nodes over the lowest
    2^:data:`WINDOW_LOG2` bytes, the others disabled."""
    window = {"base": 0, "size_log2": WINDOW_LOG2,
              "sources": sum(1 << node for node in NODES.values()), "enable": 1}
    return data.ArrayLayout(window_layout(config), config.windows).const([window])


def port_members(component, prefix, skip):
    """The members of ``component`` (built for its signature only) but those in ``skip``, as
    ``<prefix>_<name>`` (as ``name`` without a prefix): the ports :func:`pass_ports` joins."""
    component._MustUse__silence = True
    return {_prefixed(prefix, name): member
            for name, member in component.signature.members.items() if name not in skip}


def _prefixed(prefix, name):
    return f"{prefix}_{name}" if prefix else name


def pass_ports(m, outer, prefix, inner, skip):
    """Join each port ``name`` of the component ``inner`` (a port, or a member of one level of
    interface) to ``outer``'s ``<prefix>_<name>`` (``name`` without a prefix), but those in
    ``skip``."""
    for name, member in inner.signature.members.items():
        if name in skip:
            continue
        ours, theirs = getattr(outer, _prefixed(prefix, name)), getattr(inner, name)
        if member.is_port:
            pairs = [(ours, theirs, member.flow)]
        else:
            pairs = [(getattr(ours, n), getattr(theirs, n), sub.flow)
                     for n, sub in member.signature.members.items()]
        for o, t, flow in pairs:
            m.d.comb += (t.eq(o) if flow == In else o.eq(t))
