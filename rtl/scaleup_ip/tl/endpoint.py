# SPDX-License-Identifier: BSD-2-Clause
"""A UALink TL with credit-based UPLI channels on its ports."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..config import ConfiguredComponent
from .core import TlCore
from .layout import (
    TlConfig,
    flit_stream,
    orig_data_layout,
    rd_rsp_layout,
    request_layout,
    rx_error_counts,
    tx_cache_port,
    upli_channel,
    upli_error_counts,
    wr_rsp_layout,
)
from .upli.request_check import UpliRequestCheck, count_errors
from .upli.response_check import UpliResponseCheck
from .upli.receiver import UpliReceiver
from .upli.sender import UpliRequestSender, UpliSender

__all__ = ["UPLI_DEPTH", "TlEndpoint"]

#: Beats each UPLI receiving channel buffers, so the credits it releases [ours]: enough to
#: cover the credit loop at one beat per clock.
UPLI_DEPTH = 8

_LAYOUTS = {"req": request_layout, "orig": orig_data_layout, "rd_rsp": rd_rsp_layout,
            "wr_rsp": wr_rsp_layout}


class TlEndpoint(ConfiguredComponent):
    """:class:`~scaleup_ip.tl.core.TlCore` behind UPLI channels [UALink 1.0 §2.6, §5].

    Members
    -------
    req, orig, rd_rsp, wr_rsp : In(upli_channel(...))
        From the local originator (requests, originator data) and completer (read and write
        responses). Each releases :data:`UPLI_DEPTH` pool credits after reset, then
        ``CreditInitDone``, and returns a credit per beat taken into the TL.
    rx_req, rx_orig, rx_rd_rsp, rx_wr_rsp : Out(upli_channel(...))
        To the local completer (requests with data) and originator (responses), sent only
        with the credits those receivers release.
    flit_out : Out(flit_stream()), flit_in : In(flit_stream())
        TL flits to and from the data link.
    init_sent, peer_init, error : Out(1), error_counts : Out(rx_error_counts)
        As in :class:`~scaleup_ip.tl.core.TlCore`.
    overrun : Out(16)
        UPLI beats that arrived without credit, all channels (dropped).
    tx_cache : Out(tx_cache_port())
        With address caches (``config.cache_ways``): the Tx cache's controls
        (:attr:`~scaleup_ip.tl.core.TlCore.tx_cache`).
    upli_errors : Out(upli_error_counts)
        UPLI protocol violations on the four channels in, by
        :class:`~scaleup_ip.tl.layout.UpliError` kind (8-bit saturating; a kind counts one per clock
        however many transfers showed it). Each is answered as README §5 says; none stops the TL.
        Checked by :class:`~scaleup_ip.tl.upli.request_check.UpliRequestCheck` and
        :class:`~scaleup_ip.tl.upli.response_check.UpliResponseCheck` on the wires, and by the
        packer.
    """

    config_class = TlConfig

    def __init__(self, config):
        members = {}
        for name, layout in _LAYOUTS.items():
            members[name] = In(upli_channel(layout))
            members[f"rx_{name}"] = Out(upli_channel(layout))
        if config.tx_cache is not None:
            members["tx_cache"] = Out(tx_cache_port())
        super().__init__(config, {
            **members,
            "flit_out": Out(flit_stream()),
            "flit_in": In(flit_stream()),
            "init_sent": Out(1),
            "peer_init": Out(1),
            "error": Out(1),
            "error_counts": Out(rx_error_counts),
            "overrun": Out(16),
            "upli_errors": Out(upli_error_counts),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = TlCore(self.config)
        m.submodules.req_check = req_check = UpliRequestCheck()
        m.submodules.rsp_check = rsp_check = UpliResponseCheck()
        checked = {"req": (req_check, req_check.req_discard),
                   "orig": (req_check, req_check.orig_discard),
                   "rd_rsp": (rsp_check, rsp_check.rd_discard), "wr_rsp": (rsp_check, 0)}
        overruns = []
        for name, layout in _LAYOUTS.items():
            m.submodules[f"{name}_in"] = rcv = UpliReceiver(layout, UPLI_DEPTH)
            check, discard = checked[name]
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(check, name))
            wiring.connect(m, getattr(check, f"{name}_o"), rcv.i)
            m.d.comb += rcv.discard.eq(discard)
            wiring.connect(m, rcv.o, getattr(core, name))
            overruns.append(rcv.overrun)
        count_errors(m, self.upli_errors,
                     req_check.events | rsp_check.events | core.upli_events)
        m.submodules.req_out = req_out = UpliRequestSender()
        wiring.connect(m, core.rx_req, req_out.req)
        wiring.connect(m, core.rx_orig, req_out.orig)
        wiring.connect(m, req_out.req_o, wiring.flipped(self.rx_req))
        wiring.connect(m, req_out.orig_o, wiring.flipped(self.rx_orig))
        for name, multi in (("rd_rsp", True), ("wr_rsp", False)):
            m.submodules[f"{name}_out"] = snd = UpliSender(_LAYOUTS[name], multi_beat=multi)
            wiring.connect(m, getattr(core, f"rx_{name}"), snd.i)
            wiring.connect(m, snd.o, wiring.flipped(getattr(self, f"rx_{name}")))
        if self.config.tx_cache is not None:
            wiring.connect(m, wiring.flipped(self.tx_cache), core.tx_cache)
        wiring.connect(m, core.flit_out, wiring.flipped(self.flit_out))
        wiring.connect(m, wiring.flipped(self.flit_in), core.flit_in)
        m.d.comb += [
            self.init_sent.eq(core.init_sent), self.peer_init.eq(core.peer_init),
            self.error.eq(core.error), self.error_counts.eq(core.error_counts),
            self.overrun.eq(sum(overruns)),
        ]
        return m
