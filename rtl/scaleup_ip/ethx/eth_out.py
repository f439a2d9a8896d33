# SPDX-License-Identifier: BSD-2-Clause
"""Frame buffer reader: whole frames from a frame buffer out on the Ethernet stream."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from ..config import ConfiguredComponent
from .config import EthxConfig
from .layout import eth_stream

__all__ = ["EthOut", "frame_layout"]


def frame_layout(config):
    """A stored frame: ``words`` 8-byte words, then, with ``tail``, its 4-byte FCS word."""
    return data.StructLayout({"words": range(config.frame_words + 1), "tail": 1})


class EthOut(ConfiguredComponent):
    """Sends each stored frame, row after row from the buffer's read port, as Ethernet beats.

    Frames lie in consecutive rows from :attr:`read_row` on, each starting on a row, in the
    order of their ``frame`` descriptors; a descriptor is given only once its frame is whole.
    A frame goes out one beat per clock without a pause (rows of 8 bytes are cut into
    ``eth_width`` beats when the stream is narrower); one clock passes between frames.

    Members
    -------
    frame : ``In(stream.Signature(frame_layout(config)))``
        The next whole frame in the buffer.
    o : ``Out(eth_stream(eth_width))``
        Its beats; ``user`` is 0.
    read_row : ``Out(ceil_log2(rows) + 1)``
        The row that will be read next, with a wrap bit: rows from here to the writer's are
        in use.
    sending : ``Out(1)``
        A frame is going out (its beats are not all taken yet).
    """

    config_class = EthxConfig

    def __init__(self, config, port, rows):
        self._port, self._rows = port, rows
        super().__init__(config, lambda c: {
            "frame": In(stream.Signature(frame_layout(c))),
            "o": Out(eth_stream(c.eth_width)),
            "read_row": Out(range(2 * rows)),
            "sending": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        row, left = self._fetch(m)
        m.d.comb += self.sending.eq((left != 0) | row.valid | self.o.valid)
        if self.config.eth_bytes >= 8:
            o = self.o
            m.d.comb += [o.valid.eq(row.valid), row.ready.eq(o.ready), o.p.data.eq(row.p.data),
                         o.p.keep.eq(_mask(row.p.bytes, self.config.eth_bytes)),
                         o.p.last.eq(row.p.last)]
        else:
            self._split(m, row)
        return m

    def _fetch(self, m):
        """Rows of the frame in the buffer, with their byte count and ``last``; and the bytes
        of the frame not yet read."""
        cfg, port = self.config, self._port
        row_bytes = 8 * cfg.lanes
        row = stream.Signature(data.StructLayout({
            "data": port.data.shape().size, "bytes": range(row_bytes + 1), "last": 1})).create()
        left = Signal(range(8 * cfg.frame_words + 5))       # bytes of the frame not yet read
        fetch = ~row.valid | row.ready
        m.d.comb += [port.en.eq(fetch), port.addr.eq(self.read_row),
                     row.p.data.eq(port.data)]
        with m.If(fetch):
            m.d.sync += row.valid.eq(left != 0)
            with m.If(left != 0):
                m.d.sync += [row.p.bytes.eq(_min(left, row_bytes)),
                             row.p.last.eq(left <= row_bytes),
                             left.eq(_less(left, row_bytes)),
                             self.read_row.eq(self.read_row + 1)]
            with m.Else():
                m.d.comb += self.frame.ready.eq(1)
                with m.If(self.frame.valid):
                    m.d.sync += left.eq((self.frame.p.words << 3) + (self.frame.p.tail << 2))
        return row, left

    def _split(self, m, row):
        """Rows of 8 bytes cut into narrower beats."""
        step = self.config.eth_bytes
        o = self.o
        word = Signal(64)
        left = Signal(range(9))
        last = Signal()
        m.d.comb += [o.valid.eq(left != 0), o.p.data.eq(word[:8 * step]),
                     o.p.keep.eq(_mask(left, step)), o.p.last.eq(last & (left <= step))]
        m.d.comb += row.ready.eq((left == 0) | (o.ready & (left <= step)))
        with m.If(o.valid & o.ready):
            m.d.sync += [word.eq(word >> (8 * step)), left.eq(_less(left, step))]
        with m.If(row.valid & row.ready):
            m.d.sync += [word.eq(row.p.data), left.eq(row.p.bytes), last.eq(row.p.last)]


def _mask(count, width):
    """``width`` bits, the low ``count`` of them set."""
    return Cat(*[count > k for k in range(width)])


def _min(value, limit):
    return Mux(value < limit, value, limit)


def _less(value, step):
    """``max(value - step, 0)``."""
    return Mux(value > step, value - step, 0)
