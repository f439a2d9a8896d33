# SPDX-License-Identifier: BSD-2-Clause
"""UPLI intake of the TL packer: requests with their data, and responses, into the queues."""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
    FType,
    Status,
    orig_data_stream,
    rd_rsp_stream,
    request_stream,
    single_beat_response,
    uncompressed_response,
    wr_rsp_stream,
    write_or_multi_response,
)
from .data import req_beat_layout, rsp_beat_layout
from .place import tx_rsp_entry

__all__ = ["BURST_TIMEOUT", "TxIntake"]

#: Clocks a write burst or multi-beat read response may pause, with room to take its next
#: beat, before its missing beats are made up [ours]. A UPLI sender sends the beats of one
#: transfer back to back while it holds credits [§2.7.8]; with the buffer empty every credit
#: is back within a few clocks.
BURST_TIMEOUT = 32


class TxIntake(wiring.Component):
    """Turns UPLI items into packer queue entries (README §2).

    Members
    -------
    req, orig : In(stream)
        Requests and originator data. A data command is taken together with its beat 0; its
        further beats follow on ``orig``; read requests may pass while beats are pending
        [§2.7.8].
    rd_rsp, wr_rsp : In(stream)
        Read response beats and write responses. A read response's field is made from its first
        beat (NumBeats = 0, or offset 0); further beats add data only.
    req_out : Out(request_stream())
        Requests taken (with their beat 0), toward the address cache or the encoder
        (:func:`~scaleup_ip.tl.tx.place.encode_request`).
    rsp_entry : Out(stream)
        Encoded fields for the response queue; write and read responses share it, taken
        alternately when both wait.
    req_beat, rsp_beat : Out(stream)
        Data beats for the request-data and response-data queues.
    req_truncated, rsp_truncated : Out(1)
        Pulses when a write burst or a multi-beat read response is closed before its last beat:
        the next one began (a beat with offset 0), or no beat came for :data:`BURST_TIMEOUT`
        clocks while there was room. The missing beats are sent poisoned, with no data
        (README §5) [ours]; a late beat of a closed burst is dropped.

    Purely combinational: it adds no latency; each output stream's ``ready`` gates the inputs.
    """

    def __init__(self):
        super().__init__({
            "req": In(request_stream()),
            "orig": In(orig_data_stream()),
            "rd_rsp": In(rd_rsp_stream()),
            "wr_rsp": In(wr_rsp_stream()),
            "req_out": Out(request_stream()),
            "rsp_entry": Out(stream.Signature(tx_rsp_entry)),
            "req_beat": Out(stream.Signature(req_beat_layout)),
            "rsp_beat": Out(stream.Signature(rsp_beat_layout)),
            "req_truncated": Out(1),
            "rsp_truncated": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        self._requests(m)
        self._responses(m)
        return m

    def _requests(self, m):
        req, orig = self.req.payload, self.orig.payload
        beats_left = Signal(2)                       # beats still due after beat 0
        has_data = Signal()
        m.d.comb += [
            has_data.eq(req.cmd[5]),
            self.req_beat.payload.data.eq(orig.data),
            self.req_beat.payload.byte_en.eq(orig.byte_en),
            self.req_beat.payload.error.eq(orig.error),
        ]
        m.d.comb += self.req_out.payload.eq(req)
        first = orig.offset == 0                     # beat 0 of a request
        pad = self._truncation(m, beats_left, self.orig.valid, first, self.req_beat.ready,
                               self.req_truncated, "req")
        with m.If(beats_left != 0):
            # Inside a write burst: beats flow; only data-less requests may pass.
            m.d.comb += [
                self.req_out.valid.eq(self.req.valid & ~has_data),
                self.req.ready.eq(self.req_out.ready & ~has_data),
            ]
            with m.If(pad):
                m.d.comb += [self.req_beat.valid.eq(1), self._filler(self.req_beat.payload)]
            with m.Else():
                m.d.comb += [self.req_beat.valid.eq(self.orig.valid),
                             self.orig.ready.eq(self.req_beat.ready)]
            with m.If(self.req_beat.valid & self.req_beat.ready):
                m.d.sync += beats_left.eq(beats_left - 1)
        with m.Elif(self.orig.valid & ~first):
            # A further beat with no burst in progress (its burst was closed): dropped.
            m.d.comb += [
                self.orig.ready.eq(1),
                self.req_out.valid.eq(self.req.valid & ~has_data),
                self.req.ready.eq(self.req_out.ready & ~has_data),
            ]
        with m.Else():
            both = Signal()
            m.d.comb += both.eq(self.req_out.ready & (~has_data | self.req_beat.ready))
            m.d.comb += [
                self.req_out.valid.eq(self.req.valid & (~has_data | self.orig.valid)
                                        & (~has_data | self.req_beat.ready)),
                self.req_beat.valid.eq(self.req.valid & has_data & self.orig.valid
                                       & self.req_out.ready),
                self.req.ready.eq(both & (~has_data | self.orig.valid)),
                self.orig.ready.eq(both & self.req.valid & has_data),
            ]
            with m.If(self.req.valid & self.req.ready & has_data):
                m.d.sync += beats_left.eq(req.num_beats)

    @staticmethod
    def _filler(beat):
        """A beat that stands in for one that never came: no data, poisoned."""
        return [beat.eq(0), beat.error.eq(1)]

    @staticmethod
    def _truncation(m, due, valid, first, ready, truncated, name):
        """When the beats still ``due`` of a burst must be made up; returns ``pad``.

        Padding starts when the next burst's first beat shows up (``valid & first``) or after
        :data:`BURST_TIMEOUT` clocks in which no beat came although the data queue had room,
        and goes on until nothing is due; ``truncated`` pulses once as it starts.
        """
        padding = Signal(name=f"{name}_padding")
        wait = Signal(range(BURST_TIMEOUT + 1), name=f"{name}_wait")
        pad = Signal(name=f"{name}_pad")
        m.d.comb += [
            pad.eq((due != 0) & (padding | (valid & first) | (wait == BURST_TIMEOUT))),
            truncated.eq(pad & ~padding),
        ]
        with m.If(pad & ready & (due == 1)):
            m.d.sync += padding.eq(0)
        with m.Elif(pad):
            m.d.sync += padding.eq(1)
        with m.If((due != 0) & ~valid & ready & ~pad):
            m.d.sync += wait.eq(wait + 1)
        with m.Else():
            m.d.sync += wait.eq(0)
        return pad

    def _responses(self, m):
        rd, wr = self.rd_rsp.payload, self.wr_rsp.payload
        rd_head = Signal()                           # this read beat carries the field
        due = Signal(2)                              # further beats of the response in progress
        m.d.comb += rd_head.eq((rd.num_beats == 0) | (rd.offset == 0))
        pad = self._truncation(m, due, self.rd_rsp.valid, rd_head, self.rsp_beat.ready,
                               self.rsp_truncated, "rsp")
        head = Signal()                              # a head that may go now
        m.d.comb += head.eq(self.rd_rsp.valid & rd_head & (due == 0))
        prefer_wr = Signal()
        pick_wr = Signal()
        m.d.comb += pick_wr.eq(self.wr_rsp.valid & (prefer_wr | ~head))
        beat = self.rsp_beat.payload
        with m.If(pad):
            m.d.comb += [self.rsp_beat.valid.eq(1), self._filler(beat)]
        with m.Elif(self.rd_rsp.valid & ~rd_head):
            # A further beat adds data only; with no response in progress it is dropped.
            m.d.comb += [
                beat.data.eq(rd.data), beat.error.eq(rd.error),
                self.rsp_beat.valid.eq(due != 0),
                self.rd_rsp.ready.eq(self.rsp_beat.ready | (due == 0)),
            ]
        with m.Elif(head & ~pick_wr):
            m.d.comb += [
                beat.data.eq(rd.data), beat.error.eq(rd.error),
                self.rsp_entry.valid.eq(self.rsp_beat.ready),
                self.rsp_beat.valid.eq(self.rsp_entry.ready),
                self.rd_rsp.ready.eq(self.rsp_beat.ready & self.rsp_entry.ready),
                self.rsp_entry.payload.eq(self._read_entry(m, rd)),
            ]
        with m.If(pick_wr):
            m.d.comb += [
                self.rsp_entry.valid.eq(1),
                self.wr_rsp.ready.eq(self.rsp_entry.ready),
                self.rsp_entry.payload.eq(self._write_entry(m, wr)),
            ]
        with m.If(self.rsp_beat.valid & self.rsp_beat.ready):
            with m.If(pad | ~rd_head):
                m.d.sync += due.eq(due - 1)
            with m.Else():
                m.d.sync += due.eq(rd.num_beats)
        # Running totals, so that the packer's decision needs no adder chain: a prefix of the
        # response window needs run[j] - run[0] + beats[0] read beats.
        run = Signal(6)
        entry = self.rsp_entry.payload
        m.d.comb += entry.run.eq(run + entry.beats)
        with m.If(self.rsp_entry.valid & self.rsp_entry.ready):
            m.d.sync += [prefer_wr.eq(~pick_wr), run.eq(entry.run)]

    @staticmethod
    def _write_entry(m, wr):
        entry = Signal(tx_rsp_entry)
        cwr = Signal(write_or_multi_response)
        full = Signal(uncompressed_response)
        m.d.comb += [
            cwr.ftype.eq(FType.WRITE_OR_MULTI), cwr.vc.eq(wr.vc), cwr.tag.eq(wr.tag),
            cwr.dst_acc.eq(wr.dst_acc),
            full.ftype.eq(FType.RESPONSE), full.vc.eq(wr.vc), full.tag.eq(wr.tag),
            full.status.eq(wr.status), full.src_acc.eq(wr.src_acc), full.dst_acc.eq(wr.dst_acc),
            entry.wide.eq(wr.status != Status.OKAY.value),
            entry.field.eq(Mux(entry.wide, full, cwr.as_value())),
            entry.vc.eq(wr.vc),
        ]
        return entry

    @staticmethod
    def _read_entry(m, rd):
        entry = Signal(tx_rsp_entry)
        single = Signal(single_beat_response)
        cwr = Signal(write_or_multi_response)
        full = Signal(uncompressed_response)
        multi = rd.num_beats != 0
        m.d.comb += [
            single.ftype.eq(FType.SINGLE_BEAT_READ), single.vc.eq(rd.vc), single.tag.eq(rd.tag),
            single.dst_acc.eq(rd.dst_acc), single.offset.eq(rd.offset), single.last.eq(rd.last),
            cwr.ftype.eq(FType.WRITE_OR_MULTI), cwr.vc.eq(rd.vc), cwr.tag.eq(rd.tag),
            cwr.dst_acc.eq(rd.dst_acc), cwr.len.eq(rd.num_beats), cwr.rd.eq(1),
            full.ftype.eq(FType.RESPONSE), full.vc.eq(rd.vc), full.tag.eq(rd.tag),
            full.len.eq(rd.num_beats), full.offset.eq(Mux(multi, 0, rd.offset)),
            full.status.eq(rd.status), full.rd.eq(1), full.last.eq(rd.last | multi),
            full.src_acc.eq(rd.src_acc), full.dst_acc.eq(rd.dst_acc),
            entry.wide.eq(rd.status != Status.OKAY.value),
            entry.field.eq(Mux(entry.wide, full, Mux(multi, cwr, single))),
            entry.vc.eq(rd.vc),
            entry.beats.eq(rd.num_beats + 1),
        ]
        return entry
