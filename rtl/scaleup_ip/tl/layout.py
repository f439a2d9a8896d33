# SPDX-License-Identifier: BSD-2-Clause
"""UALink TL layouts, enums, stream signatures and configuration: the only copy of each.

Field layouts follow UALink_200 Rev 1.0 Tables 5-29..5-38; fields are declared least significant
first, as Amaranth lays them out. Conventions that the spec leaves open are listed, once, in
``rtl/scaleup_ip/tl/README.md``.
"""

import dataclasses
import enum as py_enum

from amaranth import Shape
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import BlockConfig, check_int

__all__ = [
    "rx_error_counts",
    "SLOTS_PER_HALF",
    "SLOT_WINDOW",
    "slot_window_layout",
    "slot_req_flags",
    "unit_flags",
    "unit_response",
    "unit_view",
    "ACC_BITS",
    "BEAT_BITS",
    "BEAT_BYTES",
    "CACHE_LINE_LSB",
    "CACHE_MAX_ROWS",
    "CACHE_TAG_BITS",
    "CACHE_TAG_LSB",
    "CACHE_WAYS",
    "CMD_CREDIT_MAX",
    "CREDIT_BITS",
    "CWAY_BITS",
    "DATA_CREDIT_MAX",
    "FAIR_LEAD_LIMIT",
    "LEAD_SLACK",
    "HALF_BITS",
    "MAX_BEATS",
    "MAX_QUEUE_DEPTH",
    "MAX_RSP_QUEUE_DEPTH",
    "REQS_PER_CONTROL",
    "REQ_LIMIT",
    "RSP_LIMIT",
    "SECTORS_PER_HALF",
    "SECTOR_BITS",
    "UPLI_PORTS",
    "AddrCacheConfig",
    "CachePolicy",
    "CreditClass",
    "CreditSlot",
    "FType",
    "MsgType",
    "ReqCmd",
    "RxCacheCount",
    "RxError",
    "Status",
    "TX_PACKERS",
    "TlConfig",
    "TxCacheCount",
    "UpliChannel",
    "UpliError",
    "byte_enable_half",
    "traffic_counts",
    "traffic_limits",
    "cache_decision_layout",
    "cache_entry_layout",
    "IsolationCause",
    "MAX_OUTSTANDING",
    "OriginatorConfig",
    "OriginatorCount",
    "cached_request_layout",
    "compressed_request",
    "control_half",
    "credit_array",
    "credit_field",
    "credit_update_layout",
    "flit_layout",
    "flit_stream",
    "flow_control",
    "half_pair",
    "message_half",
    "orig_data_layout",
    "originator_counts",
    "orig_data_stream",
    "rd_rsp_layout",
    "rd_rsp_stream",
    "request_layout",
    "request_stream",
    "rx_cache_counts",
    "single_beat_response",
    "tx_cache_counts",
    "tx_cache_port",
    "uncompressed_request",
    "uncompressed_response",
    "upli_channel",
    "upli_credit_layout",
    "upli_error_counts",
    "upli_members",
    "wr_rsp_layout",
    "wr_rsp_stream",
    "write_or_multi_response",
]

SECTOR_BITS = 32                 # [UALink 1.0 §5.1.1] a sector is 4 bytes
SECTORS_PER_HALF = 8             # [§5.1.1] a half-flit is sectors 0-7 (lower) or 8-15 (upper)
HALF_BITS = SECTOR_BITS * SECTORS_PER_HALF
BEAT_BITS = 512                  # [Table 2-14] one UPLI data beat, two data half-flits
BEAT_BYTES = BEAT_BITS // 8
MAX_BEATS = 4                    # [§2.7.4] 256 bytes at most per request
REQ_LIMIT = 4                    # [§5.7] requests outstanding at the peer's catch buffer
RSP_LIMIT = 8                    # [§5.7] responses outstanding at the peer's catch buffer
CMD_CREDIT_MAX = 7               # [Table 5-38] 'tvvccc'
DATA_CREDIT_MAX = 31             # [Table 5-38] 'tvvccccc'
MAX_QUEUE_DEPTH = 256            # largest transmit request queue [ours]
#: Largest transmit response queue [ours].
MAX_RSP_QUEUE_DEPTH = 32


