# SPDX-License-Identifier: BSD-2-Clause
"""The lossless link's receive side: checks, sequence, store, credits returned, the
best-effort path."""

from .best_effort import BestEffortRx
from .check import RxCheck
from .credit import CreditRx, credits_of
from .llr import LlrRx
from .receiver import LinkRx
from .store import RxStore

__all__ = [
    "BestEffortRx",
    "RxCheck",
    "CreditRx",
    "credits_of",
    "LlrRx",
    "LinkRx",
    "RxStore",
]
