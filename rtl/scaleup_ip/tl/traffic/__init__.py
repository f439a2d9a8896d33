# SPDX-License-Identifier: BSD-2-Clause
"""UPLI traffic made and checked in hardware (README.md here): :class:`UpliGen` and
:class:`UpliCheck`, and the draws both make from one seed."""

from .check import UpliCheck
from .draws import (
    Lanes,
    Pacing,
    RdData,
    RdHeader,
    ReqData,
    ReqHeader,
    WrHeader,
    count_beats,
    poisoned,
    splitmix64,
)
from .gen import UpliGen

__all__ = [
    "UpliCheck",
    "UpliGen",
    "Lanes",
    "Pacing",
    "count_beats",
    "ReqData",
    "ReqHeader",
    "RdData",
    "RdHeader",
    "WrHeader",
    "poisoned",
    "splitmix64",
]
