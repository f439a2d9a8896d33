# SPDX-License-Identifier: BSD-2-Clause
"""Traffic with compressed requests for the TL receiver's address cache, and a sender that puts
it in flits.

Requests get their cache decision from the golden-model Tx cache (:class:`TxAddressCache`) in
issue order, or a forced one (a CLOAD to an entry the receiver lacks, a compressed request
naming an entry it never loaded); each field is also run through the golden-model Rx cache
(:class:`RxAddressCache`), which gives the address the receiver must rebuild and its counters.
The model packer never sends compressed requests, so :class:`CacheSender` lays out the control
halves itself, in random legal layouts: requests and responses interleaved in any footprint
order with NOP sectors between them [Table 5-2], data half-flits in field order [§5.1.1].
"""

import dataclasses
from collections import deque

from scaleup_ip.model.tl.addrcache import (
    AddrCacheConfig,
    Decision,
    RxAddressCache,
    TxAddressCache,
    compressed_addr,
)
from scaleup_ip.model.tl.flit import (
    COMPRESSED_COMMANDS,
    HALF_SECTORS,
    READ,
    REQUEST_LIMIT,
    RESPONSE_LIMIT,
    WRITE,
    WRITE_FULL,
    Flit,
    FType,
    RateLimiter,
    Request,
    credit_table,
    decode_field,
    encode_field,
    item_halves,
    place,
    response_field,
)
from sim.tl.traffic import make_request, rand_errors, random_request, random_response

__all__ = ["CMD_CODE", "CacheSender", "CacheTraffic", "Sent"]

CMD_CODE = {cmd: code for code, cmd in COMPRESSED_COMMANDS.items()}     # [Table 5-33]
_MAX_REQUESTS = 4           # requests in one control half [§5.6.2]


@dataclasses.dataclass
class Sent:
    """One request as sent: the item, its field, and what the receiver's cache makes of it."""
    request: Request
    ftype: FType
    field: int
    addr: int | None        # ReqAddr the golden Rx cache gives; None: cannot be expanded


