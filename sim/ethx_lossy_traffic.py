"""The lossy pair with its AXI traffic and memories in hardware: the top of the lossy system's
long run (:mod:`sim.ethx_long`), which handles no beat itself."""

from amaranth import Module
from amaranth.lib import wiring

from rtl.config import ConfiguredComponent
from rtl.ethx.config import EthxConfig

from .ethx_axi_ram import AxiRam
from .ethx_axi_traffic import SLOT_BEATS, AxiTraffic
from .ethx_lossy_pair import EthxLossyPair
from .ethx_pair import NODES, other, pass_ports, port_members

__all__ = ["RAM_WORDS_LOG2", "SLOTS_LOG2", "EthxLossyTraffic"]

#: Slots of each generator's region: 64 bursts in flight at most.
SLOTS_LOG2 = 6
#: Words of each memory: the generator's whole region.
RAM_WORDS_LOG2 = SLOTS_LOG2 + (SLOT_BEATS - 1).bit_length()
#: The pair's ports joined inside.
_PAIR_INTERNAL = tuple(f"{end}_{port}" for end in NODES for port in ("s_axi", "m_axi"))
#: The generators' and memories' ports joined inside.
_AXI = ("axi",)


def _traffic(config, end):
    """``end``'s generator: to the other node, on VC 0 from ``a`` and VC 1 from ``b``."""
    return AxiTraffic(config, NODES[other(end)], list(NODES).index(end), SLOTS_LOG2)


class EthxLossyTraffic(ConfiguredComponent):
    """:class:`~sim.ethx_lossy_pair.EthxLossyPair` (its ports but the AXI ones) with an
    :class:`~sim.ethx_axi_traffic.AxiTraffic` on each GPU port (ports ``<end>_gen_<port>``)
    and an :class:`~sim.ethx_axi_ram.AxiRam` on each memory port (``<end>_ram_<port>``)."""

    config_class = EthxConfig

    def __init__(self, config):
        members = port_members(EthxLossyPair(config), None, _PAIR_INTERNAL)
        for end in NODES:
            members |= port_members(_traffic(config, end), f"{end}_gen", _AXI)
            members |= port_members(AxiRam(config, RAM_WORDS_LOG2), f"{end}_ram", _AXI)
        super().__init__(config, members)

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        m.submodules.pair = pair = EthxLossyPair(cfg)
        pass_ports(m, self, None, pair, _PAIR_INTERNAL)
        for end in NODES:
            m.submodules[f"{end}_gen"] = gen = _traffic(cfg, end)
            m.submodules[f"{end}_ram"] = ram = AxiRam(cfg, RAM_WORDS_LOG2)
            wiring.connect(m, gen.axi, getattr(pair, f"{end}_s_axi"))
            wiring.connect(m, getattr(pair, f"{end}_m_axi"), ram.axi)
            pass_ports(m, self, f"{end}_gen", gen, _AXI)
            pass_ports(m, self, f"{end}_ram", ram, _AXI)
        return m
