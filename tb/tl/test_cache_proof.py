# SPDX-License-Identifier: BSD-2-Clause
"""The Tx and Rx address caches stay in lock-step [UALink 1.0 §5.6]: a proof, for every input
sequence of any length, on :class:`scaleup_ip.tl.tx.cache.TxAddrCache` feeding
:class:`scaleup_ip.tl.rx.cache.RxAddrCache`.

Property (:data:`ROWS` rows, :data:`WAYS` ways, both caches): whatever the requests,
invalidates, clears, policy changes, ``o.ready`` and resets, in every order and at every time,
the Rx entry that expands each compressed request leaving the Tx cache exists, is loaded and
holds that request's ReqAddr[56:20]: the entry the Tx cache compressed it with.

The link between them is an in-order receiver pipeline (as TlRx's, one request a clock): each
request taken from ``o`` that is compressed looks its entry up at once (row ``dst_acc``, way
``cway``) and has its answer two clocks later; each CLOAD loads its entry a clock after it is
taken, so that a compressed request right behind a CLOAD of its entry needs the Rx cache's
write-to-read bypass (§5.6.2). One
assumption: nothing is taken from ``o`` while the Rx cache walks its entries after reset (so
does the TL receiver: :class:`scaleup_ip.tl.rx.expand.RequestExpand` takes no request while its
cache is busy).

Inputs are free in every clock, every bit of every request (addresses, commands, lengths, row
IDs) among them. The proof is k-induction with SymbiYosys (:func:`sim.prove.prove_sby`): the
property alone is not inductive (an unreachable state, such as a Tx entry that the Rx cache
lacks, breaks it later), so it is proved together with invariants that tie the Tx cache's
internal state to the Rx cache's, each of which holds after a reset and is kept by every clock:

1. The Tx pipeline is empty while its rows are being walked; the stages' fields agree with
   each other (the one-hot ``source``, ``in_range`` and ``acc`` as the accept stage computes
   them).
2. The read stage's row source: the lookup stage has its row (``source[0]``), else ``last``
   (``source[1]``) or the RAM's output (``source[2]``) equals the row in the RAM, which the
   lookup stage does not write.
3. The lookup stage finds its row as it is in the RAM, and its match vector is the compare of
   its tag with that row.
4. A row never holds one tag in two valid ways.
5. Every valid entry of every walked Tx row is in the Rx cache, as it will be once the pending
   load and the request held on ``o`` (if a CLOAD) are loaded.
6. A compressed request held on ``o`` names an Rx entry that will hold its tag (the property,
   three clocks early); a held CLOAD names an entry that exists; none is both.
7. While the Rx cache walks, no load is pending and the only valid Tx entry is that of a CLOAD
   held on ``o``.

The base case covers :data:`DEPTH` clocks from power-up (RAMs zero, as ECP5 block RAM starts);
the whole proof takes about 15 s. Each of these breaks makes it fail (checked by hand when it
was written): in the Tx cache, the row forwarded from two operations ahead replaced by the one
ahead's compare or by the RAM's stale read, a walk that skips the last row; in the Rx cache, no
bypass. (An Rx walk that skips an entry does not break lock-step, and the proof passes: that the
Rx cache detects never-loaded entries is tested in ``tb/tl/rx/test_cache.py``.) A twin whose link
drops CLOADs into way 1 must fail a bounded check of the property alone: the check can fail.
"""

from amaranth import Cat, Elaboratable, Module, Mux, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.lib.wiring import In

from scaleup_ip.tl import AddrCacheConfig, CACHE_TAG_BITS, CACHE_TAG_LSB
from scaleup_ip.tl.rx import RxAddrCache
from scaleup_ip.tl.tx import TxAddrCache
from sim.prove import prove_sby

ROWS, WAYS = 2, 2
#: Small enough to prove, large enough to evict: backoffs start after a window of 2 lookups with
#: no hit and skip 2 requests.
CONFIG = AddrCacheConfig(ways=WAYS, rows=ROWS, backoff_window=2, backoff_min_hits=1,
                         backoff_length=2)
#: Clocks of the base case and of the induction hypothesis.
DEPTH = 3
#: Clocks from reset in which the broken twin must fail: the 4-clock Rx walk, a CLOAD into way 1
#: and a hit on it, 3 clocks each through the Tx cache, and the lookup.
FAIL_DEPTH = 12


