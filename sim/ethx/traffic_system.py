# SPDX-License-Identifier: BSD-2-Clause
"""Two ETH-X bridges with their AXI traffic and memories in hardware: the top of the ETH-X
scenarios that handle no beat in Python (:mod:`sim.ethx.run`).

Built with ``fcs=False``, the bridges sit behind lossless links over error-injecting channels
(:class:`~sim.ethx.lossy_pair.EthxLossyPair`); with ``fcs=True`` they frame Ethernet themselves
over channels that only delay (:class:`~sim.ethx.wire_pair.EthxWirePair`). Each GPU port has an
:class:`~sim.ethx.axi_traffic.AxiTraffic` (ports ``<end>_gen_<port>``), each memory port an
:class:`~sim.ethx.axi_ram.AxiRam` (``<end>_ram_<port>``); ``a``'s GPU port is lent to an
:class:`~sim.ethx.axi_litmus.AxiLitmus` (``a_litmus_<port>``) while ``a_select`` is high. The
design sits behind a registered boundary (:func:`sim.boundary.register_boundary`): every input
acts a clock later.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.ethx import EthxConfig

from sim.boundary import register_boundary
from sim.ethx.axi_litmus import MP_WORDS, AxiLitmus, select_manager
from sim.ethx.axi_ram import AxiRam
from sim.ethx.axi_traffic import SLOT_BEATS, AxiTraffic
from sim.ethx.lossy_pair import EthxLossyPair
from sim.ethx.pair import NODES, other, pass_ports, port_members
from sim.ethx.wire_pair import EthxWirePair

__all__ = ["RAM_WORDS_LOG2", "SLOTS_LOG2", "EthxTrafficSystem", "litmus_flag_at"]

#: Slots of each generator's region: 64 bursts in flight at most.
SLOTS_LOG2 = 6
#: Words of each memory: the generators' region and, above it, the litmus's flag and data.
RAM_WORDS_LOG2 = SLOTS_LOG2 + (SLOT_BEATS - 1).bit_length() + 1
#: The pair's ports joined inside.
_PAIR_INTERNAL = tuple(f"{end}_{port}" for end in NODES for port in ("s_axi", "m_axi"))
#: The generators', litmus's and memories' ports joined inside.
_AXI = ("axi",)
_LITMUS_INTERNAL = ("axi", "far_ar")


def _pair(config):
    return EthxWirePair(config) if config.fcs else EthxLossyPair(config)


def _traffic(config, end):
    """``end``'s generator: to the other node, on VC 0 from ``a`` and VC 1 from ``b``."""
    return AxiTraffic(config, NODES[other(end)], list(NODES).index(end), SLOTS_LOG2)


def litmus_flag_at(config):
    """Byte address of the litmus's flag: just above the generators' region."""
    return 1 << (SLOTS_LOG2 + (SLOT_BEATS - 1).bit_length() + config.bus_size)


def _litmus(config):
    return AxiLitmus(config, NODES["b"], 0, litmus_flag_at(config))


def _members(config):
    members = port_members(_pair(config), None, _PAIR_INTERNAL)
    for end in NODES:
        members |= port_members(_traffic(config, end), f"{end}_gen", _AXI)
        members |= port_members(AxiRam(config, RAM_WORDS_LOG2), f"{end}_ram", _AXI)
    members |= port_members(_litmus(config), "a_litmus", _LITMUS_INTERNAL)
    return members | {"a_select": In(1)}


class EthxTrafficSystem(ConfiguredComponent):
    """The pair of ``config`` (see the module) with its traffic, litmus and memories, behind a
    registered boundary. ``-O2`` for its model: it is bound by the model alone."""

    config_class = EthxConfig
    OPT_FAST = "-O2"

    def __init__(self, config):
        super().__init__(config, _members(config))

    def elaborate(self, platform):
        m = Module()
        register_boundary(m, self, _System(self.config), "system")
        return m


class _System(ConfiguredComponent):
    """:class:`EthxTrafficSystem` inside its boundary."""

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, _members(config))

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        m.submodules.pair = pair = _pair(cfg)
        pass_ports(m, self, None, pair, _PAIR_INTERNAL)
        gens = {}
        for end in NODES:
            m.submodules[f"{end}_gen"] = gens[end] = _traffic(cfg, end)
            m.submodules[f"{end}_ram"] = ram = AxiRam(cfg, RAM_WORDS_LOG2)
            wiring.connect(m, getattr(pair, f"{end}_m_axi"), ram.axi)
            pass_ports(m, self, f"{end}_gen", gens[end], _AXI)
            pass_ports(m, self, f"{end}_ram", ram, _AXI)
        wiring.connect(m, gens["b"].axi, pair.b_s_axi)
        m.submodules.a_litmus = litmus = _litmus(cfg)
        pass_ports(m, self, "a_litmus", litmus, _LITMUS_INTERNAL)
        select_manager(m, self.a_select, gens["a"].axi, litmus.axi, pair.a_s_axi)
        far = pair.b_m_axi
        m.d.comb += litmus.far_ar.eq(far.arvalid & far.arready & (far.araddr >= litmus.data_at)
                                     & (far.araddr < litmus.data_at + 8 * MP_WORDS))
        return m
