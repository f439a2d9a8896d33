# SPDX-License-Identifier: BSD-2-Clause
"""The record parser's first stages: each received word's meaning as a header, two clocks
ahead."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..skid import register_stage
from .burst import record_words, strobe_words
from .layout import (
    LEFT_BITS,
    Kind,
    read_data_header_layout,
    record_stream,
    record_word_layout,
    request_header_layout,
    sized_word_layout,
    write_resp_layout,
)

__all__ = ["HeaderSizes"]

#: A word after the first stage: the sums that follow the header's fields directly.
_partial_layout = data.StructLayout({
    "word": record_word_layout,
    "data_words": 13,           # a WRITE's data words
    "strobe_words": 13,         # ... its strobe words, if it carries them (else 0)
    "read_words": 13,           # a READ_DATA's data words (0 without data)
    "room": LEFT_BITS,          # words of the frame after the header and extension
    "short": 1,                 # ... fewer than none: the extension runs past the frame
    "kind": Kind,
    "unknown": 1, "malformed": 1,
})


class HeaderSizes(wiring.Component):
    """Registers each record word with what it would mean as a header word [README §2]: the
    record's body words (after its header and extension), a WRITE's data words, and whether the kind
    is unknown, a reserved field is set (``malformed``) or the record runs past its frame
    (``truncated``). :class:`~scaleup_ip.ethx.parse.RecordParse` uses the figures of the words that
    are headers, so its decisions start from flops.

    Two stages, each a register: the first works out the sums that follow the fields (data
    words, strobe words, the frame's room after the header), the second adds and compares
    them, so that no path holds more than two carry chains.

    Latency: two clocks. Throughput: one word per clock; a stage takes a word when it is
    empty or the one after it takes its word.

    Members
    -------
    i : ``In(record_stream())``
    o : ``Out(stream.Signature(sized_word_layout))``
    """

    def __init__(self):
        super().__init__({
            "i": In(record_stream()),
            "o": Out(stream.Signature(sized_word_layout)),
        })

    def elaborate(self, platform):
        m = Module()
        mid = stream.Signature(_partial_layout).create(path=("mid",))
        self._first(m, mid)
        self._second(m, mid)
        return m

    def _first(self, m, mid):
        i, p = self.i, mid.p
        word = i.p.data
        rq = request_header_layout(word)
        rd = read_data_header_layout(word)
        wr = write_resp_layout(word)
        kind = rq.kind
        request = (kind == Kind.READ) | (kind == Kind.WRITE)
        malformed = Signal()
        with m.Switch(kind):
            with m.Case(Kind.READ, Kind.WRITE):
                m.d.comb += malformed.eq(rq.zero | (rq.burst == 3) | ((kind == Kind.READ) & rq.strb))
            with m.Case(Kind.READ_DATA):
                m.d.comb += malformed.eq((rd.zero != 0) | (rd.burst == 3))
            with m.Case(Kind.WRITE_RESP):
                m.d.comb += malformed.eq((wr.zero0 != 0) | (wr.zero != 0))
        unknown = kind > Kind.WRITE_RESP.value
        room = Signal(LEFT_BITS + 1)
        m.d.comb += room.eq(i.p.left - 1 - (rq.ext & request))
        with m.If(register_stage(m, i, mid)):
            m.d.sync += [
                p.word.eq(i.p), p.kind.eq(kind),
                p.data_words.eq(record_words(rq.len, rq.size)),
                p.strobe_words.eq(Mux(rq.strb, strobe_words(rq.len, rq.size), 0)),
                p.read_words.eq(Mux(rd.nodata, 0, record_words(rd.count, rd.size))),
                p.room.eq(room[:LEFT_BITS]), p.short.eq(room[LEFT_BITS]),
                p.unknown.eq(unknown), p.malformed.eq(malformed & ~unknown),
            ]

    def _second(self, m, mid):
        p, o = mid.p, self.o
        body = Signal(13)
        with m.Switch(p.kind):
            with m.Case(Kind.WRITE):
                m.d.comb += body.eq(p.data_words + p.strobe_words)
            with m.Case(Kind.READ_DATA):
                m.d.comb += body.eq(p.read_words)
        good = ~p.unknown & ~p.malformed
        with m.If(register_stage(m, mid, o)):
            m.d.sync += [
                o.p.word.eq(p.word), o.p.body.eq(body),
                o.p.data_words.eq(p.data_words), o.p.unknown.eq(p.unknown),
                o.p.malformed.eq(p.malformed),
                o.p.truncated.eq(good & (p.short | (body > p.room))),
            ]
