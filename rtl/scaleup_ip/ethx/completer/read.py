# SPDX-License-Identifier: BSD-2-Clause
"""Serving side, reads: R beats into READ_DATA records."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ...model.ethx.bridge import Kind
from ..burst import beat_words, first_lane, next_address, record_words
from ..config import EthxConfig
from ..layout import NODE_BITS, VC_BITS, WORD_BITS, Resp, read_data_header_layout, record_stream

__all__ = ["CompRead", "read_job_layout"]


#: A read, accepted or refused, in request order.
read_job_layout = data.StructLayout({
    "addr": 12, "len": 8, "size": 3, "burst": 2, "id": 8, "node": NODE_BITS, "vc": VC_BITS,
    "refuse": 1,
})

#: A READ_DATA record whose words are buffered (none with ``nodata``).
_chunk_layout = data.StructLayout({
    "head": read_data_header_layout, "node": NODE_BITS, "vc": VC_BITS,
})


class CompRead(ConfiguredComponent):
    """Turns each read's R beats into READ_DATA records [README §2.2], in request order.

    A beat's words are taken from the bus lanes that hold its container, one word per clock.
    A record ends at the burst's end, at ``read_piece`` data bytes, or where RRESP changes. A
    refused read is answered by one ``nodata`` DECERR record for the whole burst, without
    memory. The record's header goes out once its words are buffered; the next record's beats
    are taken meanwhile.

    Members
    -------
    job : ``In(stream.Signature(read_job_layout))``
        Every read, in order.
    rdata, rresp, rlast, rvalid, rready : the R channel (from :class:`Completer`).
    rsp : ``Out(record_stream())``
        READ_DATA records.
    errors : ``Out(1)``
        A beat with RRESP other than OKAY was taken (one clock).
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "job": In(stream.Signature(read_job_layout)),
            "rdata": In(c.data_width), "rresp": In(2), "rlast": In(1), "rvalid": In(1),
            "rready": Out(1),
            "rsp": Out(record_stream()),
            "errors": Out(1),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        m.submodules.words = words = SyncFIFOBuffered(width=WORD_BITS, depth=cfg.read_piece // 4)
        m.submodules.chunks = chunks = SyncFIFO(width=_chunk_layout.size, depth=4)
        self._collect(m, words, chunks)
        self._emit(m, words, chunks)
        return m

    def _collect(self, m, words, chunks):
        cfg = self.config
        piece_words = cfg.read_piece // 8
        job = Signal(read_job_layout)
        busy = Signal()
        addr = Signal(12)
        beats = Signal(9)               # beats of the burst still to come
        word = Signal(4)                # the next word of this beat
        count = Signal(9)               # beats in the open record
        filled = Signal(range(piece_words + 1))   # its words
        first = Signal(12)              # its first beat's address
        resp = Signal(2)                # its RRESP

        chunk = Signal(_chunk_layout)
        h = chunk.head
        m.d.comb += [h.id.eq(job.id), h.size.eq(job.size),
                     h.burst.eq(job.burst), h.len.eq(job.len), h.addr.eq(first),
                     h.resp.eq(resp), h.count.eq(count - 1),
                     chunk.node.eq(job.node), chunk.vc.eq(job.vc),
                     # The kind outside the conditional assignments (harness rule).
                     chunks.w_data.eq(Cat(Const(Kind.READ_DATA, 4), chunk.as_value()[4:]))]

        n = beat_words(job.size)
        lane = (first_lane(addr, job.size, cfg.bus_words) + word)
        lanes = data.ArrayLayout(WORD_BITS, cfg.bus_words)(self.rdata)
        m.d.comb += words.w_data.eq(lanes[lane[:max(1, (cfg.bus_words - 1).bit_length())]]
                                    if cfg.bus_words > 1 else self.rdata)
        new_resp = (count != 0) & (self.rresp != resp) & (word == 0)
        refused = busy & job.refuse
        collecting = busy & ~job.refuse & self.rvalid & ~new_resp & chunks.w_rdy
        push_word = collecting & words.w_rdy
        beat_done = push_word & (word + 1 == n)
        last_beat = beats == 1
        close = beat_done & (last_beat | (filled + n == piece_words))
        m.d.comb += [words.w_en.eq(push_word), self.rready.eq(beat_done),
                     self.errors.eq(beat_done & (self.rresp != 0))]
        with m.If(push_word):
            m.d.sync += word.eq(word + 1)
        with m.If(beat_done):
            m.d.sync += [word.eq(0), beats.eq(beats - 1), count.eq(count + 1),
                         filled.eq(filled + n), resp.eq(self.rresp),
                         addr.eq(next_address(addr, job.size, job.len, job.burst))]
            with m.If(count == 0):
                m.d.sync += first.eq(addr)
        # A record closes with its last beat; or, before a beat, when RRESP changes.
        with m.If(refused):
            m.d.comb += [h.nodata.eq(1), h.resp.eq(Resp.DECERR), h.last.eq(1),
                         h.count.eq(job.len), h.addr.eq(job.addr), chunks.w_en.eq(1)]
            with m.If(chunks.w_rdy):
                m.d.sync += busy.eq(0)
        with m.Elif(busy & self.rvalid & new_resp):
            m.d.comb += [chunks.w_en.eq(1), h.last.eq(0)]
            with m.If(chunks.w_rdy):
                m.d.sync += [count.eq(0), filled.eq(0)]
        with m.Elif(close):
            m.d.comb += [chunks.w_en.eq(1), h.last.eq(last_beat), h.count.eq(count),
                         h.resp.eq(self.rresp), h.addr.eq(Mux(count == 0, addr, first))]
            m.d.sync += [count.eq(0), filled.eq(0)]
            with m.If(last_beat):
                m.d.sync += busy.eq(0)
        m.d.comb += self.job.ready.eq(~busy)
        with m.If(self.job.valid & ~busy):
            m.d.sync += [job.eq(self.job.payload), busy.eq(1), addr.eq(self.job.payload.addr),
                         beats.eq(self.job.payload.len + 1), word.eq(0), count.eq(0),
                         filled.eq(0)]
        return chunks

    def _emit(self, m, words, chunks):
        rsp = self.rsp
        chunk = Signal(_chunk_layout)
        m.d.comb += chunk.eq(chunks.r_data)
        busy = Signal()
        left = Signal(12)                   # words of the record still to send
        node, vc = Signal(NODE_BITS), Signal(VC_BITS)
        h = chunk.head
        body = Mux(h.nodata, 0, record_words(h.count, h.size))
        m.d.comb += [rsp.p.node.eq(Mux(busy, node, chunk.node)), rsp.p.vc.eq(Mux(busy, vc, chunk.vc))]
        with m.If(~busy):
            m.d.comb += [rsp.valid.eq(chunks.r_rdy), rsp.p.data.eq(chunks.r_data[:WORD_BITS]),
                         rsp.p.left.eq(1 + body), rsp.p.last.eq(body == 0),
                         chunks.r_en.eq(rsp.ready)]
            with m.If(chunks.r_rdy & rsp.ready):
                m.d.sync += [busy.eq(body != 0), left.eq(body), node.eq(chunk.node),
                             vc.eq(chunk.vc)]
        with m.Else():
            m.d.comb += [rsp.valid.eq(words.r_rdy), rsp.p.data.eq(words.r_data),
                         rsp.p.left.eq(left), rsp.p.last.eq(left == 1), words.r_en.eq(rsp.ready)]
            with m.If(words.r_rdy & rsp.ready):
                m.d.sync += left.eq(left - 1)
                with m.If(left == 1):
                    m.d.sync += busy.eq(0)
