# SPDX-License-Identifier: BSD-2-Clause
"""The ETH-X completer: the memory side, AXI4 manager toward the local memory [ours]."""

from .completer import DATA_WORDS, Completer
from .read import CompRead, read_job_layout
from .write import CompWrite, write_job_layout, write_answer_layout

__all__ = [
    "DATA_WORDS",
    "Completer",
    "CompRead",
    "read_job_layout",
    "CompWrite",
    "write_job_layout",
    "write_answer_layout",
]
