# SPDX-License-Identifier: BSD-2-Clause
"""The ETH-X requester: AXI4 reads and writes from the GPU side, turned into records [ours]."""

from .read import ReqRead
from .write import ReqWrite, PIECE_BYTES

__all__ = [
    "ReqRead",
    "ReqWrite",
    "PIECE_BYTES",
]
