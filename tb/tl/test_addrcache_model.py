# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the UALink TL address-cache golden model rtl/scaleup_ip/model/tl/addrcache.py alone (no simulator).

The Table 5-32 conditions one at a time; hits, misses, CLOAD and the round-robin replacement on
streaming, interleaved and thrashing patterns; 1024 rows; a random lock-step run of a Tx cache and
its peer Rx cache through real control half-flits (fields packed with
rtl/scaleup_ip/model/tl/flit.py), and the same run with a deliberately broken Tx to show that the
check can fail; the write-to-read bypass inside one control half-flit (Table 5-23); the adaptive
backoff; parameter checks.

Random tests print their seed; ``SEED=n`` reproduces a run.
"""


import pytest

from scaleup_ip.model.tl.addrcache import (
    COMPRESSIBLE_LENGTHS,
    POLICIES,
    TAG_BITS,
    AddrCacheConfig,
    Decision,
    RxAddressCache,
    TxAddressCache,
    compressed_addr,
    compressible,
    rebuild,
    tag_of,
)
from scaleup_ip.model.tl.flit import (
    ATOMIC_NR,
    ATOMIC_R,
    COMPRESSED_COMMANDS,
    HALF_SECTORS,
    READ,
    WRITE,
    WRITE_FULL,
    WRITE_MESSAGE,
    FType,
    decode_field,
    encode_field,
    parse_control,
    place,
)

MB = 1 << 20
LEN64, LEN128, LEN192, LEN256 = 15, 31, 47, 63          # ReqLen of 64 .. 256 bytes
CMD_CODE = {cmd: code for code, cmd in COMPRESSED_COMMANDS.items()}
PLAIN = Decision(compressed=False, cload=False, way=None)


def read(tx, acc, addr, length=LEN64):
    """A compressible read request of ``length`` at ``addr`` to row ``acc``."""
    return tx.request(acc, READ, 0xFF, length, addr, 0)


def kind(d):
    """One letter per decision: C compressed, L CLOAD = 1, P plain (CLOAD = 0)."""
    return "C" if d.compressed else "L" if d.cload else "P"


# --- Address helpers and Table 5-32 ---------------------------------------------------------------

def test_address_helpers():
    addr = 0x1ABCDE << 20 | 0x2A5 << 6
    assert (tag_of(addr), compressed_addr(addr)) == (0x1ABCDE, 0x2A5)
    assert rebuild(0x1ABCDE, 0x2A5) == addr
    top = (1 << 57) - 64
    assert (tag_of(top), compressed_addr(top)) == ((1 << 37) - 1, (1 << 14) - 1)
    assert rebuild(tag_of(top), compressed_addr(top)) == top
    assert tag_of(addr | 0x3C) == 0x1ABCDE and compressed_addr(addr | 0x3C) == 0x2A5
    for bad in (lambda: tag_of(1 << 57), lambda: compressed_addr(2), lambda: rebuild(1 << 37, 0),
                lambda: rebuild(0, 1 << 14), lambda: tag_of(-4)):
        with pytest.raises(ValueError):
            bad()


BASE = {"cmd": READ, "attr": 0xFF, "length": LEN64, "addr": 5 * MB + 0x40, "metadata": 0}

#: Compressible requests, each a small change of BASE.
GOOD = {
    "read": {},
    "write": {"cmd": WRITE, "attr": 0x00},
    "write_full": {"cmd": WRITE_FULL, "attr": 0x00},
    "len128": {"length": LEN128, "addr": 5 * MB + 0x80},
    "len192": {"length": LEN192},
    "len256": {"length": LEN256, "addr": 5 * MB},
    "metadata_2_0": {"metadata": 0x07},
    "metadata_bit2": {"metadata": 0x04},    # Table 5-31 [7:3]=0, not Table 5-32's [7:2] ([A])
    "top_of_memory": {"addr": (1 << 57) - 64},
}

#: Requests each failing exactly one condition of Table 5-32.
BAD = {
    "cmd_atomic_r": {"cmd": ATOMIC_R},
    "cmd_atomic_nr": {"cmd": ATOMIC_NR},
    "cmd_write_message": {"cmd": WRITE_MESSAGE, "attr": 0x00},
    "cmd_vendor_read": {"cmd": 0x08},
    "cmd_vendor_write": {"cmd": 0x2C, "attr": 0x00},
    "attr_read_fe": {"attr": 0xFE},
    "attr_read_00": {"attr": 0x00},
    "attr_write_01": {"cmd": WRITE, "attr": 0x01},
    "attr_write_ff": {"cmd": WRITE, "attr": 0xFF},
    "attr_write_full_80": {"cmd": WRITE_FULL, "attr": 0x80},
    "len_4": {"length": 0},
    "len_32": {"length": 7},
    "len_60": {"length": LEN64 - 1},
    "len_68": {"length": LEN64 + 1},
    "len_252": {"length": LEN256 - 1, "addr": 5 * MB},
    "addr_align_4": {"addr": BASE["addr"] + 4},
    "addr_align_32": {"addr": BASE["addr"] + 32},
    "addr_cross_128": {"length": LEN128, "addr": 5 * MB + 0xC0},
    "addr_cross_256": {"length": LEN256},
    "metadata_bit3": {"metadata": 0x08},
    "metadata_bit7": {"metadata": 0x80},
}


@pytest.mark.parametrize("name", GOOD)
def test_compressible(name):
    args = {**BASE, **GOOD[name]}
    assert compressible(**args)
    assert TxAddressCache.compressible(**args)
    tx = TxAddressCache(AddrCacheConfig(), policy="always")
    assert kind(tx.request(3, **args)) == "L"
    assert tx.request(3, **args) == Decision(compressed=True, cload=False, way=0)


@pytest.mark.parametrize("name", BAD)
def test_not_compressible(name):
    """One failing condition prevents compression even though the region hits, and the
    request neither loads nor disturbs the cache."""
    args = {**BASE, **BAD[name]}
    assert not compressible(**args)
    tx = TxAddressCache(AddrCacheConfig(), policy="always")
    assert read(tx, 3, BASE["addr"]).cload
    assert tx.lookup(3, args["addr"]) == 0                      # the region hits
    before = tx.counters()
    assert tx.request(3, **args) == PLAIN
    assert tx.counters() == {**before, "uncompressed": before["uncompressed"] + 1}
    assert tx.entry(3, 0) == tag_of(BASE["addr"]) and tx.entry(3, 1) is None


# --- Hits, misses, CLOAD, replacement -------------------------------------------------------------

def test_stream_in_one_region():
    """4096 reads of 256 B cover one 1 MB region: one CLOAD miss, then hits only."""
    tx = TxAddressCache(AddrCacheConfig())
    base = 0x123 * MB
    decisions = [read(tx, 7, base + 256 * i, LEN256) for i in range(MB // 256)]
    assert decisions[0] == Decision(compressed=False, cload=True, way=0)
    assert set(decisions[1:]) == {Decision(compressed=True, cload=False, way=0)}
    assert read(tx, 7, base + MB) == Decision(compressed=False, cload=True, way=1)
    assert tx.counters() == {
        "hits": 4095, "misses": 2, "loads": 2, "compressed": 4095, "uncompressed": 2,
        "invalidations": 0, "clears": 0, "backoff_entries": 0}


@pytest.mark.parametrize("ways,streams,hits", [
    (4, 4, 4 * 50 - 4),     # 4 interleaved streams, 4 ways: only the first touches miss
    (4, 8, 0),              # 8 cyclic streams, 4 ways: round-robin (FIFO) evicts each
    (4, 5, 0),              #   region 4 loads before it comes back, so nothing ever hits
    (2, 2, 2 * 50 - 2),
    (2, 3, 0),
    (1, 1, 50 - 1),
    (1, 2, 0),
])
def test_interleaved_streams(ways, streams, hits):
    """``streams`` regions accessed cyclically for 50 rounds, each stream moving on by 64 B,
    for each of three destinations (rows). Policy "always", so no backoff interferes."""
    tx = TxAddressCache(AddrCacheConfig(ways=ways), policy="always")
    for dst in (0, 5, 1023):
        ways_used = []
        for i in range(50):
            for s in range(streams):
                d = read(tx, dst, (0x40 + 3 * s) * MB + 64 * i)
                ways_used.append(d.way)
        if hits == 0:           # every request loads, victims in round-robin order
            assert ways_used == [n % ways for n in range(50 * streams)]
    total = 3 * 50 * streams
    assert (tx.hits, tx.misses, tx.loads) == (3 * hits, total - 3 * hits, total - 3 * hits)
    assert (tx.compressed, tx.uncompressed) == (3 * hits, total - 3 * hits)


def test_1024_destinations():
    """Each destination has its own row: 1024 x 4 regions fit and all hit afterwards."""
    tx = TxAddressCache(AddrCacheConfig(ways=4, rows=1024), policy="always")
    regions = [0x10 * MB, 0x20 * MB, 0x30 * MB, 0x40 * MB]
    for r, region in enumerate(regions):
        for dst in range(1024):
            assert read(tx, dst, region + 64 * dst) == Decision(False, True, r)
    for region in regions[::-1]:
        for dst in range(1024):
            assert read(tx, dst, region + 64 * (dst + 1)).compressed
    assert (tx.misses, tx.hits) == (4096, 4096)
    assert all(tx.entry(dst, r) == tag_of(region)
               for dst in (0, 511, 1023) for r, region in enumerate(regions))


def test_ids_beyond_rows():
    """[ours] row = ID: a request to an ID >= rows is never cached."""
    tx = TxAddressCache(AddrCacheConfig(rows=16), policy="always")
    assert read(tx, 15, MB).cload and read(tx, 15, MB).compressed
    assert [read(tx, 16, MB) for _ in range(3)] == [PLAIN] * 3
    assert tx.lookup(16, MB) is None and tx.lookup(1023, MB) is None
    assert (tx.misses, tx.hits, tx.uncompressed) == (1, 1, 4)
    with pytest.raises(ValueError):
        tx.invalidate(16, 0)
    with pytest.raises(ValueError):
        tx.entry(16, 0)


def test_replacement_order_invalidate_clear():
    """Invalid way first (pointer untouched), else the round-robin pointer; clear() resets."""
    tx = TxAddressCache(AddrCacheConfig(ways=4, rows=2), policy="always")
    region = iter(range(1, 100))
    def load():
        return read(tx, 1, next(region) * MB).way
    assert [load() for _ in range(4)] == [0, 1, 2, 3]
    tx.invalidate(1, 2)
    assert tx.entry(1, 2) is None and tx.lookup(1, 3 * MB) is None
    assert [load() for _ in range(6)] == [2, 0, 1, 2, 3, 0]     # pointer was 0, now 1
    assert tx.lookup(1, 10 * MB) == 0 and tx.lookup(1, 8 * MB) == 2 and tx.lookup(1, 5 * MB) is None
    tx.clear()
    assert all(tx.entry(1, w) is None for w in range(4)) and tx.lookup(1, 10 * MB) is None
    assert [load() for _ in range(5)] == [0, 1, 2, 3, 0]        # pointer reset to 0
    before = tx.counters()
    assert tx.lookup(1, 99 * MB) is None and tx.lookup(1, 14 * MB) == 3
    assert tx.counters() == before                              # lookup changes nothing
    assert (tx.invalidations, tx.clears) == (1, 1)


# --- Lock-step: Tx decisions carried to the peer Rx through control half-flits --------------------

class Link:
    """A Tx cache and its peer Rx cache, joined by control half-flits.

    :meth:`send` asks the Tx how to send a request, encodes the field
    (rtl/scaleup_ip/model/tl/flit.py) and packs it into the current control half-flit at its first
    legal footprint; :meth:`flush` parses the half-flit, hands its request fields to
    :meth:`RxAddressCache.process` and records every request whose address the Rx does not reproduce
    in :attr:`problems`.
    """

    def __init__(self, tx, rx):
        self.tx, self.rx = tx, rx
        self.acc_field = rx.index           # the Tx uses the field its peer Rx reads
        self.half, self.sector = [], 0      # (sector, value, ReqAddr) of the current half
        self.problems = []
        self.compressed = 0

    def send(self, r):
        d = self.tx.request(r[self.acc_field], r["cmd"], r["attr"], r["length"], r["addr"],
                            r["metadata"])
        ids = {"SRCACCID": r["SRCACCID"], "DSTACCID": r["DSTACCID"], "TAG": r["tag"]}
        if d.compressed:
            self.compressed += 1
            ftype = FType.COMPRESSED_REQUEST
            value = encode_field(ftype, CMD=CMD_CODE[r["cmd"]], LEN=(r["length"] + 1) // 16 - 1,
                                 METADATA=r["metadata"], ADDR=compressed_addr(r["addr"]),
                                 CWAY=d.way, **ids)
        else:
            ftype = FType.REQUEST
            value = encode_field(ftype, CMD=r["cmd"], ATTR=r["attr"], LEN=r["length"],
                                 METADATA=r["metadata"], ADDR=r["addr"] >> 2, CLOAD=d.cload,
                                 CWAY=d.way or 0, **ids)
        size = 4 if ftype == FType.REQUEST else 2       # footprints of Table 5-2
        start = -(-self.sector // size) * size
        if start + size > HALF_SECTORS:
            self.flush()
            start = 0
        self.half.append((start, value, r["addr"]))
        self.sector = start + size

    def flush(self):
        if not self.half:
            return
        fields = [decode_field(ftype, value)
                  for _, ftype, value, problem in parse_control(
                      sum(place(s, value) for s, value, _ in self.half))
                  if ftype in (FType.REQUEST, FType.COMPRESSED_REQUEST) and problem is None]
        assert len(fields) == len(self.half)
        for (_, _, want), got in zip(self.half, self.rx.process(fields)):
            if got != want:
                self.problems.append((want, got))
        self.half, self.sector = [], 0

    def check_entries(self, accs):
        """Every valid Tx entry is held by the Rx (call after :meth:`flush`)."""
        for acc in accs:
            for way in range(self.tx.config.ways):
                tag = self.tx.entry(acc, way)
                assert tag is None or self.rx.entry(acc, way) == tag, (acc, way)


def random_request(rng, ids, regions, mode):
    """A request of mostly compressible shape; ``mode`` picks the 1 MB region: "stream" one
    of a few ``regions``, "gigabyte" any within the first 1 GB, "anywhere" any at all."""
    region = {"stream": lambda: rng.choice(regions), "gigabyte": lambda: rng.randrange(1024),
              "anywhere": lambda: rng.randrange(1 << TAG_BITS)}[mode]()
    cmd = rng.choices([READ, WRITE, WRITE_FULL, ATOMIC_R, 0x08], [40, 25, 25, 5, 5])[0]
    if rng.random() < 0.9:
        length = rng.choice(sorted(COMPRESSIBLE_LENGTHS))
    else:
        length = rng.randrange(64)
    nbytes = 4 * (length + 1)
    start = rng.randrange(0, 256 - nbytes + 1, 4)
    if rng.random() < 0.9:
        start -= start % 64
    if rng.random() < 0.05:
        start = rng.randrange(0, 256, 4)                        # may cross 256 bytes
    attr = 0xFF if cmd == READ else 0x00
    if rng.random() < 0.05:
        attr = rng.randrange(256)
    metadata = rng.randrange(8) if rng.random() < 0.95 else rng.randrange(256)
    return {"cmd": cmd, "attr": attr, "length": length, "metadata": metadata,
            "addr": region << 20 | rng.randrange(1 << 12) << 8 | start,
            "SRCACCID": rng.choice(ids), "DSTACCID": rng.choice(ids), "tag": rng.randrange(2048)}


def run_random(rng, link, ids, phases=12, steps=300):
    """Drive ``link`` with phases of stream / stream / gigabyte / anywhere traffic and random
    invalidations, clears, policy changes and half-flit ends; then flush."""
    tx, rows = link.tx, link.tx.config.rows
    regions = [rng.randrange(1 << TAG_BITS) for _ in range(6)]
    rows_used = [acc for acc in ids if acc < rows]
    for phase in range(phases):
        mode = ("stream", "stream", "gigabyte", "anywhere")[phase % 4]
        tx.policy = "adaptive"
        for _ in range(steps):
            x = rng.random()
            if x < 0.03:
                tx.invalidate(rng.choice(rows_used), rng.randrange(tx.config.ways))
            elif x < 0.035:
                tx.clear()
            elif x < 0.045:
                tx.policy = rng.choice(POLICIES)
            elif x < 0.15:
                link.flush()
            else:
                link.send(random_request(rng, ids, regions, mode))
    link.flush()


def ids_for(rows):
    return [0, 1, 2, rows - 1, rows] if rows < 1024 else [0, 1, 513, 1023]


LOCKSTEP_CONFIGS = [(4, 4), (4, 1024), (2, 8), (1, 3)]


@pytest.mark.parametrize("index", ["DSTACCID", "SRCACCID"])
@pytest.mark.parametrize("ways,rows", LOCKSTEP_CONFIGS)
def test_lockstep_random(rng, ways, rows, index):
    """Every compressed request expands at the Rx to exactly its address, every valid Tx entry
    is in the Rx, and no Rx error occurs. ``index`` DSTACCID: accelerator Tx, switch Rx;
    SRCACCID: switch Tx, accelerator Rx [§5.5]."""
    config = AddrCacheConfig(ways=ways, rows=rows, backoff_window=16, backoff_min_hits=4,
                             backoff_length=24)
    link = Link(TxAddressCache(config), RxAddressCache(config, index=index))
    ids = ids_for(rows)
    run_random(rng, link, ids)
    tx, rx = link.tx, link.rx
    assert link.problems == []
    assert rx.errors == 0
    assert (rx.loads, rx.expansions) == (tx.loads, tx.compressed) == (tx.misses, tx.hits)
    assert link.compressed == tx.compressed > 0 and tx.backoff_entries > 0
    link.check_entries([acc for acc in ids if acc < rows])


class ForgetfulTx(TxAddressCache):
    """Broken on purpose: the first load of an entry after :meth:`invalidate` is sent with
    CLOAD = 0, so the Tx compresses against a region the Rx never received."""

    def __init__(self, config, policy="adaptive"):
        self.emptied = set()
        super().__init__(config, policy)

    def invalidate(self, acc, way):
        super().invalidate(acc, way)
        self.emptied.add((acc, way))

    def request(self, acc, *args):
        d = super().request(acc, *args)
        if d.cload and (acc, d.way) in self.emptied:
            self.emptied.discard((acc, d.way))
            return PLAIN
        return d


@pytest.mark.parametrize("tx_class,caught", [(TxAddressCache, False), (ForgetfulTx, True)])
def test_lockstep_catches_broken_tx(tx_class, caught):
    """Region A loaded into way 0 and used; way 0 invalidated; region B then loaded into
    way 0. The forgetful Tx does not tell the Rx, which expands B's requests into region A."""
    config = AddrCacheConfig()
    link = Link(tx_class(config, policy="always"), RxAddressCache(config, index="DSTACCID"))
    a, b = 0x111 * MB, 0x222 * MB
    def send(addr):
        link.send({"cmd": READ, "attr": 0xFF, "length": LEN64, "metadata": 0, "addr": addr,
                   "SRCACCID": 4, "DSTACCID": 9, "tag": 0})
    send(a)
    send(a + 64)
    link.tx.invalidate(9, 0)
    send(b)
    send(b + 128)
    link.flush()
    assert link.tx.lookup(9, b) == 0 and link.compressed == 2
    assert link.problems == ([(b + 128, a + 128)] if caught else [])


