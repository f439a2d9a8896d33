# SPDX-License-Identifier: BSD-2-Clause
"""Receive frame buffer reader: the record words of each checked frame, one per clock."""

from amaranth import Module, Signal
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from ..config import ConfiguredComponent
from ..model.ethx.bridge import HEADER_BYTES, WORD
from .config import EthxConfig
from .layout import NODE_BITS, VC_BITS, record_stream

__all__ = ["FrameReader", "stored_layout"]

_HEADER_WORDS = HEADER_BYTES // WORD


def stored_layout(config, rows):
    """A frame in the receive buffer: the ``rows`` it takes from the reader's row on, its
    ``words`` record words (after the two header words), its source and VC, and ``drop``."""
    return data.StructLayout({
        "rows": range(rows + 1),
        "words": range(config.record_words + 1),
        "node": NODE_BITS,
        "vc": VC_BITS,
        "drop": 1,
    })


class FrameReader(ConfiguredComponent):
    """Reads each stored frame's record words out of the receive buffer, in frame order.

    A frame marked ``drop`` only frees its rows. Throughput: one word per clock while a frame
    lasts, one clock between frames. A frame's rows are freed (:attr:`read_row` moves past
    them) when its last word has been read from the buffer.

    Members
    -------
    frame : ``In(stream.Signature(stored_layout(config, rows)))``
        The next stored frame.
    o : ``Out(record_stream())``
        Its record words with ``node`` (the source), ``vc`` and ``left`` (words to the frame's
        end, this one included); ``last`` on the final word.
    read_row : ``Out(range(2 * rows))``
        The first row still in use, with a wrap bit.
    """

    config_class = EthxConfig

    def __init__(self, config, port, rows):
        self._port, self._rows = port, rows
        super().__init__(config, lambda c: {
            "frame": In(stream.Signature(stored_layout(c, rows))),
            "o": Out(record_stream()),
            "read_row": Out(range(2 * rows)),
        })

    def elaborate(self, platform):
        cfg, port, o = self.config, self._port, self.o
        m = Module()
        lanes = cfg.lanes.bit_length() - 1
        word = Signal(range(cfg.record_words + _HEADER_WORDS + 1))   # next word of the frame
        end = Signal.like(word)                                      # one past its last
        rows = Signal.like(self.frame.p.rows)
        lane = Signal(range(cfg.lanes))
        busy = Signal()
        fetch = ~o.valid | o.ready
        at = self.read_row + (word >> lanes)
        m.d.comb += [port.en.eq(fetch), port.addr.eq(at[:len(port.addr)]),
                     o.p.data.eq(port.data[lane] if cfg.lanes > 1 else port.data[0])]
        with m.If(fetch):
            m.d.sync += o.valid.eq(busy & (word != end))
            with m.If(busy & (word != end)):
                m.d.sync += [word.eq(word + 1), o.p.last.eq(word + 1 == end),
                             o.p.left.eq(end - word)]
                if cfg.lanes > 1:
                    m.d.sync += lane.eq(word[:lanes])
            with m.Elif(busy):
                m.d.sync += [busy.eq(0), self.read_row.eq(self.read_row + rows)]
            with m.Else():
                m.d.comb += self.frame.ready.eq(1)
                with m.If(self.frame.valid):
                    f = self.frame.p
                    m.d.sync += [busy.eq(1), word.eq(_HEADER_WORDS), rows.eq(f.rows),
                                 end.eq(_HEADER_WORDS + f.words),
                                 o.p.node.eq(f.node), o.p.vc.eq(f.vc)]
                    with m.If(f.drop):
                        m.d.sync += end.eq(_HEADER_WORDS)
        return m
