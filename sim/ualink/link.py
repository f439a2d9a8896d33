# SPDX-License-Identifier: BSD-2-Clause
"""Two full UALink ends, TL and DL, over error-injecting links: the top of the UALink link test
and of ``make sim``'s ``ualink`` scenario."""

import dataclasses

from amaranth import Module
from amaranth.lib import wiring

from scaleup_ip.compose import part_config
from scaleup_ip.tl import TlConfig

from sim.boundary import register_boundary
from sim.dl.link import DlLinkConfig, connect_dl, dl_members
from sim.tl.link import connect_tl, tl_members, traffic_members

__all__ = ["UALINK_LINK", "UalinkLink", "UalinkLinkConfig"]


@dataclasses.dataclass(frozen=True)
class UalinkLinkConfig(TlConfig, DlLinkConfig):
    """The TL ends' parameters (:class:`~scaleup_ip.tl.layout.TlConfig`) and the DL ends' and error
    links' (:class:`~sim.dl.link.DlLinkConfig`), in one configuration."""

    def __post_init__(self):
        TlConfig.__post_init__(self)
        DlLinkConfig.__post_init__(self)

    @property
    def tl(self):
        return part_config(TlConfig, self)


#: The one configuration the UALink link test and ``make sim`` share: default TL buffers, the
#: DL link test's TxReplay and bursts, delays up to 256 clocks (a round trip past TxReplay).
UALINK_LINK = UalinkLinkConfig(replay_depth=32, max_delay=256, max_burst_length=16384)


class UalinkLink(wiring.Component):
    """Ends ``a`` and ``b``, each a :class:`~scaleup_ip.tl.core.TlCore` over a
    :class:`~scaleup_ip.dl.dl.UalinkDl`; ``a``'s DL flits go to ``b`` through one
    :class:`~scaleup_ip.dl.err_link.ErrorLink`, ``b``'s to ``a`` through another.

    Members
    -------
    a_req, ..., b_rx_wr_rsp, a_peer_init, ..., a_credits, b_credits
        Each end's UPLI side, as :class:`~sim.tl.link.TlLink`'s (``a_flit``: a TL flit left
        ``a``'s TL for its DL).
    enable, retrain, ack_timeout, replay_limit, link_enable, ..., a_state, ..., ba_counters
        The DL ends' and error links' controls and counters, as
        :class:`~sim.dl.link.DlLink`'s.
    traffic, a_seed, ..., a_flits, b_flits
        The traffic in hardware (:func:`sim.tl.link.traffic_members`).

    Every input is registered and every stream goes through a skid buffer at the boundary
    (:func:`sim.boundary.register_boundary`): a clock later inside, and a model twice as
    fast.
    """

    #: With the traffic in hardware the model's evaluation is all the time there is: its code
    #: compiled at -O2 ran twice as fast as at -O1 (32 k against 16 k cycles/s, before the
    #: registered boundary), for half a minute more of build; -O3 was no faster.
    OPT_FAST = "-O2"

    def __init__(self, config):
        self._config = config
        super().__init__(_members(config))

    def elaborate(self, platform):
        m = Module()
        register_boundary(m, self, _UalinkLinkCore(self._config), "link")
        return m


def _members(config):
    return {**tl_members(config), **dl_members(config), **traffic_members(config)}


class _UalinkLinkCore(wiring.Component):
    """:class:`UalinkLink` inside its registered boundary."""

    def __init__(self, config):
        self._config = config
        super().__init__(_members(config))

    def elaborate(self, platform):
        m = Module()
        ends = connect_dl(m, self, self._config)
        for end, dl in ends.items():
            core = connect_tl(m, self, end, self._config.tl, name=f"{end}_tl", traffic=True)
            wiring.connect(m, core.flit_out, dl.tl_in)
            wiring.connect(m, dl.tl_out, core.flit_in)
        return m
