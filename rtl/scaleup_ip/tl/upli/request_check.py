# SPDX-License-Identifier: BSD-2-Clause
"""UPLI protocol checks on the Request and Originator Data channels into the TL."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..layout import ReqCmd, UpliError, orig_data_layout, request_layout, upli_channel
from ..rules import legal_command, request_length_ok

__all__ = ["UpliRequestCheck", "count_errors"]



def count_errors(m, counts, events):
    """Add one (saturating) to ``counts[k]`` for each bit ``k`` set in ``events``."""
    for k in range(len(events)):
        c = counts[k]
        with m.If(events[k] & (c != (1 << len(c)) - 1)):
            m.d.sync += c.eq(c + 1)


class UpliRequestCheck(wiring.Component):
    """Checks the channel rules of Request and Originator Data [UALink 1.0 §2.7.8, §2.8]
    where they are visible, on the wires, and leaves the TL only well-formed traffic
    (README §5) [ours].

    Members
    -------
    req, orig : In(upli_channel(...))
        From the originator.
    req_o, orig_o : Out(upli_channel(...))
        To the channels' :class:`~scaleup_ip.tl.upli.receiver.UpliReceiver`: the same beats in the
        same clocks, credits passed back unchanged, some beats mended (below).
    req_discard, orig_discard : Out(1)
        With ``*_o.vld``: the receiver drops this beat (and still returns its credit).
    events : Out(len(UpliError))
        Violations seen this clock, one bit per :class:`~scaleup_ip.tl.layout.UpliError` kind.

    What happens to each violation:

    * a request with a reserved command or an impossible length (the receiver's README §4
      checks, plus ReqAddr[1:0] = 0) is dropped, and so are the NumBeats + 1 beats it
      announced; a data request without OrigDataVld in its clock is dropped;
    * a beat with none due is dropped; a beat with the wrong OrigDataOffset is poisoned and
      renumbered; a wrong OrigDataLast is mended;
    * a WriteFull beat with a byte enable clear is poisoned (the link carries no byte enables
      for WriteFull, so the far side would write every byte);
    * a data request that arrives while beats of the previous one are still due is taken; the
      packer sends the missing beats poisoned and reports it
      (:class:`~scaleup_ip.tl.tx.intake.TxIntake`).

    Purely combinational toward the receivers (no latency); state: the burst in progress.
    """

    def __init__(self):
        super().__init__({
            "req": In(upli_channel(request_layout)),
            "orig": In(upli_channel(orig_data_layout)),
            "req_o": Out(upli_channel(request_layout)),
            "orig_o": Out(upli_channel(orig_data_layout)),
            "req_discard": Out(1),
            "orig_discard": Out(1),
            "events": Out(len(UpliError)),
        })

    def elaborate(self, platform):
        m = Module()
        r, d = self.req.payload, self.orig.payload
        m.d.comb += [
            self.req_o.vld.eq(self.req.vld), self.req_o.payload.eq(r),
            self.req.credit.eq(self.req_o.credit),
            self.orig_o.vld.eq(self.orig.vld), self.orig.credit.eq(self.orig_o.credit),
        ]
        # The request.
        legal = Signal()
        shape_ok = Signal()
        m.d.comb += [
            legal.eq(legal_command(r.cmd)),
            shape_ok.eq(request_length_ok(m, r.cmd, r.addr[:8], r.len, r.num_beats, "req")
                        & (r.addr[:2] == 0)),
        ]
        with_data = r.cmd[5]
        start = Signal()                            # beat 0 arrives with its request
        m.d.comb += [
            start.eq(self.req.vld & with_data & self.orig.vld),
            self.req_discard.eq(~legal | ~shape_ok | (with_data & ~self.orig.vld)),
        ]
        # The burst in progress.
        due = Signal(2)                             # beats still due after this clock's
        dropping = Signal()                         # its request was dropped
        offset = Signal(2)                          # the next beat's number
        full = Signal()                             # WriteFull
        cont = Signal()                             # this beat continues the burst
        m.d.comb += cont.eq(self.orig.vld & ~start & (due != 0))
        with m.If(start):
            m.d.sync += [
                due.eq(r.num_beats), dropping.eq(self.req_discard), offset.eq(1),
                full.eq(r.cmd == ReqCmd.WRITE_FULL.value),
            ]
        with m.Elif(cont):
            m.d.sync += [due.eq(due - 1), offset.eq(offset + 1)]

        # The beat, mended.
        o = self.orig_o.payload
        last, want, partial_full = Signal(), Signal(2), Signal()
        m.d.comb += [
            last.eq(Mux(start, r.num_beats == 0, due == 1)),
            want.eq(Mux(start, 0, offset)),
            partial_full.eq(Mux(start, r.cmd == ReqCmd.WRITE_FULL.value, full)
                            & ~d.byte_en.all()),
        ]
        bad_offset = d.offset != want
        m.d.comb += [
            o.eq(d), o.offset.eq(want), o.last.eq(last),
            o.error.eq(d.error | bad_offset | partial_full),
            self.orig_discard.eq(~start & ~cont | cont & dropping
                                 | start & self.req_discard),
        ]
        taken = self.orig.vld & ~self.orig_discard
        ev = self.events
        m.d.comb += [
            ev[UpliError.RESERVED_COMMAND].eq(self.req.vld & ~legal),
            ev[UpliError.IMPOSSIBLE_LENGTH].eq(self.req.vld & legal & ~shape_ok),
            ev[UpliError.MISSING_BEAT0].eq(self.req.vld & legal & shape_ok & with_data
                                           & ~self.orig.vld),
            ev[UpliError.STRAY_DATA].eq(self.orig.vld & ~start & ~cont),
            ev[UpliError.BEAT_SEQUENCE].eq(taken & (bad_offset | (d.last != last))),
            ev[UpliError.WRITEFULL_BYTE_EN].eq(taken & partial_full),
        ]
        return m
