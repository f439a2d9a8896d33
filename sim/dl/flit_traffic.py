# SPDX-License-Identifier: BSD-2-Clause
"""TL flit traffic in hardware, for long DL runs at simulator speed: a numbered source and a
checker that expects the same numbers in order."""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from scaleup_ip.tl import HALF_BITS, flit_stream

__all__ = ["FlitCheck", "FlitSource", "flit_data"]

#: Words of the 512-bit TL flit the number is spread over.
_WORDS = 2 * HALF_BITS // 32


def _word(k):
    """The constant word ``k`` of a flit is XORed with: distinct, irregular."""
    return (0x9E3779B9 * (k + 1)) & 0xFFFF_FFFF


def flit_data(number):
    """TL flit ``number`` (a 32-bit Amaranth value) as ``(data, msg)``: word ``k`` of the 512
    bits is ``number`` rotated left by ``k`` and XORed with a constant; the message bits are its
    low 2 bits. Every sector differs, so a flit taken from the wrong place or twice does not
    match. Wiring only, no arithmetic."""
    data = Cat(*((number.rotate_left(k) ^ _word(k)) for k in range(_WORDS)))
    return data, number[:2]


class FlitSource(wiring.Component):
    """TL flits numbered 0, 1, 2, ... (:func:`flit_data`), offered while ``enable``.

    Members
    -------
    o : Out(flit_stream())
    enable : In(1)
    sent : Out(32)
        Flits taken.
    """

    def __init__(self):
        super().__init__({"o": Out(flit_stream()), "enable": In(1), "sent": Out(32)})

    def elaborate(self, platform):
        m = Module()
        data, msg = flit_data(self.sent)
        m.d.comb += [
            self.o.valid.eq(self.enable),
            self.o.p.data.eq(data),
            self.o.p.msg.eq(msg),
        ]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.sent.eq(self.sent + 1)
        return m


class FlitCheck(wiring.Component):
    """Takes TL flits (always ready) and counts those equal to the next number expected
    (``good``) and those that are not (``bad``: lost, repeated, reordered or corrupted); after
    a bad flit it expects the number after the one received, so one fault counts once.

    Members
    -------
    i : In(flit_stream())
    good, bad : Out(32)
    """

    def __init__(self):
        super().__init__({"i": In(flit_stream()), "good": Out(32), "bad": Out(32)})

    def elaborate(self, platform):
        m = Module()
        expect = Signal(32)
        data, msg = flit_data(expect)
        got = Cat(self.i.p.data[0], self.i.p.data[1])
        number = got[:32]
        m.d.comb += self.i.ready.eq(1)
        with m.If(self.i.valid):
            with m.If((got == data) & (self.i.p.msg == msg)):
                m.d.sync += [self.good.eq(self.good + 1), expect.eq(expect + 1)]
            with m.Else():
                m.d.sync += [self.bad.eq(self.bad + 1), expect.eq(number + 1)]
        return m