class _Lockstep(Elaboratable):
    """The Tx cache with free inputs feeding the Rx cache in order, the property and the
    invariants; ``wrong_way`` drops every CLOAD into way 1 on its way to the Rx cache."""

    def __init__(self, wrong_way=False, invariants=True):
        self.wrong_way, self.invariants = wrong_way, invariants
        self.tx, self.rx = TxAddrCache(CONFIG), RxAddrCache(CONFIG)

    def inputs(self):
        """Every input port of the Tx cache."""
        return [Value.cast(value) for _, member, value in self.tx.signature.flatten(self.tx)
                if member.flow == In]

    def elaborate(self, platform):
        m = Module()
        tx, rx = self.tx, self.rx
        # Elaborated here, for their ``state``, and their RAMs given read ports before that is.
        for name, cache in (("tx", tx), ("rx", rx)):
            m.submodules[name] = cache.elaborate(platform)
            cache._MustUse__used = True                   # (which Amaranth cannot see)
        tx_rows = [_read(m, tx.state.mem, r) for r in range(ROWS)]
        rx_entries = [[rx.state.entry(_read(m, rx.state.mem, r * WAYS + w)) for w in range(WAYS)]
                      for r in range(ROWS)]
        load = self._link(m, tx.o, rx)
        if self.invariants:
            self._pipeline(m, tx, tx.state, tx_rows)
            self._receiver_holds(m, tx, tx_rows, rx, _after(tx.o, load, rx_entries))
        return m

    def _link(self, m, o, rx):
        """Each ``o`` transfer in order into the Rx cache, as a receiver pipeline would: a
        compressed request looks its entry up as it is taken, a CLOAD loads its entry a clock
        after it is taken (so that a lookup right behind it needs the Rx cache's bypass); two
        clocks after a lookup, its answer must be the request's tag. Returns the load
        register."""
        take = o.valid & o.ready
        req, cache = o.p.req, o.p.cache
        dropped = cache.cway == 1 if self.wrong_way else 0
        load = Signal.like(rx.load)
        looked, expect_first = Signal(), Signal(CACHE_TAG_BITS)
        pending, expect = Signal(), Signal(CACHE_TAG_BITS)
        m.d.sync += [
            load.valid.eq(take & cache.cload & ~dropped),
            load.acc.eq(req.dst_acc), load.way.eq(cache.cway), load.tag.eq(_tag(req)),
            looked.eq(take & cache.compressed), expect_first.eq(_tag(req)),
            pending.eq(looked), expect.eq(expect_first),
        ]
        m.d.comb += [
            Assume(~rx.busy | ~o.ready, "nothing is sent while the Rx cache walks"),
            rx.load.eq(load),
            rx.lookup.valid.eq(take & cache.compressed),
            rx.lookup.acc.eq(req.dst_acc), rx.lookup.way.eq(cache.cway),
            rx.advance.eq(1), rx.use.eq(pending),
            Assert(~pending | (rx.answer.loaded & (rx.answer.tag == expect)),
                   "the Rx entry expanding a compressed request holds its tag"),
        ]
        return load

    @staticmethod
    def _pipeline(m, dut, st, rows):
        """Invariants 1 to 4."""
        s1, s2 = st.s1, st.s2
        m.d.comb += Assert(~dut.busy | (~s1.valid & ~s2.valid), "1: empty while walking")
        for s in (s1, s2):
            in_range = (s.acc < ROWS) & (~s.inv | (s.way < WAYS))
            m.d.comb += [
                Assert(~s.valid | (s.source != 0), "1: a source"),
                Assert(~s.valid | ((s.source & (s.source - 1)) == 0), "1: one source"),
                Assert(~s.valid | (s.in_range == in_range), "1: in range"),
                Assert(~s.valid | s.inv | (s.acc == s.req.dst_acc), "1: row ID"),
                Assert(~s.valid | s.inv | ~s.cacheable | (s.acc < ROWS),
                       "1: cacheable rows exist"),
            ]
        on_row = s2.valid & s2.in_range & (s2.acc == s1.acc)
        live = s1.valid & s1.in_range
        m.d.comb += [
            Assert(~live | (s1.source[0] == on_row), "2: the lookup stage has the row"),
            Assert(~live | ~s1.source[1] | (st.last.as_value() == _row(rows, s1.acc)),
                   "2: last is the row"),
            Assert(~live | ~s1.source[2] | (st.rd.data.as_value() == _row(rows, s1.acc)),
                   "2: the RAM read is the row"),
        ]
        looks = s2.valid & s2.in_range
        m.d.comb += Assert(~looks | (st.cur.as_value() == _row(rows, s2.acc)),
                           "3: the lookup finds the row")
        for w in range(WAYS):
            entry = st.cur.ways[w]
            m.d.comb += Assert(~looks | s2.inv
                               | (st.match[w] == (entry.valid & (entry.tag == _tag(s2.req)))),
                               "3: the match vector")
        for row in rows:
            for a in range(WAYS):
                for b in range(a + 1, WAYS):
                    m.d.comb += Assert(~row.ways[a].valid | ~row.ways[b].valid
                                       | (row.ways[a].tag != row.ways[b].tag), "4: no twin tags")

    @staticmethod
    def _receiver_holds(m, tx, tx_rows, rx, after):
        """Invariants 5 to 7; ``after[row][way]``: what the Rx entry will be once the load
        register and the request held on ``o`` are taken, and whether only ``o`` sets it."""
        o = tx.o
        for r, row in enumerate(tx_rows):
            walked = ~tx.busy | (tx.state.walk_row > r)
            for w in range(WAYS):
                entry = row.ways[w]
                loaded, tag, by_o = after[r][w]
                m.d.comb += [
                    Assert(~walked | ~entry.valid | (loaded & (tag == entry.tag)),
                           "5: the Rx cache has it"),
                    Assert(~rx.busy | ~walked | ~entry.valid | by_o, "7: only the held CLOAD"),
                ]
        m.d.comb += [
            Assert(~(o.valid & o.p.cache.compressed) | (~rx.busy & _holds(o, after)),
                   "6: held compressed"),
            Assert(~(o.valid & o.p.cache.cload)
                   | ((o.p.req.dst_acc < ROWS) & (o.p.cache.cway < WAYS)), "6: held CLOAD"),
            Assert(~(o.valid & o.p.cache.cload & o.p.cache.compressed), "6: CLOAD or compressed"),
            Assert(~rx.busy | ~rx.load.valid, "7: no load while the Rx cache walks"),
        ]