def test_lockstep_random_catches_broken_tx(rng):
    config = AddrCacheConfig(ways=4, rows=4, backoff_window=16, backoff_min_hits=4,
                             backoff_length=24)
    link = Link(ForgetfulTx(config), RxAddressCache(config, index="DSTACCID"))
    run_random(rng, link, ids_for(4))
    assert link.problems


# --- Rx: bypass within a control half-flit, errors ------------------------------------------------

def uncompressed(addr, way, cload=True, src=9, dst=2):
    return FType.REQUEST, encode_field(FType.REQUEST, CMD=READ, ATTR=0xFF, LEN=LEN64,
                                       ADDR=addr >> 2, SRCACCID=src, DSTACCID=dst, CLOAD=cload,
                                       CWAY=way)


def compressed(addr, way, src=9, dst=2):
    return FType.COMPRESSED_REQUEST, encode_field(
        FType.COMPRESSED_REQUEST, CMD=CMD_CODE[READ], ADDR=compressed_addr(addr), SRCACCID=src,
        DSTACCID=dst, CWAY=way)


def half_flit(rx, *placed):
    """Place ``(sector, (ftype, value))`` fields in a control half-flit, parse it back and
    process its requests: the Rx's addresses, lowest sector first."""
    half = sum(place(s, value) for s, (_, value) in placed)
    return rx.process([decode_field(ftype, value) for _, ftype, value, _ in parse_control(half)
                       if ftype in (FType.REQUEST, FType.COMPRESSED_REQUEST)])


