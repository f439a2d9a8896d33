# SPDX-License-Identifier: BSD-2-Clause
"""Merge of record streams: whole records, taken in turn."""

from amaranth import Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from ..config import ConfiguredComponent
from .config import EthxConfig
from .layout import record_stream

__all__ = ["RecordMerge"]


class RecordMerge(ConfiguredComponent):
    """Passes whole records (``last`` ends one) from ``count`` inputs to one output, the inputs
    taking turns (round robin) at record boundaries, so none starves another. No added latency
    or bubble: a record's words go through in the clocks they are offered.

    Members
    -------
    i : a list of ``count`` ``In(record_stream())``
    o : ``Out(record_stream())``
    """

    config_class = EthxConfig

    def __init__(self, config, count):
        self._count = count
        super().__init__(config, {
            **{f"i{k}": In(record_stream()) for k in range(count)},
            "o": Out(record_stream()),
        })

    @property
    def i(self):
        return [getattr(self, f"i{k}") for k in range(self._count)]

    def elaborate(self, platform):
        m = Module()
        inputs, o = self.i, self.o
        owner = Signal(range(self._count))      # whose record is going through
        busy = Signal()
        turn = Signal(range(self._count))       # who goes first when idle
        chosen = Signal(range(self._count))
        # Idle: the first valid input from ``turn`` on.
        order = [[(t + d) % self._count for d in range(self._count)] for t in range(self._count)]
        with m.Switch(turn):
            for t in range(self._count):
                with m.Case(t):
                    for k in reversed(order[t]):
                        with m.If(inputs[k].valid):
                            m.d.comb += chosen.eq(k)
        current = Signal(range(self._count))
        m.d.comb += current.eq(chosen)
        with m.If(busy):
            m.d.comb += current.eq(owner)
        with m.Switch(current):
            for k, i in enumerate(inputs):
                with m.Case(k):
                    m.d.comb += [o.payload.eq(i.payload), o.valid.eq(i.valid),
                                 i.ready.eq(o.ready)]
        with m.If(o.valid & o.ready):
            m.d.sync += [busy.eq(~o.payload.last), owner.eq(current)]
            with m.If(o.payload.last):
                m.d.sync += turn.eq(Mux(current == self._count - 1, 0, current + 1))
        return m