def _after(o, load, rx_entries):
    """Per Rx entry: ``(loaded, tag, by_o)`` once the load register (a clock later) and then
    the CLOAD held on ``o`` are loaded; ``by_o``: the held CLOAD loads it."""
    after = []
    for r in range(ROWS):
        after.append([])
        for w in range(WAYS):
            by_o = o.valid & o.p.cache.cload & _names(o, r, w)
            by_load = load.valid & (load.acc == r) & (load.way == w)
            entry = rx_entries[r][w]
            after[r].append((by_o | by_load | entry.loaded,
                             Mux(by_o, _tag(o.p.req), Mux(by_load, load.tag, entry.tag)), by_o))
    return after


def _read(m, mem, address):
    """A RAM's word ``address``, as it is now (a new asynchronous read port)."""
    port = mem.read_port(domain="comb")
    m.d.comb += port.addr.eq(address)
    return port.data


def _tag(req):
    return req.addr[CACHE_TAG_LSB:]


def _names(o, r, w):
    return (o.p.req.dst_acc == r) & (o.p.cache.cway == w)


def _row(rows, acc):
    """The RAM's row ``acc`` (< :data:`ROWS`), as a value."""
    out = rows[0].as_value()
    for r in range(1, ROWS):
        out = Mux(acc == r, rows[r].as_value(), out)
    return out


def _holds(o, after):
    """The Rx entry ``o`` names exists and will hold its tag (``after``: :func:`_after`)."""
    return Cat(_names(o, r, w) & loaded & (tag == _tag(o.p.req))
               for r in range(ROWS) for w, (loaded, tag, _) in enumerate(after[r])).any()


def test_cache_lockstep_proof(tmp_path):
    """For every input sequence: each compressed request the Tx cache issues names a receiver
    entry loaded by an earlier CLOAD with its own ReqAddr[56:20]."""
    proof = _Lockstep()
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, DEPTH)
    assert proved, log[-3000:]


def test_cache_lockstep_proof_can_fail(tmp_path):
    """With a receiver that drops CLOADs into way 1, a bounded check of the property alone finds
    a run from reset that breaks it (a real counterexample, not an induction failure)."""
    proof = _Lockstep(wrong_way=True, invariants=False)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, FAIL_DEPTH, mode="bmc")
    assert not proved
    assert "the Rx entry expanding a compressed request holds its tag" in log
