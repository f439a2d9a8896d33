# SPDX-License-Identifier: BSD-2-Clause
"""Transaction aggregation: records from both sides of the bridge packed into frames."""

from amaranth import Module, Mux, Signal
from amaranth.lib.wiring import In, Out, connect, flipped

from ..config import ConfiguredComponent
from ..counters import count_events
from ..skid import SkidBuffer
from .config import EthxConfig
from .layout import AggregateCount, aggregate_counts, record_stream, record_word_layout
from .merge import RecordMerge

__all__ = ["Aggregator"]


class Aggregator(ConfiguredComponent):
    """Packs whole records, requests (``req``) and responses (``rsp``) taken in turns, into
    frames for :class:`~scaleup_ip.ethx.framer.EthxFramer` [README §4].

    One frame is open at a time, for one destination and VC. It is closed, at a record
    boundary, when the next record is for another destination or VC or would not fit the MTU
    (counted CHANGE and FULL), when its records reach ``fill`` bytes (FILL), or when
    ``timeout`` clocks have passed since it opened, no record is waiting and the framer is
    not ``busy`` (TIMEOUT): while an earlier frame is still waiting or going out, closing
    would not send this one sooner, so it keeps filling [ours]. The
    last word taken is held back one clock so that it can be marked as the frame's last.
    Records pass a :class:`~scaleup_ip.skid.SkidBuffer` after the merge (a clock). Throughput: one
    word per clock; a frame's close costs one clock. A record whose ``left``
    (its words, on its first word) is more than a frame holds is still passed on whole; the
    framer cuts it.

    Members
    -------
    req, rsp : ``In(record_stream())``
        Records; ``node`` and ``vc`` name the destination, ``left`` on a first word its words.
    o : ``Out(record_stream())``
        Frames' records, ``last`` on each frame's final word.
    busy : ``In(1)``
        The framer's :attr:`~scaleup_ip.ethx.framer.EthxFramer.busy`: the timeout waits for it to
        fall.
    counts : ``Out(aggregate_counts)``
        :class:`~scaleup_ip.ethx.layout.AggregateCount` counters.
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, {
            "req": In(record_stream()),
            "rsp": In(record_stream()),
            "o": Out(record_stream()),
            "busy": In(1),
            "counts": Out(aggregate_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        m.submodules.merge = merge = RecordMerge(cfg, 2)
        connect(m, flipped(self.req), merge.i0)     # in turns: neither side starves the other
        connect(m, flipped(self.rsp), merge.i1)
        m.submodules.merged = merged = SkidBuffer(record_word_layout)
        connect(m, merge.o, merged.i)
        i, o = merged.o, self.o
        cap = cfg.record_words
        held = Signal(record_word_layout)
        held_valid = Signal()
        is_open = Signal()
        between = Signal(init=1)            # the last word taken ended a record
        used = Signal(range(cap + 1 + 2048))
        room = Signal(range(cap + 1))       # cap - used, kept so that ``fits`` is one compare
        timer = Signal(range(cfg.timeout + 2))          # (never zero-width)
        node, vc = Signal.like(i.p.node), Signal.like(i.p.vc)

        same = (i.p.node == node) & (i.p.vc == vc)
        fits = i.p.left <= room
        filled = used >= -(-cfg.fill // 8)
        expired = timer == cfg.timeout
        change = i.valid & ~same
        full = i.valid & same & ~fits
        idle = expired & ~i.valid & ~self.busy
        close = is_open & held_valid & between & (change | full | filled | idle)
        m.d.comb += o.p.eq(held)
        with m.If(close):
            m.d.comb += [o.valid.eq(1), o.p.last.eq(1)]
            with m.If(o.ready):
                m.d.sync += [held_valid.eq(0), is_open.eq(0)]
        with m.Elif(i.valid):
            m.d.comb += [o.valid.eq(held_valid), o.p.last.eq(0),
                         i.ready.eq(~held_valid | o.ready)]
        take = i.valid & i.ready
        with m.If(take):
            m.d.sync += [held.eq(i.p), held_valid.eq(1), between.eq(i.p.last)]
            with m.If(is_open):
                m.d.sync += [used.eq(used + 1), room.eq(room - (room != 0))]
            with m.Else():
                m.d.sync += [is_open.eq(1), node.eq(i.p.node), vc.eq(i.p.vc), used.eq(1),
                             room.eq(cap - 1), timer.eq(0)]
        with m.If(is_open & ~expired & ~(close & o.ready)):
            m.d.sync += timer.eq(timer + 1)
        sent = close & o.ready
        count_events(m, self.counts, {
            AggregateCount.FRAMES: sent,
            AggregateCount.CHANGE: sent & change,
            AggregateCount.FULL: sent & full,
            AggregateCount.FILL: sent & ~change & ~full & filled,
            AggregateCount.TIMEOUT: sent & ~change & ~full & ~filled,
            AggregateCount.RECORDS: take & i.p.last,
        })
        return m
