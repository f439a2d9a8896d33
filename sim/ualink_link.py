"""Two full UALink ends, TL and DL, over error-injecting links: the top of the UALink link test
and of ``make sim``'s ``ualink`` scenario."""

import dataclasses

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.tl.layout import TlConfig, traffic_counts, traffic_limits
from rtl.tl.traffic import UpliCheck, UpliGen

from .dl_link import DlLinkConfig, connect_dl, dl_members
from .tl_link import connect_tl, tl_members

__all__ = ["UALINK_LINK", "UalinkLink", "UalinkLinkConfig"]


@dataclasses.dataclass(frozen=True)
class UalinkLinkConfig(TlConfig, DlLinkConfig):
    """The TL ends' parameters (:class:`~rtl.tl.layout.TlConfig`) and the DL ends' and error
    links' (:class:`~sim.dl_link.DlLinkConfig`), in one configuration."""

    @property
    def tl(self):
        return TlConfig(**{field.name: getattr(self, field.name)
                           for field in dataclasses.fields(TlConfig)})


#: The one configuration the UALink link test and ``make sim`` share: default TL buffers, the
#: DL link test's TxReplay and bursts, delays up to 256 clocks (a round trip past TxReplay).
UALINK_LINK = UalinkLinkConfig(replay_depth=32, max_delay=256, max_burst_length=16384)


class UalinkLink(wiring.Component):
    """Ends ``a`` and ``b``, each a :class:`~rtl.tl.core.TlCore` over a
    :class:`~rtl.dl.dl.UalinkDl`; ``a``'s DL flits go to ``b`` through one
    :class:`~rtl.dl.err_link.ErrorLink`, ``b``'s to ``a`` through another.

    Members
    -------
    a_req, ..., b_rx_wr_rsp, a_peer_init, ..., a_credits, b_credits
        Each end's UPLI side, as :class:`~sim.tl_link.TlLink`'s (``a_flit``: a TL flit left
        ``a``'s TL for its DL).
    enable, retrain, ack_timeout, replay_limit, link_enable, ..., a_state, ..., ba_counters
        The DL ends' and error links' controls and counters, as
        :class:`~sim.dl_link.DlLink`'s.
    traffic : ``In(1)``
        Each end's UPLI side on a :class:`~rtl.tl.traffic.UpliGen` and a
        :class:`~rtl.tl.traffic.UpliCheck` instead of the ports above (set it before
        traffic starts, and leave it).
    a_seed, b_seed : ``In(64)``
        The seed of each end's generator; the far end's checker follows it.
    gen_load, gen_enable, gen_idle, gen_limits, check_busy
        The generators' ``load`` (the checkers' too), ``enable``, ``idle`` and ``limits``;
        the checkers' ``busy``.
    a_sent, a_done, a_got, a_bad, b_... : ``Out``
        Each end's generator's ``sent`` and ``done``, and its checker's ``got`` and ``bad``
        (what the other end sent).
    a_flits, b_flits : ``Out(32)``
        TL flits that left each end's TL, since reset.
    """

    #: With the traffic in hardware the model's evaluation is all the time there is: its code
    #: compiled at -O2 runs twice as fast as at -O1 (32 k against 16 k cycles/s), for half a
    #: minute more of build.
    OPT_FAST = "-O2"

    def __init__(self, config):
        self._config = config
        members = {"traffic": In(1), "gen_load": In(1), "gen_enable": In(1), "gen_idle": In(8),
                   "gen_limits": In(traffic_limits), "check_busy": In(8)}
        for end in "ab":
            members |= {f"{end}_seed": In(64), f"{end}_sent": Out(traffic_counts),
                        f"{end}_done": Out(1), f"{end}_got": Out(traffic_counts),
                        f"{end}_bad": Out(traffic_counts), f"{end}_flits": Out(32)}
        super().__init__({**tl_members(config), **dl_members(config), **members})

    def elaborate(self, platform):
        m = Module()
        ends = connect_dl(m, self, self._config)
        for end, dl in ends.items():
            far = "b" if end == "a" else "a"
            m.submodules[f"{end}_gen"] = gen = UpliGen()
            m.submodules[f"{end}_check"] = check = UpliCheck()
            core = connect_tl(m, self, end, self._config.tl, name=f"{end}_tl",
                              traffic=(self.traffic, gen, check))
            wiring.connect(m, core.flit_out, dl.tl_in)
            wiring.connect(m, dl.tl_out, core.flit_in)
            flits = getattr(self, f"{end}_flits")
            with m.If(core.flit_out.valid & core.flit_out.ready):
                m.d.sync += flits.eq(flits + 1)
            m.d.comb += [
                gen.seed.eq(getattr(self, f"{end}_seed")), gen.load.eq(self.gen_load),
                gen.enable.eq(self.gen_enable), gen.idle.eq(self.gen_idle),
                gen.limits.eq(self.gen_limits),
                check.seed.eq(getattr(self, f"{far}_seed")), check.load.eq(self.gen_load),
                check.busy.eq(self.check_busy),
                getattr(self, f"{end}_sent").eq(gen.sent),
                getattr(self, f"{end}_done").eq(gen.done),
                getattr(self, f"{end}_got").eq(check.got),
                getattr(self, f"{end}_bad").eq(check.bad),
            ]
        return m
