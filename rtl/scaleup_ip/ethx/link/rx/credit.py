# SPDX-License-Identifier: BSD-2-Clause
"""The credit receiver: per-VC consumed and freed counts, and when a CF_UPDATE goes."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ..config import LinkConfig
from ..layout import COUNT_BITS, Class, freed_layout, vc_shape

__all__ = ["CreditRx", "credits_of"]


def credits_of(config, nbytes):
    """``pkt_credits`` of a bridge frame of ``nbytes`` bytes [README §4]: the credit size is a
    power of two, so the division is a shift."""
    shift = config.credit_size.bit_length() - 1
    return (nbytes + config.pkt_overhead + config.credit_size - 1) >> shift


class CreditRx(ConfiguredComponent):
    """The receiver of README §4: ``R_CC`` and ``R_CF`` per VC, 20-bit cyclic.

    An accepted DATA frame (``judge``, ``accept``, class DATA) adds its credits to its VC's
    ``R_CC``; a frame leaving for the bridge (``freed``) adds them to ``R_CF``; an accepted
    POISONED frame adds them to both at once, and its bytes count as freed; an accepted
    CC_UPDATE sets every VC's ``R_CC`` to the sender's ``S_CC`` and adds the difference to
    ``R_CF``. A CF_UPDATE is asked for (``want``) once the bytes freed since the last one
    reach ``cf_bytes``, or ``cf_period`` clocks after the last one, and taken by the control
    sender (``sent``) with ``r_cf`` as it is then.

    Members
    -------
    judge, accept : ``In(1)``; cls : ``In(Class)``; vc : ``In(vc_shape(config))``;
    nbytes : ``In(range(max_frame_bytes + 1))``; counts : ``In(ArrayLayout(20, vcs))``
        The frame judged (:class:`~scaleup_ip.ethx.link.rx.llr.LlrRx`'s verdict).
    freed : ``In(freed_layout(config))``
    want : ``Out(1)``; sent : ``In(1)``
    cf_bytes, cf_period : ``In(16)``
    r_cc, r_cf : ``Out(ArrayLayout(20, vcs))``
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "judge": In(1), "accept": In(1), "cls": In(Class), "vc": In(vc_shape(c)),
            "nbytes": In(range(c.max_frame_bytes + 1)),
            "counts": In(data.ArrayLayout(COUNT_BITS, c.vcs)),
            "freed": In(freed_layout(c)),
            "want": Out(1), "sent": In(1),
            "cf_bytes": In(16), "cf_period": In(16),
            "r_cc": Out(data.ArrayLayout(COUNT_BITS, c.vcs)),
            "r_cf": Out(data.ArrayLayout(COUNT_BITS, c.vcs)),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        take = self.judge & self.accept
        data_in = take & (self.cls == Class.DATA)
        poisoned = take & (self.cls == Class.POISONED)      # freed as it is taken
        cc = take & (self.cls == Class.CC)
        got = credits_of(cfg, self.nbytes)
        gone = credits_of(cfg, self.freed.frame.bytes)
        for v in range(cfg.vcs):
            r_cc, r_cf = self.r_cc[v], self.r_cf[v]
            add_cc = Mux((data_in | poisoned) & (self.vc == v), got, 0)
            add_cf = (Mux(self.freed.valid & (self.freed.frame.vc == v), gone, 0)
                      + Mux(poisoned & (self.vc == v), got, 0))
            leak = Mux(cc, self.counts[v] - r_cc, 0)
            m.d.sync += [r_cc.eq(Mux(cc, self.counts[v], r_cc + add_cc)),
                         r_cf.eq(r_cf + add_cf + leak)]

        freed_bytes = Signal(17)          # since the last CF_UPDATE, saturating
        clock = Signal(16)                # clocks since the last CF_UPDATE, saturating
        more = (Mux(self.freed.valid, self.freed.frame.bytes, 0)
                + Mux(poisoned, self.nbytes, 0))
        m.d.sync += [
            freed_bytes.eq(Mux(self.sent, 0, Mux(freed_bytes[-1], freed_bytes, freed_bytes + more))),
            clock.eq(Mux(self.sent, 0, Mux(clock == 0xFFFF, clock, clock + 1))),
        ]
        due = ((freed_bytes != 0) & (freed_bytes >= self.cf_bytes)) | ((self.cf_period != 0) & (clock >= self.cf_period))
        with m.If(self.sent):
            m.d.sync += self.want.eq(0)
        with m.Elif(due):
            m.d.sync += self.want.eq(1)
        return m
