# SPDX-License-Identifier: BSD-2-Clause
"""Statistical checks for tests that count random events."""

import math

__all__ = ["TAIL", "plausible"]

#: The odds that :func:`plausible` rejects a count drawn at the rate it is checked against.
TAIL = 1e-12


def plausible(count, trials, p, tail=TAIL):
    """Whether ``count`` successes in ``trials`` at probability ``p`` each lie in neither tail of
    mass ``tail / 2`` of the binomial distribution (exact sums: near ``p`` 0 or 1 the bounds are
    counts, not a normal approximation's)."""
    def pmf(k):
        if p in (0, 1):
            return float(k == trials * p)
        return math.exp(math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1)
                        + k * math.log(p) + (trials - k) * math.log1p(-p))
    below = sum(pmf(k) for k in range(count + 1))
    above = sum(pmf(k) for k in range(count, trials + 1))
    return min(below, above) > tail / 2
