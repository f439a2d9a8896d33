# SPDX-License-Identifier: BSD-2-Clause
"""UALink TL transmit: UPLI requests and responses packed into 64-byte TL flits."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ...fifo import RamFifo
from ...skid import SkidBuffer
from ..layout import (
    CREDIT_BITS,
    SLOT_WINDOW,
    TlConfig,
    UpliError,
    cached_request_layout,
    credit_array,
    credit_update_layout,
    flit_stream,
    half_pair,
    slot_req_flags,
    tx_cache_port,
    upli_members,
)
from ..queue import WindowQueue
from .cache import TxAddrCache
from .data import DataSequencer, poison_half
from .fill import TxFill
from .halves import half_layout
from .intake import TxIntake
from .place import encode_request, tx_req_entry, tx_rsp_entry
from .slots import BankQueue, SlotCompose, UnitQueue

__all__ = ["WANT_AHEAD", "TlTx"]

#: The emitter asks for control half-flits to be composed while at most this many data
#: half-flits are still owed: two records of two clocks each must be ready when the owed data
#: ends (two owed half-flits leave per clock).
WANT_AHEAD = 9


class TlTx(ConfiguredComponent):
    """The TL packer: one 64-byte TL flit per clock from UPLI traffic (README §3).

    Parameters
    ----------
    config : TlConfig

    Members
    -------
    req, orig, rd_rsp, wr_rsp : In(stream)
        UPLI requests with originator data, read response beats and write responses.
    flit : Out(flit_stream())
        TL flits toward the data link. Registered; held while ``ready`` is low.
    grant : In(credit_update_layout)
        Credits the peer granted this clock (decoded from received FC fields).
    give : In(credit_update_layout)
        Credits the local receiver released this clock, to return in FC fields.
    give_init : In(1)
        The local receiver's initial release is complete (it rises at least one clock after the
        release appears on ``give``). Then, once all of it is sent, this TL sends Initial
        Credit Release Complete and may start sending requests and responses.
    init_sent : Out(1)
        Initial Credit Release Complete has been sent.
    tx_cache : Out(tx_cache_port())
        Only with an address cache (``config.cache_ways``): its policy, invalidations, clear,
        busy flag and counters (:class:`~scaleup_ip.tl.tx.cache.TxAddrCache`). Requests then reach
        the request queue 3 clocks later, so their latency is 6 clocks instead of 3.
    credits : Out(credit_array(CREDIT_BITS))
        Credits held (for credit-conservation checks).
    pending : Out(credit_array(CREDIT_BITS))
        Credits released by the local receiver and not yet sent.
    upli_events : Out(len(UpliError))
        Pulses of :attr:`~scaleup_ip.tl.layout.UpliError.TRUNCATED_BURST` and
        :attr:`~scaleup_ip.tl.layout.UpliError.RSP_SEQUENCE` when a write burst or a multi-beat read
        response was closed early and its missing beats are sent poisoned (README §5).

    Control half-flits are composed ahead of the flits that carry them
    (:class:`~scaleup_ip.tl.tx.slots.compose.SlotCompose`, two clocks each, up to three ahead,
    on banked request and unit queues; with ``tx_packer="compact"``,
    :class:`~scaleup_ip.tl.tx.fill.TxFill` fills them from the queue heads instead, a request
    and a response a clock and two clocks to close, from queues whose two oldest entries are
    registers, and its records always go through the record queue, so latency is 3 or 4
    clocks more). The data
    half-flits each calls for are made ready, one beat per clock, from the clock after it is
    composed (:class:`~scaleup_ip.tl.tx.data.DataSequencer`, fed from registers only); the flit
    emitter follows the flit rule from ``owed``, the head record and how many data half-flits
    are ready. Latency: a request accepted at clock ``t`` can leave in the flit presented at
    ``t + 3`` when the link is idle, a response at ``t + 4`` (the slot packer's responses
    reach its unit queue through a register stage): a control composed while no record is
    queued goes straight into the flit register, and when no data is owed its first data
    half-flit comes from the oldest beat of its data queue (in the register stage after the
    block RAM, or at the block RAM's output), the sequencer skipping it. Throughput: one flit
    per clock while data is queued or the rate limits hold items back (the slot packer then
    follows each control without data by a pacing flit, all NOP, README §3), except that a
    run of control half-flits without data goes at one per two clocks while the rate limits
    let more go than it takes, and a control sent that way with more data waits a clock for
    its next two half-flits.
    """

    config_class = TlConfig

    def __init__(self, config):
        super().__init__(config, lambda config: {
            **upli_members(In),
            **({} if config.tx_cache is None else {"tx_cache": Out(tx_cache_port())}),
            "flit": Out(flit_stream()),
            "grant": In(credit_update_layout),
            "give": In(credit_update_layout),
            "give_init": In(1),
            "init_sent": Out(1),
            "credits": Out(credit_array(CREDIT_BITS)),
            "pending": Out(credit_array(CREDIT_BITS)),
            "upli_events": Out(len(UpliError)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        m.submodules.intake = intake = TxIntake()
        beats = {"req": intake.req_beat, "rsp": intake.rsp_beat}
        # The compact composer's records never go direct, so no schedule skips a half-flit.
        compact = cfg.tx_packer == "compact"
        m.submodules.seq = seq = DataSequencer(skips=not compact, slot_register=compact,
                                               strobe=compact)
        for port in ("req", "orig", "rd_rsp", "wr_rsp"):
            wiring.connect(m, wiring.flipped(getattr(self, port)), getattr(intake, port))
        m.d.comb += [
            self.upli_events[UpliError.TRUNCATED_BURST].eq(intake.req_truncated),
            self.upli_events[UpliError.RSP_SEQUENCE].eq(intake.rsp_truncated),
        ]
        comp = self._composer(m, intake)
        heads = []
        for name, src in beats.items():
            dst = getattr(seq, f"{name}_data")
            width = len(src.payload.as_value())
            if cfg.tx_packer == "compact":
                # No record is sent direct: the queue in block RAM, read through the RAM's
                # own registers, feeds the sequencer, so nothing follows the block RAM and
                # its read enables come from registers (a beat readable 3 clocks after it is
                # written, a clock more than a queue with one output register [ours]).
                m.submodules[f"{name}_data"] = fifo = RamFifo(width, cfg.tx_data_depth,
                                                              block_ram=True)
                m.d.comb += [fifo.w_data.eq(src.payload), fifo.w_en.eq(src.valid),
                             fifo.w_commit.eq(1), src.ready.eq(fifo.w_rdy),
                             dst.payload.eq(fifo.r.payload), dst.valid.eq(fifo.r.valid),
                             fifo.r.ready.eq(dst.ready)]
                continue
            m.submodules[f"{name}_data"] = fifo = SyncFIFOBuffered(width=width,
                                                                   depth=cfg.tx_data_depth)
            m.d.comb += [fifo.w_data.eq(src.payload), fifo.w_en.eq(src.valid),
                         src.ready.eq(fifo.w_rdy)]
            # A register stage between each data queue's block RAM and the sequencer: the
            # emitter's choice never reaches the RAM's read port in the same clock.
            m.submodules[f"{name}_skid"] = skid = SkidBuffer(src.payload.shape())
            m.d.comb += [skid.i.payload.eq(fifo.r_data), skid.i.valid.eq(fifo.r_rdy),
                         fifo.r_en.eq(skid.i.ready)]
            wiring.connect(m, skid.o, dst)
            # The oldest beat: in the register stage, else at the block RAM's output.
            head = Signal(data.StructLayout({"valid": 1, "beat": src.payload.shape()}),
                          name=f"{name}_head")
            m.d.comb += [head.valid.eq(skid.o.valid | fifo.r_rdy),
                         head.beat.eq(Mux(skid.o.valid, skid.o.payload, fifo.r_data))]
            heads.append(head)
        m.d.comb += [
            comp.grant.eq(self.grant), comp.give.eq(self.give), comp.give_init.eq(self.give_init),
            self.credits.eq(comp.credits), self.pending.eq(comp.pending),
        ]
        wiring.connect(m, comp.schedule, seq.schedule)
        self._emit(m, comp, seq, heads)
        return m

    def _composer(self, m, intake):
        """The request and response queues and the composer that reads them: banks for the
        slot packer's :class:`~scaleup_ip.tl.tx.slots.compose.SlotCompose`, heads for the
        compact :class:`~scaleup_ip.tl.tx.fill.TxFill`."""
        cfg = self._config
        if cfg.tx_packer == "slots":
            return self._slot_composer(m, intake)
        m.submodules.compose = comp = TxFill()
        req_in = self._head_queue(m, "req", tx_req_entry, cfg.tx_req_depth, comp.req,
                                  comp.req_next)
        rsp_in = self._head_queue(m, "rsp", tx_rsp_entry, cfg.tx_rsp_depth, comp.rsp,
                                  comp.rsp_next)
        self._requests(m, intake.req_out, req_in)
        wiring.connect(m, intake.rsp_entry, rsp_in)
        return comp

    @staticmethod
    def _head_queue(m, name, layout, depth, head, after):
        """The compact composer's queue of ``name``: ``depth`` entries in distributed RAM and
        two more in registers (a :class:`~scaleup_ip.tl.queue.WindowQueue` whose ``i.ready`` is
        a register's): ``head`` shows the oldest, ``after`` the one behind it, so the composer
        can work out a clock ahead whether that one may join. Latency: an entry written at
        clock ``t`` heads the queue from ``t + 1`` when the queue is empty. Returns the
        queue's input stream."""
        m.submodules[f"{name}_q"] = q = WindowQueue(layout, depth + 2, 2, ready_registered=True)
        m.d.comb += [head.payload.eq(q.entries[0]), head.valid.eq(q.count != 0),
                     q.pop.eq(head.ready),
                     after.entry.eq(q.entries[1]), after.valid.eq(q.count[1])]
        return q.i

    def _slot_composer(self, m, intake):
        """The slot packer's queues (requests in banks, responses in units) and its
        composer."""
        cfg = self._config
        # The requests twice in step: their fields, read from the banks for the placer, and
        # what the decision needs, registered.
        m.submodules.req_q = req_q = BankQueue(tx_req_entry, cfg.tx_req_depth, SLOT_WINDOW)
        m.submodules.req_flags = req_flags = BankQueue(slot_req_flags, cfg.tx_req_depth,
                                                       SLOT_WINDOW, registered=True)
        m.submodules.rsp_q = rsp_q = UnitQueue(cfg.tx_rsp_depth)
        m.submodules.compose = comp = SlotCompose()
        request = stream.Signature(tx_req_entry).create()
        self._requests(m, intake.req_out, request)
        for queue in (req_q, req_flags):
            m.d.comb += [queue.i.valid.eq(request.valid), queue.pop.eq(comp.req_pop)]
        m.d.comb += [req_q.i.payload.eq(request.payload), request.ready.eq(req_q.i.ready),
                     req_flags.i.payload.wide.eq(request.payload.wide),
                     req_flags.i.payload.vc.eq(request.payload.vc),
                     req_flags.i.payload.beats.eq(request.payload.beats),
                     req_flags.i.payload.be.eq(request.payload.be),
                     req_flags.i.payload.be_pos.eq(request.payload.be_pos)]
        # Responses reach the unit queue through a register stage: whether one joins a unit
        # (and the window and rule 6 it changes, formed a clock ahead) then starts from
        # registers, not from the UPLI channels through the intake's choice. One clock more
        # of latency for responses [ours].
        m.submodules.rsp_stage = rsp_stage = SkidBuffer(tx_rsp_entry)
        wiring.connect(m, intake.rsp_entry, rsp_stage.i)
        wiring.connect(m, rsp_stage.o, rsp_q.i)
        m.d.comb += [
            comp.req_flags.eq(req_flags.entries), comp.req_flags_next.eq(req_flags.entries_next),
            comp.req_banks.eq(req_q.reads),
            comp.req_lane.eq(req_q.lane), comp.req_count.eq(req_q.count),
            comp.req_more.eq(req_q.more),
            comp.unit_flags.eq(rsp_q.flags), comp.unit_words.eq(rsp_q.words),
            comp.unit_lane.eq(rsp_q.lane), comp.unit_count.eq(rsp_q.count),
            comp.unit_flags_next.eq(rsp_q.flags_next), comp.unit_count_next.eq(rsp_q.count_next),
            rsp_q.take.eq(comp.unit_take), rsp_q.cut.eq(comp.unit_cut),
            rsp_q.freeze.eq(comp.freeze),
        ]
        return comp

    def _requests(self, m, requests, queue):
        """Requests into the request queue, through the address cache when there is one."""
        item = Signal(cached_request_layout)
        if self._config.tx_cache is None:
            m.d.comb += [item.req.eq(requests.payload), queue.valid.eq(requests.valid),
                         requests.ready.eq(queue.ready)]
        else:
            m.submodules.cache = cache = TxAddrCache(self._config.tx_cache)
            wiring.connect(m, requests, cache.i)
            ctl = self.tx_cache
            wiring.connect(m, wiring.flipped(ctl.invalidate), cache.invalidate)
            m.d.comb += [cache.policy.eq(ctl.policy), cache.clear_valid.eq(ctl.clear_valid),
                         ctl.clear_ready.eq(cache.clear_ready), ctl.busy.eq(cache.busy),
                         ctl.counts.eq(cache.counts)]
            m.d.comb += [item.eq(cache.o.payload), queue.valid.eq(cache.o.valid),
                         cache.o.ready.eq(queue.ready)]
        encode_request(m, item, queue.payload)

    def _emit(self, m, comp, seq, heads):
        """The flit rule of README §3: each flit from the owed data half-flits and the next
        record. The data half-flits come ready-made from ``seq``; the choice depends on
        registers (``owed``, the record queue) and on how many half-flits ``seq`` has."""
        owed = Signal(7)
        # ``owed >= 2`` from its bits (a compare with a constant need not be a carry chain
        # on the way to ``take``).
        many = Signal()
        m.d.comb += many.eq(owed[1:] != 0)
        record = comp.record
        rec, has = record.payload, record.valid
        halves = rec.halves
        load = Signal()                  # the output register takes a new flit this clock
        control = Signal()               # ... and it holds a new control half-flit
        nxt = Signal.like(self.flit.payload)
        # ``owed`` falls by at most 2 a clock, so ``want`` is high only in a clock after one
        # in which ``owed`` was at most WANT_AHEAD + 2: ``may_want`` from that register.
        soon = Signal(init=1)
        m.d.sync += soon.eq(owed <= WANT_AHEAD + 2)
        m.d.comb += [
            load.eq(~self.flit.valid | self.flit.ready),
            # Compose ahead only while flits are moving: records see what arrived by then.
            comp.want.eq(load & (owed <= WANT_AHEAD)),
            comp.may_want.eq(load & soon),
        ]
        # What the compact packer's emitter decides (from registers, and the link's
        # ``ready``) is kept apart from the flit's payload multiplexers, which it selects:
        # synthesis would otherwise fold the decision into them, on the way to the
        # sequencer's ``take`` (the slot packer's netlist is smaller without, at a clock its
        # decision sets).
        keep = {"keep": 1} if self._config.tx_packer == "compact" else {}
        emit = Signal(attrs=keep)
        go = Signal(attrs=keep)
        take = seq.take
        if keep:
            # What a read takes, from registers; ``go`` strobes it (the sequencer's
            # ``strobe``), so the decision reaches the carry registers through one LUT.
            take = Signal(range(3), attrs=keep)
            m.d.comb += [seq.take.eq(take), seq.go.eq(go)]
        pacing = Signal()                # the next flit is the pacing flit of the last record
        first = self._first_half(m, comp.first_req, heads)
        with m.If(many):
            m.d.comb += [
                emit.eq(seq.avail == 2), take.eq(2 if keep else Mux(go, 2, 0)),
                nxt.data[0].eq(seq.halves[0].data), nxt.data[1].eq(seq.halves[1].data),
                nxt.msg.eq(Cat(seq.halves[0].msg, seq.halves[1].msg)),
            ]
        with m.Elif(pacing):             # all NOP: a control of NOPs and a MANDATORY NOP
            m.d.comb += emit.eq(1)
        with m.Elif(has & rec.msg):
            m.d.comb += [emit.eq(1), nxt.data[0].eq(rec.half), nxt.msg.eq(0b01),
                         record.ready.eq(go)]
            with m.If(load):
                m.d.sync += self.init_sent.eq(1)
        with m.Elif(owed == 1):
            m.d.comb += [
                emit.eq(has & (seq.avail != 0)), control.eq(1),
                nxt.data[0].eq(rec.half), nxt.data[1].eq(seq.halves[0].data),
                nxt.msg.eq(Cat(Const(0, 1), seq.halves[0].msg)),
            ]
        with m.Else():
            # A direct record's first data half-flit comes from the head of its data queue
            # (nothing else is owed or queued, so the sequencer is idle); the sequencer, given
            # the record's schedule in the next clock, skips it.
            half = Signal(half_layout)
            m.d.comb += [
                half.eq(Mux(comp.direct, first.half, seq.halves[0])),
                emit.eq(has & ((halves == 0) | Mux(comp.direct, first.valid, seq.avail != 0))),
                control.eq(1),
                nxt.data[0].eq(rec.half),
                nxt.data[1].eq(Mux(halves != 0, half.data, 0)),
                nxt.msg.eq(Cat(Const(0, 1), (halves != 0) & half.msg)),
            ]
        placed = Signal()
        m.d.comb += [go.eq(load & emit), placed.eq(go & control),
                     comp.skip.eq(placed & (owed == 0) & comp.direct & (halves != 0))]
        with m.If(control & ~many):
            if keep:
                m.d.comb += take.eq((owed == 1) | ((halves != 0) & ~comp.direct))
            else:
                m.d.comb += take.eq(Mux(go & ((owed == 1) | ((halves != 0) & ~comp.direct)),
                                        1, 0))
        with m.If(placed):
            m.d.comb += record.ready.eq(1)
        with m.If(go):
            m.d.sync += pacing.eq(placed & rec.pace)
        with m.If(load):
            m.d.sync += [self.flit.valid.eq(emit), self.flit.payload.eq(nxt)]
        with m.If(go):
            with m.If(many):
                m.d.sync += owed.eq(owed - 2)
            with m.Elif(control & (owed == 0)):
                m.d.sync += owed.eq(Mux(halves != 0, halves - 1, 0))
            with m.Elif(control):
                m.d.sync += owed.eq(halves)

    @staticmethod
    def _first_half(m, first_req, heads):
        """The first half-flit of the oldest beat of the request-data (``first_req``) or
        response-data queue, as a Poisoned Data message when the beat has ``error``; ``valid``
        when that beat is there."""
        first = Signal(data.StructLayout({"valid": 1, "half": half_layout}))
        for k, head in enumerate(heads):
            with m.If(first_req if k == 0 else ~first_req):
                beat = data.View(half_pair, head.beat.data)
                m.d.comb += [first.valid.eq(head.valid), first.half.msg.eq(head.beat.error),
                             first.half.data.eq(poison_half(beat[0], head.beat.error))]
        return first