def test_same_half_flit_bypass():
    """Table 5-23: Req0 (CLOAD = 1) and compressed Req1, Req2 in one control half-flit,
    compressed Req3 in the next; all expand to region A. Then a CLOAD replacing the entry in
    sectors 4-7: the compressed request below it (sectors 0-1) still sees region A."""
    rx = RxAddressCache(AddrCacheConfig(), index="SRCACCID")
    a, b = 0xABC * MB + 0x40, 0x5 * MB
    assert half_flit(rx, (0, uncompressed(a, 2)), (4, compressed(a + 64, 2)),
                     (6, compressed(a + 0x1000, 2))) == [a, a + 64, a + 0x1000]
    assert half_flit(rx, (0, compressed(a + 192, 2))) == [a + 192]
    assert half_flit(rx, (0, compressed(a + 256, 2)), (4, uncompressed(b, 2))) == [a + 256, b]
    assert half_flit(rx, (0, compressed(b + 64, 2))) == [b + 64]
    assert rx.entry(9, 2) == tag_of(b) and rx.entry(2, 2) is None    # row = SRCACCID
    assert rx.counters() == {"loads": 2, "expansions": 5, "errors": 0}


def test_rx_errors():
    """A compressed request to an entry never loaded, or to a row or way the Rx lacks, yields
    no address and counts an error; a CLOAD to a missing entry counts one and still delivers
    its request."""
    rx = RxAddressCache(AddrCacheConfig(ways=2, rows=8), index="DSTACCID")
    a = 0x77 * MB
    assert half_flit(rx, (0, compressed(a, 1, dst=3)), (2, compressed(a, 0, dst=3))) == [None] * 2
    assert rx.counters() == {"loads": 0, "expansions": 0, "errors": 2}
    assert half_flit(rx, (0, uncompressed(a, 1, cload=False, dst=3)),
                     (4, compressed(a + 64, 1, dst=3))) == [a, None]         # CLOAD = 0
    assert half_flit(rx, (0, uncompressed(a, 3, dst=3)), (4, compressed(a + 64, 3, dst=3)),
                     (6, compressed(a, 1, dst=8))) == [a, None, None]       # no way 3, row 8
    assert rx.counters() == {"loads": 0, "expansions": 0, "errors": 6}
    assert not rx.load(8, 0, 1) and rx.load(7, 1, 1) and rx.expand(7, 1, 2) == rebuild(1, 2)
    assert rx.counters() == {"loads": 1, "expansions": 1, "errors": 7}
    assert rx.entry(7, 0) is None and rx.entry(8, 0) is None and rx.entry(7, 3) is None
    with pytest.raises(ValueError):
        rx.process([decode_field(FType.FLOW_CONTROL, 0)])


