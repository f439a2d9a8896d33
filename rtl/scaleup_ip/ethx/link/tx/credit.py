# SPDX-License-Identifier: BSD-2-Clause
"""The credit sender: which VC's frame enters the replay ring next, and the CC_UPDATEs."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ..config import CONTROL_BYTES, LINK_WORD_BYTES, LinkConfig
from ..rx.credit import credits_of
from ..layout import (
    COUNT_BITS,
    Ctl,
    control_header,
    control_layout,
    ctl_in_layout,
    eth_stream,
    head_layout,
    vc_shape,
)

__all__ = ["CreditTx"]

#: A CC_UPDATE as it enters the ring: the control frame without its link word (bytes 16 .. 23),
#: which the ring puts in [README §1].
_CC_BYTES = CONTROL_BYTES - LINK_WORD_BYTES


class CreditTx(ConfiguredComponent):
    """The sender of README §4: ``S_CC`` and ``S_CF`` per VC, 20-bit cyclic, and the choice of
    the next frame for the replay ring.

    While nothing is being fed to the ring (``idle``) and it has room, ``start`` pulses for
    one frame: a CC_UPDATE (``cc``) once ``cc_period`` clocks have passed since the last, else
    the head of the next VC after the last one served whose frame fits its credits
    (``S_CU + c <= S_CL`` and the port's ``ΣS_CU + c <= port_limit``); ``pick`` names it and
    its credits are consumed. Which VCs fit is registered: it is a clock old, and a start is
    never followed by another in the next clock.

    A CF_UPDATE on ``cf`` sets each VC's ``S_CF`` to the receiver's ``R_CF`` if
    ``(R_CF − S_CF) mod 2**20 <= S_CU``, and counts the VCs where it is not
    (``credit_errors``).

    A CC_UPDATE, its counts the ``S_CC`` at its start, leaves on ``cc_o`` (56 bytes: the ring
    adds the link word) one beat per clock.

    Members
    -------
    heads : ``In(ArrayLayout(head_layout(config), vcs))``
    idle, room : ``In(1)``; start, cc : ``Out(1)``; pick : ``Out(vc_shape(config))``
    cf : ``In(ctl_in_layout(config))``
    limits : ``In(ArrayLayout(20, vcs))``; port_limit : ``In(20)``; cc_period : ``In(16)``
    node : ``In(16)``
    cc_o : ``Out(eth_stream(eth_width))``
    s_cc, s_cf : ``Out(ArrayLayout(20, vcs))``
    cf_got : ``Out(1)``; credit_errors : ``Out(range(vcs + 1))``
    """

    config_class = LinkConfig

    def __init__(self, config):
        counts = data.ArrayLayout(COUNT_BITS, config.vcs)
        super().__init__(config, lambda c: {
            "heads": In(data.ArrayLayout(head_layout(c), c.vcs)),
            "idle": In(1), "room": In(1), "start": Out(1), "cc": Out(1),
            "pick": Out(vc_shape(c)),
            "cf": In(ctl_in_layout(c)),
            "limits": In(counts), "port_limit": In(COUNT_BITS), "cc_period": In(16),
            "node": In(16),
            "cc_o": Out(eth_stream(c.eth_width)),
            "s_cc": Out(counts), "s_cf": Out(counts),
            "cf_got": Out(1), "credit_errors": Out(range(c.vcs + 1)),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        in_use = [Signal(COUNT_BITS, name=f"in_use{v}") for v in range(cfg.vcs)]
        for v in range(cfg.vcs):
            m.d.comb += in_use[v].eq(self.s_cc[v] - self.s_cf[v])
        fits = self._fits(m, in_use)
        self._choose(m, fits)
        self._freed(m, in_use)
        self._cc_frame(m)
        return m

    def _fits(self, m, in_use):
        """Which VCs' heads fit their credits and the port's, registered."""
        cfg = self.config
        port = Signal(COUNT_BITS + 3)
        m.d.comb += port.eq(sum(in_use))
        fits = Signal(cfg.vcs)
        for v in range(cfg.vcs):
            head = self.heads[v]
            c = credits_of(cfg, head.bytes)
            m.d.sync += fits[v].eq(head.valid & (in_use[v] + c <= self.limits[v])
                                   & (port + c <= self.port_limit))
        return fits

    def _choose(self, m, fits):
        """Round-robin over the VCs that fit, after the last one served; a CC_UPDATE first."""
        cfg = self.config
        last = Signal(vc_shape(cfg))            # the VC served last
        clock = Signal(16)                      # clocks since the last CC_UPDATE, saturating
        rested = Signal()                       # no start in the clock before
        due = (self.cc_period != 0) & (clock >= self.cc_period)
        found = Signal()
        choice = Signal(vc_shape(cfg))
        both = Cat(fits, fits)
        for r in range(cfg.vcs):
            with m.If(last == r):
                for k in reversed(range(1, cfg.vcs + 1)):
                    with m.If(both[r + k]):
                        m.d.comb += [found.eq(1), choice.eq((r + k) % cfg.vcs)]
        go = self.idle & self.room & rested
        m.d.comb += [self.start.eq(go & (due | (found & self.heads[choice].valid))),
                     self.cc.eq(due), self.pick.eq(choice)]
        m.d.sync += [rested.eq(~self.start),
                     clock.eq(Mux(self.start & due, 0, Mux(clock == 0xFFFF, clock, clock + 1)))]
        with m.If(self.start & ~due):
            m.d.sync += last.eq(choice)
            for v in range(cfg.vcs):
                with m.If(choice == v):
                    m.d.sync += self.s_cc[v].eq(self.s_cc[v]
                                                + credits_of(cfg, self.heads[v].bytes))

    def _freed(self, m, in_use):
        """A CF_UPDATE, VC by VC in the same clock."""
        cfg, cf = self.config, self.cf
        got = cf.valid & (cf.kind == Ctl.CF_UPDATE)
        bad = Signal(cfg.vcs)
        for v in range(cfg.vcs):
            ok = ((cf.counts[v] - self.s_cf[v])[:COUNT_BITS] <= in_use[v])
            m.d.comb += bad[v].eq(got & ~ok)
            with m.If(got & ok):
                m.d.sync += self.s_cf[v].eq(cf.counts[v])
        m.d.comb += [self.cf_got.eq(got),
                     self.credit_errors.eq(sum(bad[v] for v in range(cfg.vcs)))]

    def _cc_frame(self, m):
        """The CC_UPDATE's 56 bytes, built at its start."""
        cfg, o = self.config, self.cc_o
        frame = Signal(control_layout)
        now = Signal(control_layout)
        m.d.comb += control_header(now, self.node)
        m.d.comb += [now.kind.eq(Ctl.CC_UPDATE)]
        m.d.comb += [now.counts[v].eq(self.s_cc[v]) for v in range(cfg.vcs)]
        beats = _CC_BYTES // cfg.eth_bytes
        k = Signal(range(beats))
        sent = Cat(*(frame[name] for name in control_layout.members if name != "word"))
        with m.If(self.start & self.cc):
            m.d.sync += [frame.eq(now), o.valid.eq(1)]
        m.d.comb += [o.p.data.eq(sent.word_select(k, cfg.eth_width)),
                     o.p.keep.eq((1 << cfg.eth_bytes) - 1), o.p.last.eq(k == beats - 1),
                     o.p.user.eq(0)]
        with m.If(o.valid & o.ready):
            m.d.sync += k.eq(k + 1)
            with m.If(o.p.last):
                m.d.sync += [k.eq(0), o.valid.eq(0)]
