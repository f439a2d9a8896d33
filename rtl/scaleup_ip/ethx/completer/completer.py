# SPDX-License-Identifier: BSD-2-Clause
"""Serving side of the bridge: requests from other nodes done on local memory over AXI4."""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, enum, stream
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out, connect, flipped

from ...config import ConfiguredComponent
from ...counters import count_events
from ...skid import register_stage
from ..burst import illegal, record_words
from .read import CompRead, read_job_layout
from .write import CompWrite, write_answer_layout, write_job_layout
from ..config import EthxConfig
from ..layout import (
    WORD_BITS,
    CompleterCount,
    axi4_signature,
    completer_counts,
    node_index,
    record_stream,
    request_item_layout,
    window_layout,
)
from ..merge import RecordMerge

__all__ = ["DATA_WORDS", "Completer"]

#: Data words of write records the serving side buffers: two 1 KB records [ours].
DATA_WORDS = 256


#: A request item with the reasons to refuse it, worked out as it enters (README §4).
_checked_layout = data.StructLayout({"item": request_item_layout, "stale": 1, "denied": 1,
                                     "bad": 1})


class _Step(enum.Enum, shape=2):
    HEAD = 0        # the next item is a request's header
    DATA = 1        # ... a WRITE's data or strobe word
    DONE = 2        # the WRITE's words are in: its job goes to the W side


