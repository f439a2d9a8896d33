"""Two TL cores joined flit to flit: the top of the TL link test and of ``make sim``."""

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.tl.core import TlCore
from rtl.tl.layout import CREDIT_BITS, credit_array, tx_cache_port, upli_members

__all__ = ["TlLink", "connect_tl", "tl_members"]

_PORTS = ("req", "orig", "rd_rsp", "wr_rsp")


class TlLink(wiring.Component):
    """Ends ``a`` and ``b`` (:class:`~rtl.tl.core.TlCore`), each one's flits into the other.

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
    """

    def __init__(self, config):
        self._config = config
        super().__init__(tl_members(config))

    def elaborate(self, platform):
        m = Module()
        ends = {end: connect_tl(m, self, end, self._config) for end in "ab"}
        wiring.connect(m, ends["a"].flit_out, ends["b"].flit_in)
        wiring.connect(m, ends["b"].flit_out, ends["a"].flit_in)
        return m


def tl_members(config):
    """The UPLI side of a two-end top (:class:`TlLink`, :class:`sim.ualink_link.UalinkLink`):
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


def connect_tl(m, top, end, config, name=None, traffic=None):
    """Add end ``end``'s :class:`~rtl.tl.core.TlCore` to ``m`` (as ``name``, else ``end``), its
    UPLI side on ``top``'s :func:`tl_members`; returns it (its flit ports free).

    ``traffic``, if given, is ``(select, gen, check)``: while ``select`` is 1 the core's UPLI
    inputs come from ``gen`` (a :class:`~rtl.tl.traffic.UpliGen`) and its outputs go to
    ``check`` (a :class:`~rtl.tl.traffic.UpliCheck`) instead of the top's ports, which are then
    idle (inputs not ready, outputs not valid)."""
    m.submodules[name or end] = core = TlCore(config)
    for port in _PORTS:
        into, out = getattr(top, f"{end}_{port}"), getattr(top, f"{end}_rx_{port}")
        if traffic is None:
            wiring.connect(m, wiring.flipped(into), getattr(core, port))
            wiring.connect(m, getattr(core, f"rx_{port}"), wiring.flipped(out))
            continue
        select, gen, check = traffic
        _choose(m, select, getattr(core, port), into, getattr(gen, port))
        _share(m, select, getattr(core, f"rx_{port}"), out, getattr(check, port))
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
