# SPDX-License-Identifier: BSD-2-Clause
"""An accelerator's UPLI originator port: every request kept with a watchdog, Isolation Mode."""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
    BEAT_BITS,
    IsolationCause,
    OriginatorConfig,
    OriginatorCount,
    ReqCmd,
    Status,
    orig_data_stream,
    orig_data_layout,
    originator_counts,
    rd_rsp_layout,
    rd_rsp_stream,
    request_layout,
    request_stream,
    upli_channel,
    wr_rsp_layout,
    wr_rsp_stream,
)
from ...config import ConfiguredComponent
from ...select import lowest_set
from .receiver import UpliReceiver
from .sender import UpliRequestSender

__all__ = ["RESPONSE_DEPTH", "TIMEOUT_TICKS", "UpliOriginator"]

#: Beats each response channel from the TL buffers: the credits it releases [ours].
RESPONSE_DEPTH = 8
#: A request expires on its ninth tick of ``completion_timeout / 8`` clocks [ours, README §7].
TIMEOUT_TICKS = 9
#: Manufactured data of a dummy read beat: all ones, as §2.7.5.1 recommends.
_ALL_ONES = Const((1 << BEAT_BITS) - 1, BEAT_BITS)


def _count(m, counter, events, name):
    """``counter`` + the number of ``events`` set in a clock, a clock later, saturating."""
    if not events:
        return
    top = (1 << len(counter)) - 1
    total = Signal(range(len(events) + 1), name=f"{name}_add")
    m.d.sync += total.eq(sum(events))                   # the event off the counter's path
    m.d.sync += counter.eq(Mux(counter > top - total, top, counter + total))


class _Table:
    """The outstanding requests, one entry each: its tag, VC and accelerator IDs, how it is
    answered (``rd``: a read response, ``any``: either channel, ``known``: a read's beat count
    is checked; ``beats``: read beats − 1), the read offsets the device has had (``got``),
    whether it had them as single beats (``single``), and its watchdog's age in ticks."""

    def __init__(self, count):
        self.count = count
        self.valid = Signal(count)
        def regs(name, width):
            return Array(Signal(width, name=f"{name}{k}") for k in range(count))
        self.tag, self.vc = regs("tag", 11), regs("vc", 2)
        self.src, self.dst = regs("src", 10), regs("dst", 10)
        self.rd, self.any, self.known = regs("rd", 1), regs("any", 1), regs("known", 1)
        self.beats, self.got, self.single = regs("beats", 2), regs("got", 4), regs("single", 1)
        self.age = [Signal(range(TIMEOUT_TICKS + 1), name=f"age{k}") for k in range(count)]

    def hits(self, m, tag, name, ok):
        """Entries ``tag`` names for which ``ok(k)`` holds: a mask."""
        hit = Signal(self.count, name=f"{name}_hit")
        m.d.comb += hit.eq(Cat(self.valid[k] & (self.tag[k] == tag) & ok(k)
                               for k in range(self.count)))
        return hit


def _answer(m, req):
    """How ``req`` is answered (README §7): ``(rd, any, known, beats − 1)``."""
    rd, any_, known = Signal(), Signal(), Signal()
    beats = Signal(2)
    span = Signal(9)
    m.d.comb += span.eq(req.addr[:6] + ((req.len + 1) << 2) + 63)
    cmd = req.cmd
    with m.If(cmd == ReqCmd.READ.value):
        m.d.comb += [rd.eq(1), known.eq(1),
                     beats.eq(Mux(span[6:] > 4, 3, span[6:] - 1))]
    with m.Elif(cmd[3:] == 0b001):                              # 0x08-0x0F: vendor reads
        m.d.comb += [rd.eq(1), beats.eq(req.num_beats)]
    with m.Elif(cmd == ReqCmd.ATOMIC_R.value):
        m.d.comb += [rd.eq(1), known.eq(1)]
    with m.Elif((cmd == ReqCmd.WRITE_MESSAGE.value) | (cmd[2:] == 0b1111)):
        m.d.comb += [any_.eq(1), beats.eq(req.num_beats)]       # 0x2A, 0x3C-0x3F
    return rd, any_, known, beats


