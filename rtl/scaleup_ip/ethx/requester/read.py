# SPDX-License-Identifier: BSD-2-Clause
"""Requesting side, reads: ARs from the GPU as READ records, READ_DATA records as R beats."""

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import data, enum, stream
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ...counters import count_events
from ...model.ethx.bridge import Kind
from ..address import address_stage
from ..burst import beat_words, first_lane, next_address
from ..config import EthxConfig
from ..layout import (
    WORD_BITS,
    ReadCount,
    Resp,
    axi4_read_signature,
    extension_layout,
    read_counts,
    read_data_header_layout,
    record_stream,
    request_header_layout,
    response_item_layout,
    user_layout,
)
from ..slots import Slots

__all__ = ["ReqRead"]


class _Step(enum.Enum, shape=2):
    HEAD = 0        # a READ's header word goes out
    EXT = 1         # ... its extension word


class _Out(enum.Enum, shape=3):
    IDLE = 0        # waiting for a response record, a local answer or a timeout
    BEATS = 1       # a READ_DATA record's beats go out
    LOCAL = 2       # a local answer's beats go out
    DROP = 3        # an unexpected record is dropped
    EXPIRE = 4      # a timed-out read's beats left go out, SLVERR


#: What a slot's read still waits for: its burst, the next beat's address, the beats left.
_want_layout = data.StructLayout({"len": 8, "size": 3, "burst": 2, "addr": 12, "left": 9})


