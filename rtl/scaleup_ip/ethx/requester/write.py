# SPDX-License-Identifier: BSD-2-Clause
"""Requesting side, writes: AW and W from the GPU as WRITE records, WRITE_RESPs as B."""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, enum, stream
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ...counters import count_events
from ...model.ethx.bridge import Kind
from ..address import address_stage
from ..burst import beat_words, container_strobes, first_lane, next_address
from ..config import EthxConfig
from ..layout import (
    NODE_BITS,
    VC_BITS,
    WORD_BITS,
    Resp,
    WriteCount,
    axi4_write_signature,
    extension_layout,
    record_stream,
    request_header_layout,
    response_item_layout,
    user_layout,
    write_counts,
    write_resp_layout,
)
from ..slots import Slots, gen_bits

__all__ = ["ReqWrite", "PIECE_BYTES"]

#: Most data bytes of a WRITE record [README §2.1, ours]: INCR bursts are cut at this many
#: carried bytes; FIXED and WRAP bursts (at most 1 KB) never are.
PIECE_BYTES = 1024
_PIECE_WORDS = PIECE_BYTES // 8


def _job_layout(config):
    """An accepted AW on its way to the W side."""
    return data.StructLayout({
        "slot": range(config.outstanding), "local": 1, "id": config.id_width, "resp": 2,
        "addr": config.addr_width, "len": 8,
        "size": 3, "burst": 2, "node": NODE_BITS, "vc": VC_BITS, "order": 1,
        "attrs": extension_layout["attrs"].shape,
    })


def _piece_layout(config):
    """A piece whose words are all buffered, with its slot's generation."""
    return data.StructLayout({
        "slot": range(config.outstanding), "gen": gen_bits(config.outstanding),
        "addr": config.addr_width, "len": 8, "size": 3,
        "burst": 2, "node": NODE_BITS, "vc": VC_BITS, "order": 1, "strb": 1,
        "words": range(_PIECE_WORDS + 1), "attrs": extension_layout["attrs"].shape,
    })


class _Out(enum.Enum, shape=2):
    HEAD = 0
    EXT = 1
    DATA = 2
    STROBES = 3


