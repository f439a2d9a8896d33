# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the UALink TL address caches (request compression), Tx and Rx.

Written from the UALink_200 Rev 1.0 Evaluation Copy, chapter 5: the caches [§5.5], their
synchronisation by CLOAD and CWAY [§5.6.1, §5.6.2], the request fields [§5.9.1 Table 5-29,
§5.9.3 Tables 5-31 .. 5-33] and the backoff modes [§5.10]. Section numbers in brackets are the
specification's (cited as ``[UALink 1.0 §x]`` next to constants); choices the text leaves
open are marked **[ours]**.

What the caches do. The Tx cache remembers, per congruence class (row) and way, the 1 MB region
ReqAddr[56:20] of requests it has sent. A request whose region hits may go as a 2-sector
compressed request (FTYPE 0x3) carrying only ReqAddr[19:6] and the way (CWAY); the Rx cache on
the far side rebuilds ReqAddr[56:20] from the same row and way. The Tx keeps the Rx in
lock-step: an uncompressed request (FTYPE 0x1) with CLOAD = 1 tells the Rx to load its
ReqAddr[56:20] into way CWAY [§5.6.1]. Rx entries are only ever replaced, never invalidated;
Tx entries may be invalidated, or the Tx cache cleared, at any time [§5.5, §5.6.2].

Rows. Both caches of a Tx/Rx pair use the same accelerator ID as the row: ReqDstPhysAccID for
an accelerator's Tx cache and the switch's Rx cache, ReqSrcPhysAccID for a switch's Tx cache
and the accelerator's Rx cache [§5.5 Figures 5-4, 5-5; §5.6.1]. The methods here take that ID
as ``acc``; :class:`RxAddressCache` is told which field (SRCACCID or DSTACCID) to read when it
processes decoded fields.

Timing is not modelled. :meth:`TxAddressCache.request` is called in the order requests are
sent and its decision is the one sent, so no entry can change between the decision and the send, as
§5.6.2 and Table 5-32 require; :meth:`RxAddressCache.process` is called per control half-flit in
arrival order. An implementation with lookup and update latency must behave as if it were the
same.

Argument conventions are those of :class:`scaleup_ip.model.tl.flit.Request`: ``cmd`` is ReqCmd,
``attr`` ReqAttr, ``length`` ReqLen (doublewords - 1), ``addr`` the 57-bit byte address ReqAddr (a
multiple of 4) and ``metadata`` ReqMetaData. Arguments outside their field widths raise
``ValueError``; conditions a peer can cause on the wire are counted instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from .flit import COMPRESSED_COMMANDS, READ, FType, within_block

__all__ = [
    "ACC_BITS",
    "ADDR_BITS",
    "COMPRESSIBLE_LENGTHS",
    "CWAY_BITS",
    "LINE_BITS",
    "LINE_LSB",
    "MAX_ROWS",
    "POLICIES",
    "RX_INDEXES",
    "TAG_BITS",
    "TAG_LSB",
    "WAYS",
    "AddrCacheConfig",
    "Decision",
    "RxAddressCache",
    "TxAddressCache",
    "compressed_addr",
    "compressible",
    "rebuild",
    "tag_of",
]