class FType(enum.Enum, shape=4):
    """Field type, the top nibble of every control field [Table 5-27]."""
    FC_NOP = 0x0
    REQUEST = 0x1
    RESPONSE = 0x2
    COMPRESSED_REQUEST = 0x3
    SINGLE_BEAT_READ = 0x4
    WRITE_OR_MULTI = 0x5


class ReqCmd(enum.Enum, shape=6):
    """UPLI request commands with their own behaviour [Table 2-6]. Vendor-defined ranges
    0x08-0x0F (read class), 0x2C-0x2F (write class), 0x3C-0x3F (atomic class) are legal too."""
    READ = 0x03
    WRITE = 0x28
    WRITE_FULL = 0x29
    WRITE_MESSAGE = 0x2A
    ATOMIC_R = 0x30
    ATOMIC_NR = 0x32


class Status(enum.Enum, shape=4):
    """Response status [Tables 2-9, 2-12]; ISOLATE is legal on write responses only."""
    OKAY = 0x0
    TARGET_ABORT = 0x2
    DECODE_ERROR = 0x3
    PROTECTION_VIOLATION = 0x6
    CMPTO = 0x8
    ISOLATE = 0xF


class MsgType(enum.Enum, shape=8):
    """TL message half-flit types [Table 5-28], in byte 0 of the half-flit."""
    NOP = 0x00
    CREDIT_INIT_DONE = 0x01
    POISONED_DATA = 0x20


class CreditClass(py_enum.IntEnum):
    """TL credit classes [Table 5-26]."""
    REQ_CMD = 0
    RSP_CMD = 1
    REQ_DATA = 2
    RSP_DATA = 3


class CreditSlot(py_enum.IntEnum):
    """Where a credit belongs: the pool or one of the four virtual channels [§5.8]."""
    POOL = 0
    VC0 = 1
    VC1 = 2
    VC2 = 3
    VC3 = 4


class RxError(py_enum.IntEnum):
    """Receive error kinds, in the order README §4 lists them; also the priority when one flit
    shows several: the lower half-flit's errors before the upper's, the lowest kind among
    them."""
    RESERVED_FTYPE = 0
    FOOTPRINT = 1
    RESERVED_COMMAND = 2
    IMPOSSIBLE_LENGTH = 3
    RESERVED_STATUS = 4
    MISPLACED_POISON = 5
    UNKNOWN_MESSAGE = 6
    MANDATORY_NOP = 7
    CATCH_OVERRUN = 8
    BUFFER_OVERRUN = 9
    COMPRESSED_REQUEST = 10


# Control fields, least significant first. ------------------------------------------------------

#: [Table 5-29] Uncompressed request, 4 sectors; ADDR is ReqAddr[56:2].
uncompressed_request = data.StructLayout({
    "num_beats": 2, "cway": 2, "cload": 1, "dst_acc": 10, "src_acc": 10, "addr": 55,
    "metadata": 8, "len": 6, "attr": 8, "pool": 1, "tag": 11, "asi": 2, "vc": 2, "cmd": 6,
    "ftype": FType,
})

#: [Table 5-30] Uncompressed response, 2 sectors. ``rd`` is RD/WR, 1 = read [ours].
uncompressed_response = data.StructLayout({
    "spare": 16, "dst_acc": 10, "src_acc": 10, "last": 1, "rd": 1, "status": 4, "offset": 2,
    "len": 2, "pool": 1, "tag": 11, "vc": 2, "ftype": FType,
})

#: [Table 5-31] Compressed request, 2 sectors (used with the address caches).
compressed_request = data.StructLayout({
    "cway": 2, "dst_acc": 10, "src_acc": 10, "addr": 14, "metadata": 3, "len": 2, "pool": 1,
    "tag": 11, "asi": 2, "vc": 2, "cmd": 3, "ftype": FType,
})

