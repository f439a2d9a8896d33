# SPDX-License-Identifier: BSD-2-Clause
"""TL receive side: TL flits unpacked into UPLI requests and responses [UALink 1.0 §5.1-5.9]."""

from .cache import RxAddrCache, cache_answer_layout, cache_load_layout, cache_lookup_layout
from .catch import CatchBuffer
from .decode import (
    CACHED_REQS_PER_HALF,
    QUADS,
    REQS_PER_HALF,
    ControlDecoder,
    request_groups,
    rx_req_entry,
    rx_rsp_entry,
)
from .expand import RequestExpand
from .front import RxFront, rx_beat_layout
from .req_out import RequestDeliver, beats_held, expanded_request_layout
from .rsp_out import ResponseDeliver
from .sequence import HalfSequencer, half_class
from .tally import SEGMENT_HALVES, ControlTally, arrivals_layout, field_length_ok, segment_layout
from .unpacker import TlRx

__all__ = [
    "RxAddrCache",
    "cache_answer_layout",
    "cache_load_layout",
    "cache_lookup_layout",
    "CatchBuffer",
    "CACHED_REQS_PER_HALF",
    "QUADS",
    "REQS_PER_HALF",
    "ControlDecoder",
    "request_groups",
    "rx_req_entry",
    "rx_rsp_entry",
    "RequestExpand",
    "RxFront",
    "rx_beat_layout",
    "RequestDeliver",
    "beats_held",
    "expanded_request_layout",
    "ResponseDeliver",
    "HalfSequencer",
    "half_class",
    "SEGMENT_HALVES",
    "ControlTally",
    "arrivals_layout",
    "field_length_ok",
    "segment_layout",
    "TlRx",
]