# --- Backoff --------------------------------------------------------------------------------------

SMALL = AddrCacheConfig(ways=4, rows=4, backoff_window=8, backoff_min_hits=2, backoff_length=5)


def test_backoff_thrash_cycle():
    """Every request a new region: each window of 8 lookups (8 loads) ends with 0 < 2 hits,
    so the next 5 cacheable requests are plain, then a new window starts."""
    tx = TxAddressCache(SMALL)
    kinds, active = "", []
    for i in range(3 * 13):
        active.append(tx.active)
        kinds += kind(read(tx, 0, (i + 1) * MB))
    assert kinds == ("L" * 8 + "P" * 5) * 3
    assert active == ([True] * 8 + [False] * 5) * 3
    assert tx.counters() == {"hits": 0, "misses": 24, "loads": 24, "compressed": 0,
                             "uncompressed": 39, "invalidations": 0, "clears": 0,
                             "backoff_entries": 3}


@pytest.mark.parametrize("hits,backoff", [(1, True), (2, False)])
def test_backoff_threshold(hits, backoff):
    """A window with exactly ``backoff_min_hits`` hits does not back off; one fewer does."""
    tx = TxAddressCache(SMALL)
    regions = [1] * (hits + 1) + list(range(2, 9 - hits))
    kinds = "".join(kind(read(tx, 0, r * MB)) for r in regions)
    assert kinds == "L" + "C" * hits + "L" * (7 - hits)
    assert tx.backoff_entries == backoff and tx.active == (not backoff)
    assert kind(read(tx, 0, regions[-1] * MB + 64)) == ("P" if backoff else "C")