#: [Table 5-34] Compressed single-beat read response, 1 sector.
single_beat_response = data.StructLayout({
    "spare": 1, "last": 1, "offset": 2, "dst_acc": 10, "pool": 1, "tag": 11, "vc": 2,
    "ftype": FType,
})

#: [Table 5-36] Compressed write or multi-beat read response ("CWR"), 1 sector; ``rd`` 1 = read.
write_or_multi_response = data.StructLayout({
    "spare": 1, "rd": 1, "len": 2, "dst_acc": 10, "pool": 1, "tag": 11, "vc": 2, "ftype": FType,
})


def credit_field(count_bits):
    """[Table 5-38] One class of a flow-control field, 'tvvc..c': ``t`` 0 = pool, 1 = VC."""
    return data.StructLayout({"count": count_bits, "vc": 2, "t": 1})


#: [Table 5-38] Flow control / NOP field, 1 sector; all zero is a NOP.
flow_control = data.StructLayout({
    "rsp_data": credit_field(5), "req_data": credit_field(5),
    "rsp_cmd": credit_field(3), "req_cmd": credit_field(3), "ftype": FType,
})

#: A control half-flit as its eight sectors.
control_half = data.ArrayLayout(SECTOR_BITS, SECTORS_PER_HALF)

#: Two half-flits: a flit's lower and upper half, or a 64-byte beat's bytes 0..31 and 32..63
#: [§5.1.1].
half_pair = data.ArrayLayout(HALF_BITS, 2)

#: A half-flit read as a message: its type in byte 0, then the rest [§5.1.2].
message_half = data.StructLayout({"type": MsgType, "rest": HALF_BITS - Shape.cast(MsgType).width})