class UpliOriginator(ConfiguredComponent):
    """An accelerator's UPLI originator port with a watchdog per request and Isolation Mode
    [UALink 1.0 §3.1.3]; rules and choices in ``rtl/scaleup_ip/tl/README.md`` §7.

    Between the originator device's streams and a TL's UPLI channels (port 0): requests go to
    the TL while a table entry is free and no outstanding request has their tag; each
    response from the TL is matched to its request by tag, channel and size and goes to the
    device, or is dropped and counted. A request unanswered for ``completion_timeout``
    clocks, one the TL does not take for as long, or a write response with status ISOLATE
    puts the port in Isolation Mode until reset: nothing more goes to the TL, whatever the TL
    delivers is dropped (its credits still return), and every outstanding and every new
    request is answered with a completion-timeout response (CMPTO).

    Parameters
    ----------
    config : OriginatorConfig

    Members
    -------
    req, orig : In(stream)
        Requests and their data beats from the device (:func:`~scaleup_ip.tl.layout.request_stream`,
        :func:`~scaleup_ip.tl.layout.orig_data_stream`): beat 0 of a data request valid with it,
        the further beats after it, as :class:`~scaleup_ip.tl.upli.sender.UpliRequestSender`
        takes them.
    rd_rsp, wr_rsp : Out(stream)
        Responses to the device: the TL's, unchanged (all zero while not valid), and the
        dummies.
    tl_req, tl_orig : Out(upli_channel(...))
        To a :class:`~scaleup_ip.tl.TlEndpoint`'s ``req`` and ``orig``, with its credits.
    tl_rd_rsp, tl_wr_rsp : In(upli_channel(...))
        From the endpoint's ``rx_rd_rsp`` and ``rx_wr_rsp``: :data:`RESPONSE_DEPTH` beats
        buffered each, their credits released after reset.
    isolated : Out(1)
        In Isolation Mode.
    cause : Out(IsolationCause)
        What started it.
    counts : Out(originator_counts)
        By :class:`~scaleup_ip.tl.layout.OriginatorCount`, 16-bit saturating, two clocks
        after their events.

    Latency: requests combinational to the TL (as ``UpliRequestSender``); responses two clocks
    (the channel buffer) and combinational to the device. Throughput: a request, a data beat,
    a read beat and a write response per clock; in Isolation Mode a dummy beat or write
    response per clock, with a clock between two requests' dummies. A request expires between
    ``completion_timeout`` and ``1.125 · completion_timeout + 9`` clocks after it went to the
    TL. Overflow: none; a request waits for a free entry.
    """

    config_class = OriginatorConfig

    def __init__(self, config):
        super().__init__(config, {
            "req": In(request_stream()),
            "orig": In(orig_data_stream()),
            "rd_rsp": Out(rd_rsp_stream()),
            "wr_rsp": Out(wr_rsp_stream()),
            "tl_req": Out(upli_channel(request_layout)),
            "tl_orig": Out(upli_channel(orig_data_layout)),
            "tl_rd_rsp": In(upli_channel(rd_rsp_layout)),
            "tl_wr_rsp": In(upli_channel(wr_rsp_layout)),
            "isolated": Out(1),
            "cause": Out(IsolationCause),
            "counts": Out(originator_counts),
        })

    def elaborate(self, platform):
        m = Module()
        table = _Table(self.config.outstanding)
        self._burst = Signal(table.count)           # the read burst the device is part-way in
        self._on_read = Signal(table.count)         # entries whose dummy is read beats
        self._admit = Signal(table.count)           # the entry a request takes, one-hot
        self._retire = [Signal(table.count, name=f"retire_{ch}") for ch in ("rd", "wr")]
        m.submodules.sender = sender = UpliRequestSender()
        m.submodules.rd_in = rd_in = UpliReceiver(rd_rsp_layout, RESPONSE_DEPTH)
        m.submodules.wr_in = wr_in = UpliReceiver(wr_rsp_layout, RESPONSE_DEPTH)
        wiring.connect(m, sender.req_o, wiring.flipped(self.tl_req))
        wiring.connect(m, sender.orig_o, wiring.flipped(self.tl_orig))
        wiring.connect(m, wiring.flipped(self.tl_rd_rsp), rd_in.i)
        wiring.connect(m, wiring.flipped(self.tl_wr_rsp), wr_in.i)
        self._events = {kind: [] for kind in OriginatorCount}
        tick = self._tick(m)
        stalled = self._requests(m, table, sender, tick)
        self._watchdog(m, table, tick, stalled)
        self._reads(m, table, rd_in.o)
        self._writes(m, table, wr_in.o)
        m.d.sync += table.valid.eq(table.valid & ~self._retire[0] & ~self._retire[1]
                                   | self._admit)
        for kind, events in self._events.items():
            _count(m, self.counts[kind], events, kind.name.lower())
        return m

    def _event(self, m, kind, event):
        """``event`` (an expression) counts one of ``kind`` this clock."""
        flag = Signal(name=f"{kind.name.lower()}_{len(self._events[kind])}")
        m.d.comb += flag.eq(event)
        self._events[kind].append(flag)

    def _isolate(self, m, event, cause):
        """Isolation Mode from the clock after ``event``; ``cause`` if it is the first."""
        with m.If(event):
            m.d.sync += self.isolated.eq(1)
            with m.If(~self.isolated):
                m.d.sync += self.cause.eq(cause)

    def _tick(self, m):
        """A pulse every ``ceil(completion_timeout / 8)`` clocks (never without a timeout)."""
        timeout = self.config.completion_timeout
        if not timeout:
            return Const(0)
        period = -(-timeout // 8)
        prescale = Signal(range(period))
        tick = Signal()
        m.d.comb += tick.eq(prescale == period - 1)
        m.d.sync += prescale.eq(Mux(tick, 0, prescale + 1))
        return tick

    def _requests(self, m, table, sender, tick):
        """Requests into the table, and to the TL unless isolated; data beats after them.
        Returns the request waiting for the TL that has expired."""
        req = self.req.payload
        dup = table.hits(m, req.tag, "dup", lambda k: 1) != 0
        free = Signal(table.count)                  # the lowest free entry, one-hot
        m.d.comb += free.eq(~table.valid & (table.valid + 1))
        room = (~table.valid != 0) & ~dup          # not through the carry chain of ``free``
        take = Signal()
        with m.If(self.isolated):
            m.d.comb += [take.eq(self.req.valid & room), self.req.ready.eq(room),
                         self.orig.ready.eq(1)]                 # beats dropped
        with m.Else():
            m.d.comb += [
                sender.req.valid.eq(self.req.valid & room), sender.req.payload.eq(req),
                sender.orig.valid.eq(self.orig.valid), sender.orig.payload.eq(self.orig.payload),
                self.req.ready.eq(sender.req.ready), self.orig.ready.eq(sender.orig.ready),
                take.eq(sender.req.valid & sender.req.ready),
            ]
        rd, any_, known, beats = _answer(m, req)
        m.d.comb += self._admit.eq(Mux(take, free, 0))
        for k in range(table.count):
            with m.If(self._admit[k]):
                m.d.sync += [
                    table.tag[k].eq(req.tag), table.vc[k].eq(req.vc),
                    table.src[k].eq(req.src_acc), table.dst[k].eq(req.dst_acc),
                    table.rd[k].eq(rd), table.any[k].eq(any_), table.known[k].eq(known),
                    table.beats[k].eq(beats), table.got[k].eq(0), table.single[k].eq(0),
                ]
        waiting = sender.req.valid & ~sender.req.ready
        age = Signal(range(TIMEOUT_TICKS + 1))
        with m.If(~waiting):
            m.d.sync += age.eq(0)
        with m.Elif(tick & (age != TIMEOUT_TICKS)):
            m.d.sync += age.eq(age + 1)
        return waiting & (age == TIMEOUT_TICKS)

    def _watchdog(self, m, table, tick, stalled):
        """Ages the entries; an expired one or a stalled request isolates."""
        due = Signal(table.count)
        for k, age in enumerate(table.age):
            with m.If(self._admit[k]):
                m.d.sync += age.eq(0)
            with m.Elif(tick & table.valid[k] & (age != TIMEOUT_TICKS)):
                m.d.sync += age.eq(age + 1)
            m.d.comb += due[k].eq(table.valid[k] & (age == TIMEOUT_TICKS))
        self._isolate(m, (due != 0) & ~self.isolated, IsolationCause.EXPIRED)
        self._isolate(m, stalled & ~self.isolated & (due == 0), IsolationCause.STALLED)

    def _channel_mode(self, m, out, name):
        """Isolation Mode on the device channel ``out``: from the first clock it does not
        hold a beat shown before (a shown beat stays until taken). Returns the mode."""
        held = Signal(name=f"{name}_held")
        done = Signal(name=f"{name}_iso")
        mode = Signal(name=f"{name}_mode")
        m.d.sync += held.eq(out.valid & ~out.ready)
        m.d.comb += mode.eq(done | (self.isolated & ~held))
        m.d.sync += done.eq(mode)
        return mode

    def _dummy_slot(self, m, out, want, n, name):
        """The entry a channel's next dummy answers: the lowest one in ``want`` a clock ago
        (an entry answered in that clock is skipped a clock later, when it has left ``want``);
        kept while a dummy shown waits."""
        chosen = Signal(range(n), name=f"{name}_chosen")
        with m.If(~(out.valid & ~out.ready)):
            m.d.sync += chosen.eq(lowest_set(m, want, n, f"{name}_next"))
        return chosen

    def _reads(self, m, table, tl):
        """Read beats: the TL's matched to their requests, or the dummies."""
        out, beat, n = self.rd_rsp, tl.payload, table.count
        mode = self._channel_mode(m, out, "rd")
        def fits(k):
            size = (beat.num_beats == table.beats[k]) | \
                   ((beat.num_beats == 0) & (beat.offset <= table.beats[k]))
            return (table.rd[k] | table.any[k]) & (~table.known[k] | size)
        hit = table.hits(m, beat.tag, "rd", fits)
        burst = Signal()                        # a multi-beat response part-way to the device
        burst_at = Signal(range(n))
        want = Signal(n)
        m.d.comb += [
            self._burst.eq(Mux(burst, 1 << burst_at, 0)),
            self._on_read.eq(Cat(table.rd[k] & ~table.any[k] | table.any[k] & table.single[k]
                                 for k in range(n)) | self._burst),
            want.eq(table.valid & self._on_read),
        ]
        taken = out.valid & out.ready
        chosen = self._dummy_slot(m, out, want, n, "rd")
        dummy = Mux(burst, burst_at, chosen)
        sel = Signal(n)                         # the entry of the beat shown, one-hot
        slot = Signal(range(n))
        m.d.comb += [sel.eq(Mux(mode, 1 << dummy, hit)), slot.eq(dummy)]
        left = Signal(4)                        # offsets the device has not had, of ``slot``
        m.d.comb += left.eq(~table.got[slot] & ((2 << table.beats[slot]) - 1))
        offset = Signal(2)                      # none left (no RdRspLast came): the final one
        m.d.comb += offset.eq(Mux(left == 0, table.beats[slot], lowest_set(m, left, 4, "rd_left")))
        with m.If(mode):
            p = out.payload
            m.d.comb += [
                out.valid.eq(want.bit_select(dummy, 1)), tl.ready.eq(1),
                p.data.eq(_ALL_ONES), p.vc.eq(table.vc[slot]), p.tag.eq(table.tag[slot]),
                p.src_acc.eq(table.dst[slot]), p.dst_acc.eq(table.src[slot]),
                p.num_beats.eq(Mux(table.single[slot] & ~burst, 0, table.beats[slot])),
                p.status.eq(Status.CMPTO), p.offset.eq(offset),
                p.last.eq((left & (left - 1)) == 0),
            ]
            self._event(m, OriginatorCount.DISCARDED, tl.valid)
            self._event(m, OriginatorCount.DUMMY, taken & out.payload.last)
        with m.Else():
            m.d.comb += [out.valid.eq(tl.valid & (hit != 0)),
                         out.payload.eq(Mux(tl.valid, beat.as_value(), 0)),   # never X
                         tl.ready.eq(out.ready | (hit == 0))]
            self._event(m, OriginatorCount.UNEXPECTED, tl.valid & (hit == 0))
        p = out.payload
        m.d.comb += self._retire[0].eq(Mux(taken & p.last, sel, 0))
        with m.If(taken):
            m.d.sync += [burst.eq((p.num_beats != 0) & ~p.last),
                         burst_at.eq(lowest_set(m, sel, n, "rd_sel"))]
        for k in range(n):
            with m.If(taken & sel[k]):
                m.d.sync += table.got[k].eq(table.got[k] | (1 << p.offset))
                with m.If(p.num_beats == 0):
                    m.d.sync += table.single[k].eq(1)
                with m.Else():
                    m.d.sync += table.beats[k].eq(p.num_beats)    # the size the TL chose
        self._read_hits = Mux(out.valid, hit, 0)

    def _writes(self, m, table, tl):
        """Write responses: the TL's matched to their requests, ISOLATE, or the dummies."""
        out, rsp, n = self.wr_rsp, tl.payload, table.count
        mode = self._channel_mode(m, out, "wr")
        isolate = rsp.status == Status.ISOLATE
        hit = table.hits(m, rsp.tag, "wr",
                         lambda k: (~table.rd[k] | table.any[k]) & ~self._read_hits[k])
        want = Signal(n)
        m.d.comb += want.eq(table.valid & ~self._on_read)
        taken = out.valid & out.ready
        chosen = self._dummy_slot(m, out, want, n, "wr")
        slot = chosen
        m.d.comb += self._retire[1].eq(Mux(taken, Mux(mode, 1 << chosen, hit), 0))
        self._isolate(m, tl.valid & isolate, IsolationCause.ISOLATE)
        self._event(m, OriginatorCount.ISOLATE, tl.valid & isolate)
        with m.If(mode):
            p = out.payload
            m.d.comb += [
                out.valid.eq(want.bit_select(chosen, 1)), tl.ready.eq(1),
                p.vc.eq(table.vc[slot]), p.tag.eq(table.tag[slot]),
                p.src_acc.eq(table.dst[slot]), p.dst_acc.eq(table.src[slot]),
                p.status.eq(Status.CMPTO),
            ]
            self._event(m, OriginatorCount.DISCARDED, tl.valid & ~isolate)
            self._event(m, OriginatorCount.DUMMY, taken)
        with m.Else():
            deliver = ~isolate & (hit != 0)
            m.d.comb += [out.valid.eq(tl.valid & deliver),
                         out.payload.eq(Mux(tl.valid, rsp.as_value(), 0)),    # never X
                         tl.ready.eq(out.ready | ~deliver)]
            self._event(m, OriginatorCount.UNEXPECTED, tl.valid & ~isolate & (hit == 0))
