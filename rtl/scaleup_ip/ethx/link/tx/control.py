# SPDX-License-Identifier: BSD-2-Clause
"""The control sender: ACK, NACK, INIT, INIT_ECHO and CF_UPDATE frames, built when asked for."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ....crc import Crc32, CrcConfig
from ..config import CONTROL_BYTES, FCS_BYTES, LinkConfig
from ..layout import (
    COUNT_BITS,
    Ctl,
    control_header,
    control_layout,
    ctl_requests_layout,
    eth_stream,
    tagged,
)

__all__ = ["CtlTx"]


class CtlTx(ConfiguredComponent):
    """Link-control frames (README §1) as they are asked for, in the order INIT_ECHO, INIT,
    NACK, ACK, CF_UPDATE.

    A frame asked for (``want``) is taken when the sender is idle: ``sent`` pulses for it, and
    the frame is built from ``last_good``, ``echo_seq``, ``init_seq`` or ``r_cf`` as they are
    in that clock. Its 64 bytes (72 with ``vlan``: tagged with ``tci``, README §1) go through
    the CRC engine first; then the frame and its FCS leave on ``o`` without a gap, so that a
    frame never waits on the wire for its FCS.

    Latency: ``64 / eth_bytes`` clocks and the CRC engine's latency from taking a request to
    the frame's first beat. Throughput: one frame per ``2 · 68 / eth_bytes`` clocks or so.

    Members
    -------
    want : ``In(ctl_requests_layout)``; sent : ``Out(ctl_requests_layout)``
    last_good, echo_seq, init_seq : ``In(20)``; r_cf : ``In(ArrayLayout(20, vcs))``
    node : ``In(16)``
        This node's ID: the SA.
    tci : ``In(16)``
        With ``vlan``: the TCI of the frames' tags.
    init_held : ``Out(1)``
        An INIT taken and not yet gone: its FCS is being computed or it waits for the wire.
    o : ``Out(eth_stream(eth_width))``
        One 68-byte frame (76 with ``vlan``) at a time; ``user`` 0.
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "want": In(ctl_requests_layout), "sent": Out(ctl_requests_layout),
            "last_good": In(COUNT_BITS), "echo_seq": In(COUNT_BITS), "init_seq": In(COUNT_BITS),
            "r_cf": In(data.ArrayLayout(COUNT_BITS, c.vcs)),
            "node": In(16), "tci": In(16), "init_held": Out(1),
            "o": Out(eth_stream(c.eth_width)),
        })

    def elaborate(self, platform):
        cfg, want, sent = self.config, self.want, self.sent
        m = Module()
        frame = Signal(control_layout)
        fcs = Signal(32)
        built, ready = Signal(), Signal()       # a frame is in ``frame``; its FCS is known
        idle = ~built
        # One request at a time, by priority.
        kinds = ((want.echo, sent.echo, Ctl.INIT_ECHO, self.echo_seq),
                 (want.init, sent.init, Ctl.INIT, self.init_seq),
                 (want.nack, sent.nack, Ctl.NACK, self.last_good),
                 (want.ack, sent.ack, Ctl.ACK, self.last_good),
                 (want.cf, sent.cf, Ctl.CF_UPDATE, Const(0, COUNT_BITS)))
        chosen = Signal(control_layout)
        head = Signal(control_layout)           # DA, SA, EtherType: outside the choice below
        m.d.comb += control_header(head, self.node)
        first = True
        for asked, take, kind, seq in kinds:
            with (m.If if first else m.Elif)(asked):
                m.d.comb += [take.eq(idle), chosen.kind.eq(kind), chosen.word.seq.eq(seq)]
                if kind == Ctl.CF_UPDATE:
                    m.d.comb += [chosen.counts[v].eq(self.r_cf[v]) for v in range(cfg.vcs)]
            first = False
        tci = Signal(16)                        # the TCI as the frame was built
        with m.If(idle & want.as_value().any()):
            m.d.sync += [frame.eq(chosen.as_value() | head.as_value()), built.eq(1),
                         tci.eq(self.tci)]
        m.d.comb += self.init_held.eq(built & (frame.kind == Ctl.INIT))

        length = CONTROL_BYTES + cfg.tag_bytes
        wire = tagged(frame.as_value(), tci) if cfg.vlan else frame.as_value()
        beats = length // cfg.eth_bytes
        out_beats = -(-(length + FCS_BYTES) // cfg.eth_bytes)
        m.submodules.crc = crc = Crc32(CrcConfig(data_width=cfg.eth_width, pipeline=1))
        fed = Signal(range(beats + 1))
        ones = (1 << cfg.eth_bytes) - 1
        m.d.comb += [crc.i.valid.eq(built & (fed < beats)),
                     crc.i.payload.data.eq(wire.word_select(fed, cfg.eth_width)),
                     crc.i.payload.keep.eq(ones), crc.i.payload.last.eq(fed == beats - 1),
                     crc.o.ready.eq(1)]
        with m.If(crc.i.valid & crc.i.ready):
            m.d.sync += fed.eq(fed + 1)
        with m.If(crc.o.valid):
            m.d.sync += [fcs.eq(crc.o.payload.crc), ready.eq(1)]

        o, k = self.o, Signal(range(out_beats))
        whole = Cat(wire, fcs, Const(0, out_beats * cfg.eth_width - 8 * (length + FCS_BYTES)))
        m.d.comb += [o.valid.eq(ready), o.p.data.eq(whole.word_select(k, cfg.eth_width)),
                     o.p.last.eq(k == out_beats - 1), o.p.user.eq(0),
                     o.p.keep.eq(Mux(o.p.last, (1 << ((length + FCS_BYTES - 1)
                                                      % cfg.eth_bytes + 1)) - 1, ones))]
        with m.If(o.valid & o.ready):
            m.d.sync += k.eq(k + 1)
            with m.If(o.p.last):
                m.d.sync += [k.eq(0), ready.eq(0), built.eq(0), fed.eq(0)]
        return m