ACC_BITS = 10       # ReqSrcPhysAccID, ReqDstPhysAccID [UALink 1.0 §5.5; Table 5-29]
ADDR_BITS = 57      # ReqAddr[56:0]; the 0x1 field carries ReqAddr[56:2] [UALink 1.0 Table 5-29]
TAG_LSB = 20        # an entry holds ReqAddr[56:20], 1 MB [UALink 1.0 Table 5-29 CLOAD; §5.9.3]
TAG_BITS = ADDR_BITS - TAG_LSB                      # 37
LINE_LSB = 6        # a compressed request carries ReqAddr[19:6] [UALink 1.0 Table 5-31 ADDR]
LINE_BITS = TAG_LSB - LINE_LSB                      # 14
CWAY_BITS = 2       # [UALink 1.0 Tables 5-29, 5-31]
WAYS = (1, 2, 4)    # up to 4 ways [UALink 1.0 §5.5]; powers of two only [ours]
MAX_ROWS = 1024     # up to 1024 congruence classes, one per accelerator [UALink 1.0 §5.5]
LINE_BYTES = 1 << LINE_LSB                          # 64-byte aligned [UALink 1.0 Table 5-32]
#: ReqLen values (doublewords - 1) of 64, 128, 192 and 256 bytes
#: [UALink 1.0 Table 5-32 LEN; §2.7.4.4].
COMPRESSIBLE_LENGTHS = frozenset(n * LINE_BYTES // 4 - 1 for n in (1, 2, 3, 4))
READ_ATTR, WRITE_ATTR = 0xFF, 0x00                  # [UALink 1.0 Table 5-32 ATTR]
METADATA_BITS = 8                                   # ReqMetaData [UALink 1.0 Table 5-29]
#: ReqMetaData bits a compressed request carries, [2:0]; [7:3] must be zero
#: [UALink 1.0 Table 5-31 METADATA]. Table 5-32 says [7:2]; we follow Table 5-31
#: (research note protocols.md §1.6 [A]).
METADATA_CARRIED_BITS = 3
#: When the Tx cache is used: "adaptive" (the backoff rule of :class:`TxAddressCache`),
#: "always" (backoff forced off), "never" (backoff forced on: the Tx cache is disabled, the
#: mode of [UALink 1.0 §5.10]; its entries are kept).
POLICIES = ("adaptive", "always", "never")
#: The request field that selects an Rx cache's row [UALink 1.0 §5.6.1].
RX_INDEXES = ("SRCACCID", "DSTACCID")


def _check(name, value, bits):
    if type(value) is not int or not 0 <= value < 1 << bits:
        raise ValueError(f"{name}={value!r} is not a {bits}-bit unsigned integer")


def _check_addr(addr):
    _check("addr", addr, ADDR_BITS)
    if addr % 4:
        raise ValueError(f"addr={addr:#x} is not a doubleword address (ReqAddr[1:0] = 0)")


# --- Address helpers ------------------------------------------------------------------------------

def tag_of(addr):
    """ReqAddr[56:20], the 1 MB region a cache entry holds [Table 5-29 CLOAD]."""
    _check_addr(addr)
    return addr >> TAG_LSB


def compressed_addr(addr):
    """ReqAddr[19:6], the ADDR field of a compressed request [Table 5-31]."""
    _check_addr(addr)
    return (addr >> LINE_LSB) & ((1 << LINE_BITS) - 1)


def rebuild(tag, addr_19_6):
    """ReqAddr from a cached ReqAddr[56:20] and a compressed ADDR field; ReqAddr[5:0] = 0,
    since a compressed request is 64-byte aligned [Table 5-32]."""
    _check("tag", tag, TAG_BITS)
    _check("addr_19_6", addr_19_6, LINE_BITS)
    return tag << TAG_LSB | addr_19_6 << LINE_LSB


def compressible(cmd, attr, length, addr, metadata):
    """Whether a request meets the conditions of Table 5-32 other than the cache hit.

    Parameters
    ----------
    cmd, attr, length, addr, metadata : int
        ReqCmd, ReqAttr, ReqLen, ReqAddr, ReqMetaData.

    Returns
    -------
    bool
        True when all of these hold [§5.9.3 Table 5-32]:

        - the command is Read, Write or WriteFull [Table 5-33]: atomics, Write Message and
          vendor-defined commands are never compressed;
        - ReqAttr is 0xFF for a Read and 0x00 for a Write or WriteFull;
        - the transfer is 64, 128, 192 or 256 bytes;
        - ReqAddr is 64-byte aligned and the transfer does not cross a 256-byte boundary;
        - ReqMetaData[7:3] is zero (the METADATA field carries [2:0] [Table 5-31]).
    """
    _check("cmd", cmd, 6)
    _check("attr", attr, 8)
    _check("length", length, 6)
    _check_addr(addr)
    _check("metadata", metadata, METADATA_BITS)
    nbytes = 4 * (length + 1)
    return (cmd in COMPRESSED_COMMANDS.values()
            and attr == (READ_ATTR if cmd == READ else WRITE_ATTR)
            and length in COMPRESSIBLE_LENGTHS
            and addr % LINE_BYTES == 0
            and within_block(addr, nbytes)          # [UALink 1.0 Table 5-32]
            and metadata >> METADATA_CARRIED_BITS == 0)


# --- Configuration and decisions ------------------------------------------------------------------

@dataclass(frozen=True)
class AddrCacheConfig:
    """Shape of an address cache and the parameters of the Tx backoff rule.

    Parameters
    ----------
    ways : int
        Ways per row: 1, 2 or 4 [§5.5: up to, and typically, 4].
    rows : int
        Congruence classes, 1 .. 1024, one per accelerator ID ``0 .. rows - 1`` [§5.5].
    backoff_window : int
        N: cacheable requests per observation window of the adaptive backoff [ours].
    backoff_min_hits : int
        A window with fewer hits than this starts a backoff, 0 .. N (0: never) [ours].
    backoff_length : int
        M: cacheable requests a backoff lasts [ours].

    The defaults [ours]: a window of 64 requests with fewer than 8 hits (a hit rate under
    1/8) switches the cache off for the next 512 cacheable requests, so a thrashing pattern
    spends about 1/9 of its requests retrying.
    """

    ways: int = 4
    rows: int = MAX_ROWS
    backoff_window: int = 64
    backoff_min_hits: int = 8
    backoff_length: int = 512

    def __post_init__(self):
        for name in ("ways", "rows", "backoff_window", "backoff_min_hits", "backoff_length"):
            if type(getattr(self, name)) is not int:
                raise ValueError(f"AddrCacheConfig {name} must be an integer, "
                                 f"not {getattr(self, name)!r}")
        if self.ways not in WAYS:
            raise ValueError(f"AddrCacheConfig ways must be one of {WAYS}, not {self.ways}")
        if not 1 <= self.rows <= MAX_ROWS:
            raise ValueError(f"AddrCacheConfig rows must be 1 .. {MAX_ROWS}, not {self.rows}")
        if self.backoff_window < 1:
            raise ValueError(f"AddrCacheConfig backoff_window must be at least 1, "
                             f"not {self.backoff_window}")
        if not 0 <= self.backoff_min_hits <= self.backoff_window:
            raise ValueError(f"AddrCacheConfig backoff_min_hits must be 0 .. backoff_window "
                             f"({self.backoff_window}), not {self.backoff_min_hits}")
        if self.backoff_length < 1:
            raise ValueError(f"AddrCacheConfig backoff_length must be at least 1, "
                             f"not {self.backoff_length}")


@dataclass(frozen=True)
class Decision:
    """How the Tx sends one request [§5.6.2].

    - ``compressed``: a compressed request (FTYPE 0x3) with CWAY = ``way``;
    - ``cload``: an uncompressed request (FTYPE 0x1) with CLOAD = 1 and CWAY = ``way``;
    - neither: an uncompressed request with CLOAD = 0; ``way`` is None and CWAY, meaningless
      then [§5.6.1], is sent as 0.
    """

    compressed: bool
    cload: bool
    way: int | None


PLAIN = Decision(compressed=False, cload=False, way=None)


# --- Tx cache -------------------------------------------------------------------------------------

class TxAddressCache:
    """The Tx address cache and the compression decision of each request.

    Parameters
    ----------
    config : AddrCacheConfig
    policy : str
        One of :data:`POLICIES`; may be changed later through :attr:`policy`.

    Notes
    -----
    **Entries.** Each row ``0 .. rows - 1`` has ``ways`` entries, each ReqAddr[56:20] and a
    valid bit. A request is *cacheable* when it meets Table 5-32 apart from the hit
    (:func:`compressible`) and its ``acc`` is below ``rows``. [ours] The row is the
    accelerator ID itself, never the ID modulo ``rows``: the peer's Rx cache selects its row by
    the ID field of the request [§5.6.1], so a Tx that folded IDs onto fewer rows would let one
    ID's request hit an entry loaded for another, which the Rx holds in a different row. A
    request to an ID of ``rows`` or above is therefore never compressed or loaded.

    **Decision** (:meth:`request`, in issue order):

    1. not cacheable: uncompressed, CLOAD = 0;
    2. cacheable while the cache is not in use (policy "never", or an adaptive backoff):
       uncompressed, CLOAD = 0, no lookup;
    3. cacheable hit: compressed, CWAY = the way that hit;
    4. cacheable miss: uncompressed, CLOAD = 1, CWAY = the victim way, whose Tx entry now
       holds the request's region. [ours] Every cacheable miss loads; the spec allows but does
       not require it [§5.5].

    A region is loaded only on a miss, so at most one way of a row holds it.

    **Replacement** [ours]: per-row round-robin, preferring an invalid way. On a miss the
    victim is the lowest-numbered invalid way of the row if there is one (the round-robin
    pointer is left alone); otherwise it is the way the row's pointer names, and the pointer
    then advances by one modulo ``ways``. With no invalidations this is FIFO order. Why: it is
    cheap in block RAM, one 2-bit pointer per row written only on a load, which is a write of
    the row anyway; LRU would need a read-modify-write of per-row state on every hit.

    **Adaptive backoff** [ours, after the recommendation of §5.10, which asks only for a mode
    that disables the Tx cache; that mode is policy "never"]. Under policy "adaptive" the
    cacheable requests that are looked up are counted in windows of N = ``backoff_window``.
    When a window ends with fewer than ``backoff_min_hits`` hits, the next M =
    ``backoff_length`` cacheable requests skip the cache (step 2); then a new window starts. Only
    cacheable requests count, in windows and in backoffs. The rule is for the whole cache, not
    per row. A backoff leaves the entries as they are; the Rx still holds them, so hits after
    the backoff compress again. A miss costs no link bandwidth (CLOAD = 1 rides in the
    uncompressed request that is sent anyway), so what a backoff saves is cache lookups and Rx
    cache writes while the traffic thrashes.

    **Invalidation.** :meth:`invalidate` and :meth:`clear` touch only the Tx cache [§5.5]:
    the Rx keeps its entries, and lock-step holds because an invalid Tx entry is never
    compressed against before it is loaded again with CLOAD = 1.

    Attributes
    ----------
    hits, misses : int
        Lookups of cacheable requests that hit or missed.
    loads : int
        Requests sent with CLOAD = 1 (every miss loads, so equal to ``misses``).
    compressed, uncompressed : int
        Requests sent compressed and uncompressed (their sum is every request).
    invalidations, clears : int
        Calls of :meth:`invalidate` and :meth:`clear`.
    backoff_entries : int
        Adaptive backoffs started.
    """

    COUNTERS = ("hits", "misses", "loads", "compressed", "uncompressed", "invalidations",
                "clears", "backoff_entries")

    def __init__(self, config: AddrCacheConfig, policy: str = "adaptive"):
        if not isinstance(config, AddrCacheConfig):
            raise TypeError(f"TxAddressCache config must be an AddrCacheConfig, not {config!r}")
        self.config = config
        self._tags = [[None] * config.ways for _ in range(config.rows)]  # None: invalid
        self._next = [0] * config.rows                                   # round-robin pointers
        for name in self.COUNTERS:
            setattr(self, name, 0)
        self.policy = policy

    compressible = staticmethod(compressible)

    @property
    def policy(self) -> str:
        """When the cache is used, one of :data:`POLICIES`. Setting it starts a new adaptive
        window with no backoff pending; the entries are kept."""
        return self._policy

    @policy.setter
    def policy(self, policy: str):
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
        self._policy = policy
        self._seen = self._window_hits = self._backoff_left = 0

    @property
    def active(self) -> bool:
        """Whether the next cacheable request will be looked up (compressed or loaded)."""
        return self._policy == "always" or (self._policy == "adaptive"
                                            and not self._backoff_left)

    def counters(self) -> dict:
        """The counters by name (:attr:`COUNTERS`)."""
        return {name: getattr(self, name) for name in self.COUNTERS}

    def entry(self, acc: int, way: int) -> int | None:
        """The ReqAddr[56:20] held by a valid entry, or None when the entry is invalid."""
        self._check_entry(acc, way)
        return self._tags[acc][way]

    def lookup(self, acc: int, addr: int) -> int | None:
        """The way of row ``acc`` holding ``tag_of(addr)`` in a valid entry, or None.

        No state changes. A row that does not exist (``acc >= rows``) misses.
        """
        _check("acc", acc, ACC_BITS)
        tag = tag_of(addr)
        if acc >= self.config.rows or tag not in self._tags[acc]:
            return None
        return self._tags[acc].index(tag)

    def request(self, acc: int, cmd: int, attr: int, length: int, addr: int,
                metadata: int) -> Decision:
        """Decide how one request is sent, in issue order, and update the cache.

        Parameters
        ----------
        acc : int
            The row ID: ReqDstPhysAccID on an accelerator, ReqSrcPhysAccID on a switch [§5.5].
        cmd, attr, length, addr, metadata : int
            ReqCmd, ReqAttr, ReqLen, ReqAddr, ReqMetaData.

        Returns
        -------
        Decision
            Following the steps in the class notes.
        """
        _check("acc", acc, ACC_BITS)
        cacheable = compressible(cmd, attr, length, addr, metadata) and acc < self.config.rows
        if not cacheable or self._skip():
            self.uncompressed += 1
            return PLAIN
        way = self.lookup(acc, addr)
        self._observe(way is not None)
        if way is not None:
            self.hits += 1
            self.compressed += 1
            return Decision(compressed=True, cload=False, way=way)
        way = self._victim(acc)
        self._tags[acc][way] = tag_of(addr)
        self.misses += 1
        self.loads += 1
        self.uncompressed += 1
        return Decision(compressed=False, cload=True, way=way)

    def invalidate(self, acc: int, way: int):
        """Invalidate one Tx entry; allowed at any time [§5.5]. The Rx is not told."""
        self._check_entry(acc, way)
        self._tags[acc][way] = None
        self.invalidations += 1

    def clear(self):
        """Invalidate every Tx entry and reset the round-robin pointers; allowed at any time
        [§5.5]. The backoff state and the counters are kept."""
        for row in self._tags:
            row[:] = [None] * self.config.ways
        self._next = [0] * self.config.rows
        self.clears += 1

    def _check_entry(self, acc, way):
        if type(acc) is not int or not 0 <= acc < self.config.rows:
            raise ValueError(f"acc={acc!r} is not a row (0 .. {self.config.rows - 1})")
        if type(way) is not int or not 0 <= way < self.config.ways:
            raise ValueError(f"way={way!r} is not a way (0 .. {self.config.ways - 1})")

    def _skip(self):
        """True when this cacheable request skips the cache; counts a backoff down."""
        if self._policy == "never":
            return True
        if self._policy == "adaptive" and self._backoff_left:
            self._backoff_left -= 1
            return True
        return False

    def _observe(self, hit):
        """Count a looked-up request in the adaptive window; start a backoff at a poor end."""
        if self._policy != "adaptive":
            return
        self._seen += 1
        self._window_hits += hit
        if self._seen == self.config.backoff_window:
            if self._window_hits < self.config.backoff_min_hits:
                self._backoff_left = self.config.backoff_length
                self.backoff_entries += 1
            self._seen = self._window_hits = 0

    def _victim(self, acc):
        """The way a miss in row ``acc`` loads (class notes, Replacement)."""
        row = self._tags[acc]
        if None in row:
            return row.index(None)
        way = self._next[acc]
        self._next[acc] = (way + 1) % self.config.ways
        return way


# --- Rx cache -------------------------------------------------------------------------------------

class RxAddressCache:
    """The Rx address cache: loaded by CLOAD = 1, read by compressed requests [§5.6].

    Parameters
    ----------
    config : AddrCacheConfig
        Only ``ways`` and ``rows`` are used.
    index : str
        The request field that selects the row in :meth:`process`: "SRCACCID" for an
        accelerator's Rx cache (the default), "DSTACCID" for a switch's [§5.6.1].

    Notes
    -----
    Entries start unloaded and are only ever replaced, never invalidated [§5.6.2]. [ours] A
    CLOAD for a row or way this cache lacks (``acc >= rows`` or CWAY ``>= ways``: the peer's
    Tx cache is larger) and a compressed request that names an unloaded, missing row or way
    are errors: each is counted in ``errors`` and changes nothing, and the compressed request
    yields no address (None), never a made-up one. What the TL then does is outside this
    model; the spec sends cache errors to link down or Drop Mode [§5.5].

    Attributes
    ----------
    loads, expansions, errors : int
        Entries loaded, compressed requests expanded, errors.
    """

    COUNTERS = ("loads", "expansions", "errors")

    def __init__(self, config: AddrCacheConfig, index: str = "SRCACCID"):
        if not isinstance(config, AddrCacheConfig):
            raise TypeError(f"RxAddressCache config must be an AddrCacheConfig, not {config!r}")
        if index not in RX_INDEXES:
            raise ValueError(f"index must be one of {RX_INDEXES}, not {index!r}")
        self.config = config
        self.index = index
        self._tags = [[None] * config.ways for _ in range(config.rows)]  # None: never loaded
        self.loads = self.expansions = self.errors = 0

    def counters(self) -> dict:
        """The counters by name (:attr:`COUNTERS`)."""
        return {name: getattr(self, name) for name in self.COUNTERS}

    def entry(self, acc: int, way: int) -> int | None:
        """The ReqAddr[56:20] of an entry, or None when it was never loaded or does not exist."""
        _check("acc", acc, ACC_BITS)
        _check("way", way, CWAY_BITS)
        return self._tags[acc][way] if self._exists(acc, way) else None

    def load(self, acc: int, way: int, tag: int) -> bool:
        """Load ReqAddr[56:20] ``tag`` into row ``acc``, way ``way`` (an uncompressed request
        with CLOAD = 1, CWAY = ``way`` [§5.6.1]). False, and an error counted, when the entry
        does not exist."""
        _check("acc", acc, ACC_BITS)
        _check("way", way, CWAY_BITS)
        _check("tag", tag, TAG_BITS)
        if not self._exists(acc, way):
            self.errors += 1
            return False
        self._tags[acc][way] = tag
        self.loads += 1
        return True

    def expand(self, acc: int, way: int, addr_19_6: int) -> int | None:
        """ReqAddr of a compressed request with CWAY = ``way`` and ADDR = ``addr_19_6``
        [Table 5-31], or None (an error counted) when the entry was never loaded or does not
        exist."""
        _check("acc", acc, ACC_BITS)
        _check("way", way, CWAY_BITS)
        _check("addr_19_6", addr_19_6, LINE_BITS)
        tag = self._tags[acc][way] if self._exists(acc, way) else None
        if tag is None:
            self.errors += 1
            return None
        self.expansions += 1
        return rebuild(tag, addr_19_6)

    def process(self, fields: list[dict]) -> list[int | None]:
        """Handle the request fields of one control half-flit, lowest sector first.

        Parameters
        ----------
        fields : list of dict
            Decoded request fields as :func:`scaleup_ip.model.tl.flit.decode_field` returns them:
            FTYPE 0x1 (uncompressed: ``ADDR`` = ReqAddr[56:2], ``CLOAD``, ``CWAY``) or 0x3
            (compressed: ``ADDR`` = ReqAddr[19:6], ``CWAY``), with the ID field :attr:`index`.

        Returns
        -------
        list of int or None
            ReqAddr of each field; None for a compressed request that could not be expanded.

        Each field is handled completely before the next, so a CLOAD is visible to every
        later compressed request of the same half-flit, as §5.6.1 (Table 5-23) and §5.6.2
        require (in hardware, a write-to-read bypass or the Address CAM of §5.7 Figure 5-6),
        while a compressed request in a lower sector still sees the entry as it was.
        """
        addrs = []
        for field in fields:
            if field["FTYPE"] == FType.REQUEST:
                addr = field["ADDR"] << 2
                if field["CLOAD"]:
                    self.load(field[self.index], field["CWAY"], tag_of(addr))
                addrs.append(addr)
            elif field["FTYPE"] == FType.COMPRESSED_REQUEST:
                addrs.append(self.expand(field[self.index], field["CWAY"], field["ADDR"]))
            else:
                raise ValueError(f"FTYPE {field['FTYPE']:#x} is not a request field")
        return addrs

    def _exists(self, acc, way):
        return acc < self.config.rows and way < self.config.ways