def test_backoff_counts_cacheable_only_and_keeps_entries():
    """Non-cacheable requests neither fill a window nor shorten a backoff; the backoff covers
    every row (the rule is global); entries survive it and compress again afterwards."""
    tx = TxAddressCache(SMALL)
    assert read(tx, 1, 0x100 * MB).cload                               # row 1 holds A
    atomic = {"cmd": ATOMIC_R, "attr": 0, "length": 1, "metadata": 0}
    kinds = ""
    for i in range(7):                                                 # thrash in row 0
        kinds += kind(read(tx, 0, (i % 8 + 1) * MB))
        kinds += kind(tx.request(0, addr=(i + 1) * MB, **atomic))
    assert kinds == "LP" * 7 and tx.backoff_entries == 1 and not tx.active
    kinds = "".join(kind(read(tx, 1, 0x100 * MB + 64 * i)) + kind(tx.request(1, addr=0, **atomic))
                    for i in range(5))
    assert kinds == "PP" * 5 and tx.active                             # A hits, not used
    assert read(tx, 1, 0x100 * MB + 0x400) == Decision(compressed=True, cload=False, way=0)


def test_stream_never_backs_off():
    tx = TxAddressCache(AddrCacheConfig())
    assert [kind(read(tx, 0, MB + 64 * i)) for i in range(1000)] == ["L"] + ["C"] * 999
    assert tx.backoff_entries == 0


