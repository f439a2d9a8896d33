# SPDX-License-Identifier: BSD-2-Clause
"""Two TL cores joined flit to flit: the top of the TL link test and of ``make sim``."""

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from scaleup_ip.tl import (
    CREDIT_BITS,
    TlCore,
    credit_array,
    traffic_counts,
    traffic_limits,
    tx_cache_port,
    upli_members,
)
from scaleup_ip.tl.traffic import UpliCheck, UpliGen

from sim.boundary import register_boundary

__all__ = ["TlLink", "connect_tl", "tl_members", "traffic_members"]

_PORTS = ("req", "orig", "rd_rsp", "wr_rsp")


class TlLink(wiring.Component):
    """Ends ``a`` and ``b`` (:class:`~scaleup_ip.tl.core.TlCore`), each one's flits into the other.

    Members
    -------
    a_req, a_orig, a_rd_rsp, a_wr_rsp, b_... : In(stream)
        UPLI traffic each end sends.
    a_rx_req, ..., b_rx_wr_rsp : Out(stream)
        UPLI traffic each end received.
    a_peer_init, b_peer_init, a_error, b_error : Out(1)
    a_flit, b_flit : Out(1)
        A flit left that end this clock.
    a_credits, b_credits : Out
        TL credits each end's packer holds.
    a_tx_cache, b_tx_cache : Out(tx_cache_port())
        With address caches: each end's Tx cache controls.
    traffic, a_seed, ..., a_flits, b_flits
        The traffic in hardware (:func:`traffic_members`).

    Every input is registered and every stream goes through a skid buffer at the boundary
    (:func:`sim.boundary.register_boundary`): a clock later inside, and a faster model.
    """

    #: With the traffic in hardware the model's evaluation is all the time there is: compiled
    #: at -O2 it runs about twice as fast as at -O1.
    OPT_FAST = "-O2"

    def __init__(self, config):
        self._config = config
        super().__init__({**tl_members(config), **traffic_members(config)})

    def elaborate(self, platform):
        m = Module()
        register_boundary(m, self, _TlLinkCore(self._config), "link")
        return m


class _TlLinkCore(wiring.Component):
    """:class:`TlLink` inside its registered boundary."""

    def __init__(self, config):
        self._config = config
        super().__init__({**tl_members(config), **traffic_members(config)})

    def elaborate(self, platform):
        m = Module()
        ends = {end: connect_tl(m, self, end, self._config, traffic=True) for end in "ab"}
        wiring.connect(m, ends["a"].flit_out, ends["b"].flit_in)
        wiring.connect(m, ends["b"].flit_out, ends["a"].flit_in)
        return m


def traffic_members(config):
    """The members of a two-end top whose UPLI traffic can be made and checked in hardware
    (:class:`TlLink`, :class:`sim.ualink.link.UalinkLink`):

    ``traffic`` (``In(1)``): each end's UPLI side on a :class:`~scaleup_ip.tl.traffic.UpliGen` and a
    :class:`~scaleup_ip.tl.traffic.UpliCheck` instead of its ports (set before traffic starts);
    ``a_seed``, ``b_seed`` (``In(64)``): each end's generator's seed, which the far end's
    checker follows; ``gen_load``, ``gen_enable``, ``gen_idle``, ``gen_limits``,
    ``gen_cacheable``: the generators' controls (``load`` the checkers' too); ``check_busy``;
    ``a_sent``, ``a_done``, ``a_got``, ``a_bad``, ``b_...``: each end's generator's ``sent`` and
    ``done``, its checker's ``got`` and ``bad`` (what the far end sent); ``a_flits``,
    ``b_flits`` (``Out(32)``): TL flits that left each end's TL since reset."""
    members = {"traffic": In(1), "gen_load": In(1), "gen_enable": In(1), "gen_idle": In(8),
               "gen_limits": In(traffic_limits), "gen_cacheable": In(1), "check_busy": In(8)}
    for end in "ab":
        members |= {f"{end}_seed": In(64), f"{end}_sent": Out(traffic_counts),
                    f"{end}_done": Out(1), f"{end}_got": Out(traffic_counts),
                    f"{end}_bad": Out(traffic_counts), f"{end}_flits": Out(32)}
    return members


