# SPDX-License-Identifier: BSD-2-Clause
"""TL transmit side: UPLI requests and responses packed into TL flits [UALink 1.0 §5.1-5.9]."""

from .cache import TxAddrCache
from .compose import (
    DECIDE_CREDIT_BITS,
    RECORDS_AHEAD,
    SCHEDULES_AHEAD,
    account_credits,
    composer_members,
    count_lead,
    flits_to_next,
    outstanding_after,
    record_layout,
    schedule_queue,
)
from .data import DataSequencer, poison_half, req_beat_layout, rsp_beat_layout
from .fill import TxFill
from .halves import ITEM_HALVES, HalfAligner, half_item, half_layout
from .intake import BURST_TIMEOUT, TxIntake
from .packer import WANT_AHEAD, TlTx
from .place import (
    encode_request,
    flow_control_fields,
    place_flow_control,
    request_footprints,
    request_word,
    response_word,
    schedule_layout,
    tx_req_entry,
    tx_rsp_entry,
    wide_start,
)

__all__ = [
    "TxAddrCache",
    "DECIDE_CREDIT_BITS",
    "RECORDS_AHEAD",
    "SCHEDULES_AHEAD",
    "account_credits",
    "composer_members",
    "count_lead",
    "flits_to_next",
    "outstanding_after",
    "record_layout",
    "schedule_queue",
    "TxFill",
    "DataSequencer",
    "poison_half",
    "req_beat_layout",
    "rsp_beat_layout",
    "ITEM_HALVES",
    "HalfAligner",
    "half_item",
    "half_layout",
    "BURST_TIMEOUT",
    "TxIntake",
    "WANT_AHEAD",
    "TlTx",
    "encode_request",
    "flow_control_fields",
    "place_flow_control",
    "request_footprints",
    "request_word",
    "response_word",
    "schedule_layout",
    "tx_req_entry",
    "tx_rsp_entry",
    "wide_start",
]
