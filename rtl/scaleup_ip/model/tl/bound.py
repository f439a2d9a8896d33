# SPDX-License-Identifier: BSD-2-Clause
"""The best legal packing: the fewest TL flits that carry a run of requests and responses.

This is the bound the TL benchmark measures its packer against (README §3, *Bound*). It knows
only the spec's rules, not the packer's policy:

- a Control half-flit holds fields in the footprints of Table 5-2: an uncompressed request
  (4 sectors) at 3-0 or 7-4; a compressed request or an uncompressed response (2 sectors) at
  1-0, 3-2, 5-4 or 7-6; a compressed response (1 sector) anywhere; requests in order from the
  low sectors up [§5.6.2]; so a control takes the next ``a`` requests when they fit in that
  order, and any responses whose fields fit in the sectors left (whole sector pairs);
- its data half-flits follow it in field order [§5.1.1]; the final one of a control that would
  land in a lower half is swapped into the upper half beside the next control, and a control
  that implies no data leaves at once with a MANDATORY NOP upper half [§5.1];
- at most 4 requests and 8 responses outstanding, one of each retired per flit [§5.7];
- a control may be empty (NOP sectors only), which only waits out a rate limit.

Both queues are taken in order (the TL keeps them so [ours]); credits and Flow Control fields
are left out (the benchmark grants every credit before it starts and returns none in between).
The search is exact: a shortest path over (requests sent, responses sent, position of the next
control, outstanding requests, outstanding responses).
"""

from dataclasses import dataclass

from .flit import (
    FIELD_SECTORS,
    HALF_SECTORS,
    MAX_REQUESTS,
    REQUEST_LIMIT,
    RESPONSE_LIMIT,
    WRITE_FULL,
    FType,
    Request,
    response_ftype,
)

__all__ = ["Packing", "best_packing", "item_shape"]


@dataclass(frozen=True)
class Packing:
    """The best legal packing of a run.

    Attributes
    ----------
    flits : int
        Flits it needs.
    data_halves : int
        Data half-flits it carries (byte-enable halves not counted).
    controls : tuple of (int, int)
        Requests and responses of each control half-flit, in order.
    """

    flits: int
    data_halves: int
    controls: tuple

    @property
    def efficiency(self):
        """Data bytes over flit bytes [§5.4]."""
        return self.data_halves / (2 * self.flits) if self.flits else 0.0


def item_shape(item, compressed=False):
    """``(sectors, halves, data_halves)`` of an item's field and the half-flits that follow
    it: 2 per beat, and a byte-enable half for a request with data other than WriteFull."""
    if isinstance(item, Request):
        sectors = FIELD_SECTORS[FType.COMPRESSED_REQUEST if compressed else FType.REQUEST]
        be = bool(item.beats) and item.cmd != WRITE_FULL
        return sectors, 2 * item.beats + be, 2 * item.beats
    return FIELD_SECTORS[response_ftype(item)], 2 * item.beats, 2 * item.beats


def _request_end(sizes):
    """The sector after the last of request fields of ``sizes`` placed in order, each at the
    lowest sector its footprint allows."""
    sector = 0
    for size in sizes:
        sector += -sector % size + size
    return sector


def _after(p, halves):
    """``(flits, p')`` from a control's flit to the next control's flit, and the position of
    the next control: ``p`` = 1 when the previous control's final data half-flit rides in the
    upper half of this control's flit."""
    if p:
        return 1 + halves // 2, halves % 2
    if not halves:
        return 1, 0                        # MANDATORY NOP upper half
    return 1 + (halves - 1) // 2, (halves - 1) % 2


def _retire(outstanding, issued, flits):
    return max(0, outstanding + issued - flits)


def best_packing(requests, responses, compressed=None):
    """The best legal packing of ``requests`` and ``responses`` (each in order).

    ``compressed[i]`` tells whether request ``i`` goes compressed (the Tx address cache's
    decision, made before packing); none is without it. Returns a :class:`Packing`.
    """
    compressed = compressed or [False] * len(requests)
    req = [item_shape(r, c) for r, c in zip(requests, compressed)]
    rsp = [item_shape(r) for r in responses]
    n_req, n_rsp = len(req), len(rsp)
    # Per request start: for each count a, (fits, sectors used, halves).
    req_options = []
    for i in range(n_req + 1):
        options = [(0, 0)]
        for a in range(1, min(MAX_REQUESTS, n_req - i) + 1):
            sizes = [s for s, _, _ in req[i:i + a]]
            if _request_end(sizes) > HALF_SECTORS:
                break
            options.append((sum(sizes), options[-1][1] + req[i + a - 1][1]))
        req_options.append(options)
    rsp_options = []
    for j in range(n_rsp + 1):
        options = [(0, 0)]
        for b in range(1, min(RESPONSE_LIMIT, n_rsp - j) + 1):
            s, h, _ = rsp[j + b - 1]
            options.append((options[-1][0] + s, options[-1][1] + h))
            if options[-1][0] > HALF_SECTORS:
                options.pop()
                break
        rsp_options.append(options)
    data = sum(d for _, _, d in req) + sum(d for _, _, d in rsp)
    # Shortest path in half-flits; states grouped by items sent (i + j), so every transition
    # that sends an item goes to a later group, finished only after this one. Empty controls
    # stay in their group: a state they improve is taken again.
    start = (0, 0, 0, 0, 0)
    best = {start: (0, None, None)}
    groups = {0: [start]}
    final = None
    for level in range(n_req + n_rsp + 1):
        states = groups.pop(level, [])
        k = 0
        while k < len(states):
            state = states[k]
            k += 1
            i, j, p, oq, os_ = state
            cost = best[state][0]
            if i == n_req and j == n_rsp:
                total = cost + p           # a last swapped half rides with a NOP control
                if final is None or total < final[0]:
                    final = (total, state)
                continue
            for a, (rs, rh) in enumerate(req_options[i]):
                if a > REQUEST_LIMIT - oq:
                    break
                for b, (ss, sh) in enumerate(rsp_options[j]):
                    if b > RESPONSE_LIMIT - os_ or rs + ss > HALF_SECTORS:
                        break
                    halves = rh + sh
                    flits, q = _after(p, halves)
                    nxt = (i + a, j + b, q, _retire(oq, a, flits), _retire(os_, b, flits))
                    if nxt == state:
                        continue
                    c = cost + 1 + halves + (not p and not halves)
                    old = best.get(nxt)
                    if old is None or c < old[0]:
                        best[nxt] = (c, state, (a, b))
                        if a + b == 0:
                            states.append(nxt)      # again if it was relaxed already
                        elif old is None:
                            groups.setdefault(level + a + b, []).append(nxt)
    controls = []
    state = final[1]
    while best[state][1] is not None:
        controls.append(best[state][2])
        state = best[state][1]
    return Packing(flits=final[0] // 2, data_halves=data, controls=tuple(reversed(controls)))