def _traffic(m, top, end, core):
    """``end``'s generator and checker on ``top``'s :func:`traffic_members`; returns them."""
    far = "b" if end == "a" else "a"
    m.submodules[f"{end}_gen"] = gen = UpliGen()
    m.submodules[f"{end}_check"] = check = UpliCheck()
    flits = getattr(top, f"{end}_flits")
    with m.If(core.flit_out.valid & core.flit_out.ready):
        m.d.sync += flits.eq(flits + 1)
    m.d.comb += [
        gen.seed.eq(getattr(top, f"{end}_seed")), gen.load.eq(top.gen_load),
        gen.enable.eq(top.gen_enable), gen.idle.eq(top.gen_idle),
        gen.limits.eq(top.gen_limits), gen.cacheable.eq(top.gen_cacheable),
        check.seed.eq(getattr(top, f"{far}_seed")), check.load.eq(top.gen_load),
        check.cacheable.eq(top.gen_cacheable), check.busy.eq(top.check_busy),
        getattr(top, f"{end}_sent").eq(gen.sent), getattr(top, f"{end}_done").eq(gen.done),
        getattr(top, f"{end}_got").eq(check.got), getattr(top, f"{end}_bad").eq(check.bad),
    ]
    return gen, check


def tl_members(config):
    """The UPLI side of a two-end top (:class:`TlLink`, :class:`sim.ualink.link.UalinkLink`):
    each end's UPLI streams, status and credits (see :class:`TlLink`)."""
    members = {}
    for end in "ab":
        members.update(upli_members(In, f"{end}_"))
        members.update(upli_members(Out, f"{end}_rx_"))
        members[f"{end}_peer_init"] = Out(1)
        members[f"{end}_error"] = Out(1)
        members[f"{end}_flit"] = Out(1)
        members[f"{end}_credits"] = Out(credit_array(CREDIT_BITS))
        if config.tx_cache is not None:
            members[f"{end}_tx_cache"] = Out(tx_cache_port())
    return members


def connect_tl(m, top, end, config, name=None, traffic=False):
    """Add end ``end``'s :class:`~scaleup_ip.tl.core.TlCore` to ``m`` (as ``name``, else ``end``), its
    UPLI side on ``top``'s :func:`tl_members`; returns it (its flit ports free).

    With ``traffic``, ``top`` also has the :func:`traffic_members`: while ``top.traffic`` is 1 the
    core's UPLI inputs come from a :class:`~scaleup_ip.tl.traffic.UpliGen` and its outputs go to a
    :class:`~scaleup_ip.tl.traffic.UpliCheck` instead of the ports, which are then idle (inputs not
    ready, outputs not valid)."""
    m.submodules[name or end] = core = TlCore(config)
    if traffic:
        gen, check = _traffic(m, top, end, core)
    for port in _PORTS:
        into, out = getattr(top, f"{end}_{port}"), getattr(top, f"{end}_rx_{port}")
        if not traffic:
            wiring.connect(m, wiring.flipped(into), getattr(core, port))
            wiring.connect(m, getattr(core, f"rx_{port}"), wiring.flipped(out))
            continue
        _choose(m, top.traffic, getattr(core, port), into, getattr(gen, port))
        _share(m, top.traffic, getattr(core, f"rx_{port}"), out, getattr(check, port))
    m.d.comb += [getattr(top, f"{end}_peer_init").eq(core.peer_init),
                 getattr(top, f"{end}_error").eq(core.error),
                 getattr(top, f"{end}_flit").eq(core.flit_out.valid & core.flit_out.ready),
                 getattr(top, f"{end}_credits").eq(core.credits)]
    if config.tx_cache is not None:
        wiring.connect(m, wiring.flipped(getattr(top, f"{end}_tx_cache")), core.tx_cache)
    return core


def _choose(m, select, sink, port, gen):
    """``sink`` fed from ``gen`` while ``select``, else from ``port``."""
    m.d.comb += [sink.valid.eq(Mux(select, gen.valid, port.valid)),
                 sink.payload.eq(Mux(select, gen.payload.as_value(), port.payload.as_value())),
                 port.ready.eq(~select & sink.ready), gen.ready.eq(select & sink.ready)]


def _share(m, select, source, port, check):
    """``source`` into ``check`` while ``select``, else into ``port``."""
    m.d.comb += [port.valid.eq(~select & source.valid), port.payload.eq(source.payload),
                 check.valid.eq(select & source.valid), check.payload.eq(source.payload),
                 source.ready.eq(Mux(select, check.ready, port.ready))]