class ReqRead(ConfiguredComponent):
    """Carries the GPU's reads [README §5]: each AR becomes a READ record (header and extension
    word; :class:`~scaleup_ip.ethx.compress.Compress` drops the extension when it can) and the
    READ_DATA records that answer it become R beats.

    An outstanding read holds one of ``outstanding`` slots; the record's ``id`` is the slot
    and its generation (:class:`~scaleup_ip.ethx.slots.Slots`), which keeps the AXI ID, the
    destination, whether it is an acquire, and what of the burst is still due. An AR waits
    while an outstanding read of the same AXI ID is for another destination (so R beats of an
    ID keep their order), while an acquire is outstanding, and while no slot is free. A burst
    the bridge cannot carry is answered SLVERR, one to a destination at or above ``sources``
    DECERR, locally, after the ID's outstanding reads. A READ_DATA record is taken only if it
    answers the oldest outstanding read of its AXI ID from its source and continues that
    burst (size, burst, length, the next beat's address, beats within those left, ``last`` on
    the last beat); others are dropped and counted (``UNEXPECTED``, ``MISMATCHED``, ``LATE``),
    so the R channel always carries whole bursts with RLAST on their last beat. A read not
    answered within ``completion_timeout`` clocks gets its beats still due as SLVERR beats
    (``TIMEOUTS``) and frees its slot. An AR first spends a clock in the address stage
    (:func:`~scaleup_ip.ethx.address.address_stage`), where it is checked. Throughput: an AR
    every 2 clocks; R beats at one 8-byte word per clock. Bursts' R beats are not interleaved.

    Members
    -------
    axi : ``In(axi4_read_signature(addr_width, data_width, id_width, user bits))``
        The AR and R channels of the subordinate port; AxUSER as :func:`user_layout`.
    req : ``Out(record_stream())``
        READ records, each with its extension word.
    rsp : ``In(stream.Signature(response_item_layout))``
        READ_DATA records.
    acquiring : ``Out(1)``
        An acquire is outstanding (the write side holds its AWs too).
    hold : ``In(1)``
        Hold ARs: a write answered early (write proxy) is outstanding.
    counts : ``Out(read_counts)``
        :class:`~scaleup_ip.ethx.layout.ReadCount` counters.
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "axi": In(axi4_read_signature(c.addr_width, c.data_width, c.id_width,
                                          user_layout(c).size)),
            "req": Out(record_stream()),
            "rsp": In(stream.Signature(response_item_layout)),
            "acquiring": Out(1),
            "hold": In(1),
            "counts": Out(read_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        self._slots = Slots(cfg.outstanding, cfg.id_width, cfg.completion_timeout)
        self._acq = Signal(cfg.outstanding)
        self._wants = Array(Signal(_want_layout, name=f"want{k}") for k in range(cfg.outstanding))
        self._events = {k: Signal(name=f"ev_{k.name.lower()}") for k in ReadCount}
        self._local = Signal(data.StructLayout({"id": cfg.id_width, "beats": 9, "resp": 2}))
        self._local_valid = Signal()
        self._responses(m)
        self._requests(m)
        count_events(m, self.counts, self._events)
        return m

    def _requests(self, m):
        cfg, req = self.config, self.req
        slots, acq = self._slots, self._acq
        a = address_stage(m, cfg, self.axi, "ar", "ar_stage")
        ar = a.p
        live = slots.live
        node = ar.user.node
        local = ar.local
        waits, free, has_free = slots.admit(m, ar.id, node, local)
        blocked = waits | ((acq & live) != 0) | self.hold
        m.d.comb += self.acquiring.eq((acq & live) != 0)
        step = Signal(_Step)
        slot = Signal.like(free)
        header = Signal(request_header_layout)
        ext = Signal(extension_layout)
        m.d.comb += [
            header.kind.eq(Kind.READ), header.ext.eq(1), header.order.eq(ar.user.order),
            header.id.eq(slots.record_id(Mux(step == _Step.HEAD, free, slot))),
            header.len.eq(ar.len),
            header.size.eq(ar.size), header.burst.eq(ar.burst), header.addr.eq(ar.addr[:32]),
            ext.addr_hi.eq(ar.addr[32:] if cfg.addr_width > 32 else 0),
            ext.attrs.prot.eq(ar.prot), ext.attrs.cache.eq(ar.cache),
            ext.attrs.lock.eq(ar.lock), ext.attrs.qos.eq(ar.qos),
            ext.attrs.region.eq(ar.region),
            req.p.node.eq(node), req.p.vc.eq(ar.user.vc)]
        with m.Switch(step):
            with m.Case(_Step.HEAD):
                with m.If(a.valid & ~blocked & local):
                    m.d.comb += a.ready.eq(~self._local_valid)
                    with m.If(~self._local_valid):
                        m.d.comb += self._events[ReadCount.LOCAL].eq(1)
                        m.d.sync += [self._local_valid.eq(1), self._local.id.eq(ar.id),
                                     self._local.beats.eq(ar.len + 1),
                                     self._local.resp.eq(Mux(ar.bad, Resp.SLVERR, Resp.DECERR))]
                with m.Elif(a.valid & ~blocked & has_free):
                    m.d.comb += [req.valid.eq(1), req.p.data.eq(header), req.p.left.eq(2)]
                    with m.If(req.ready):
                        m.d.sync += [step.eq(_Step.EXT), slot.eq(free)]
            with m.Case(_Step.EXT):
                m.d.comb += [req.valid.eq(1), req.p.data.eq(ext), req.p.left.eq(1),
                             req.p.last.eq(1)]
                with m.If(req.ready):
                    m.d.comb += [a.ready.eq(1), self._events[ReadCount.READS].eq(1),
                                 self._events[ReadCount.ACQUIRES].eq(ar.user.order)]
                    want = self._wants[slot]
                    m.d.sync += [step.eq(_Step.HEAD), acq.bit_select(slot, 1).eq(ar.user.order),
                                 want.len.eq(ar.len), want.size.eq(ar.size),
                                 want.burst.eq(ar.burst), want.addr.eq(ar.addr[:12]),
                                 want.left.eq(ar.len + 1)]
                    slots.take(m, slot, ar.id, node)

    def _matches(self, h, slot):
        """Whether READ_DATA header ``h`` continues the burst of ``slot`` [README §2.2]: its
        size, burst and length; its address the next beat's; its beats within those left;
        ``last`` exactly on the burst's last beat."""
        want = self._wants[slot]
        ends = h.count + 1 == want.left
        return ((h.size == want.size) & (h.burst == want.burst) & (h.len == want.len)
                & (h.addr == want.addr) & (h.count < want.left) & (h.last == ends))

    def _responses(self, m):
        """R beats from READ_DATA records, local answers and timed-out reads."""
        cfg, ax, rsp, slots = self.config, self.axi, self.rsp, self._slots
        lanes = cfg.bus_words
        step = Signal(_Out)
        head = Signal(read_data_header_layout)
        addr = Signal(12)
        beats = Signal(9)
        word = Signal(4)
        rid = Signal(cfg.id_width)
        cur = Signal(range(cfg.outstanding))        # the slot being answered
        beat = Signal(data.ArrayLayout(WORD_BITS, lanes))
        h = read_data_header_layout(rsp.p.word)
        slot, answers, late = slots.answers(h.id, rsp.p.node)
        is_data = h.kind == Kind.READ_DATA
        matches = self._matches(h, slot)
        due, due_slot = slots.aging(m, slots.live)
        n = beat_words(head.size)
        lane_bits = max(1, (lanes - 1).bit_length())
        lane = (first_lane(addr, head.size, lanes) + word)[:lane_bits]
        final = word + 1 == n                     # this word ends the beat
        data_out = Signal(data.ArrayLayout(WORD_BITS, lanes))
        m.d.comb += [data_out.eq(beat), ax.rdata.eq(data_out)]
        with m.Switch(step):
            with m.Case(_Out.IDLE):
                with m.If(due):
                    m.d.comb += self._events[ReadCount.TIMEOUTS].eq(1)
                    m.d.sync += [step.eq(_Out.EXPIRE), cur.eq(due_slot),
                                 beats.eq(self._wants[due_slot].left),
                                 rid.eq(slots.ids[due_slot])]
                with m.Elif(self._local_valid):
                    m.d.sync += [step.eq(_Out.LOCAL), beats.eq(self._local.beats)]
                with m.Elif(rsp.valid):
                    m.d.comb += rsp.ready.eq(1)
                    with m.If(is_data & answers & matches):
                        m.d.sync += [head.eq(rsp.p.word), addr.eq(h.addr), beats.eq(h.count + 1),
                                     word.eq(0), rid.eq(slots.ids[slot]), cur.eq(slot),
                                     step.eq(_Out.BEATS)]
                    with m.Else():
                        with m.If(is_data & answers):
                            m.d.comb += self._events[ReadCount.MISMATCHED].eq(1)
                        with m.Elif(is_data & late):
                            m.d.comb += self._events[ReadCount.LATE].eq(1)
                        with m.Else():
                            m.d.comb += self._events[ReadCount.UNEXPECTED].eq(1)
                        m.d.sync += step.eq(Mux(rsp.p.last, _Out.IDLE, _Out.DROP))
            with m.Case(_Out.BEATS):
                have = head.nodata | rsp.valid
                with m.If(~final):
                    m.d.comb += rsp.ready.eq(~head.nodata)
                    with m.If(have):
                        m.d.sync += [beat[lane].eq(Mux(head.nodata, 0, rsp.p.word)),
                                     word.eq(word + 1)]
                with m.Else():
                    if lanes > 1:
                        m.d.comb += data_out[lane].eq(Mux(head.nodata, 0, rsp.p.word))
                    else:
                        m.d.comb += data_out[0].eq(Mux(head.nodata, 0, rsp.p.word))
                    m.d.comb += [ax.rvalid.eq(have), ax.rid.eq(rid), ax.rresp.eq(head.resp),
                                 ax.rlast.eq(head.last & (beats == 1)),
                                 rsp.ready.eq(ax.rready & ~head.nodata)]
                    with m.If(have & ax.rready):
                        nxt = next_address(addr, head.size, head.len, head.burst)
                        want = self._wants[cur]
                        m.d.sync += [word.eq(0), beats.eq(beats - 1), addr.eq(nxt),
                                     want.addr.eq(nxt), want.left.eq(want.left - 1)]
                        with m.If(beats == 1):
                            m.d.sync += step.eq(_Out.IDLE)
                            with m.If(head.last):
                                slots.free(m, cur)
            with m.Case(_Out.LOCAL):
                m.d.comb += [ax.rvalid.eq(1), ax.rid.eq(self._local.id),
                             ax.rresp.eq(self._local.resp), ax.rlast.eq(beats == 1),
                             data_out.eq(0)]
                with m.If(ax.rready):
                    m.d.sync += beats.eq(beats - 1)
                    with m.If(beats == 1):
                        m.d.sync += [step.eq(_Out.IDLE), self._local_valid.eq(0)]
            with m.Case(_Out.EXPIRE):
                m.d.comb += [ax.rvalid.eq(1), ax.rid.eq(rid), ax.rresp.eq(Resp.SLVERR),
                             ax.rlast.eq(beats == 1), data_out.eq(0)]
                with m.If(ax.rready):
                    m.d.sync += beats.eq(beats - 1)
                    with m.If(beats == 1):
                        m.d.sync += step.eq(_Out.IDLE)
                        slots.free(m, cur, expired=True)
            with m.Case(_Out.DROP):
                m.d.comb += rsp.ready.eq(1)
                with m.If(rsp.valid & rsp.p.last):
                    m.d.sync += step.eq(_Out.IDLE)
