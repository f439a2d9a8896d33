"""The Tx and Rx address caches stay in lock-step [UALink 1.0 §5.6]: a proof, for every input
sequence of any length, on :class:`rtl.tl.tx_cache.TxAddrCache` against a reference in-order
receiver.

Property (:data:`ROWS` rows, :data:`WAYS` ways): whatever the requests, invalidates, clears,
policy changes, ``o.ready`` and resets, in every order and at every time, the Rx entry that
expands each compressed request leaving the Tx cache exists and holds that request's
ReqAddr[56:20]: the entry the Tx cache compressed it with.

The receiver is written here (§5.6.1, as an Rx cache works): on each ``o`` transfer with CLOAD
it loads ReqAddr[56:20] into (row ``dst_acc``, way ``cway``); its entries are never
invalidated; it resets with the Tx.

Inputs are free in every clock, every bit of every request (addresses, commands, lengths, row
IDs) among them. The proof is k-induction with SymbiYosys (:func:`sim.prove.prove_sby`): the
property alone is not inductive (an unreachable state, such as a Tx entry that the receiver
lacks, breaks it later), so it is proved together with invariants that tie the Tx cache's
internal state to the receiver's, each of which holds after a reset and is kept by every
clock:

1. The pipeline is empty while the rows are being walked; the stages' fields agree with each
   other (the one-hot ``source``, ``in_range`` and ``acc`` as the accept stage computes them).
2. The read stage's row source: the lookup stage has its row (``source[0]``), else ``last``
   (``source[1]``) or the RAM's output (``source[2]``) equals the row in the RAM, which the
   lookup stage does not write.
3. The lookup stage finds its row as it is in the RAM, and its match vector is the compare of
   its tag with that row.
4. A row never holds one tag in two valid ways.
5. Every valid entry of every walked row is in the receiver, as it will be once the request
   held on ``o`` (if a CLOAD) is taken.
6. A compressed request held on ``o`` names an Rx entry that holds its tag (the property, one
   clock early); a held CLOAD names an entry that exists.

The base case covers :data:`DEPTH` clocks from power-up (RAM zero, as ECP5 block RAM starts);
the whole proof takes about 12 s. Each of these breaks in the Tx cache makes it fail (checked by
hand when it was written): the row forwarded from two operations ahead replaced by the one
ahead's compare or by the RAM's stale read, a hit sent with the victim's way, a walk that skips
the last row. A twin with a receiver that drops CLOADs into way 1 must fail a bounded check of
the property alone: the check can fail.
"""

from amaranth import Cat, Elaboratable, Module, Mux, Signal, Value
from amaranth.hdl import Assert
from amaranth.lib.wiring import In

from rtl.tl.layout import CACHE_TAG_BITS, CACHE_TAG_LSB, AddrCacheConfig
from rtl.tl.tx_cache import TxAddrCache
from sim.prove import prove_sby

ROWS, WAYS = 2, 2
#: Small enough to prove, large enough to evict: backoffs start after a window of 2 lookups with
#: no hit and skip 2 requests.
CONFIG = AddrCacheConfig(ways=WAYS, rows=ROWS, backoff_window=2, backoff_min_hits=1,
                         backoff_length=2)
#: Clocks of the base case and of the induction hypothesis.
DEPTH = 3
#: Clocks from reset in which the broken twin must fail: the 2-clock walk, a CLOAD into way 1
#: and a hit on it, 3 clocks each through the cache.
FAIL_DEPTH = 12


class _Lockstep(Elaboratable):
    """The Tx cache with free inputs, the receiver, the property and the invariants."""

    def __init__(self, wrong_way=False, invariants=True):
        self.wrong_way, self.invariants = wrong_way, invariants
        self.dut = TxAddrCache(CONFIG)

    def inputs(self):
        """Every input port of the Tx cache."""
        return [Value.cast(value) for _, member, value in self.dut.signature.flatten(self.dut)
                if member.flow == In]

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        # Elaborated here, for its ``state``, and its RAM given read ports before that is.
        m.submodules.dut = dut.elaborate(platform)
        dut._MustUse__used = True                       # (which Amaranth cannot see)
        st = dut.state
        rows = []
        for r in range(ROWS):
            port = st.mem.read_port(domain="comb")
            m.d.comb += port.addr.eq(r)
            rows.append(port.data)
        rx = self._receiver(m, dut.o)
        m.d.comb += Assert(self._property(dut.o, rx), "a compressed request names its entry")
        if self.invariants:
            self._pipeline(m, dut, st, rows)
            self._receiver_holds(m, dut, st, rows, rx)
        return m

    def _receiver(self, m, o):
        """``rx[row][way]``: (loaded, tag) of the reference Rx cache fed by ``o``."""
        take = o.valid & o.ready
        rx = []
        for r in range(ROWS):
            rx.append([])
            for w in range(WAYS):
                loaded, tag = Signal(name=f"rx_loaded_{r}_{w}"), Signal(CACHE_TAG_BITS, name=f"rx_tag_{r}_{w}")
                if not (self.wrong_way and w == 1):
                    with m.If(take & o.p.cache.cload & _names(o, r, w)):
                        m.d.sync += [loaded.eq(1), tag.eq(_tag(o.p.req))]
                rx[r].append((loaded, tag))
        return rx

    @staticmethod
    def _property(o, rx):
        take = o.valid & o.ready
        return ~(take & o.p.cache.compressed) | _holds(o, rx)

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
    def _receiver_holds(m, dut, st, rows, rx):
        """Invariants 5 and 6."""
        o = dut.o
        for r, row in enumerate(rows):
            walked = ~dut.busy | (st.walk_row > r)
            for w in range(WAYS):
                entry = row.ways[w]
                pending = o.valid & o.p.cache.cload & _names(o, r, w)
                loaded, tag = rx[r][w]
                seen = (pending & (_tag(o.p.req) == entry.tag)) | (
                    ~pending & loaded & (tag == entry.tag))
                m.d.comb += Assert(~walked | ~entry.valid | seen, "5: the receiver has it")
        m.d.comb += [
            Assert(~(o.valid & o.p.cache.compressed) | _holds(o, rx), "6: held compressed"),
            Assert(~(o.valid & o.p.cache.cload)
                   | ((o.p.req.dst_acc < ROWS) & (o.p.cache.cway < WAYS)), "6: held CLOAD"),
        ]


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


def _holds(o, rx):
    """The entry ``o`` names exists, is loaded and holds its tag."""
    return Cat(_names(o, r, w) & loaded & (tag == _tag(o.p.req))
               for r in range(ROWS) for w, (loaded, tag) in enumerate(rx[r])).any()


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
    assert "a compressed request names its entry" in log
