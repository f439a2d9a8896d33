# SPDX-License-Identifier: BSD-2-Clause
"""DL flits from the logical byte order to the wire order of Figure 6-4 [UALink 1.0 §6.3.1]."""

from amaranth import Cat, Module, Signal
from amaranth.lib import data
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import Component, In, Out

from .layout import (
    BEAT_BITS,
    BEATS_PER_FLIT,
    SEGMENTS,
    SH_OFFSET,
    WIRE_ORDER,
    beat_sources,
    last_beat_layout,
    phy_stream,
)

__all__ = ["DlToWire"]

#: Beats held: a whole flit (its segment headers come in its last beat) and the next one's
#: first beats, so that flits pass back to back.
_DEPTH = 16
#: The segment headers that go out before the last beat: SH0 .. SH3, one byte each.
_EARLY = SEGMENTS - 1
#: Bytes per beat.
_BYTES = BEAT_BITS // 8


class DlToWire(Component):
    """Reorders each DL flit's bytes from the logical layout (:data:`~scaleup_ip.dl.layout.FH_OFFSET`
    ...) to the wire order of Figure 6-4 (:data:`~scaleup_ip.dl.layout.WIRE_ROWS`).

    Wire beat ``k`` carries bytes of logical beats ``k`` and ``k - 1`` and, for odd ``k`` below
    9, one segment header, which the logical layout has in the last beat: so a flit's first
    beat leaves only once its last beat is in. The CRC bytes are the last four in both orders.

    Latency: a flit's first beat is on ``o`` the clock after its last beat was taken (11
    clocks after its first, at full rate). Throughput: one beat per clock; flits that arrive
    back to back leave back to back. ``i.ready`` (a register) falls only when ``o`` stalls;
    nothing is lost.

    Members
    -------
    i : In(phy_stream())
        DL flits, logical order.
    o : Out(phy_stream())
        The same flits, wire order.
    """

    def __init__(self):
        super().__init__({"i": In(phy_stream()), "o": Out(phy_stream())})

    def elaborate(self, platform):
        m = Module()
        m.submodules.beats = beats = SyncFIFO(width=BEAT_BITS, depth=_DEPTH)
        m.submodules.heads = heads = SyncFIFO(width=_EARLY * 8, depth=2)
        take = self.i.valid & self.i.ready
        closing = last_beat_layout(self.i.p.data)
        # ``i.ready`` is a register: room for a beat when at most _DEPTH - 2 were held a clock
        # ago (one more may have come since). The headers' queue never fills before the
        # beats': a third flit's last beat would find two whole flits held, over _DEPTH beats.
        assert 2 * BEATS_PER_FLIT + 1 > _DEPTH
        room = Signal()
        m.d.sync += room.eq(beats.level < _DEPTH - 1)
        m.d.comb += [
            self.i.ready.eq(room),
            beats.w_en.eq(take), beats.w_data.eq(self.i.p.data),
            heads.w_en.eq(take & self.i.p.last),
            heads.w_data.eq(Cat(closing.headers[j] for j in range(_EARLY))),
        ]
        # Out: the head flit once it is whole (its segment headers queued), a beat per clock.
        beat = Signal(range(BEATS_PER_FLIT))
        previous = Signal(BEAT_BITS)
        go = heads.r_rdy & beats.r_rdy & (~self.o.valid | self.o.ready)
        last = beat == BEATS_PER_FLIT - 1
        m.d.comb += [beats.r_en.eq(go), heads.r_en.eq(go & last)]
        with m.If(go):
            m.d.sync += [self.o.valid.eq(1), self.o.p.last.eq(last), previous.eq(beats.r_data),
                         beat.eq(beat + 1)]
            with m.If(last):
                m.d.sync += beat.eq(0)
            sources = {"current": beats.r_data, "previous": previous, "heads": heads.r_data}
            with m.Switch(beat):
                for k in range(BEATS_PER_FLIT):
                    with m.Case(k):
                        m.d.sync += self.o.p.data.eq(_wire_beat(k, sources))
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        return m


def _wire_beat(k, sources):
    """Wire beat ``k`` from the logical beat ``k`` (``current``), ``k - 1`` (``previous``) and
    the early segment headers (``heads``)."""
    views = {name: data.ArrayLayout(8, len(value) // 8)(value) for name, value in sources.items()}
    out = []
    for n, (src, byte) in enumerate(beat_sources(WIRE_ORDER, k)):
        logical = WIRE_ORDER[k * _BYTES + n]
        if src == k:
            out.append(views["current"][byte])
        elif src == k - 1:
            out.append(views["previous"][byte])
        elif src == BEATS_PER_FLIT - 1 and SH_OFFSET <= logical < SH_OFFSET + _EARLY:
            out.append(views["heads"][logical - SH_OFFSET])
        else:
            raise ValueError(f"wire beat {k} byte {n}: logical byte {logical} out of reach")
    return Cat(out)