def test_policies():
    """"always" never backs off; "never" is the §5.10 disable mode: no lookups, no loads,
    entries kept, so the cache compresses again at once when it is re-enabled; setting the
    policy ends a backoff."""
    tx = TxAddressCache(SMALL, policy="always")
    assert "".join(kind(read(tx, 0, (i % 8 + 1) * MB)) for i in range(40)) == "L" * 40
    assert tx.backoff_entries == 0 and tx.active
    tx.policy = "never"
    held = [tx.entry(0, w) for w in range(4)]
    assert not tx.active and held == [tag_of(m * MB) for m in (5, 6, 7, 8)]
    assert "".join(kind(read(tx, 0, (i % 8 + 1) * MB)) for i in range(40)) == "P" * 40
    assert [tx.entry(0, w) for w in range(4)] == held and tx.misses == 40 and tx.hits == 0
    tx.policy = "adaptive"
    assert read(tx, 0, 5 * MB + 64).compressed
    assert "".join(kind(read(tx, 0, (i + 10) * MB)) for i in range(8)) == "L" * 7 + "P"
    assert not tx.active                                # 1 hit in the window of 8
    tx.policy = "adaptive"
    assert tx.active and read(tx, 0, 16 * MB).compressed
    with pytest.raises(ValueError, match="policy"):
        tx.policy = "off"
    with pytest.raises(ValueError, match="policy"):
        TxAddressCache(SMALL, policy="sometimes")


