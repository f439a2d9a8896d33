# SPDX-License-Identifier: BSD-2-Clause
"""The UALink TL Tx address cache: each request's compression decision, as a stream stage."""

from types import SimpleNamespace

from amaranth import Cat, Module, Mux, Shape, Signal
from amaranth.lib import data, stream
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ..layout import (
    ACC_BITS,
    BEAT_BYTES,
    CACHE_LINE_LSB,
    CACHE_TAG_BITS,
    CACHE_TAG_LSB,
    CWAY_BITS,
    MAX_BEATS,
    AddrCacheConfig,
    CachePolicy,
    ReqCmd,
    TxCacheCount,
    cache_decision_layout,
    cache_entry_layout,
    cached_request_layout,
    compressed_request,
    request_layout,
    tx_cache_counts,
)
from ..logic import or_all

__all__ = ["TxAddrCache"]

#: Commands a compressed request can carry [Table 5-33], and their ReqAttr [Table 5-32 ATTR].
_READ_ATTR, _WRITE_ATTR = 0xFF, 0x00
_COMPRESSED_COMMANDS = (ReqCmd.READ, ReqCmd.WRITE, ReqCmd.WRITE_FULL)
#: ReqMetaData bits a compressed request carries; the rest must be zero [Table 5-31 METADATA].
_METADATA_CARRIED = Shape.cast(compressed_request.members["metadata"]).width
#: ReqLen counts doublewords: a whole number of 64-byte lines has these low bits all ones.
_LINE_DW_BITS = CACHE_LINE_LSB - 2
#: A compressed request stays within one 256-byte block [Table 5-32].
_BLOCK_LSB = (MAX_BEATS * BEAT_BYTES).bit_length() - 1


def _row_layout(ways):
    """One block-RAM word: a row's entries (valid + ReqAddr[56:20]) and its round-robin
    pointer."""
    entry = data.StructLayout({"valid": 1, "tag": CACHE_TAG_BITS})
    return data.StructLayout({"ways": data.ArrayLayout(entry, ways), "next": _bits(ways)})


def _bits(n):
    """Bits of a counter of ``0 .. n - 1``, at least one (a zero-width signal becomes a
    ``[-1:0]`` vector in the Verilog)."""
    return max(1, (n - 1).bit_length())


#: Tag bits per partial compare made at the block RAM's output (one LUT4: two bit pairs).
_PART_BITS = 2


