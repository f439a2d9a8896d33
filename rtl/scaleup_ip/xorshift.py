# SPDX-License-Identifier: BSD-2-Clause
"""Random draws for the error-injecting links (``rtl/scaleup_ip/dl/err_link.py``,
``rtl/scaleup_ip/ethx/link/channel.py``): the hardware of :class:`scaleup_ip.model.dl.err_link.Generator`."""

from amaranth import Cat, Module, Mux, Shape, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .model.dl import err_link as model

__all__ = ["Xorshift64", "draws_layout"]

#: One accepted beat's random fields (:data:`scaleup_ip.model.dl.err_link.DRAW_FIELDS`).
draws_layout = data.StructLayout(dict(model.DRAW_FIELDS))


class Xorshift64(wiring.Component):
    """Random draws: two xorshift64 steps at each ``advance``; ``load`` restarts from ``seed``
    (:class:`scaleup_ip.model.dl.err_link.Generator`). The state has no reset of its own: the owner
    drives ``load`` from it. It starts (in a simulation, or a bitstream) as if seed 0 had been
    loaded, so that it works in a reset-less domain too.

    The two steps are one GF(2) matrix, derived from the model: each bit of the draws is the
    XOR of at most 12 bits of the state, two LUT levels. The seed has its own copy of the
    matrix, so that neither its zero test nor ``load`` comes before the XORs.
    """

    seed: In(64)
    load: In(1)
    advance: In(1)
    draws: Out(draws_layout)

    def elaborate(self, platform):
        m = Module()
        zero_seed = model.draw_words(model.nonzero_seed(0))
        words = Signal(Shape.cast(draws_layout).width, reset_less=True, init=zero_seed)
        seeded = Mux(self.seed == 0, zero_seed, _draw_words(self.seed))
        with m.If(self.load | self.advance):
            m.d.sync += words.eq(Mux(self.load, seeded, _draw_words(words[64:])))
        m.d.comb += self.draws.eq(words)
        return m


#: Rows of the GF(2) matrix of :func:`scaleup_ip.model.dl.err_link.draw_words` (which is linear):
#: row ``r`` masks the state bits whose XOR is bit ``r`` of the draws.
_DRAW_ROWS = [sum((model.draw_words(1 << i) >> r & 1) << i for i in range(64))
              for r in range(Shape.cast(draws_layout).width)]


def _draw_words(state):
    """The draws that follow the 64-bit ``state``: :func:`scaleup_ip.model.dl.err_link.draw_words`."""
    return Cat(*(Cat(state[i] for i in range(64) if row >> i & 1).xor() for row in _DRAW_ROWS))
