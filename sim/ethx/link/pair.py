# SPDX-License-Identifier: BSD-2-Clause
"""Two lossless links, ends ``a`` (node 1) and ``b`` (node 2), whose wires the testbench joins
(the top of the link pair test) or error-injecting channels join (the link benchmark's)."""

from amaranth import Module
from amaranth.lib import wiring

from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.ethx.link import ChannelConfig, EthxChannel, EthxLink, LinkConfig, channel_counters
from scaleup_ip.model.ethx import channel as channel_model

from sim.ethx.frames import FrameCheck, FrameSource
from sim.ethx.pair import NODES, other, pass_ports, port_members

__all__ = ["EthxLinkPair", "EthxLinkWire", "EthxLinkTraffic", "channel_config",
           "channel_counts"]

#: Link ports the wired pair joins itself.
_LINK_INTERNAL = ("node", "tx", "rx")
#: EthxLinkWire ports the traffic top joins itself.
_TRAFFIC_INTERNAL = ("a_i", "a_o", "b_i", "b_o")
#: Channel ports the wired pair joins itself.
_CHANNEL_INTERNAL = ("i", "o")

class EthxLinkPair(ConfiguredComponent):
    """Links ``a`` and ``b``, every port passed on as ``a_<port>`` and ``b_<port>`` but
    ``node``."""

    config_class = LinkConfig

    def __init__(self, config):
        members = {}
        for end in NODES:
            members |= port_members(EthxLink(config), end, ("node",))
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
    :class:`~scaleup_ip.ethx.link.channel.EthxChannel` (ports ``<end>_wire_<port>``: the channel
    from ``end``), of :func:`channel_config`; ``<end>_line_beats`` counts the beats ``end`` put on
    its wire (32 bits, wrapping): the top of the link benchmark."""

    config_class = LinkConfig

    def __init__(self, config):
        members = {}
        for end in NODES:
            members |= port_members(EthxLink(config), end, _LINK_INTERNAL)
            members |= port_members(EthxChannel(channel_config(config)), f"{end}_wire",
                                    _CHANNEL_INTERNAL)
            members[f"{end}_line_beats"] = wiring.Out(32)
        super().__init__(config, members)

    def elaborate(self, platform):
        m = Module()
        links, wires = {}, {}
        for end, node in NODES.items():
            m.submodules[end] = links[end] = EthxLink(self.config)
            m.submodules[f"{end}_wire"] = wires[end] = EthxChannel(channel_config(self.config))
            m.d.comb += links[end].node.eq(node)
            pass_ports(m, self, end, links[end], _LINK_INTERNAL)
            pass_ports(m, self, f"{end}_wire", wires[end], _CHANNEL_INTERNAL)
        for end in NODES:
            far = other(end)
            wiring.connect(m, links[end].tx, wires[end].i)
            wiring.connect(m, wires[end].o, links[far].rx)
            beats = getattr(self, f"{end}_line_beats")
            with m.If(links[end].tx.valid & links[end].tx.ready):
                m.d.sync += beats.eq(beats + 1)
        return m


def channel_counts(dut, end):
    """The counters of the channel from ``end`` (a top's ``<end>_wire_counters``), by name."""
    value = getattr(dut, f"{end}_wire_counters").value.to_unsigned()
    return {name: value >> channel_counters[name].offset & ((1 << channel_model.COUNTER_BITS) - 1)
            for name in channel_model.COUNTERS}


def channel_config(config, max_delay=1024):
    """The channels' configuration for links of ``config``: frames up to the longest wire
    frame."""
    return ChannelConfig(eth_width=config.eth_width, max_frame_bytes=config.max_wire_bytes,
                         max_delay=max_delay)


class EthxLinkTraffic(ConfiguredComponent):
    """:class:`EthxLinkWire` (its ports but each end's ``i`` and ``o``) with a
    :class:`~sim.ethx.frames.FrameSource` feeding each end's ``i`` (ports ``<end>_gen_enable``,
    ``<end>_gen_frames``) and a :class:`~sim.ethx.frames.FrameCheck` on each end's ``o``
    (``<end>_check_frames``, ``<end>_check_bad``); ``<end>_words`` sizes the frames from
    ``end``: the top of the link benchmark, which handles no beat itself."""

    config_class = LinkConfig

    def __init__(self, config):
        members = port_members(EthxLinkWire(config), None, _TRAFFIC_INTERNAL)
        for end in NODES:
            source, check = FrameSource(config, 0, 0), FrameCheck(config)
            members |= port_members(source, f"{end}_gen", ("o", "words"))
            members |= port_members(check, f"{end}_check", ("i", "words"))
            members[f"{end}_words"] = source.signature.members["words"]
        super().__init__(config, members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.wire = wire = EthxLinkWire(self.config)
        pass_ports(m, self, None, wire, _TRAFFIC_INTERNAL)
        for end in NODES:
            far = other(end)
            m.submodules[f"{end}_gen"] = source = FrameSource(self.config, NODES[far],
                                                               NODES[end])
            m.submodules[f"{end}_check"] = check = FrameCheck(self.config)
            wiring.connect(m, source.o, getattr(wire, f"{end}_i"))
            wiring.connect(m, getattr(wire, f"{end}_o"), check.i)
            m.d.comb += [source.words.eq(getattr(self, f"{end}_words")),
                         check.words.eq(getattr(self, f"{far}_words"))]
            pass_ports(m, self, f"{end}_gen", source, ("o", "words"))
            pass_ports(m, self, f"{end}_check", check, ("i", "words"))
        return m
