# SPDX-License-Identifier: BSD-2-Clause
"""The DL flit's CRC-32: inserted on transmit, checked on receive [UALink 1.0 §6.2]."""

from .check import DlCrcCheck
from .insert import DL_CRC_CONFIG, DlCrcInsert, dl_crc, feed_crc

__all__ = [
    "DlCrcCheck",
    "DL_CRC_CONFIG",
    "DlCrcInsert",
    "dl_crc",
    "feed_crc",
]
