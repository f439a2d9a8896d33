"""The Tx and Rx address caches stay in lock-step [UALink 1.0 §5.6]: a formal check of
:class:`rtl.tl.tx_cache.TxAddrCache` against a reference in-order receiver.

Property: with 2 rows and 2 ways, for every sequence of inputs (requests, invalidates, clears,
policy changes, ``o.ready``, resets) the Rx entry that expands each compressed request leaving
the Tx cache holds that request's ReqAddr[56:20]: the Tx entry that compressed it.

The receiver is written here (§5.6.1, as an Rx cache works): on each ``o`` transfer with CLOAD
it loads ReqAddr[56:20] into (row ``dst_acc``, way ``cway``); its entries are never
invalidated; it resets with the Tx. On each ``o`` transfer that is compressed, the entry
(``dst_acc``, ``cway``) must exist (row < 2, way < 2), be loaded, and equal the request's tag.

Bounded, not unbounded: Yosys's ``sat`` checks every run of :data:`DEPTH` clocks from reset
(BMC, :func:`sim.prove.prove_bounded`). After the reset clock and the 2-clock reset walk,
operations are accepted from clock 4 and leave 3 clocks later, so the last checked transfer
ends a run of up to 8 operations accepted back to back (or fewer, with stalls, invalidates,
clears and policy changes between them): enough for loads into both ways, a hit on each,
an eviction, and a hit right behind the CLOAD it depends on, one or two clocks ahead (the
``last``/``last2`` forwarding). Not checked: longer histories (adaptive windows that close
many times, walks after several clears). An unbounded proof (k-induction) would need
invariants on the pipeline registers and the RAM rows. The depth is what this SAT solver
(MiniSat in WebAssembly) does in under a minute: 12 clocks take about 13 s, 14 about 50 s,
16 more than 5 minutes.

Narrowed inputs, none losing generality for this property:

- ReqAddr[56:20] takes 4 values (2 free bits, at tag bits 0 and 36; the rest 0). The cache
  only compares tags for equality, so any run is mirrored by one over 4 tags as long as a row
  never needs more than 4 distinct tags in view (2 ways, plus the requests in flight): enough
  for hits, misses and evictions of either way.
- Every request is a 64-byte Read at offset 0 within its 1 MB region, cacheable or not by
  ReqAttr (one free bit): the other Table 5-32 conditions only decide cacheable or not, which
  that bit already covers, and the other fields are carried through untouched.
- ``dst_acc`` takes 0 .. 3: the two rows and two IDs the cache lacks (never compressed).
"""

from amaranth import Cat, Const, Module, Mux, Signal

from rtl.tl.layout import CACHE_TAG_BITS, CACHE_TAG_LSB, AddrCacheConfig, ReqCmd
from rtl.tl.tx_cache import TxAddrCache
from sim.prove import prove_bounded

#: Small enough to prove, large enough to evict: 2 rows of 2 ways; backoffs start after a
#: window of 2 lookups with no hit and skip 2 requests.
CONFIG = AddrCacheConfig(ways=2, rows=2, backoff_window=2, backoff_min_hits=1,
                         backoff_length=2)
#: Clocks checked from reset.
DEPTH = 14


def _drive(m, dut):
    """Free, narrowed inputs (see the module notes) into ``dut``; returns them."""
    i_valid, cacheable, dst, tag = Signal(), Signal(), Signal(2), Signal(2)
    inv_valid, inv_acc, inv_way = Signal(), Signal(2), Signal(2)
    clear, policy, o_ready = Signal(), Signal(2), Signal()
    req = dut.i.p
    m.d.comb += [
        dut.i.valid.eq(i_valid),
        req.cmd.eq(ReqCmd.READ.value),
        req.attr.eq(Mux(cacheable, 0xFF, 0x00)),       # a Read is cacheable with 0xFF only
        req.len.eq(15),                                # 16 doublewords: 64 bytes
        req.addr.eq(Cat(Const(0, CACHE_TAG_LSB), tag[0], Const(0, CACHE_TAG_BITS - 2), tag[1])),
        req.dst_acc.eq(dst),
        dut.invalidate.valid.eq(inv_valid),
        dut.invalidate.p.acc.eq(inv_acc),
        dut.invalidate.p.way.eq(inv_way),
        dut.clear_valid.eq(clear),
        dut.policy.eq(policy),
        dut.o.ready.eq(o_ready),
    ]
    return [i_valid, cacheable, dst, tag, inv_valid, inv_acc, inv_way, clear, policy, o_ready]


def _receiver(m, o, wrong_way):
    """The reference Rx cache fed by ``o``; returns whether the entry a compressed transfer
    names holds its tag. ``wrong_way`` drops every CLOAD into way 1 (a broken receiver)."""
    take = o.valid & o.ready
    acc, way, tag = o.p.req.dst_acc, o.p.cache.cway, o.p.req.addr[CACHE_TAG_LSB:]
    found = []
    for row in range(CONFIG.rows):
        for w in range(CONFIG.ways):
            loaded = Signal(name=f"rx_loaded_{row}_{w}")
            entry = Signal(CACHE_TAG_BITS, name=f"rx_tag_{row}_{w}")
            named = (acc == row) & (way == w)
            if not (wrong_way and w == 1):
                with m.If(take & o.p.cache.cload & named):
                    m.d.sync += [loaded.eq(1), entry.eq(tag)]
            found.append(named & loaded & (entry == tag))
    return ~(take & o.p.cache.compressed) | Cat(*found).any()


def _lockstep(wrong_way=False):
    """The Tx cache, free inputs and the receiver; ``holds`` is the property in each clock."""
    m = Module()
    m.submodules.dut = dut = TxAddrCache(CONFIG)
    inputs = _drive(m, dut)
    holds = Signal()
    m.d.comb += holds.eq(_receiver(m, dut.o, wrong_way))
    return m, inputs, holds


def test_cache_lockstep_proof(tmp_path):
    """For every run of :data:`DEPTH` clocks from reset: each compressed request the Tx cache issues
    names a receiver entry loaded by an earlier CLOAD with its own ReqAddr[56:20]."""
    m, inputs, holds = _lockstep()
    proved, log = prove_bounded(m, inputs, holds, tmp_path, DEPTH)
    assert proved, log[-3000:]


def test_cache_lockstep_proof_can_fail(tmp_path):
    """The same check with a receiver that drops CLOADs into way 1 finds a counterexample."""
    m, inputs, holds = _lockstep(wrong_way=True)
    proved, _ = prove_bounded(m, inputs, holds, tmp_path, DEPTH)
    assert not proved
