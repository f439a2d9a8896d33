# SPDX-License-Identifier: BSD-2-Clause
"""Serving side, writes: W beats built from a write record's words, and the WRITE_RESPs."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ...model.ethx.bridge import Kind
from ..burst import beat_words, container_strobes, first_lane, next_address
from ..config import EthxConfig
from ..layout import NODE_BITS, VC_BITS, WORD_BITS, Resp, record_stream, write_resp_layout

__all__ = ["CompWrite", "write_job_layout", "write_answer_layout"]


def write_job_layout(config):
    """A write the memory is to do, once all its words are buffered."""
    return data.StructLayout({"addr": 12, "len": 8, "size": 3, "burst": 2, "strb": 1})


#: Who a write's response goes to, in order, and whether it was refused.
write_answer_layout = data.StructLayout({
    "id": 8, "node": NODE_BITS, "vc": VC_BITS, "refuse": 1,
})


class CompWrite(ConfiguredComponent):
    """Builds each accepted write's W beats from its buffered data and strobe words and answers
    every write, in order, with a one-word WRITE_RESP record.

    A beat's words go to the bus lanes that hold its container [README §2.1]; its strobes are
    the record's (8 bits a word) on the container's bytes only [AXI4 A3.4.3], or, elided, the
    containers'. Throughput: one word per clock
    (a beat of ``n`` words takes ``n`` clocks). A refused write is answered DECERR without
    memory; the others with the memory's BRESP, in the order of ``answer``.

    Members
    -------
    job : ``In(stream.Signature(write_job_layout(config)))``
        An accepted write whose words are all in ``data`` and ``strobes``.
    data, strobes : ``In(stream.Signature(64))``
        Data words; strobe words (only of writes with ``strb``).
    w : the W channel; b : the B channel (raw AXI4 signals, from :class:`Completer`).
    answer : ``In(stream.Signature(write_answer_layout))``
        Every write, accepted or refused, in order.
    rsp : ``Out(record_stream())``
        WRITE_RESP records.
    errors : ``Out(1)``
        A BRESP other than OKAY went out (one clock).
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "job": In(stream.Signature(write_job_layout(c))),
            "data": In(stream.Signature(WORD_BITS)),
            "strobes": In(stream.Signature(WORD_BITS)),
            "wdata": Out(c.data_width), "wstrb": Out(c.data_width // 8), "wlast": Out(1),
            "wvalid": Out(1), "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "answer": In(stream.Signature(write_answer_layout)),
            "rsp": Out(record_stream()),
            "errors": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        self._beats(m)
        self._answers(m)
        return m

    def _beats(self, m):
        cfg = self.config
        lanes = cfg.bus_words
        job = Signal(write_job_layout(cfg))
        busy = Signal()
        addr = Signal(12)
        beats = Signal(9)                   # beats left, this one included
        word = Signal(4)                    # the next word of this beat
        strobe_word = Signal(WORD_BITS)     # the strobe word being used
        strobe_byte = Signal(3)             # the next strobe byte in it
        beat = Signal(data.ArrayLayout(WORD_BITS, lanes))
        strb = Signal(data.ArrayLayout(8, lanes))
        full = Signal()                     # the beat is built and offered on W

        n = beat_words(job.size)
        lane = (first_lane(addr, job.size, lanes) + word)[:max(1, (lanes - 1).bit_length())]
        container = container_strobes(addr, job.size)
        need_strobe = job.strb & (strobe_byte == 0)
        have = self.data.valid & (~need_strobe | self.strobes.valid)
        take = busy & ~full & have
        m.d.comb += [self.data.ready.eq(take), self.strobes.ready.eq(take & need_strobe)]
        this_strobe = Mux(need_strobe, self.strobes.payload, strobe_word).word_select(strobe_byte, 8)
        with m.If(take):
            m.d.sync += [beat[lane].eq(self.data.payload),
                         strb[lane].eq(Mux(job.strb, this_strobe & container, container)),
                         word.eq(word + 1), strobe_byte.eq(strobe_byte + 1)]
            with m.If(need_strobe):
                m.d.sync += strobe_word.eq(self.strobes.payload)
            with m.If(word + 1 == n):
                m.d.sync += full.eq(1)
        m.d.comb += [self.wdata.eq(beat), self.wstrb.eq(strb), self.wvalid.eq(full),
                     self.wlast.eq(beats == 1)]
        with m.If(full & self.wready):
            m.d.sync += [full.eq(0), word.eq(0), strb.eq(0), beats.eq(beats - 1),
                         addr.eq(next_address(addr, job.size, job.len, job.burst))]
            with m.If(beats == 1):
                m.d.sync += busy.eq(0)
        m.d.comb += self.job.ready.eq(~busy)
        with m.If(self.job.valid & ~busy):
            m.d.sync += [job.eq(self.job.payload), busy.eq(1), addr.eq(self.job.payload.addr),
                         beats.eq(self.job.payload.len + 1), word.eq(0), strobe_byte.eq(0),
                         strb.eq(0)]

    def _answers(self, m):
        a, rsp = self.answer, self.rsp
        word = Signal(write_resp_layout)
        resp = Mux(a.payload.refuse, Resp.DECERR, self.bresp)
        ready = a.valid & (a.payload.refuse | self.bvalid)
        m.d.comb += [word.kind.eq(Kind.WRITE_RESP), word.resp.eq(resp), word.id.eq(a.payload.id),
                     rsp.payload.data.eq(word), rsp.payload.last.eq(1), rsp.payload.left.eq(1),
                     rsp.payload.node.eq(a.payload.node), rsp.payload.vc.eq(a.payload.vc),
                     rsp.valid.eq(ready), a.ready.eq(ready & rsp.ready),
                     self.bready.eq(a.valid & ~a.payload.refuse & rsp.ready),
                     self.errors.eq(ready & rsp.ready & ~a.payload.refuse & (self.bresp != 0))]