# --- Parameter and argument checks ----------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"ways": 0}, {"ways": 3}, {"ways": 8}, {"ways": "4"}, {"ways": True}, {"rows": 0},
    {"rows": 1025}, {"rows": 4.0}, {"backoff_window": 0}, {"backoff_min_hits": -1},
    {"backoff_min_hits": 65}, {"backoff_min_hits": 5, "backoff_window": 4},
    {"backoff_length": 0},
])
def test_config_rejected(kwargs):
    with pytest.raises(ValueError, match=f"AddrCacheConfig {next(iter(kwargs))}"):
        AddrCacheConfig(**kwargs)


@pytest.mark.parametrize("kwargs", [
    {"ways": 1, "rows": 1}, {"ways": 2}, {"ways": 4, "rows": 1024}, {"backoff_min_hits": 0},
    {"backoff_window": 1, "backoff_min_hits": 1, "backoff_length": 1},
])
def test_config_accepted(kwargs):
    config = AddrCacheConfig(**kwargs)
    assert TxAddressCache(config).config == config == RxAddressCache(config).config


def test_argument_checks():
    tx, rx = TxAddressCache(AddrCacheConfig()), RxAddressCache(AddrCacheConfig())
    for bad in (lambda: read(tx, 1024, 0), lambda: read(tx, 0, 1 << 57), lambda: read(tx, 0, 2),
                lambda: tx.request(0, 64, 0, 0, 0, 0), lambda: tx.request(0, READ, 256, 0, 0, 0),
                lambda: tx.request(0, READ, 0xFF, 64, 0, 0),
                lambda: tx.request(0, READ, 0xFF, 0, 0, 256), lambda: tx.lookup(-1, 0),
                lambda: tx.invalidate(0, 4), lambda: rx.load(0, 4, 0),
                lambda: rx.load(0, 0, 1 << 37), lambda: rx.expand(0, 0, 1 << 14),
                lambda: rx.expand(1024, 0, 0), lambda: RxAddressCache(AddrCacheConfig(), "ACC")):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(TypeError):
        TxAddressCache({"ways": 4})
    with pytest.raises(TypeError):
        RxAddressCache(None)
    assert tx.counters()["uncompressed"] == 0 and rx.errors == 0
