# SPDX-License-Identifier: BSD-2-Clause
"""Two UALink DL ends over error-injecting links, with TL flit traffic in hardware: the top of
the DL link test and benchmark, fast enough for millions of DL flits."""

import dataclasses

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from scaleup_ip.config import BlockConfig
from scaleup_ip.dl import (
    ACK_TIMEOUT_BITS,
    DlConfig,
    DlState,
    ErrLinkConfig,
    ErrorLink,
    REPLAY_LIMIT_BITS,
    UalinkDl,
    control_members,
    counters_layout,
    rx_counts,
    tx_counts,
)

from sim.dl.flit_traffic import FlitCheck, FlitSource

__all__ = ["DL_LINK", "DlLink", "DlLinkConfig", "connect_dl", "dl_members"]


@dataclasses.dataclass(frozen=True)
class DlLinkConfig(BlockConfig):
    """The DL ends' TxReplay depth and the error links' largest delay (clocks) and burst."""
    replay_depth: int = 32
    max_delay: int = 256
    max_burst_length: int = 1024

    def __post_init__(self):
        _ = self.dl, self.link                  # each part checks its fields

    @property
    def dl(self):
        return DlConfig(replay_depth=self.replay_depth)

    @property
    def link(self):
        return ErrLinkConfig(max_delay=self.max_delay, max_burst_length=self.max_burst_length)


#: The one configuration the DL link test and benchmark share (one Verilator build): TxReplay
#: of 32 flits, delays up to 64 clocks, bursts up to 16384 bits (3 DL flits).
DL_LINK = DlLinkConfig(replay_depth=32, max_delay=64, max_burst_length=16384)



class DlLink(wiring.Component):
    """Ends ``a`` and ``b`` (:class:`~scaleup_ip.dl.dl.UalinkDl`), ``a``'s flits to ``b`` through one
    :class:`~scaleup_ip.dl.err_link.ErrorLink` and ``b``'s to ``a`` through another. Each end sends
    numbered TL flits (:class:`~sim.dl.flit_traffic.FlitSource`) and the other end checks them
    (:class:`~sim.dl.flit_traffic.FlitCheck`).

    Members
    -------
    enable, retrain : In(1)
        Both ends' link control.
    ack_timeout, replay_limit : In
        Both ends' replay registers.
    traffic : In(1)
        Both sources offer flits.
    link_enable, ber_threshold, burst_threshold, burst_length, drop_threshold, delay : In
        Both error links' controls (``link_enable`` is their ``enable``).
    seed_ab, seed_ba : In(64)
        Each error link's seed (loaded at reset).
    a_sent, b_sent, a_good, a_bad, b_good, b_bad : Out(32)
        TL flits each end sent, and those it received in order (``good``) or not (``bad``).
    a_state, b_state : Out(DlState)
    a_tx, a_rx, b_tx, b_rx : Out
        Each end's replay counters.
    ab_counters, ba_counters : Out(counters_layout)
        Each error link's counters.
    a_unacked, b_unacked : Out(8)
    """

    def __init__(self, config):
        self._config = config
        members = {**dl_members(config), "traffic": In(1)}
        for end in "ab":
            members.update({f"{end}_sent": Out(32), f"{end}_good": Out(32),
                            f"{end}_bad": Out(32)})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        ends = connect_dl(m, self, self._config)
        for end, dl in ends.items():
            m.submodules[f"{end}_source"] = source = FlitSource()
            m.submodules[f"{end}_check"] = check = FlitCheck()
            wiring.connect(m, source.o, dl.tl_in)
            wiring.connect(m, dl.tl_out, check.i)           # what ``end`` receives, checked
            m.d.comb += [
                source.enable.eq(self.traffic),
                getattr(self, f"{end}_sent").eq(source.sent),
                getattr(self, f"{end}_good").eq(check.good),
                getattr(self, f"{end}_bad").eq(check.bad),
            ]
        return m


def dl_members(config):
    """The members a two-end top shares (:class:`DlLink`, :class:`sim.ualink.link.UalinkLink`):
    the DL ends' and error links' controls, and each end's state and counters (see
    :class:`DlLink`); ``config`` is a :class:`DlLinkConfig`."""
    controls = control_members(config.link)
    members = {
        "enable": In(1), "retrain": In(1),
        "ack_timeout": In(ACK_TIMEOUT_BITS), "replay_limit": In(REPLAY_LIMIT_BITS),
        "link_enable": controls.pop("enable"), **controls,
        "seed_ab": In(64), "seed_ba": In(64),
    }
    for end in "ab":
        members.update({f"{end}_state": Out(DlState), f"{end}_tx": Out(tx_counts),
                        f"{end}_rx": Out(rx_counts), f"{end}_unacked": Out(8)})
    members.update({"ab_counters": Out(counters_layout), "ba_counters": Out(counters_layout)})
    return members


def connect_dl(m, top, config):
    """Add ends ``a`` and ``b`` (:class:`~scaleup_ip.dl.dl.UalinkDl`) and the error links ``ab`` and
    ``ba`` between them to ``m``, with their controls and counters on ``top``'s
    :func:`dl_members`; returns the ends by name (their ``tl_in`` and ``tl_out`` free)."""
    ends = {end: UalinkDl(config.dl) for end in "ab"}
    for end, dl in ends.items():
        m.submodules[end] = dl
        m.d.comb += [
            dl.enable.eq(top.enable), dl.retrain.eq(top.retrain), dl.fault.eq(0),
            dl.ack_timeout.eq(top.ack_timeout), dl.replay_limit.eq(top.replay_limit),
            getattr(top, f"{end}_state").eq(dl.state),
            getattr(top, f"{end}_tx").eq(dl.tx_counts),
            getattr(top, f"{end}_rx").eq(dl.rx_counts),
            getattr(top, f"{end}_unacked").eq(dl.unacked),
        ]
    for name in ("ab", "ba"):
        m.submodules[name] = link = ErrorLink(config.link)
        wiring.connect(m, ends[name[0]].phy_out, link.i)
        wiring.connect(m, link.o, ends[name[1]].phy_in)
        m.d.comb += [getattr(link, control).eq(getattr(top, control))
                     for control in control_members(config.link) if control != "enable"]
        m.d.comb += [link.enable.eq(top.link_enable), link.reseed.eq(0),
                     link.seed.eq(getattr(top, f"seed_{name}")),
                     getattr(top, f"{name}_counters").eq(link.counters)]
    return ends
