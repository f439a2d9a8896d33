# SPDX-License-Identifier: BSD-2-Clause
"""UPLI protocol checks on the Read Response/Data and Write Response channels into the TL."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..layout import Status, UpliError, rd_rsp_layout, upli_channel, wr_rsp_layout
from ..rules import legal_status

__all__ = ["UpliResponseCheck"]


class UpliResponseCheck(wiring.Component):
    """Checks the completer's responses on the wires [UALink 1.0 §2.7.8, Tables 2-9, 2-12]
    and leaves the TL only well-formed traffic (README §5) [ours].

    Members
    -------
    rd_rsp, wr_rsp : In(upli_channel(...))
        From the completer.
    rd_rsp_o, wr_rsp_o : Out(upli_channel(...))
        To the channels' :class:`~scaleup_ip.tl.upli.receiver.UpliReceiver`: the same beats in the
        same clocks, credits passed back unchanged, some beats mended (below).
    rd_discard : Out(1)
        With ``rd_rsp_o.vld``: the receiver drops this beat (and still returns its credit).
    events : Out(len(UpliError))
        Violations seen this clock, one bit per :class:`~scaleup_ip.tl.layout.UpliError` kind.

    What happens to each violation:

    * a status that is reserved for the response's kind (ISOLATE is for writes only) is sent
      as TARGET ABORT;
    * in multi-beat mode (RdRspNumBeats ≠ 0) a response starts with offset 0 and its further
      beats follow with offsets 1, 2, ...: a further beat with the wrong offset is poisoned and
      renumbered; one with no response in progress is dropped; a new response before the last
      beat of the previous one is taken, and the packer sends the missing beats poisoned
      (:class:`~scaleup_ip.tl.tx.intake.TxIntake`). Single-beat mode (NumBeats = 0) has no order.

    Purely combinational toward the receivers (no latency); state: the response in progress.
    """

    def __init__(self):
        super().__init__({
            "rd_rsp": In(upli_channel(rd_rsp_layout)),
            "wr_rsp": In(upli_channel(wr_rsp_layout)),
            "rd_rsp_o": Out(upli_channel(rd_rsp_layout)),
            "wr_rsp_o": Out(upli_channel(wr_rsp_layout)),
            "rd_discard": Out(1),
            "events": Out(len(UpliError)),
        })

    def elaborate(self, platform):
        m = Module()
        rd, wr = self.rd_rsp.payload, self.wr_rsp.payload
        for i, o in ((self.rd_rsp, self.rd_rsp_o), (self.wr_rsp, self.wr_rsp_o)):
            m.d.comb += [o.vld.eq(i.vld), i.credit.eq(o.credit), o.payload.eq(i.payload)]
        rd_ok, wr_ok = Signal(), Signal()
        m.d.comb += [rd_ok.eq(legal_status(1, rd.status)), wr_ok.eq(legal_status(0, wr.status))]
        with m.If(~rd_ok):
            m.d.comb += self.rd_rsp_o.payload.status.eq(Status.TARGET_ABORT)
        with m.If(~wr_ok):
            m.d.comb += self.wr_rsp_o.payload.status.eq(Status.TARGET_ABORT)

        due = Signal(2)                             # further beats of the response in progress
        offset = Signal(2)                          # the next one's number
        further = Signal()                          # this beat continues a multi-beat response
        head = Signal()                             # this beat starts a multi-beat response
        m.d.comb += [
            further.eq((rd.num_beats != 0) & (rd.offset != 0)),
            head.eq((rd.num_beats != 0) & (rd.offset == 0)),
        ]
        with m.If(self.rd_rsp.vld):
            with m.If(head):
                m.d.sync += [due.eq(rd.num_beats), offset.eq(1)]
            with m.Elif(further & (due != 0)):
                m.d.sync += [due.eq(due - 1), offset.eq(offset + 1)]
            with m.Elif(~further):
                m.d.sync += due.eq(0)
        bad_offset = further & (due != 0) & (rd.offset != offset)
        with m.If(further & (due != 0)):
            m.d.comb += [self.rd_rsp_o.payload.offset.eq(offset),
                         self.rd_rsp_o.payload.error.eq(rd.error | bad_offset)]
        m.d.comb += self.rd_discard.eq(further & (due == 0))
        ev = self.events
        m.d.comb += [
            ev[UpliError.RESERVED_STATUS].eq(self.rd_rsp.vld & ~rd_ok | self.wr_rsp.vld & ~wr_ok),
            ev[UpliError.RSP_SEQUENCE].eq(self.rd_rsp.vld & (bad_offset | self.rd_discard)),
        ]
        return m
