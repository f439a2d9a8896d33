# SPDX-License-Identifier: BSD-2-Clause
"""Link-level replay of the DL: transmit buffer and receive sequence [UALink 1.0 §6.6]."""

from .rx import LlrRx
from .tx import LlrTx, ReplaySource

__all__ = [
    "LlrRx",
    "LlrTx",
    "ReplaySource",
]