class CacheTraffic:
    """Requests with their cache decisions, and the golden Rx cache's view of them.

    Parameters
    ----------
    config : TlConfig
        ``cache_ways``, ``cache_rows`` and ``cache_rx_index`` of the receiver; the Tx cache
        model has the same shape, so its decisions never name an entry the receiver lacks.
    rng : random.Random

    Attributes
    ----------
    sent : list of Sent
        Every request, in issue order.
    rx : RxAddressCache
        The receiver's cache after all of them.
    failed : int or None
        Index in :attr:`sent` of the first request the receiver cannot expand.
    counts_at_failure : dict or None
        The golden Rx cache's counters right after that request.
    """

    def __init__(self, config, rng):
        self.config, self.rng = config, rng
        shape = AddrCacheConfig(ways=config.cache_ways, rows=config.cache_rows)
        self.index = config.cache_rx_index
        self.tx = TxAddressCache(shape, policy="always")
        self.rx = RxAddressCache(shape, index=self.index)
        self.sent = []
        self.failed = None
        self.counts_at_failure = None
        self._regions = {}                  # row -> its regions, ways + 2 (replacements)

    def acc_field(self):
        """The request's name of the row ID: ``dst_acc`` or ``src_acc``."""
        return "dst_acc" if self.index == "DSTACCID" else "src_acc"

    # -- requests --

    def compressible(self, acc, region=None, cmd=None):
        """A request meeting Table 5-32 (a compressed field carries it exactly) to row
        ``acc``, in ``region`` (ReqAddr[56:20]; a random one of the row's by default)."""
        rng = self.rng
        if region is None:
            regions = self._regions.setdefault(
                acc, [rng.getrandbits(37) for _ in range(self.config.cache_ways + 2)])
            region = rng.choice(regions)
        cmd = rng.choice([READ, WRITE, WRITE_FULL]) if cmd is None else cmd
        lane = rng.randrange(4)
        nbytes = 64 * rng.randint(1, 4 - lane)
        addr = region << 20 | rng.randrange(1 << 12) << 8 | lane << 6
        r = make_request(rng, cmd, addr, nbytes, vc=rng.randrange(4))
        r = dataclasses.replace(r, attr=0xFF if cmd == READ else 0x00,
                                metadata=rng.randrange(8), **{self.acc_field(): acc},
                                error=rand_errors(rng, r.beats))
        return r

    def other(self, acc):
        """Any request (any command, length, address) to row ``acc``: mostly uncompressible."""
        return dataclasses.replace(random_request(self.rng), **{self.acc_field(): acc})

    def add(self, r, decision=None):
        """Issue ``r`` with the Tx cache's decision, or ``decision``; returns its :class:`Sent`."""
        acc = getattr(r, self.acc_field())
        d = decision or self.tx.request(acc, r.cmd, r.attr, r.length, r.addr, r.metadata)
        ids = {"VCHAN": r.vc, "ASI": r.asi, "TAG": r.tag, "POOL": 1, "METADATA": r.metadata,
               "SRCACCID": r.src_acc, "DSTACCID": r.dst_acc}
        if d.compressed:
            ftype = FType.COMPRESSED_REQUEST
            value = encode_field(ftype, CMD=CMD_CODE[r.cmd], LEN=(r.length + 1) // 16 - 1,
                                 ADDR=compressed_addr(r.addr), CWAY=d.way, **ids)
        else:
            ftype = FType.REQUEST
            value = encode_field(ftype, CMD=r.cmd, ATTR=r.attr, LEN=r.length,
                                 ADDR=r.addr >> 2, CLOAD=d.cload, CWAY=d.way or 0,
                                 NUMBEATS=r.num_beats, **ids)
        addr, = self.rx.process([decode_field(ftype, value)])
        sent = Sent(r, ftype, value, addr)
        if addr is None and self.failed is None:
            self.failed, self.counts_at_failure = len(self.sent), self.rx.counters()
        assert addr is None or addr == r.addr, "the golden caches lost lock-step"
        self.sent.append(sent)
        return sent

    def missing_load(self, r):
        """Issue ``r`` with CLOAD = 1 to an entry the receiver lacks (a way or a row beyond its
        cache, as a larger peer Tx cache would): counted as a cache error, delivered intact."""
        cfg = self.config
        acc = getattr(r, self.acc_field())
        if cfg.cache_ways < 4 and (acc < cfg.cache_rows or self.rng.random() < 0.5):
            way = self.rng.randrange(cfg.cache_ways, 4)
        else:
            assert acc >= cfg.cache_rows
            way = self.rng.randrange(cfg.cache_ways)
        return self.add(r, Decision(compressed=False, cload=True, way=way))

    def unexpandable(self, kind, acc=0):
        """Issue a compressed request the receiver cannot expand: to an entry of row ``acc``
        it never loaded (``"never_loaded"``), a way it lacks (``"way"``) or a row it lacks
        (``"row"``)."""
        cfg, rng = self.config, self.rng
        if kind == "never_loaded":
            way = rng.choice([way for way in range(cfg.cache_ways)
                              if self.rx.entry(acc, way) is None])
        elif kind == "way":
            acc, way = rng.randrange(cfg.cache_rows), rng.randrange(cfg.cache_ways, 4)
        else:
            acc, way = rng.randrange(cfg.cache_rows, 1024), rng.randrange(cfg.cache_ways)
        return self.add(self.compressible(acc, region=rng.getrandbits(37)),
                        Decision(compressed=True, cload=False, way=way))

    def random_row(self):
        """A row: mostly one the cache has (a few hot ones when there are many), else one
        beyond it (never compressed)."""
        rows, rng = self.config.cache_rows, self.rng
        if rows < 1024 and rng.random() < 0.1:
            return rng.randrange(rows, 1024)
        if rows > 16 and rng.random() < 0.6:
            return rng.choice([0, 1, rows - 1, rows // 2])
        return rng.randrange(rows)

    def run(self, n, missing_loads=True, avoid=None):
        """``n`` requests in runs of 1..4 to one region of one row (so that a CLOAD and the
        compressed requests that use it often share a control half), never to row ``avoid``;
        a few uncompressible ones and, when ``missing_loads`` and the receiver's cache is
        smaller than the largest, CLOADs to entries it lacks."""
        rng = self.rng
        out = []
        cfg = self.config
        can_miss = cfg.cache_ways < 4 or cfg.cache_rows < 1024
        while len(out) < n:
            acc = self.random_row()
            if acc == avoid:
                continue
            region = rng.choice(self._regions.setdefault(
                acc, [rng.getrandbits(37) for _ in range(cfg.cache_ways + 2)]))
            for _ in range(rng.randint(1, 4)):
                if rng.random() < 0.15:
                    r = self.other(acc)
                else:
                    r = self.compressible(acc, region)
                if missing_loads and can_miss and rng.random() < 0.03:
                    out.append(self.missing_load(r))
                else:
                    out.append(self.add(r))
        return out

    def regions(self):
        """ReqAddr[56:20] (or None) of every compressed request, in order: what the golden
        unpacker's ``address_cache`` hook answers."""
        return deque(None if s.addr is None else s.addr >> 20 for s in self.sent
                     if s.ftype == FType.COMPRESSED_REQUEST)


class CacheSender:
    """Flits toward a TL receiver from queued requests (as :class:`Sent`) and responses.

    Each control half takes requests and responses while the source rate limits [§5.7] and the
    pool credits held allow, at most four requests, in a random interleaving of the two
    queues, each field at a random legal footprint after the last (sometimes one footprint
    further, leaving NOP sectors); its data half-flits follow in field order, the last one
    swapped into the next control's flit (the README §3 flit rule). Every field is sent with
    POOL = 1.

    Parameters
    ----------
    rng : random.Random
    credits : dict
        ``{class: {"pool": n}}`` the receiver released.
    stop : float
        Chance of closing a control half early, at each field.
    gap : float
        Chance of leaving NOP sectors before a field.

    Attributes
    ----------
    flits : list of Flit
        Every flit sent, in order.
    req_beats : list of int
        Per flit sent, the request data beats it completes (its second half-flit).
    """

    def __init__(self, rng, credits, stop=0.1, gap=0.2):
        self.rng, self.stop, self.gap = rng, stop, gap
        self.credits = credit_table(credits)
        self.requests = deque()
        self.responses = deque()
        self.owed = deque()             # (value, message, request beat completed)
        self.rates = {"req": RateLimiter(REQUEST_LIMIT), "rsp": RateLimiter(RESPONSE_LIMIT)}
        self.flits = []
        self.req_beats = []

    def push(self, items):
        for item in items:
            (self.requests if isinstance(item, Sent) else self.responses).append(item)

    def grant(self, table):
        for cls, slots in table.items():
            self.credits[cls]["pool"] += slots["pool"]

    @property
    def done(self):
        return not (self.requests or self.responses or self.owed)

    def step(self):
        """The next flit, or None when there is nothing to send."""
        if len(self.owed) >= 2:
            return self._emit(self.owed.popleft(), self.owed.popleft(), 0, 0)
        control, n_req, n_rsp = self._control()
        if control is None and not self.owed:
            return None
        upper = self.owed.popleft() if self.owed else (0, False, False)
        return self._emit((control or 0, False, False), upper, n_req, n_rsp)

    def _emit(self, lower, upper, n_req, n_rsp):
        self.rates["req"].flit(n_req)
        self.rates["rsp"].flit(n_rsp)
        flit = Flit.of(lower[0], upper[0], lower[1], upper[1])
        self.flits.append(flit)
        self.req_beats.append(lower[2] + upper[2])
        return flit

    def _affordable(self, item):
        if isinstance(item, Sent):
            need = {"req_cmd": 1, "req_data": item.request.beats}
        else:
            need = {"rsp_cmd": 1, "rsp_data": item.beats}
        return all(self.credits[cls]["pool"] >= n for cls, n in need.items())

    def _control(self):
        """A control half, or None when it would hold nothing; and the requests and
        responses it issues."""
        rng = self.rng
        half, sector, n = 0, 0, {"req": 0, "rsp": 0}
        cap = {"req": min(_MAX_REQUESTS, self.rates["req"].allowance),
               "rsp": self.rates["rsp"].allowance}
        queues = {"req": self.requests, "rsp": self.responses}
        while not n["req"] + n["rsp"] or rng.random() >= self.stop:
            options = [k for k, q in queues.items()
                       if q and n[k] < cap[k] and self._affordable(q[0])]
            if not options:
                break
            kind = rng.choice(options)
            item = queues[kind][0]
            if kind == "req":
                ftype, value = item.ftype, item.field
            else:
                ftype, value = response_field(item, 1)
            size = 4 if ftype == FType.REQUEST else 2 if ftype in (
                FType.COMPRESSED_REQUEST, FType.RESPONSE) else 1
            start = -(-sector // size) * size
            if rng.random() < self.gap:
                start += size
            if start + size > HALF_SECTORS:
                break
            queues[kind].popleft()
            half |= place(start, value)
            sector = start + size
            n[kind] += 1
            self._spend(item)
        return (half if n["req"] + n["rsp"] else None), n["req"], n["rsp"]

    def _spend(self, item):
        r = item.request if isinstance(item, Sent) else item
        cmd, dat = ("req_cmd", "req_data") if isinstance(item, Sent) else ("rsp_cmd", "rsp_data")
        self.credits[cmd]["pool"] -= 1
        self.credits[dat]["pool"] -= r.beats
        for k, (value, message, _) in enumerate(item_halves(r)):
            done = isinstance(item, Sent) and k % 2 == 1 and k < 2 * r.beats
            self.owed.append((value, message, done))


def responses(rng, n):
    """``n`` random responses (read, with data, and write)."""
    return [random_response(rng) for _ in range(n)]


class RegionAnswers:
    """A stand-in Rx address cache for the golden unpacker (its ``address_cache``): each
    compressed request gets the next ReqAddr[56:20] of ``regions`` (an iterable; None: the
    entry cannot be expanded, or 0 with ``lenient``); CLOADs are ignored, the traffic having
    computed the regions already. ``asked`` lists the ``(acc, way)`` of every expansion."""

    index = "SRCACCID"

    def __init__(self, regions, lenient=False):
        self._regions, self._lenient, self.asked = iter(regions), lenient, []

    def load(self, acc, way, tag):
        pass

    def expand(self, acc, way, addr_19_6):
        self.asked.append((acc, way))
        region = next(self._regions)
        if region is None and self._lenient:
            region = 0
        return None if region is None else region << 20 | addr_19_6 << 6
