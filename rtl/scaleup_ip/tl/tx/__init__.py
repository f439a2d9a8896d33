# SPDX-License-Identifier: BSD-2-Clause
"""TL transmit side: UPLI requests and responses packed into TL flits [UALink 1.0 §5.1-5.9]."""

from .cache import TxAddrCache
from .compose import (
    RECORDS_AHEAD,
    SCHEDULES_AHEAD,
    TxCompose,
    account_credits,
    composer_members,
    count_lead,
    flits_to_next,
    outstanding_after,
    record_layout,
    schedule_queue,
)
from .data import DataSequencer, poison_half, req_beat_layout, rsp_beat_layout
from .decide import DECIDE_CREDIT_BITS, TxDecide, decide_req_layout, decide_rsp_layout
from .fill import TxFill
from .halves import ITEM_HALVES, HalfAligner, half_item, half_layout
from .intake import BURST_TIMEOUT, TxIntake
from .packer import WANT_AHEAD, TlTx
from .place import (
    ControlPlacer,
    encode_request,
    flow_control_fields,
    place_flow_control,
    request_footprints,
    request_word,
    response_offsets,
    response_word,
    rsp_totals_layout,
    schedule_layout,
    tx_req_entry,
    tx_rsp_entry,
    wide_start,
    window_members,
)

__all__ = [
    "TxAddrCache",
    "RECORDS_AHEAD",
    "SCHEDULES_AHEAD",
    "TxCompose",
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
    "DECIDE_CREDIT_BITS",
    "TxDecide",
    "decide_req_layout",
    "decide_rsp_layout",
    "ITEM_HALVES",
    "HalfAligner",
    "half_item",
    "half_layout",
    "BURST_TIMEOUT",
    "TxIntake",
    "WANT_AHEAD",
    "TlTx",
    "ControlPlacer",
    "encode_request",
    "flow_control_fields",
    "place_flow_control",
    "request_footprints",
    "request_word",
    "response_offsets",
    "response_word",
    "rsp_totals_layout",
    "schedule_layout",
    "tx_req_entry",
    "tx_rsp_entry",
    "wide_start",
    "window_members",
]
