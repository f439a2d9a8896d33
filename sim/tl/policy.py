# SPDX-License-Identifier: BSD-2-Clause
"""The golden model's packing policies on the TL benchmark's mixes, against the best legal
packing (README §3): ``python -m sim.bench tl_policy``.

The policies are the model's packers, not the RTL: ``best`` (``Packer``, every candidate count
of rule 3), ``slots`` (``SlotPacker``, two candidates in slots and response units) and
``compact`` (``Packer(compact=True)``). Each runs the benchmark's way (the first item alone
into the idle packer, then the rest as a backlog), and its flits go through the model's
receiver, which must deliver every item intact; flits are counted after the Initial Credit
Release Complete message, as the bound counts them.
"""

import random

from scaleup_ip.model.tl.addrcache import AddrCacheConfig, RxAddressCache, TxAddressCache
from scaleup_ip.model.tl.bound import best_packing
from scaleup_ip.model.tl.flit import CLASSES, Packer, Request, Unpacker
from scaleup_ip.model.tl.slots import SlotPacker
from sim.tl.traffic import MIXES, as_received, cacheable, payload_bytes

#: The model's packers by name.
POLICIES = {
    "best": lambda cache: Packer({}, PLENTY, address_cache=cache),
    "slots": lambda cache: SlotPacker({}, PLENTY, address_cache=cache),
    "compact": lambda cache: Packer({}, PLENTY, address_cache=cache, compact=True),
}
#: Credits granted up front: more than any run spends.
PLENTY = {cls: {"pool": 100_000} for cls in CLASSES}
#: The address cache of the benchmark (``sim.bench.TL_CACHE_CONFIG``), adaptive policy.
CACHE = AddrCacheConfig(ways=4, rows=1024)


def mix_items(rng, mix, pairs, cached):
    """``pairs`` transaction pairs of ``mix``; made cacheable with the cache."""
    items = [item for _ in range(pairs) for item in MIXES[mix](rng)]
    return [cacheable(rng, item) for item in items] if cached else items


def pack(policy, items, cached):
    """Run ``items`` through the model packer ``policy`` and its receiver: ``(flits sent after
    the Initial Credit Release Complete message, requests compressed, pacing flits)``. Raises
    ``AssertionError`` unless every item arrives intact."""
    tx = TxAddressCache(CACHE, "adaptive") if cached else None
    p = POLICIES[policy](tx)
    push = lambda item: (p.push_request if isinstance(item, Request) else p.push_response)(item)
    push(items[0])
    flits = p.drain()
    for item in items[1:]:
        push(item)
    flits += p.drain()
    u = Unpacker(address_cache=RxAddressCache(CACHE, index="DSTACCID") if cached else None)
    for flit in flits:
        u.feed(flit)
    assert u.error is None and u.idle() and p.backlog == 0
    assert u.requests == [as_received(i) for i in items if isinstance(i, Request)]
    assert u.responses == [as_received(i) for i in items if not isinstance(i, Request)]
    return len(flits) - 1, p.compressed_sent, p.pace_flits


def bound(items, cached):
    """The best legal packing of ``items`` (requests compressed as a fresh model cache
    compresses them, as the packer's own cache does)."""
    requests = [i for i in items if isinstance(i, Request)]
    responses = [i for i in items if not isinstance(i, Request)]
    compressed = [False] * len(requests)
    if cached:
        model = TxAddressCache(CACHE, "adaptive")
        compressed = [model.request(r.dst_acc, r.cmd, r.attr, r.length, r.addr,
                                    r.metadata).compressed for r in requests]
    return best_packing(requests, responses, compressed)


def rows(seed=1, pairs=200):
    """A row per mix, cache off and on, and policy: flits, efficiency, the bound's, pacing
    flits."""
    out = []
    for cached in (False, True):
        for mix in MIXES:
            items = mix_items(random.Random(seed), mix, pairs, cached)
            best = bound(items, cached)
            data = sum(payload_bytes(i) for i in items)
            for policy in POLICIES:
                flits, compressed, pacing = pack(policy, items, cached)
                out.append({"mix": mix, "cache": cached, "policy": policy, "items": len(items),
                            "flits": flits, "bound_flits": best.flits,
                            "efficiency": round(data / 64 / flits, 4),
                            "bound": round(best.efficiency, 4), "compressed": compressed, "pacing": pacing})
    return out
