# SPDX-License-Identifier: BSD-2-Clause
"""Received DL flits from the wire order of Figure 6-4 back to the logical byte order
[UALink 1.0 §6.3.1]."""

from amaranth import Cat, Module, Signal
from amaranth.lib import data
from amaranth.lib.wiring import Component, In, Out

from .layout import (
    BEAT_BITS,
    BEATS_PER_FLIT,
    SEGMENTS,
    SH_OFFSET,
    WIRE_POSITION,
    beat_sources,
    checked_beat_layout,
    checked_stream,
)

__all__ = ["DlFromWire"]

#: Bytes per beat.
_BYTES = BEAT_BITS // 8


class DlFromWire(Component):
    """Reorders each checked DL flit's bytes from the wire order of Figure 6-4
    (:data:`~scaleup_ip.dl.layout.WIRE_ROWS`) back to the logical layout, keeping each beat's
    verdict and headers.

    Logical beat ``k`` takes bytes of wire beats ``k`` and ``k + 1``; its segment headers, which
    the wire spreads over beats 1, 3, 5, 7 and 9, come from ``headers`` (the CRC stage gathers
    them). So each beat waits for the next, except the last, which leaves on its own.

    Latency: one clock per beat (the last beat's, one clock after it arrives). Throughput: one
    beat per clock. ``i.ready`` falls only when ``o`` stalls.

    Members
    -------
    i : In(checked_stream())
        Checked DL flits, wire order.
    o : Out(checked_stream())
        The same, logical order.
    """

    def __init__(self):
        super().__init__({"i": In(checked_stream()), "o": Out(checked_stream())})

    def elaborate(self, platform):
        m = Module()
        held = Signal(checked_beat_layout)          # the wire beat waiting for the next
        full = Signal()
        beat = Signal(range(BEATS_PER_FLIT))        # ``held``'s beat in its flit
        room = ~self.o.valid | self.o.ready
        send = full & room & (held.last | self.i.valid)
        # Ready when nothing is held or ``o`` takes what is (the beat in, if any, replaces it):
        # ``i.valid`` is not on the way.
        m.d.comb += self.i.ready.eq(~full | room)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [held.eq(self.i.p), full.eq(1)]
            with m.If(full):
                m.d.sync += beat.eq(beat + 1)
                with m.If(held.last):
                    m.d.sync += beat.eq(0)
        with m.Elif(send):
            m.d.sync += [full.eq(0), beat.eq(0)]
        with m.If(send):
            m.d.sync += [self.o.valid.eq(1), self.o.p.eq(held)]
            with m.Switch(beat):
                for k in range(BEATS_PER_FLIT):
                    with m.Case(k):
                        m.d.sync += self.o.p.data.eq(_logical_beat(k, held, self.i.p.data))
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        return m


def _logical_beat(k, held, following):
    """Logical beat ``k`` from wire beat ``k`` (``held``), ``k + 1`` (``following``) and the
    flit's segment headers."""
    views = {k: data.ArrayLayout(8, _BYTES)(held.data),
             k + 1: data.ArrayLayout(8, _BYTES)(following)}
    out = []
    for n, (src, byte) in enumerate(beat_sources(WIRE_POSITION, k)):
        logical = k * _BYTES + n
        if SH_OFFSET <= logical < SH_OFFSET + SEGMENTS:
            out.append(held.headers[logical - SH_OFFSET].as_value())
        elif src in views:
            out.append(views[src][byte])
        else:
            raise ValueError(f"logical beat {k} byte {n}: wire byte out of reach")
    return Cat(out)
