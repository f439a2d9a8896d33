# SPDX-License-Identifier: BSD-2-Clause
"""The lossless link's transmit side: queues, replay ring, credits, control frames, the
best-effort path."""

from .best_effort import BestEffortTx
from .control import CtlTx
from .credit import CreditTx
from .llr import LlrTx
from .queues import TxQueues
from .ring import ReplayRing
from .sender import LinkTx

__all__ = [
    "BestEffortTx",
    "CtlTx",
    "CreditTx",
    "LlrTx",
    "TxQueues",
    "ReplayRing",
    "LinkTx",
]