#: A byte-enable half-flit: one beat's 64 byte enables per 64-byte slot of the 256-byte block its
#: request falls in (README §1).
byte_enable_half = data.ArrayLayout(BEAT_BYTES, HALF_BITS // BEAT_BYTES)

#: One TL flit toward or from the data link: ``data[0]`` is the lower half-flit, ``data[1]`` the
#: upper; ``msg`` bit 0 is M0 (lower), bit 1 is M1 (upper) [§5.1.2].
flit_layout = data.StructLayout({
    "data": half_pair,
    "msg": 2,
})


def flit_stream():
    """A valid/ready stream of :data:`flit_layout`, one TL flit per transfer."""
    return stream.Signature(flit_layout)


# UPLI items as they cross the TL core (one port, valid/ready; credits live in the UPLI adapter).

#: [Table 2-2] Request channel fields carried by the TL.
request_layout = data.StructLayout({
    "cmd": 6, "vc": 2, "asi": 2, "tag": 11, "attr": 8, "len": 6, "metadata": 8, "addr": 57,
    "src_acc": 10, "dst_acc": 10, "num_beats": 2, "pool": 1,
})

#: [Table 2-14] Originator data channel, one 64-byte beat.
orig_data_layout = data.StructLayout({
    "data": BEAT_BITS, "byte_en": BEAT_BYTES, "offset": 2, "last": 1, "error": 1, "vc": 2,
    "pool": 1,
})

#: [Table 2-8] Read response/data channel, one beat with its response fields.
rd_rsp_layout = data.StructLayout({
    "data": BEAT_BITS, "vc": 2, "pool": 1, "tag": 11, "src_acc": 10, "dst_acc": 10,
    "num_beats": 2, "status": 4, "offset": 2, "last": 1, "error": 1,
})

#: [Table 2-11] Write response channel.
wr_rsp_layout = data.StructLayout({
    "vc": 2, "pool": 1, "tag": 11, "src_acc": 10, "dst_acc": 10, "status": 4,
})


def request_stream():
    """Request headers; a data command's beat 0 is on :func:`orig_data_stream` alongside."""
    return stream.Signature(request_layout)


def orig_data_stream():
    """Originator data beats."""
    return stream.Signature(orig_data_layout)


def rd_rsp_stream():
    """Read response beats."""
    return stream.Signature(rd_rsp_layout)


def wr_rsp_stream():
    """Write responses."""
    return stream.Signature(wr_rsp_layout)


def upli_members(flow, prefix=""):
    """The four UPLI item streams of a TL port list: ``<prefix>req``, ``<prefix>orig``,
    ``<prefix>rd_rsp`` and ``<prefix>wr_rsp``, each ``flow`` (``In`` or ``Out``)."""
    return {f"{prefix}req": flow(request_stream()), f"{prefix}orig": flow(orig_data_stream()),
            f"{prefix}rd_rsp": flow(rd_rsp_stream()), f"{prefix}wr_rsp": flow(wr_rsp_stream())}


#: [§2.5] Ports a UPLI interface can carry; the TL uses port 0 only [ours].
UPLI_PORTS = 4

#: [§2.6] The credit-return wires of one UPLI channel, driven by its receiver: per port,
#: ``init_done`` (initial release complete, stays set), ``vld``, ``pool`` (1 = pool credit),
#: ``vc`` and ``num`` (``num + 1`` credits, 1..4).
upli_credit_layout = data.StructLayout({
    "init_done": UPLI_PORTS,
    "vld": UPLI_PORTS,
    "pool": UPLI_PORTS,
    "vc": data.ArrayLayout(2, UPLI_PORTS),
    "num": data.ArrayLayout(2, UPLI_PORTS),
})

def upli_channel(layout):
    """One UPLI channel on port 0 [§2.6, §2.7], as its sender sees it: ``vld`` and ``payload``
    out, the receiver's credit returns in."""
    return wiring.Signature({"vld": wiring.Out(1), "payload": wiring.Out(layout),
                             "credit": wiring.In(upli_credit_layout)})


#: Credits of every class and slot moving in one clock (grants decoded from FC fields, or
#: returns from drained receive buffers): ``<class>[slot]`` with slot 0 = pool, 1..4 = VC0..3.
credit_update_layout = data.StructLayout({
    cls.name.lower(): data.ArrayLayout(5, len(CreditSlot)) for cls in CreditClass
})


#: Width of every TL credit counter: up to 4095 credits of one class and slot [ours].
CREDIT_BITS = 12
#: Requests in one control half: 4 compressed (2 sectors each) or 2 uncompressed (sectors 3-0
#: and 7-4) [Table 5-2, §5.10].
REQS_PER_CONTROL = 4
#: Balance (README §3 rules 3 and 4) [ours]: the count of requests minus responses issued
#: saturates at -FAIR_LEAD_LIMIT and FAIR_LEAD_LIMIT - 1; a control leaves neither kind more
#: than LEAD_SLACK ahead of the other while the other could go.
FAIR_LEAD_LIMIT = 16
LEAD_SLACK = 4


#: The slot packer (README §3, *Slot packer*) [ours]: a control half is this many slots of
#: two sectors; its decision sees this many requests and response units.
SLOTS_PER_HALF = 4
SLOT_WINDOW = 4

#: What the slot packer's decision sees (README §3, *Slot packer*): per request of the window
#: whether it takes two slots (uncompressed) and carries data; per response unit whether it
#: holds two responses and whether each carries data; thermometer codes (bit ``k``: ``k + 1``
#: or more) of the entries shown, of the requests the allowance and the credits let go
#: (``req_most``) and of the responses (``rsp_most``), and of the allowances alone
#: (``req_allowed``, ``rsp_allowed``); whether a request waits beyond the window (``more``),
#: the balance count, a pending credit return and the swap.
slot_window_layout = data.StructLayout({
    "req": data.ArrayLayout(data.StructLayout({"two": 1, "data": 1}), SLOT_WINDOW),
    "req_valid": SLOT_WINDOW,
    "more": 1,
    "unit": data.ArrayLayout(data.StructLayout({"pair": 1, "data": 2}), SLOT_WINDOW),
    "unit_valid": SLOT_WINDOW,
    "req_most": REQS_PER_CONTROL,
    "rsp_most": RSP_LIMIT,
    "req_allowed": REQS_PER_CONTROL,
    "rsp_allowed": RSP_LIMIT,
    "lead": range(-FAIR_LEAD_LIMIT, FAIR_LEAD_LIMIT),
    "reserve": 1,
    "swapped": 1,
})


#: A response of a slot packer's unit: its VC, its read data beats, and the read beats of every
#: response queued up to it, modulo 64 (so that a prefix's beats are one subtraction).
unit_response = data.StructLayout({"vc": 2, "beats": 3, "run": 6})

#: A response unit as the slot decision sees it (README §3, *Slot packer*): one uncompressed
#: response (``wide``), or one or two compressed ones (``pair``); the responses in it (of a unit
#: alone, the second with no VC and no beats and the first's ``run``).
unit_flags = data.StructLayout({
    "wide": 1,
    "pair": 1,
    "rsp": data.ArrayLayout(unit_response, 2),
})

#: A response unit as the slot composer places it: its flags and its slot (two sectors, every
#: POOL bit 0; of two compressed responses, the first in the low sector).
unit_view = data.StructLayout({
    "word": 64,
    **{name: field.shape for name, field in unit_flags},
})

#: What the slot composer needs of a request besides its field: its footprint (uncompressed),
#: VC, data beats, whether a byte-enable half-flit follows its data and where beat 0's byte
#: enables go in it.
slot_req_flags = data.StructLayout({"wide": 1, "vc": 2, "beats": 3, "be": 1, "be_pos": 2})

def credit_array(width):
    """``[class][slot]`` counters, one ``width``-bit count per :class:`CreditClass` and slot."""
    return data.ArrayLayout(data.ArrayLayout(width, len(CreditSlot)), len(CreditClass))


#: One 8-bit saturating counter per :class:`RxError` kind.
rx_error_counts = data.ArrayLayout(8, len(RxError))


class UpliError(py_enum.IntEnum):
    """UPLI protocol violations seen on the channels into the TL, and what is done about each
    (README §5) [ours]. None stops the TL; good traffic around them is not touched."""
    RESERVED_COMMAND = 0     # request dropped with its announced beats
    IMPOSSIBLE_LENGTH = 1    # same: 256-byte crossing, NumBeats, WriteFull, ReqAddr[1:0]
    MISSING_BEAT0 = 2        # data request without beat 0 in its clock: dropped
    STRAY_DATA = 3           # OrigData beat with none due: dropped
    BEAT_SEQUENCE = 4        # wrong OrigDataOffset (beat poisoned) or OrigDataLast (mended)
    WRITEFULL_BYTE_EN = 5    # WriteFull beat with a byte enable clear: poisoned
    TRUNCATED_BURST = 6      # data request while beats are due: those beats sent poisoned
    RESERVED_STATUS = 7      # response sent with TARGET ABORT instead
    RSP_SEQUENCE = 8         # read-response beats out of order, stray or missing


#: One 8-bit saturating counter per :class:`UpliError` kind.
upli_error_counts = data.ArrayLayout(8, len(UpliError))


#: The transmit packers a TL can be built with (:class:`TlConfig` ``tx_packer``) [ours].
TX_PACKERS = ("slots", "compact")


@dataclasses.dataclass(frozen=True)
class TlConfig(BlockConfig):
    """Parameters of the TL transmit and receive cores.

    Parameters
    ----------
    tx_req_depth, tx_rsp_depth : int
        Transmit request and response queue entries, including the windows the packer's
        decision sees (4 requests, 4 response units); the response queue holds at most
        :data:`MAX_RSP_QUEUE_DEPTH`. The compact packer's queues hold two more, in the
        buffer that shows their heads.
    tx_data_depth : int
        Transmit request-data and response-data queue beats (64 bytes each).
    rx_req, rx_rsp : int
        Receive request and response buffer entries: the Request CMD and Response CMD pool
        credits this TL advertises [§5.8].
    rx_req_data, rx_rsp_data : int
        Receive data buffer beats: the Request Data and Response Data pool credits advertised.
    cache_ways : int
        Ways of the Tx and Rx address caches, 0 (no caches: requests are never compressed, and a
        compressed request received is an error) or 1, 2, 4 [§5.5].
    cache_rows : int
        Rows of both address caches, 1 .. 1024.
    cache_tx_index, cache_rx_index : str
        The ID field each cache's rows follow (:class:`AddrCacheConfig` ``index``). The
        defaults are an accelerator's [§5.5]; an Rx cache fed by another accelerator's Tx
        (a direct link, or these tests) follows DSTACCID, as that Tx does.
    tx_packer : str
        How the transmit side fills control half-flits (:data:`TX_PACKERS`, README §3):
        "slots" decides in slots and response units between two candidates (README §3, *Slot
        packer*: within 0.4 points of the best legal packing); "compact" fills from the queue
        heads, one request and one response a clock (two thirds of the area, fewer flits'
        worth of efficiency, README §3 *Compact packer*).
    """
    tx_req_depth: int = 16
    tx_rsp_depth: int = 16
    tx_data_depth: int = 64
    rx_req: int = 16
    rx_rsp: int = 16
    rx_req_data: int = 32
    rx_rsp_data: int = 32
    cache_ways: int = 0
    cache_rows: int = 1024
    cache_tx_index: str = "DSTACCID"
    cache_rx_index: str = "SRCACCID"
    tx_packer: str = "slots"

    def __post_init__(self):
        check_int("TL", "tx_req_depth", self.tx_req_depth, range(REQ_LIMIT + 1,
                                                                 MAX_QUEUE_DEPTH + 1))
        check_int("TL", "tx_rsp_depth", self.tx_rsp_depth, range(RSP_LIMIT + 1,
                                                                 MAX_RSP_QUEUE_DEPTH + 1))
        check_int("TL", "tx_data_depth", self.tx_data_depth, range(2 * MAX_BEATS, 1025))
        check_int("TL", "rx_req", self.rx_req, range(1, 1024))
        check_int("TL", "rx_rsp", self.rx_rsp, range(1, 1024))
        # A data buffer smaller than one 256-byte transfer could never take it: deadlock.
        check_int("TL", "rx_req_data", self.rx_req_data, range(MAX_BEATS, 1025))
        check_int("TL", "rx_rsp_data", self.rx_rsp_data, range(MAX_BEATS, 1025))
        check_int("TL", "cache_ways", self.cache_ways, (0, *CACHE_WAYS))
        if self.tx_packer not in TX_PACKERS:
            raise ValueError(f"TL tx_packer must be one of {', '.join(TX_PACKERS)}, "
                             f"not {self.tx_packer!r}")
        _ = self.tx_cache, self.rx_cache                # checks the rest of the cache fields

    @property
    def tx_cache(self):
        """The Tx address cache's :class:`AddrCacheConfig`, or ``None`` without caches."""
        return self._cache(self.cache_tx_index)

    @property
    def rx_cache(self):
        """The Rx address cache's :class:`AddrCacheConfig`, or ``None`` without caches."""
        return self._cache(self.cache_rx_index)

    def _cache(self, index):
        if not self.cache_ways:
            return None
        return AddrCacheConfig(ways=self.cache_ways, rows=self.cache_rows, index=index)

    @property
    def advertised(self):
        """Pool credits this TL's receiver releases at initialisation, by :class:`CreditClass`."""
        return (self.rx_req, self.rx_rsp, self.rx_req_data, self.rx_rsp_data)


# Address cache (request compression) [UALink 1.0 §5.5-5.6]. ---------------------------------------

ACC_BITS = 10                    # ReqSrcPhysAccID, ReqDstPhysAccID [Table 5-29]
CWAY_BITS = 2                    # [Tables 5-29, 5-31]
CACHE_WAYS = (1, 2, 4)           # up to 4 ways [§5.5]; powers of two only [ours]
CACHE_MAX_ROWS = 1024            # one row per accelerator ID [§5.5]
CACHE_TAG_LSB = 20               # an entry holds ReqAddr[56:20], a 1 MB region [Table 5-29 CLOAD]
CACHE_TAG_BITS = Shape.cast(request_layout.members["addr"]).width - CACHE_TAG_LSB    # 37
#: A compressed request carries ReqAddr[19:6] [Table 5-31 ADDR].
CACHE_LINE_LSB = 6
#: The ID fields a cache row can follow [§5.5]: an accelerator's Tx cache and a switch's Rx
#: cache follow ReqDstPhysAccID, a switch's Tx cache and an accelerator's Rx cache
#: ReqSrcPhysAccID.
CACHE_INDEXES = ("DSTACCID", "SRCACCID")


class CachePolicy(enum.Enum, shape=2):
    """When the Tx address cache is used [ours, after the backoff modes of §5.10]: ADAPTIVE
    backs off while the hit rate is poor, ALWAYS never backs off, NEVER is the spec's mode that
    disables the Tx cache (requests go uncompressed, CLOAD = 0, no lookup)."""
    ADAPTIVE = 0
    ALWAYS = 1
    NEVER = 2


#: How the Tx sends one request [§5.6.2]: ``compressed`` (FTYPE 0x3 with CWAY = ``cway``),
#: ``cload`` (uncompressed, CLOAD = 1, CWAY = ``cway``), or neither (uncompressed, CLOAD = 0,
#: ``cway`` = 0).
cache_decision_layout = data.StructLayout({"compressed": 1, "cload": 1, "cway": CWAY_BITS})

#: A request with its cache decision. At the receiver, a compressed request's ``addr`` holds
#: ReqAddr[19:0] (ReqAddr[5:0] = 0) until the Rx cache supplies ReqAddr[56:20].
cached_request_layout = data.StructLayout({"req": request_layout, "cache": cache_decision_layout})

#: One Tx cache entry, to invalidate.
cache_entry_layout = data.StructLayout({"acc": ACC_BITS, "way": CWAY_BITS})


class TxCacheCount(py_enum.IntEnum):
    """Tx address cache counters (as in the golden model ``rtl/scaleup_ip/model/tl/addrcache.py``)."""
    HITS = 0
    MISSES = 1
    LOADS = 2
    COMPRESSED = 3
    UNCOMPRESSED = 4
    INVALIDATIONS = 5
    CLEARS = 6
    BACKOFF_ENTRIES = 7


class RxCacheCount(py_enum.IntEnum):
    """Rx address cache counters: entries loaded, compressed requests expanded, errors (a
    compressed request naming an entry never loaded, or a row or way this cache lacks; a
    CLOAD for a row or way it lacks)."""
    LOADS = 0
    EXPANSIONS = 1
    ERRORS = 2


#: 32-bit counters, wrapping [ours], one per :class:`TxCacheCount` / :class:`RxCacheCount`.
tx_cache_counts = data.ArrayLayout(32, len(TxCacheCount))
rx_cache_counts = data.ArrayLayout(32, len(RxCacheCount))


@dataclasses.dataclass(frozen=True)
class AddrCacheConfig(BlockConfig):
    """Parameters of one address cache, Tx or Rx.

    Parameters
    ----------
    ways : int
        Ways per row, 1, 2 or 4 [§5.5].
    rows : int
        Rows, 1 .. 1024: IDs ``0 .. rows - 1`` [§5.5]. [ours] A request to an ID at or above
        ``rows`` is never compressed or loaded (the peer selects its row by the ID itself).
    index : str
        The request field that selects the row, "DSTACCID" or "SRCACCID" (:data:`CACHE_INDEXES`).
    backoff_window, backoff_min_hits, backoff_length : int
        Tx adaptive backoff [ours]: when a window of ``backoff_window`` looked-up cacheable
        requests has fewer than ``backoff_min_hits`` hits, the next ``backoff_length``
        cacheable requests skip the cache.
    """
    ways: int = 4
    rows: int = CACHE_MAX_ROWS
    index: str = "DSTACCID"
    backoff_window: int = 64
    backoff_min_hits: int = 8
    backoff_length: int = 512

    def __post_init__(self):
        check_int("address cache", "ways", self.ways, CACHE_WAYS)
        check_int("address cache", "rows", self.rows, range(1, CACHE_MAX_ROWS + 1))
        if self.index not in CACHE_INDEXES:
            raise ValueError(f"address cache index must be one of {CACHE_INDEXES}, "
                             f"not {self.index!r}")
        check_int("address cache", "backoff_window", self.backoff_window, range(1, 1 << 16))
        check_int("address cache", "backoff_min_hits", self.backoff_min_hits,
                  range(self.backoff_window + 1))
        check_int("address cache", "backoff_length", self.backoff_length, range(1, 1 << 16))


def tx_cache_port():
    """The Tx address cache's controls, as the cache sees them: ``policy`` (a level),
    ``invalidate`` (one entry, a stream), ``clear_valid``/``clear_ready`` (the whole cache, a
    handshake), ``busy`` (the clear walk runs) and ``counts``."""
    return wiring.Signature({
        "policy": In(CachePolicy),
        "invalidate": In(stream.Signature(cache_entry_layout)),
        "clear_valid": In(1),
        "clear_ready": Out(1),
        "busy": Out(1),
        "counts": Out(tx_cache_counts),
    })


# UPLI traffic in hardware (rtl/scaleup_ip/tl/traffic/README.md) ---------------------------------

class UpliChannel(py_enum.IntEnum):
    """The four UPLI item channels, as the traffic generator and checker count them."""
    REQ = 0
    ORIG = 1
    RD_RSP = 2
    WR_RSP = 3


#: Transfers per channel (:class:`UpliChannel`), 32 bits each, wrapping.
traffic_counts = data.ArrayLayout(32, len(UpliChannel))

#: Items the generator sends before it stops: requests, read responses, write responses
#: (0: no limit).
traffic_limits = data.StructLayout({"req": 32, "rd_rsp": 32, "wr_rsp": 32})


# UPLI originator with watchdog and Isolation Mode (README §7) ---------------------------------

class IsolationCause(enum.Enum, shape=2):
    """Why :class:`~scaleup_ip.tl.upli.originator.UpliOriginator` is in Isolation Mode (the
    first cause) [§3.1.3]."""
    NONE = 0
    EXPIRED = 1     # an outstanding request's watchdog expired
    STALLED = 2     # a request waited for the TL longer than the timeout
    ISOLATE = 3     # the TL sent a write response with status ISOLATE


class OriginatorCount(py_enum.IntEnum):
    """The originator's counters (16-bit, saturating), README §7 [ours]."""
    ISOLATE = 0       # write responses with status ISOLATE
    DUMMY = 1         # completion-timeout responses made up in Isolation Mode
    DISCARDED = 2     # TL beats and write responses dropped in Isolation Mode
    UNEXPECTED = 3    # TL beats and write responses answering no outstanding request


originator_counts = data.ArrayLayout(16, len(OriginatorCount))

#: Largest request table of an originator [ours].
MAX_OUTSTANDING = 64


@dataclasses.dataclass(frozen=True)
class OriginatorConfig(BlockConfig):
    """Parameters of :class:`~scaleup_ip.tl.upli.originator.UpliOriginator` (README §7).

    Parameters
    ----------
    outstanding : int
        Requests outstanding at once, 1 .. :data:`MAX_OUTSTANDING`.
    completion_timeout : int
        Clocks a request may stay unanswered (or wait for the TL) before Isolation Mode:
        16 .. 2**32 - 1, or 0 (no watchdog; only an ISOLATE write response isolates).
    """
    outstanding: int = 16
    completion_timeout: int = 1_000_000

    def __post_init__(self):
        check_int("originator", "outstanding", self.outstanding, range(1, MAX_OUTSTANDING + 1))
        check_int("originator", "completion_timeout", self.completion_timeout, range(1 << 32))
        if 0 < self.completion_timeout < 16:
            raise ValueError("originator completion_timeout must be 0 (never) or "
                             f"16 .. 4294967295, not {self.completion_timeout}")
