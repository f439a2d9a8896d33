"""The record parser's first stage: each received word's meaning as a header, a clock ahead."""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .burst import record_words
from .layout import (
    Kind,
    read_data_header_layout,
    record_stream,
    request_header_layout,
    sized_word_layout,
    write_resp_layout,
)

__all__ = ["HeaderSizes"]


class HeaderSizes(wiring.Component):
    """Registers each record word with what it would mean as a header word [README §2]: the
    record's body words (after its header and extension), a WRITE's data words, and whether the
    kind is unknown, a reserved field is set (``malformed``) or the record runs past its frame
    (``truncated``). :class:`~rtl.ethx.parse.RecordParse` uses the figures of the words that are
    headers, so its decisions start from flops.

    Latency: one clock. Throughput: one word per clock; ``i.ready`` is ``o.ready`` or an empty
    register.

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
        word = self.i.p.data
        rq = request_header_layout(word)
        rd = read_data_header_layout(word)
        wr = write_resp_layout(word)
        kind = Signal(Kind)
        m.d.comb += kind.eq(rq.kind)
        need, body, data_words = Signal(12), Signal(12), Signal(12)
        malformed = Signal()
        m.d.comb += data_words.eq(record_words(rq.len, rq.size))
        strobe_words = Mux(rq.strb, (data_words + 7) >> 3, 0)
        with m.Switch(kind):
            with m.Case(Kind.READ, Kind.WRITE):
                m.d.comb += [
                    malformed.eq(rq.zero | (rq.burst == 3) | ((kind == Kind.READ) & rq.strb)),
                    body.eq(Mux(kind == Kind.WRITE, data_words + strobe_words, 0)),
                    need.eq(1 + rq.ext + body)]
            with m.Case(Kind.READ_DATA):
                m.d.comb += [malformed.eq((rd.zero != 0) | (rd.burst == 3)),
                             body.eq(Mux(rd.nodata, 0, record_words(rd.count, rd.size))),
                             need.eq(1 + body)]
            with m.Case(Kind.WRITE_RESP):
                m.d.comb += [malformed.eq((wr.zero0 != 0) | (wr.zero != 0)), need.eq(1)]
        unknown = rq.kind > Kind.WRITE_RESP.value
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [
                self.o.valid.eq(self.i.valid), self.o.p.word.eq(self.i.p),
                self.o.p.body.eq(body), self.o.p.data_words.eq(data_words),
                self.o.p.unknown.eq(unknown), self.o.p.malformed.eq(malformed & ~unknown),
                self.o.p.truncated.eq(~unknown & ~malformed & (need > self.i.p.left)),
            ]
        return m