class ReqWrite(ConfiguredComponent):
    """Carries the GPU's writes [README §5]: each AW with its W beats becomes one or more WRITE
    records (pieces of at most :data:`PIECE_BYTES` data bytes; header and extension word, for
    :class:`~scaleup_ip.ethx.compress.Compress`), and their WRITE_RESPs become one B.

    An outstanding write holds one of ``outstanding`` slots (the records' ``id``, with the
    slot's generation: :class:`~scaleup_ip.ethx.slots.Slots`). An AW waits
    while an outstanding write of its AXI ID is for another destination, while an acquire is
    outstanding (``acquiring``), while no slot is free, and, if it is a release, until every
    earlier write has its response. A burst the bridge cannot carry is answered SLVERR, one
    for a destination at or above ``sources`` DECERR, after its W beats, locally. A piece goes
    out once all its beats are buffered; its strobes are elided when they are exactly its
    beats' containers. The B carries the worst of the pieces' responses. With ``proxy``, a
    relaxed write is answered OKAY as soon as its beats are taken; a remote error then sets
    ``proxy_error``, which the next release's B returns as SLVERR and clears. A WRITE_RESP is
    taken only for the oldest outstanding write of its AXI ID, from its destination, in its
    generation (others: ``UNEXPECTED``, ``LATE``). A write not answered within
    ``completion_timeout`` clocks of its last piece is done SLVERR (answered early: as a
    remote error), counted ``TIMEOUTS``, its slot freed. An AW first
    spends a clock in the address stage (:func:`~scaleup_ip.ethx.address.address_stage`), where it
    is checked.

    Members
    -------
    axi : ``In(axi4_write_signature(addr_width, data_width, id_width, user bits))``
    req : ``Out(record_stream())``
        WRITE records, each with its extension word.
    rsp : ``In(stream.Signature(response_item_layout))``
        WRITE_RESP records.
    acquiring : ``In(1)``
    proxy_error : ``Out(1)``
    proxied : ``Out(1)``
        A write answered early is still outstanding: reads wait (:class:`ReqRead` ``hold``),
        so that a read after such a write's B sees it.
    counts : ``Out(write_counts)``
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "axi": In(axi4_write_signature(c.addr_width, c.data_width, c.id_width,
                                           user_layout(c).size)),
            "req": Out(record_stream()),
            "rsp": In(stream.Signature(response_item_layout)),
            "acquiring": In(1),
            "proxy_error": Out(1),
            "proxied": Out(1),
            "counts": Out(write_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        n = cfg.outstanding
        self._slots = Slots(n, cfg.id_width, cfg.completion_timeout)
        self._events = {k: Signal(name=f"ev_{k.name.lower()}") for k in WriteCount}
        m.submodules.jobs = jobs = SyncFIFO(width=_job_layout(cfg).size, depth=4)
        m.submodules.pieces = pieces = SyncFIFO(width=_piece_layout(cfg).size, depth=4)
        m.submodules.data = wdata = SyncFIFOBuffered(width=WORD_BITS, depth=2 * _PIECE_WORDS)
        m.submodules.strobes = wstrb = SyncFIFO(width=WORD_BITS, depth=2 * _PIECE_WORDS // 8)
        # Every B, in the order it became due: the W side's (early and local) and the
        # answers' (remote); the W side goes first when both are due in one clock.
        m.submodules.bq = bq = SyncFIFO(width=cfg.id_width + 2, depth=4)
        self._made = Array(Signal(3, name=f"made{k}") for k in range(n))
        self._answered = Array(Signal(3, name=f"answered{k}") for k in range(n))
        self._built = Signal(n)
        self._early = Signal(n)
        self._release = Signal(n)
        self._worst = Array(Signal(2, name=f"worst{k}") for k in range(n))
        self._aw(m, jobs)
        w_push = self._w(m, jobs, pieces, wdata, wstrb, bq)
        self._records(m, pieces, wdata, wstrb)
        self._answers(m, bq, w_push)
        m.d.comb += [self.axi.bvalid.eq(bq.r_rdy), self.axi.bid.eq(bq.r_data[2:]),
                     self.axi.bresp.eq(bq.r_data[:2]), bq.r_en.eq(self.axi.bready)]
        m.d.comb += self.proxied.eq((self._early & self._slots.live) != 0)
        count_events(m, self.counts, self._events)
        return m

    def _aw(self, m, jobs):
        """AWs checked and given a slot."""
        cfg, slots = self.config, self._slots
        a = address_stage(m, cfg, self.axi, "aw", "aw_stage")
        aw = a.p
        node, local = aw.user.node, aw.local
        waits, free, has_free = slots.admit(m, aw.id, node, local)
        release_wait = aw.user.order & (slots.live != 0)
        blocked = waits | self.acquiring | release_wait
        job = _job_layout(cfg)(jobs.w_data)
        m.d.comb += [job.slot.eq(free), job.local.eq(local), job.addr.eq(aw.addr),
                     job.id.eq(aw.id), job.resp.eq(Mux(aw.bad, Resp.SLVERR, Resp.DECERR)),
                     job.len.eq(aw.len), job.size.eq(aw.size), job.burst.eq(aw.burst),
                     job.node.eq(node), job.vc.eq(aw.user.vc), job.order.eq(aw.user.order),
                     job.attrs.prot.eq(aw.prot), job.attrs.cache.eq(aw.cache),
                     job.attrs.lock.eq(aw.lock), job.attrs.qos.eq(aw.qos),
                     job.attrs.region.eq(aw.region)]
        # A local answer takes no slot, but its ID's AXI order: it waits like a write does.
        go = a.valid & ~blocked & jobs.w_rdy & (local | has_free)
        m.d.comb += [a.ready.eq(go), jobs.w_en.eq(go)]
        with m.If(go & ~local):
            slots.take(m, free, aw.id, node)
            m.d.sync += [self._made[free].eq(0),
                         self._answered[free].eq(0), self._built.bit_select(free, 1).eq(0),
                         self._early.bit_select(free, 1).eq(0), self._worst[free].eq(0),
                         self._release.bit_select(free, 1).eq(aw.user.order)]
        m.d.comb += [self._events[WriteCount.LOCAL].eq(go & local),
                     self._events[WriteCount.RELEASES].eq(go & ~local & aw.user.order)]

    def _w(self, m, jobs, pieces, wdata, wstrb, bq):
        """W beats into pieces: words of the containers' lanes, 8 strobe bits a word."""
        cfg, ax = self.config, self.axi
        lanes = cfg.bus_words
        job = Signal(_job_layout(cfg))
        busy = Signal()
        addr = Signal(12)                   # the beat's address
        start = Signal(12)                  # the piece's first beat's
        beats = Signal(9)                   # beats in the piece so far
        left = Signal(9)                    # beats of the burst still to come
        word = Signal(4)                    # the next word of this beat
        words = Signal(range(_PIECE_WORDS + 1))     # the piece's words so far
        strobes = Signal(WORD_BITS)         # strobe bytes gathered for the next strobe word
        exact = Signal()                    # every strobe byte so far is its container's
        n = beat_words(job.size)
        lane_bits = max(1, (lanes - 1).bit_length())
        lane = (first_lane(addr, job.size, lanes) + word)[:lane_bits]
        w_lanes = data.ArrayLayout(WORD_BITS, lanes)(ax.wdata)
        s_lanes = data.ArrayLayout(8, lanes)(ax.wstrb)
        this_word = w_lanes[lane] if lanes > 1 else ax.wdata
        this_strb = s_lanes[lane] if lanes > 1 else ax.wstrb
        final = word + 1 == n                       # this word ends the beat
        last_beat = left == 1
        nxt = next_address(addr, job.size, job.len, job.burst)
        # A piece ends with the burst, or (INCR) where the next beat passes PIECE_BYTES
        # carried bytes: at address boundaries of PIECE_BYTES / max(8, 2**size) beats.
        shift = Mux(job.size >= 3, 10, 7 + job.size)
        cut = (job.burst == 1) & (((nxt ^ addr) >> shift) != 0)
        ends = final & (last_beat | cut)
        sbyte = words[:3]
        full_strobe = (sbyte == 7) | ends           # the strobe word is complete
        space = wdata.w_rdy & wstrb.w_rdy & pieces.w_rdy & bq.w_rdy
        take = busy & ~job.local & ax.wvalid & space
        drop = busy & job.local & ax.wvalid & (~last_beat | bq.w_rdy)
        m.d.comb += [ax.wready.eq((take & final) | drop),
                     wdata.w_data.eq(this_word), wdata.w_en.eq(take),
                     wstrb.w_data.eq(strobes | (this_strb << (sbyte * 8))),
                     wstrb.w_en.eq(take & full_strobe)]
        with m.If(take):
            m.d.sync += [word.eq(Mux(final, 0, word + 1)), words.eq(words + 1),
                         strobes.eq(Mux(full_strobe, 0, strobes | (this_strb << (sbyte * 8)))),
                         exact.eq(exact & (this_strb == container_strobes(addr, job.size)))]
            with m.If(final):
                m.d.sync += [addr.eq(nxt), left.eq(left - 1), beats.eq(beats + 1)]
            with m.If(ends):
                m.d.sync += [beats.eq(0), words.eq(0), exact.eq(1), strobes.eq(0),
                             start.eq(nxt)]
        piece = _piece_layout(cfg)(pieces.w_data)
        m.d.comb += [piece.slot.eq(job.slot), piece.gen.eq(self._slots.gens[job.slot]),
                     piece.addr.eq(Cat(start, job.addr[12:])),
                     piece.len.eq(beats), piece.size.eq(job.size), piece.burst.eq(job.burst),
                     piece.node.eq(job.node), piece.vc.eq(job.vc), piece.order.eq(job.order),
                     piece.strb.eq(~(exact & (this_strb == container_strobes(addr, job.size)))),
                     piece.words.eq(words + 1), piece.attrs.eq(job.attrs),
                     pieces.w_en.eq(take & ends)]
        with m.If(take & ends):
            m.d.sync += self._made[job.slot].eq(self._made[job.slot] + 1)
        # The burst's end: the slot is built; an early or local B is due.
        push = Signal()
        m.d.comb += push.eq((take & ends & last_beat & self.config.proxy & ~job.order)
                            | (drop & last_beat))
        m.d.comb += [bq.w_en.eq(push),
                     bq.w_data.eq(Cat(Mux(job.local, job.resp, Resp.OKAY), job.id))]
        with m.If(take & ends & last_beat):
            m.d.sync += [busy.eq(0), self._built.bit_select(job.slot, 1).eq(1)]
            if self.config.proxy:
                m.d.sync += self._early.bit_select(job.slot, 1).eq(~job.order)
        with m.If(drop):
            m.d.sync += left.eq(left - 1)
            with m.If(last_beat):
                m.d.sync += busy.eq(0)
        m.d.comb += jobs.r_en.eq(~busy)
        with m.If(~busy & jobs.r_rdy):
            j = _job_layout(cfg)(jobs.r_data)
            m.d.sync += [job.eq(j), busy.eq(1), addr.eq(j.addr[:12]), start.eq(j.addr[:12]),
                         left.eq(j.len + 1), beats.eq(0), word.eq(0), words.eq(0),
                         exact.eq(1), strobes.eq(0)]
            m.d.comb += self._events[WriteCount.WRITES].eq(~j.local)
        return push

    def _records(self, m, pieces, wdata, wstrb):
        """Each buffered piece as a WRITE record: header, extension, data, strobes."""
        cfg, req = self.config, self.req
        step = Signal(_Out)
        piece = Signal(_piece_layout(cfg))
        m.d.comb += piece.eq(pieces.r_data)
        left = Signal(range(_PIECE_WORDS + 1))
        strobe_words = (piece.words + 7) >> 3
        header = Signal(request_header_layout)
        ext = Signal(extension_layout)
        m.d.comb += [header.kind.eq(Kind.WRITE), header.ext.eq(1), header.strb.eq(piece.strb),
                     header.order.eq(piece.order),
                     header.id.eq(self._slots.record_id(piece.slot, piece.gen)),
                     header.len.eq(piece.len), header.size.eq(piece.size),
                     header.burst.eq(piece.burst), header.addr.eq(piece.addr[:32]),
                     ext.addr_hi.eq(piece.addr[32:] if cfg.addr_width > 32 else 0),
                     ext.attrs.eq(piece.attrs), req.p.node.eq(piece.node), req.p.vc.eq(piece.vc)]
        total = 2 + piece.words + Mux(piece.strb, strobe_words, 0)
        with m.Switch(step):
            with m.Case(_Out.HEAD):
                m.d.comb += [req.valid.eq(pieces.r_rdy), req.p.data.eq(header),
                             req.p.left.eq(total)]
                with m.If(pieces.r_rdy & req.ready):
                    m.d.sync += step.eq(_Out.EXT)
            with m.Case(_Out.EXT):
                m.d.comb += [req.valid.eq(1), req.p.data.eq(ext), req.p.left.eq(total - 1)]
                with m.If(req.ready):
                    m.d.sync += [step.eq(_Out.DATA), left.eq(piece.words)]
            with m.Case(_Out.DATA):
                m.d.comb += [req.valid.eq(wdata.r_rdy), req.p.data.eq(wdata.r_data),
                             req.p.last.eq((left == 1) & ~piece.strb), wdata.r_en.eq(req.ready)]
                with m.If(wdata.r_rdy & req.ready):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.d.sync += [step.eq(_Out.STROBES), left.eq(strobe_words)]
            with m.Case(_Out.STROBES):
                # Sent with ``strb``; elided ones are only taken from their queue.
                out = req.ready | ~piece.strb
                m.d.comb += [req.valid.eq(wstrb.r_rdy & piece.strb), req.p.data.eq(wstrb.r_data),
                             req.p.last.eq(left == 1), wstrb.r_en.eq(out)]
                with m.If(wstrb.r_rdy & out):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.d.sync += step.eq(_Out.HEAD)
                        m.d.comb += pieces.r_en.eq(1)

    def _answers(self, m, bq, w_push):
        """WRITE_RESP records: the slot's answers counted; the write done when all are in.
        A timed-out write is done at once, SLVERR (answered early: a proxy error)."""
        cfg, rsp, slots = self.config, self.rsp, self._slots
        h = write_resp_layout(rsp.p.word)
        is_resp = h.kind == Kind.WRITE_RESP
        slot, answers, late = slots.answers(h.id, rsp.p.node)
        expected = is_resp & answers & (self._answered[slot] != self._made[slot])
        worst = Mux(h.resp[1] & (~self._worst[slot][1] | (h.resp == Resp.DECERR)), h.resp,
                    self._worst[slot])
        done = self._built.bit_select(slot, 1) & (self._answered[slot] + 1 == self._made[slot])
        early = self._early.bit_select(slot, 1)
        release = self._release.bit_select(slot, 1)
        resp = Mux(release & self.proxy_error & (worst == Resp.OKAY), Resp.SLVERR, worst)
        needs_b = expected & done & ~early
        due, due_slot = slots.aging(m, slots.live & self._built)
        expire = due & ~w_push & bq.w_rdy
        ready = ~w_push & ~expire & (~needs_b | bq.w_rdy)
        m.d.comb += rsp.ready.eq(ready)
        with m.If(expire):
            self._done(m, due_slot, Resp.SLVERR, bq, expired=True)
        with m.If(rsp.valid & ready):
            with m.If(is_resp & late):
                m.d.comb += self._events[WriteCount.LATE].eq(1)
            with m.Elif(~expected):
                m.d.comb += self._events[WriteCount.UNEXPECTED].eq(1)
            with m.Else():
                m.d.sync += [self._answered[slot].eq(self._answered[slot] + 1),
                             self._worst[slot].eq(worst)]
                with m.If(done):
                    self._done(m, slot, resp, bq, worst=worst)

    def _done(self, m, slot, resp, bq, *, worst=None, expired=False):
        """Write ``slot`` is done with ``resp`` (``worst``: its answers'): its B, unless it
        had one early, whose error is then kept for the next release."""
        early = self._early.bit_select(slot, 1)
        release = self._release.bit_select(slot, 1)
        bad = Const(1) if expired else worst != Resp.OKAY
        self._slots.free(m, slot, expired=expired)
        m.d.comb += [bq.w_en.eq(~early), bq.w_data.eq(Cat(resp, self._slots.ids[slot]))]
        if expired:
            m.d.comb += self._events[WriteCount.TIMEOUTS].eq(1)
        if self.config.proxy:
            with m.If(early & bad):
                m.d.sync += self.proxy_error.eq(1)
                if not expired:
                    m.d.comb += self._events[WriteCount.PROXY_ERRORS].eq(1)
            with m.If(release):
                m.d.sync += self.proxy_error.eq(0)
