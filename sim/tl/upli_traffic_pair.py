# SPDX-License-Identifier: BSD-2-Clause
"""A UPLI traffic generator and checker side by side: the top of the traffic tests."""

import dataclasses

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from scaleup_ip.config import BlockConfig
from scaleup_ip.tl import Status, traffic_counts, traffic_limits, upli_members
from scaleup_ip.tl.traffic import UpliCheck, UpliGen
from scaleup_ip.tl.traffic import poisoned

__all__ = ["UpliTrafficConfig", "UpliTrafficPair"]

_PORTS = ("req", "orig", "rd_rsp", "wr_rsp")


@dataclasses.dataclass(frozen=True)
class UpliTrafficConfig(BlockConfig):
    """The pair has no parameters (the generator and checker have none)."""


class UpliTrafficPair(wiring.Component):
    """A :class:`~scaleup_ip.tl.traffic.UpliGen` whose streams leave on ``gen_<channel>`` and a
    :class:`~scaleup_ip.tl.traffic.UpliCheck` taking ``check_<channel>``; with ``loop`` the
    generator feeds the checker through a stand-in for a TL (what it changes on delivery: poisoned
    beats, OKAY responses without SRCACCID) and the ports are idle.

    Members
    -------
    gen_req, ..., gen_wr_rsp : ``Out(stream)``; check_req, ..., check_wr_rsp : ``In(stream)``
    loop : ``In(1)``; cacheable : ``In(1)``
    seed, check_seed : ``In(64)``; load, enable : ``In(1)``; idle, busy : ``In(8)``
    limits : ``In(traffic_limits)``
    sent, got, bad : ``Out(traffic_counts)``; done : ``Out(1)``
    """

    def __init__(self, config=None):
        members = {**upli_members(Out, "gen_"), **upli_members(In, "check_"),
                   "loop": In(1), "cacheable": In(1), "seed": In(64), "check_seed": In(64), "load": In(1),
                   "enable": In(1), "idle": In(8), "busy": In(8),
                   "limits": In(traffic_limits), "sent": Out(traffic_counts),
                   "got": Out(traffic_counts), "bad": Out(traffic_counts), "done": Out(1)}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.gen = gen = UpliGen()
        m.submodules.check = check = UpliCheck()
        loop = self.loop
        for port in _PORTS:
            source, sink = getattr(gen, port), getattr(check, port)
            out, into = getattr(self, f"gen_{port}"), getattr(self, f"check_{port}")
            delivered = Signal.like(source.payload, name=f"{port}_delivered")
            m.d.comb += [
                out.valid.eq(~loop & source.valid), out.payload.eq(source.payload),
                source.ready.eq(Mux(loop, sink.ready, out.ready)),
                sink.valid.eq(Mux(loop, source.valid, into.valid)),
                sink.payload.eq(Mux(loop, delivered.as_value(), into.payload.as_value())),
                into.ready.eq(~loop & sink.ready),
                delivered.eq(source.payload),
            ]
            if port in ("orig", "rd_rsp"):
                m.d.comb += delivered.data.eq(poisoned(source.payload.data, source.payload.error))
            if port in ("rd_rsp", "wr_rsp"):
                with m.If(source.payload.status == Status.OKAY.value):
                    m.d.comb += delivered.src_acc.eq(0)
        m.d.comb += [
            gen.seed.eq(self.seed), gen.load.eq(self.load), gen.enable.eq(self.enable),
            gen.cacheable.eq(self.cacheable), check.cacheable.eq(self.cacheable),
            gen.idle.eq(self.idle), gen.limits.eq(self.limits),
            check.seed.eq(self.check_seed), check.load.eq(self.load), check.busy.eq(self.busy),
            self.sent.eq(gen.sent), self.done.eq(gen.done),
            self.got.eq(check.got), self.bad.eq(check.bad),
        ]
        return m
