# SPDX-License-Identifier: BSD-2-Clause
"""Two full UALink ends, TL and DL, over error-injecting links: the top of the UALink link test
and of ``make sim``'s ``ualink`` scenario."""

import dataclasses

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from scaleup_ip.compose import part_config
from scaleup_ip.tl import (
    UPLI_DEPTH,
    IsolationCause,
    OriginatorConfig,
    TlConfig,
    orig_data_layout,
    orig_data_stream,
    originator_counts,
    rd_rsp_layout,
    rd_rsp_stream,
    request_layout,
    request_stream,
    wr_rsp_layout,
    wr_rsp_stream,
)
from scaleup_ip.tl.upli import UpliOriginator, UpliReceiver, UpliSender

from sim.boundary import register_boundary
from sim.dl.link import DlLinkConfig, connect_dl, dl_members
from sim.tl.link import connect_tl, tl_members, traffic_members

__all__ = ["UALINK_LINK", "UalinkLink", "UalinkLinkConfig"]


@dataclasses.dataclass(frozen=True)
class UalinkLinkConfig(TlConfig, DlLinkConfig, OriginatorConfig):
    """The TL ends' parameters (:class:`~scaleup_ip.tl.layout.TlConfig`), the DL ends' and error
    links' (:class:`~sim.dl.link.DlLinkConfig`) and end ``a``'s originator's
    (:class:`~scaleup_ip.tl.layout.OriginatorConfig`), in one configuration."""

    def __post_init__(self):
        TlConfig.__post_init__(self)
        DlLinkConfig.__post_init__(self)
        OriginatorConfig.__post_init__(self)

    @property
    def tl(self):
        return part_config(TlConfig, self)

    @property
    def originator(self):
        return part_config(OriginatorConfig, self)


#: The one configuration the UALink link tests and ``make sim`` share: default TL buffers, the
#: DL link test's TxReplay and bursts, delays up to 256 clocks (a round trip past TxReplay); an
#: originator timeout of 20,000 clocks, past the replays of a link that comes back.
UALINK_LINK = UalinkLinkConfig(replay_depth=32, max_delay=256, max_burst_length=16384,
                               outstanding=8, completion_timeout=20_000)


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
    guard : In(1); isolated, cause, guard_counts : Out
        With ``guard`` (and ``traffic`` 0), ``a``'s UPLI originator side goes through a
        :class:`~scaleup_ip.tl.upli.UpliOriginator` (``a_req``, ``a_orig`` in;
        ``a_rx_rd_rsp``, ``a_rx_wr_rsp`` out), joined to the TL core through the UPLI channel
        ends a :class:`~scaleup_ip.tl.TlEndpoint` has; its ``isolated``, ``cause`` and
        ``counts``.

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
    return {**tl_members(config), **dl_members(config), **traffic_members(config),
            "guard": In(1), "isolated": Out(1), "cause": Out(IsolationCause),
            "guard_counts": Out(originator_counts)}


class _UalinkLinkCore(wiring.Component):
    """:class:`UalinkLink` inside its registered boundary."""

    def __init__(self, config):
        self._config = config
        super().__init__(_members(config))

    def elaborate(self, platform):
        m = Module()
        ends = connect_dl(m, self, self._config)
        for end, dl in ends.items():
            ports = _guarded(m, self, self._config.originator) if end == "a" else self
            core = connect_tl(m, ports, end, self._config.tl, name=f"{end}_tl", traffic=True)
            wiring.connect(m, core.flit_out, dl.tl_in)
            wiring.connect(m, dl.tl_out, core.flit_in)
        return m


class _Ports:
    """``top``, but with the members of ``streams`` in place of its own."""

    def __init__(self, top, streams):
        self._top, self._streams = top, streams

    def __getattr__(self, name):
        return self._streams[name] if name in self._streams else getattr(self._top, name)


def _guarded(m, top, config):
    """End ``a``'s originator side through a :class:`~scaleup_ip.tl.upli.UpliOriginator` while
    ``top.guard``: returns the ports the TL core then sees (:class:`_Ports`)."""
    m.submodules.guard = orig = UpliOriginator(config)
    m.d.comb += [top.isolated.eq(orig.isolated), top.cause.eq(orig.cause),
                 top.guard_counts.eq(orig.counts)]
    inside = {}
    for name, layout, signature in (("req", request_layout, request_stream()),
                                    ("orig", orig_data_layout, orig_data_stream())):
        m.submodules[f"guard_{name}"] = rcv = UpliReceiver(layout, UPLI_DEPTH)
        wiring.connect(m, getattr(orig, f"tl_{name}"), rcv.i)
        inside[f"a_{name}"] = port = signature.flip().create()
        _either(m, top.guard, getattr(top, f"a_{name}"), getattr(orig, name), rcv.o, port)
    for name, layout, signature in (("rd_rsp", rd_rsp_layout, rd_rsp_stream()),
                                    ("wr_rsp", wr_rsp_layout, wr_rsp_stream())):
        m.submodules[f"guard_{name}"] = snd = UpliSender(layout, multi_beat=name == "rd_rsp")
        wiring.connect(m, snd.o, getattr(orig, f"tl_{name}"))
        inside[f"a_rx_{name}"] = port = signature.create()
        _either(m, top.guard, port, snd.i, getattr(orig, name), getattr(top, f"a_rx_{name}"))
    return _Ports(top, inside)


def _either(m, select, source, guarded, back, sink):
    """While ``select``: ``source`` into ``guarded`` and ``back`` into ``sink``; else
    ``source`` straight into ``sink``."""
    m.d.comb += [
        guarded.valid.eq(select & source.valid), guarded.payload.eq(source.payload),
        sink.valid.eq(Mux(select, back.valid, source.valid)),
        sink.payload.eq(Mux(select, back.payload.as_value(), source.payload.as_value())),
        source.ready.eq(Mux(select, guarded.ready, sink.ready)),
        back.ready.eq(select & sink.ready),
    ]