class Completer(ConfiguredComponent):
    """Does the requests of other nodes on local memory (an AXI4 manager port) and answers each
    with response records, in request order per direction [README §4].

    A request is refused, without touching memory, and answered DECERR when it is ``stale`` or
    ``foreign`` (counted STALE), when no enabled window open to its source holds its address
    (DENIED), or when it breaks an AXI4 rule or is a write longer than the write buffer
    (ILLEGAL). Memory sees one AXI ID, so it answers in order, and refused requests keep their
    place in that order. At most ``outstanding`` reads and ``outstanding`` writes are in flight.
    A write's AW goes out with its header; its W beats once all its words are buffered.
    Each request item first spends a clock in a register where its refusal checks (window
    compares, burst rules) are made. Throughput: one item per clock.

    Members
    -------
    req : ``In(stream.Signature(request_item_layout))``
        Requests from :class:`~scaleup_ip.ethx.parse.RecordParse`.
    mem : ``Out(axi4_signature(addr_width, data_width, 1))``
        The AXI4 manager port toward local memory.
    rsp : ``Out(record_stream())``
        READ_DATA and WRITE_RESP records, ``node`` the requester's.
    windows : ``In(data.ArrayLayout(window_layout(config), windows))``
        The access windows; a change of ``size_log2`` takes effect a clock later.
    counts : ``Out(completer_counts)``
        :class:`~scaleup_ip.ethx.layout.CompleterCount` counters.
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "req": In(stream.Signature(request_item_layout)),
            "mem": Out(axi4_signature(c.addr_width, c.data_width, 1)),
            "rsp": Out(record_stream()),
            "windows": In(data.ArrayLayout(window_layout(c), c.windows)),
            "counts": Out(completer_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        mem = self.mem
        m.submodules.reads = reads = CompRead(cfg)
        m.submodules.writes = writes = CompWrite(cfg)
        m.submodules.merge = merge = RecordMerge(cfg, 2)
        connect(m, reads.rsp, merge.i0)
        connect(m, writes.rsp, merge.i1)
        connect(m, merge.o, flipped(self.rsp))
        m.submodules.read_jobs = read_jobs = SyncFIFO(width=read_job_layout.size,
                                                      depth=cfg.outstanding)
        m.d.comb += [reads.job.payload.eq(read_jobs.r_data), reads.job.valid.eq(read_jobs.r_rdy),
                     read_jobs.r_en.eq(reads.job.ready)]
        m.submodules.answers = answers = SyncFIFO(width=write_answer_layout.size,
                                                  depth=cfg.outstanding)
        m.d.comb += [writes.answer.payload.eq(answers.r_data),
                     writes.answer.valid.eq(answers.r_rdy), answers.r_en.eq(writes.answer.ready)]
        m.submodules.write_jobs = write_jobs = SyncFIFO(width=write_job_layout(cfg).size,
                                                        depth=cfg.outstanding)
        m.d.comb += [writes.job.payload.eq(write_jobs.r_data), writes.job.valid.eq(write_jobs.r_rdy),
                     write_jobs.r_en.eq(writes.job.ready)]
        m.submodules.data = wdata = SyncFIFOBuffered(width=WORD_BITS, depth=DATA_WORDS)
        m.submodules.strobes = wstrb = SyncFIFO(width=WORD_BITS, depth=DATA_WORDS // 8)
        for fifo, port in ((wdata, writes.data), (wstrb, writes.strobes)):
            m.d.comb += [port.payload.eq(fifo.r_data), port.valid.eq(fifo.r_rdy),
                         fifo.r_en.eq(port.ready)]
        m.d.comb += [mem.wdata.eq(writes.wdata), mem.wstrb.eq(writes.wstrb),
                     mem.wlast.eq(writes.wlast), mem.wvalid.eq(writes.wvalid),
                     writes.wready.eq(mem.wready), writes.bresp.eq(mem.bresp),
                     writes.bvalid.eq(mem.bvalid), mem.bready.eq(writes.bready),
                     reads.rdata.eq(mem.rdata), reads.rresp.eq(mem.rresp),
                     reads.rlast.eq(mem.rlast), reads.rvalid.eq(mem.rvalid),
                     mem.rready.eq(reads.rready)]
        self._intake(m, read_jobs, answers, write_jobs, wdata, wstrb)
        events = self._events
        events[CompleterCount.MEMORY_ERRORS] = writes.errors | reads.errors
        count_events(m, self.counts, events)
        return m

    def _checked(self, m):
        """The request items, each registered with its refusal checks (a clock later)."""
        cfg, i = self.config, self.req
        o = stream.Signature(_checked_layout).create(path=("checked",))
        head = i.payload.head
        allowed = Const(0, 1)
        for k in range(cfg.windows):
            w = self.windows[k]
            size = Mux(w.size_log2 < 12, 12, w.size_log2)
            # The window's address mask, registered: a new size applies a clock later; from
            # reset, all ones (only the base itself, which every size holds).
            mask = Signal(cfg.addr_width, name=f"mask{k}", init=(1 << cfg.addr_width) - 1)
            m.d.sync += mask.eq(~((Const(1, cfg.addr_width + 1) << size) - 1)[:cfg.addr_width])
            inside = (((head.addr[:cfg.addr_width] ^ w.base) & mask) == 0)
            allowed = allowed | (w.enable & inside &
                                 w.sources.bit_select(node_index(head.node, cfg.sources), 1))
        stale = head.stale | head.foreign
        too_wide = head.addr[cfg.addr_width:] != 0 if cfg.addr_width < 64 else Const(0, 1)
        too_long = head.write & (record_words(head.len, head.size) > DATA_WORDS)
        bad = illegal(head.addr, head.len, head.size, head.burst,
                      bus_bytes=cfg.data_width // 8) | too_wide | too_long
        with m.If(register_stage(m, i, o)):
            m.d.sync += [o.p.item.eq(i.payload), o.p.stale.eq(stale),
                         o.p.denied.eq(~stale & ~allowed), o.p.bad.eq(~stale & allowed & bad)]
        return o

    def _intake(self, m, read_jobs, answers, write_jobs, wdata, wstrb):
        cfg, mem = self.config, self.mem
        checked = self._checked(m)
        req, item = checked, checked.p.item
        head = item.head
        step = Signal(_Step)
        stale, denied, bad = checked.p.stale, checked.p.denied, checked.p.bad
        refuse = stale | denied | bad
        keep = Signal()                          # the WRITE being taken is done in memory
        job = Signal(write_job_layout(cfg))
        events = {kind: Signal(name=f"ev_{kind.name.lower()}") for kind in CompleterCount}
        self._events = events
        for ch in ("ar", "aw"):
            m.d.comb += [getattr(mem, f"{ch}addr").eq(head.addr), getattr(mem, f"{ch}len").eq(head.len),
                         getattr(mem, f"{ch}size").eq(head.size),
                         getattr(mem, f"{ch}burst").eq(head.burst),
                         getattr(mem, f"{ch}lock").eq(head.attrs.lock),
                         getattr(mem, f"{ch}cache").eq(head.attrs.cache),
                         getattr(mem, f"{ch}prot").eq(head.attrs.prot),
                         getattr(mem, f"{ch}qos").eq(head.attrs.qos),
                         getattr(mem, f"{ch}region").eq(head.attrs.region)]
        rjob = read_job_layout(read_jobs.w_data)
        m.d.comb += [rjob.addr.eq(head.addr[:12]), rjob.len.eq(head.len), rjob.size.eq(head.size),
                     rjob.burst.eq(head.burst), rjob.id.eq(head.id), rjob.node.eq(head.node),
                     rjob.vc.eq(head.vc), rjob.refuse.eq(refuse)]
        answer = write_answer_layout(answers.w_data)
        m.d.comb += [answer.id.eq(head.id), answer.node.eq(head.node), answer.vc.eq(head.vc),
                     answer.refuse.eq(refuse), write_jobs.w_data.eq(job)]
        took = Signal()
        with m.Switch(step):
            with m.Case(_Step.HEAD):
                with m.If(req.valid & ~head.write):
                    go = read_jobs.w_rdy & (refuse | mem.arready)
                    m.d.comb += [mem.arvalid.eq(req.valid & ~refuse & read_jobs.w_rdy),
                                 read_jobs.w_en.eq(go), req.ready.eq(go), took.eq(go),
                                 events[CompleterCount.READS].eq(go & ~refuse)]
                with m.Elif(req.valid):
                    go = answers.w_rdy & write_jobs.w_rdy & (refuse | mem.awready)
                    m.d.comb += [mem.awvalid.eq(~refuse & answers.w_rdy & write_jobs.w_rdy),
                                 answers.w_en.eq(go), req.ready.eq(go), took.eq(go),
                                 events[CompleterCount.WRITES].eq(go & ~refuse)]
                    with m.If(go):
                        m.d.sync += [keep.eq(~refuse), step.eq(_Step.DATA),
                                     job.addr.eq(head.addr[:12]), job.len.eq(head.len),
                                     job.size.eq(head.size), job.burst.eq(head.burst),
                                     job.strb.eq(head.strb)]
                m.d.comb += [events[CompleterCount.STALE].eq(took & stale),
                             events[CompleterCount.DENIED].eq(took & denied),
                             events[CompleterCount.ILLEGAL].eq(took & bad)]
            with m.Case(_Step.DATA):
                word = item.word
                fifo_ok = Mux(item.strobe, wstrb.w_rdy, wdata.w_rdy) | ~keep
                m.d.comb += [wdata.w_data.eq(word), wstrb.w_data.eq(word),
                             wdata.w_en.eq(req.valid & keep & ~item.strobe & fifo_ok),
                             wstrb.w_en.eq(req.valid & keep & item.strobe & fifo_ok),
                             req.ready.eq(fifo_ok)]
                with m.If(req.valid & fifo_ok & item.last):
                    m.d.sync += step.eq(Mux(keep, _Step.DONE, _Step.HEAD))
            with m.Case(_Step.DONE):
                m.d.comb += write_jobs.w_en.eq(1)
                with m.If(write_jobs.w_rdy):
                    m.d.sync += step.eq(_Step.HEAD)
