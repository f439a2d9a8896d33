# SPDX-License-Identifier: BSD-2-Clause
"""One whole UALink end: the transaction layer over the data link."""

import dataclasses

from amaranth import Module
from amaranth.lib import wiring

from .compose import other_ports, part_config, pass_ports, port_members
from .config import ConfiguredComponent
from .dl import DlConfig, UalinkDl
from .tl import TlConfig, TlEndpoint

__all__ = ["UalinkEnd", "UalinkEndConfig"]

#: TL ports joined to the DL inside the end.
_TL_INTERNAL = ("flit_out", "flit_in")
#: UPLI channels, passed on without a prefix.
_UPLI = ("req", "orig", "rd_rsp", "wr_rsp", "rx_req", "rx_orig", "rx_rd_rsp", "rx_wr_rsp")
#: DL ports joined to the TL inside the end.
_DL_INTERNAL = ("tl_in", "tl_out")
#: The DL's PHY side, passed on without a prefix.
_PHY = ("phy_out", "phy_in")


@dataclasses.dataclass(frozen=True)
class UalinkEndConfig(TlConfig, DlConfig):
    """A UALink end's parameters: the TL's (:class:`~scaleup_ip.tl.TlConfig`) and the DL's
    (:class:`~scaleup_ip.dl.DlConfig`) fields in one configuration, each checked as there."""

    def __post_init__(self):
        TlConfig.__post_init__(self)
        DlConfig.__post_init__(self)

    @property
    def tl(self):
        """The TL's configuration."""
        return part_config(TlConfig, self)

    @property
    def dl(self):
        """The DL's configuration."""
        return part_config(DlConfig, self)


class UalinkEnd(ConfiguredComponent):
    """A :class:`~scaleup_ip.tl.TlEndpoint` over a :class:`~scaleup_ip.dl.UalinkDl`: UPLI
    channels on one side, DL flits for the PHY on the other [UALink 1.0 ch. 2, 5, 6].

    The TL's flits go straight to the DL and back (``flit_out`` to ``tl_in``, ``tl_out`` to
    ``flit_in``); latency and throughput are the two layers' added (a TL flit every clock
    into the DL, which sends a DL flit of 9.8125 TL flits every 10 clocks while ``phy_out``
    is ready). Overflow: none; every channel is flow-controlled (UPLI by credits, flits by
    ready).

    Parameters
    ----------
    config : UalinkEndConfig

    Members
    -------
    req, orig, rd_rsp, wr_rsp, rx_req, rx_orig, rx_rd_rsp, rx_wr_rsp
        The UPLI channels, as :class:`~scaleup_ip.tl.TlEndpoint`'s.
    tl_init_sent, tl_peer_init, tl_error, tl_error_counts, tl_overrun, tl_upli_errors
        The TL's status and counters (``tl_tx_cache`` too with address caches), as
        :class:`~scaleup_ip.tl.TlEndpoint`'s without the prefix.
    phy_out, phy_in
        DL flits to and from the PHY, as :class:`~scaleup_ip.dl.UalinkDl`'s.
    dl_fault, dl_enable, dl_retrain, dl_ack_timeout, dl_replay_limit
        The DL's link control, as :class:`~scaleup_ip.dl.UalinkDl`'s without the prefix.
    dl_state, dl_tx_counts, dl_rx_counts, dl_malformed, dl_ups, dl_unacked
        The DL's state and counters.
    """

    config_class = UalinkEndConfig

    def __init__(self, config):
        super().__init__(config, lambda config: {
            name: member for prefix, part, skip in _parts(TlEndpoint(config.tl),
                                                          UalinkDl(config.dl))
            for name, member in port_members(part, prefix, skip).items()})

    def elaborate(self, platform):
        m = Module()
        m.submodules.tl = tl = TlEndpoint(self.config.tl)
        m.submodules.dl = dl = UalinkDl(self.config.dl)
        for prefix, part, skip in _parts(tl, dl):
            pass_ports(m, self, prefix, part, skip)
        wiring.connect(m, tl.flit_out, dl.tl_in)
        wiring.connect(m, dl.tl_out, tl.flit_in)
        return m


def _parts(tl, dl):
    """(prefix, component, ports not passed on) for each group of the end's ports."""
    return [("", tl, other_ports(tl, _UPLI)), ("tl", tl, _TL_INTERNAL + _UPLI),
            ("", dl, other_ports(dl, _PHY)), ("dl", dl, _DL_INTERNAL + _PHY)]
