# SPDX-License-Identifier: BSD-2-Clause
"""Two ETH-X bridges, nodes 1 and 2, whose Ethernet ports the testbench joins: the top of the
bridge system test."""

from amaranth import Module
from amaranth.lib import data

from scaleup_ip.compose import pass_ports, port_members
from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.ethx import EthxBridge, EthxConfig, window_layout

__all__ = ["FUZZER", "NODES", "WINDOW_LOG2", "EthxPair", "add_bridges", "other", "pair_windows",
           "pass_ports", "port_members"]

#: The two nodes' IDs.
NODES = {"a": 1, "b": 2}


def other(end):
    """The pair's other end."""
    return "b" if end == "a" else "a"

#: Each serving side's one access window: bytes 0 .. 2^WINDOW_LOG2 - 1, open to the two nodes
#: and to :data:`FUZZER`.
WINDOW_LOG2 = 20
#: A third node the windows admit: the fuzz test forges its frames (tb/ethx/test_fuzz.py).
FUZZER = 3

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
    """The windows of each bridge of the pair: its first open to both nodes and
    :data:`FUZZER` over the lowest 2^:data:`WINDOW_LOG2` bytes, the others disabled."""
    window = {"base": 0, "size_log2": WINDOW_LOG2,
              "sources": sum(1 << node for node in (*NODES.values(), FUZZER)), "enable": 1}
    return data.ArrayLayout(window_layout(config), config.windows).const([window])
