# SPDX-License-Identifier: BSD-2-Clause
"""UPLI channel endpoints and protocol checkers [UALink 1.0 ch. 2]."""

from .originator import RESPONSE_DEPTH, TIMEOUT_TICKS, UpliOriginator
from .receiver import UpliReceiver
from .request_check import UpliRequestCheck, count_errors
from .response_check import UpliResponseCheck
from .sender import UpliCredits, UpliRequestSender, UpliSender

__all__ = [
    "RESPONSE_DEPTH",
    "TIMEOUT_TICKS",
    "UpliOriginator",
    "UpliReceiver",
    "UpliRequestCheck",
    "count_errors",
    "UpliResponseCheck",
    "UpliCredits",
    "UpliRequestSender",
    "UpliSender",
]