def _early_layout(ways):
    """Compares made in the read stage, for the lookup stage: per way, whether each
    :data:`_PART_BITS` of the tag equal the row's as read; whether the tag is in the row as the
    operation one ahead found it (before its own change) and as the one two ahead left it;
    whether it is the tag of the operation one ahead."""
    parts = -(-CACHE_TAG_BITS // _PART_BITS)
    return data.StructLayout({"read": data.ArrayLayout(parts, ways), "ahead": ways,
                              "ahead2": ways, "same_tag": 1})


def _effect_layout(ways):
    """What the lookup stage did to its row, per way: loaded it, or invalidated it."""
    return data.StructLayout({"loaded": ways, "cleared": ways})


#: An operation in the pipeline, with what it needs of its own fields.
_stage_layout = data.StructLayout({
    "valid": 1,                 # an operation is held
    "inv": 1,                   # it is an invalidate (else a request)
    "req": request_layout,
    "acc": ACC_BITS,            # the row ID
    "way": CWAY_BITS,           # the invalidate's way
    "in_range": 1,              # the row exists (and, for an invalidate, the way)
    "cacheable": 1,             # a request meeting Table 5-32 apart from the hit
    "source": 3,                # one-hot: the row is as the operation one ahead left it,
                                # as the one two ahead left it, or as read
    "policy": CachePolicy,      # as it was when the operation (or this bubble) was accepted
    "restart": 1,               # the policy changed then: a new window before this operation
})


class TxAddrCache(ConfiguredComponent):
    """The Tx address cache [UALink 1.0 §5.5, §5.6.2]: decides, in order, whether each request
    goes compressed, uncompressed with CLOAD = 1, or uncompressed with CLOAD = 0, exactly as the
    golden model :class:`scaleup_ip.model.tl.addrcache.TxAddressCache` does.

    A request is *cacheable* when it meets Table 5-32 apart from the hit (Read, Write or
    WriteFull with its ReqAttr; 64 .. 256 bytes, 64-byte aligned, within a 256-byte block;
    ReqMetaData[7:3] = 0) and its row ID is below ``rows``. While the cache is in use (policy
    ALWAYS, or ADAPTIVE outside a backoff) a cacheable request that hits goes compressed with
    the way that hit; one that misses loads the victim way (the lowest invalid way, else the
    row's round-robin pointer, which then advances) and goes with CLOAD = 1. Adaptive windows
    and backoffs are counted as in the model. A value of 3 on ``policy`` acts as ALWAYS [ours].

    Operations are serialized: in each clock at most one of a clear, an invalidate and a
    request is accepted, in that priority, and each takes effect in acceptance order, so a
    model given the same operations in handshake order makes the same decisions. [ours] A
    clear waits (``clear_ready`` low) while the pipeline's first stage holds an operation, at
    most one clock when ``o`` is ready, since nothing new enters once ``clear_valid`` is high.
    ``policy`` is sampled in each clock the pipeline advances (``o.ready`` or not
    ``o.valid``): a change applies to the operations accepted from that clock on, and starts
    a new adaptive window with no backoff pending, entries kept.

    Each row is one block-RAM word holding, per way, a valid bit and ReqAddr[56:20], plus the
    round-robin pointer. The RAM is never reset: after reset, and after each accepted clear,
    ``busy`` is high for ``rows`` clocks while every row is written with zeros, and requests
    and invalidates wait. A reset leaves nothing of the state before it.

    Latency: a request accepted at clock ``t`` is on ``o`` from clock ``t + 3``: its row is read
    at ``t``, registered at ``t + 1`` (the block RAM's slow output feeds only that register and
    one level of partial tag compares), looked up and written back at ``t + 2``. Throughput:
    one operation per clock, including back to back on one row: the rows as the two operations
    ahead left them, which the RAM read missed, are kept in registers and used instead. ``o``
    is a register; while it is held (``o.valid`` and not ``o.ready``) the pipeline stalls and
    ``i``, ``invalidate`` and ``clear_ready`` are low: nothing is lost or repeated. ``counts``
    are registered: an operation accepted at ``t`` is counted from ``t + 4`` (a clear from
    ``t + 2``) when nothing stalls.

    Parameters
    ----------
    config : AddrCacheConfig

    Members
    -------
    i : In(stream.Signature(request_layout))
        Requests, already checked legal.
    o : Out(stream.Signature(cached_request_layout))
        The same requests in order, ``req`` unchanged, with their ``cache`` decision (``cway``
        0 when neither compressed nor loaded).
    invalidate : In(stream.Signature(cache_entry_layout))
        Invalidate one Tx entry; the Rx is not told [§5.5]. [ours] An entry the cache lacks
        (``acc >= rows`` or ``way >= ways``) is ignored and not counted.
    clear_valid : In(1), clear_ready : Out(1)
        Invalidate every entry and reset the round-robin pointers (a handshake, taken when
        both are high); backoff state and counters are kept. [ours] A clear while ``busy``
        restarts the walk. (A stream with a zero-width payload would give a ``[-1:0]`` port.)
    policy : In(CachePolicy)
        When the cache is used, a level.
    busy : Out(1)
        The clear walk runs.
    counts : Out(tx_cache_counts)
        Counters by :class:`~scaleup_ip.tl.layout.TxCacheCount`, 32 bits, wrapping, as the model's.

    Attributes
    ----------
    state : SimpleNamespace
        Set by :meth:`elaborate`: the internal state (the row RAM, the stages, the forwarded
        rows, the lookup's match vector, the walk's row), for the invariants of the lock-step
        proof (``tb/tl/test_cache_proof.py``). Not a port.
    """

    config_class = AddrCacheConfig

    def __init__(self, config):
        super().__init__(config, {
            "i": In(stream.Signature(request_layout)),
            "o": Out(stream.Signature(cached_request_layout)),
            "invalidate": In(stream.Signature(cache_entry_layout)),
            "clear_valid": In(1),
            "clear_ready": Out(1),
            "policy": In(CachePolicy),
            "busy": Out(1),
            "counts": Out(tx_cache_counts),
        })

    def elaborate(self, platform):
        # Three stages that advance together (``advance``), so order is kept by construction.
        # Accept: pick the operation, start its row's block-RAM read, and register it with what
        # needs only its own fields (the Table 5-32 check, whether its row exists, whether one
        # of the two operations ahead has the same row, the policy). Read: compare the tag with
        # the RAM's output (in pieces) and with the rows as the two operations ahead leave
        # them (their writes come too late for the RAM read); register the row as read, or as
        # the operation two ahead left it (``older``). Lookup: pick the row (``last`` if the
        # operation one ahead had it, else ``older``) and its compare, finish the compare,
        # decide, write the row back and register the decision.
        m = Module()
        cfg = self._config
        row = _row_layout(cfg.ways)
        m.submodules.rows = mem = Memory(shape=row, depth=max(2, cfg.rows), init=[])
        rd, wr = mem.read_port(), mem.write_port()       # the read sees the RAM before a write
        advance = Signal()
        s1, s2 = Signal(_stage_layout, name="s1"), Signal(_stage_layout, name="s2")
        last = Signal(row, name="last")     # the row as the last lookup left it
        older = Signal(row, name="older")   # ... as the one before left it, or as read
        cur = Signal(row)                   # the row as the operation in the lookup finds it
        early = Signal(_early_layout(cfg.ways))
        effect = Signal(_effect_layout(cfg.ways))
        m.d.comb += advance.eq(~self.o.valid | self.o.ready)
        clear = self._accept(m, advance, s1, s2, rd)
        self._read(m, advance, s1, s2, rd, early, last, cur)
        with m.If(advance):
            m.d.sync += [s2.eq(s1), older.eq(Mux(s1.source[1], last, rd.data))]
        new, decision, looked, hit, match = self._lookup(m, advance, s2, cur, last, older,
                                                         early, effect)
        entry = self._backoff(m, advance, s2, looked, hit)
        write = Signal()
        m.d.comb += write.eq(advance & s2.valid & s2.in_range)
        with m.If(advance):
            m.d.sync += [self.o.valid.eq(s2.valid & ~s2.inv),
                         self.o.p.req.eq(s2.req), self.o.p.cache.eq(decision),
                         last.eq(new)]
        walk_row = self._walk(m, clear, wr, write, s2.acc, new)
        self.state = SimpleNamespace(mem=mem, rd=rd, s1=s1, s2=s2, last=last, older=older,
                                     cur=cur, match=match, walk_row=walk_row)
        req = s2.valid & ~s2.inv
        self._count(m, clear=clear, entry=entry, hit=advance & req & looked & hit,
                    miss=advance & req & looked & ~hit,
                    uncompressed=advance & req & ~(looked & hit),
                    invalidation=write & s2.inv)
        return m

    def _accept(self, m, advance, s1, s2, rd):
        """Handshakes (clear > invalidate > request), the row read and the first stage's
        register; returns the clear taken."""
        cfg, inv, req = self._config, self.invalidate.p, self.i.p
        clear = Signal()
        nxt = Signal(_stage_layout)
        policy = Signal(CachePolicy)                     # as of the last clock that advanced
        acc = req.dst_acc if cfg.index == "DSTACCID" else req.src_acc
        m.d.comb += [
            self.clear_ready.eq(advance & ~s1.valid),
            self.invalidate.ready.eq(advance & ~self.busy & ~self.clear_valid),
            self.i.ready.eq(advance & ~self.busy & ~self.clear_valid & ~self.invalidate.valid),
            clear.eq(self.clear_valid & self.clear_ready),
            nxt.valid.eq(~self.busy & ~self.clear_valid & (self.invalidate.valid | self.i.valid)),
            nxt.inv.eq(self.invalidate.valid),
            nxt.req.eq(req),
            nxt.acc.eq(Mux(self.invalidate.valid, inv.acc, acc)),
            nxt.way.eq(inv.way),
            nxt.in_range.eq((nxt.acc < cfg.rows) & (~nxt.inv | (inv.way < cfg.ways))),
            nxt.cacheable.eq(_compressible(req) & (acc < cfg.rows)),
            nxt.policy.eq(self.policy),
            nxt.restart.eq(self.policy != policy),
            rd.addr.eq(nxt.acc),
            rd.en.eq(advance),
        ]
        after = [ahead.valid & ahead.in_range & (ahead.acc == nxt.acc) for ahead in (s1, s2)]
        m.d.comb += nxt.source.eq(Cat(after[0], ~after[0] & after[1], ~after[0] & ~after[1]))
        with m.If(advance):
            m.d.sync += [s1.eq(nxt), policy.eq(self.policy)]
        return clear

    def _read(self, m, advance, s1, s2, rd, early, last, cur):
        """The read stage's compares of the tag in ``s1``: against the RAM's output, two bits
        at a time (one LUT level after the RAM, whose output is slow), and whole against the
        rows the two operations ahead work on (registers, or close to them)."""
        ways = self._config.ways
        tag, tag2 = (s.req.addr[CACHE_TAG_LSB:] for s in (s1, s2))
        nxt = Signal.like(early)
        for w in range(ways):
            m.d.comb += [
                nxt.read[w].eq(Cat(rd.data.ways[w].tag[k:k + _PART_BITS] == tag[k:k + _PART_BITS]
                                   for k in range(0, CACHE_TAG_BITS, _PART_BITS))),
                nxt.ahead[w].eq(_matches(cur, tag, w)),
                nxt.ahead2[w].eq(_matches(last, tag, w)),
            ]
        m.d.comb += nxt.same_tag.eq(tag == tag2)
        with m.If(advance):
            m.d.sync += early.eq(nxt)

    def _lookup(self, m, advance, s2, cur, last, older, early, effect):
        """The row after the operation in ``s2`` and its decision; also whether the cache was
        looked up and whether it hit. ``last``: the row as the operation one ahead left it,
        ``effect``: what that did to it; ``older``: the row as the one two ahead left it, or
        as read."""
        ways = self._config.ways
        tag = s2.req.addr[CACHE_TAG_LSB:]
        pick = s2.source
        m.d.comb += cur.eq(Mux(pick[0], last, older))
        # Where the tag is, from the read stage's compares: in the row as the operation one
        # ahead left it (from how it found it and what it did), as the one two ahead left it,
        # or as read; only the last needs a few gates more, the AND of its partial compares.
        match = Cat(or_all([
            pick[0] & Mux(effect.loaded[w], early.same_tag,
                          early.ahead[w] & ~effect.cleared[w]),
            pick[1] & early.ahead2[w],
            pick[2] & older.ways[w].valid & early.read[w].all(),
        ]) for w in range(ways))
        hit = match.any()
        hit_way = _encode(match, ways)
        free = Cat(~cur.ways[w].valid for w in range(ways))
        victim = Signal(_bits(ways))
        m.d.comb += victim.eq(cur.next)
        for w in reversed(range(ways)):
            with m.If(free[w]):
                m.d.comb += victim.eq(w)
        looked = Signal()
        # What a miss would load is known before the compare ends; only ``hit`` comes late.
        may_load = s2.valid & ~s2.inv & looked
        new = Signal.like(cur)
        m.d.comb += new.eq(cur)
        with m.If(may_load & ~free.any() & ~hit):
            m.d.comb += new.next.eq(cur.next + 1 if ways > 1 else 0)
        for w in range(ways):
            loaded = may_load & (victim == w) & ~hit
            cleared = s2.valid & s2.inv & (s2.way == w)
            with m.If(cleared):
                m.d.comb += new.ways[w].valid.eq(0)
            with m.If(loaded):
                m.d.comb += [new.ways[w].valid.eq(1), new.ways[w].tag.eq(tag)]
            with m.If(advance):
                m.d.sync += [effect.loaded[w].eq(loaded), effect.cleared[w].eq(cleared)]
        decision = Signal(cache_decision_layout)
        m.d.comb += [
            decision.compressed.eq(looked & hit),
            decision.cload.eq(looked & ~hit),
            decision.cway.eq(Mux(looked, Mux(hit, hit_way, victim), 0)),
        ]
        return new, decision, looked, hit, match

    def _backoff(self, m, advance, s2, looked, hit):
        """Policy and adaptive backoff [ours, after §5.10]: drives ``looked`` (the request in
        ``s2`` uses the cache); returns the pulse of a backoff starting."""
        cfg = self._config
        seen = Signal(_bits(cfg.backoff_window))         # looked-up requests in this window
        hits = Signal(_bits(cfg.backoff_window))         # ... of which hit
        left = Signal(range(cfg.backoff_length + 1))     # cacheable requests still to skip
        skipping = Signal()                              # left != 0, as a register
        # The state as the operation finds it: a policy change before it restarts the window.
        seen_now, hits_now, left_now = (Mux(s2.restart, 0, v) for v in (seen, hits, left))
        skipping_now = skipping & ~s2.restart
        cacheable = s2.valid & ~s2.inv & s2.cacheable
        adaptive = s2.policy == CachePolicy.ADAPTIVE
        backing = adaptive & skipping_now
        closes = seen_now == cfg.backoff_window - 1
        poor = Mux(hit, hits_now + 1 < cfg.backoff_min_hits, hits_now < cfg.backoff_min_hits)
        entry = Signal()
        m.d.comb += [
            looked.eq(cacheable & (s2.policy != CachePolicy.NEVER) & ~backing),
            entry.eq(advance & looked & adaptive & closes & poor),
        ]
        with m.If(advance):
            m.d.sync += [seen.eq(seen_now), hits.eq(hits_now), left.eq(left_now),
                         skipping.eq(skipping_now)]
            with m.If(cacheable & backing):
                m.d.sync += [left.eq(left - 1), skipping.eq(left != 1)]
            with m.Elif(looked & adaptive):
                m.d.sync += [seen.eq(Mux(closes, 0, seen_now + 1)),
                             hits.eq(Mux(closes, 0, hits_now + hit))]
                with m.If(entry):
                    m.d.sync += [left.eq(cfg.backoff_length), skipping.eq(1)]
        return entry

    def _walk(self, m, clear, wr, write, acc, new):
        """The RAM's write port: the clear walk (``busy``) or the lookup stage's row; returns
        the row the walk writes next."""
        cfg = self._config
        busy = Signal(init=1)
        row = Signal(_bits(cfg.rows))
        m.d.comb += [
            self.busy.eq(busy),
            wr.en.eq(busy | write),
            wr.addr.eq(Mux(busy, row, acc)),
            wr.data.eq(Mux(busy, 0, new.as_value())),
        ]
        with m.If(clear):
            m.d.sync += [busy.eq(1), row.eq(0)]
        with m.Elif(busy):
            m.d.sync += row.eq(row + 1)
            with m.If(row == cfg.rows - 1):
                m.d.sync += busy.eq(0)
        return row

    def _count(self, m, **events):
        """``counts``: each event registered, then added; loads equal misses and compressed
        requests equal hits, so those share a register."""
        kinds = {TxCacheCount.HITS: "hit", TxCacheCount.MISSES: "miss",
                 TxCacheCount.UNCOMPRESSED: "uncompressed",
                 TxCacheCount.INVALIDATIONS: "invalidation", TxCacheCount.CLEARS: "clear",
                 TxCacheCount.BACKOFF_ENTRIES: "entry"}
        same = {TxCacheCount.LOADS: TxCacheCount.MISSES,
                TxCacheCount.COMPRESSED: TxCacheCount.HITS}
        tally = {}
        for kind, event in kinds.items():
            pulse = Signal(name=f"{kind.name.lower()}_event")
            tally[kind] = Signal(tx_cache_counts.elem_shape, name=kind.name.lower())
            m.d.sync += [pulse.eq(events[event]), tally[kind].eq(tally[kind] + pulse)]
        m.d.comb += [self.counts[kind].eq(tally[same.get(kind, kind)]) for kind in TxCacheCount]


def _compressible(req):
    """Table 5-32 apart from the hit and the row: the model's ``compressible``."""
    read = req.cmd == ReqCmd.READ.value
    lines = req.len[_LINE_DW_BITS:]                  # 64-byte lines - 1
    line = req.addr[CACHE_LINE_LSB:_BLOCK_LSB]       # the first line within its 256-byte block
    return (or_all([req.cmd == c.value for c in _COMPRESSED_COMMANDS])
            & (req.attr == Mux(read, _READ_ATTR, _WRITE_ATTR))
            & req.len[:_LINE_DW_BITS].all()
            & ~req.addr[:CACHE_LINE_LSB].any()
            & (line + lines < 1 << (_BLOCK_LSB - CACHE_LINE_LSB))
            & ~req.metadata[_METADATA_CARRIED:].any())


def _matches(row, tag, way):
    return row.ways[way].valid & (row.ways[way].tag == tag)


def _encode(onehot, ways):
    """The way of a one-hot (or empty: 0) match vector."""
    return Cat(Cat(onehot[w] for w in range(ways) if w >> b & 1).any()
               for b in range(max(1, (ways - 1).bit_length())))
