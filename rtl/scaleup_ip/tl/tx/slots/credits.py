# SPDX-License-Identifier: BSD-2-Clause
"""Rule 6 for every prefix of the slot packer's windows (README §3): whether the credits
cover it, and whether it spends its VC's credits or the pool's."""

from amaranth import Array, Cat, Signal

from ...layout import MAX_BEATS, REQS_PER_CONTROL, CreditSlot

__all__ = ["prefix_credits", "request_prefixes"]


def _at_least(counter, value, width):
    """``counter >= value`` for a wide counter and a ``width``-bit value."""
    return counter[width:].any() | (counter[:width] >= value)


def request_prefixes(m, req):
    """``(total beats, one VC run)`` of each prefix of the requests ``req`` (each with ``vc``
    and ``beats``: :data:`~scaleup_ip.tl.layout.slot_req_flags`)."""
    prefixes = [(req[0].beats, 1)]
    for i in range(1, REQS_PER_CONTROL):
        total = Signal(range((i + 1) * MAX_BEATS + 1), name=f"req_p{i + 1}_beats")
        m.d.comb += total.eq(prefixes[-1][0] + req[i].beats)
        prefixes.append((total, prefixes[-1][1] & (req[i].vc == req[0].vc)))
    return prefixes


def prefix_credits(m, name, credits, cmd_cls, data_cls, vc0, prefixes, counts=None):
    """Rule 6 for each prefix (``(total beats, one VC run)``, the first's VC ``vc0``) against
    ``credits`` (:func:`~scaleup_ip.tl.layout.credit_array` of
    :data:`~scaleup_ip.tl.tx.compose.DECIDE_CREDIT_BITS`):
    ``(ok, by_vc)`` lists, by_vc when the prefix spends its VC's credits. Prefix ``k`` holds
    ``k + 1`` fields, or ``counts[k]`` (a signal) when ``counts`` is given."""
    cmd, dat = credits[cmd_cls], credits[data_cls]
    oks, by_vcs = [], []
    def cmd_fit(counter, k):
        """The command credits cover prefix ``k``: against a constant, or against each count
        it may hold, selected by it (no compare of two signals)."""
        if counts is None:
            return _at_least(counter, k + 1, len(prefixes[k][0]))
        n = counts[k]
        return Cat(*((n == v) & _at_least(counter, v, len(n))
                     for v in range(1, len(prefixes) + 1))).any()

    for k, (total, one_vc) in enumerate(prefixes):
        width = len(total)
        vc_fit = Array(cmd_fit(cmd[CreditSlot.VC0 + v], k)
                       & _at_least(dat[CreditSlot.VC0 + v], total, width) for v in range(4))
        by_vc, ok = Signal(name=f"{name}_p{k + 1}_vc"), Signal(name=f"{name}_p{k + 1}_ok")
        m.d.comb += [
            by_vc.eq(one_vc & vc_fit[vc0]),
            ok.eq(by_vc | (cmd_fit(cmd[CreditSlot.POOL], k)
                           & _at_least(dat[CreditSlot.POOL], total, width))),
        ]
        oks.append(ok)
        by_vcs.append(by_vc)
    return oks, by_vcs


