# SPDX-License-Identifier: BSD-2-Clause
"""Layouts, enums and stream signatures the ETH-X bridge's blocks share: the only copy of each.
The frame format is README §1-2; the numbers are :mod:`scaleup_ip.model.ethx.bridge`'s."""

import enum as py_enum

from amaranth import Const
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from ..model.ethx import bridge as model

__all__ = ["beyond_sources", "node_index", "WriteCount", "write_counts", "ReadCount", "read_counts", "axi4_read_signature", "axi4_write_signature",
           "user_layout", "AggregateCount", "aggregate_counts", "CompleterCount", "Resp", "axi4_signature", "completer_counts", "window_layout",
           "LEFT_BITS", "NODE_BITS", "VC_BITS", "WORD_BITS", "DeframerCount", "FramerCount", "eth_beat_layout", "eth_header_layout",
           "eth_stream", "link_header_layout", "Kind", "ParseCount", "attrs_layout",
           "extension_layout", "parse_counts", "read_data_header_layout", "request_header_layout",
           "request_item_layout", "request_layout", "response_item_layout", "write_resp_layout", "record_stream", "record_word_layout", "sized_word_layout",
           "deframer_counts", "framer_counts"]

WORD_BITS = model.WORD * 8      #: a record word [ours]
NODE_BITS = 16                  #: node IDs, the last two bytes of a MAC address [ours]
VC_BITS = 3


def node_index(node, sources):
    """``node``'s entry in a table of ``sources`` entries (per source or destination)."""
    return node[:max(1, (sources - 1).bit_length())]


def beyond_sources(node, sources):
    """Whether ``node`` is at or above ``sources``: it has no table entry."""
    shift = sources.bit_length() - 1
    return (node >> shift) != 0 if len(node) > shift else Const(0, 1)


def eth_beat_layout(width):
    """An Ethernet stream beat, AXI4-Stream style: ``data`` (byte ``k`` in bits ``8k+7:8k``, byte 0
    first on the wire), ``keep`` (the valid bytes, at the bottom on a frame's last beat, all
    ones before), ``last``, and ``user``: on receive, set on a frame's last beat by a MAC that
    found the frame bad; on transmit, always 0."""
    return data.StructLayout({"data": width, "keep": width // 8, "last": 1, "user": 1})


def eth_stream(width):
    """A valid/ready stream of :func:`eth_beat_layout` beats."""
    return stream.Signature(eth_beat_layout(width))


#: The link header [README §1]: version 1, the frame's VC, zeros.
link_header_layout = data.StructLayout({"version": 4, "vc": VC_BITS, "zero": 9})


#: The first 16 bytes of a frame as two record words [README §1]; node IDs and the EtherType
#: are big-endian on the wire, so their bytes are separate fields.
eth_header_layout = data.StructLayout({
    "da_prefix": 32, "da_hi": 8, "da_lo": 8,
    "sa_prefix": 32, "sa_hi": 8, "sa_lo": 8,
    "type_hi": 8, "type_lo": 8,
    "link": link_header_layout,
})

#: ``da_prefix``/``sa_prefix`` of our MAC addresses as a little-endian 32-bit value.
MAC_PREFIX = int.from_bytes(model.MAC_PREFIX, "little")


#: Frame words a record word can have after it, itself included: a frame has at most
#: :func:`scaleup_ip.model.ethx.bridge.capacity` of the largest MTU's record words.
LEFT_BITS = (model.capacity(9000)).bit_length()

#: One record word on its way into a frame (``node``, ``vc``: the frame's destination and VC,
#: read with its first word) or out of one (``node``: its source; ``left``: the frame's words
#: from this one to its end; 0 on the way in).
record_word_layout = data.StructLayout({
    "data": WORD_BITS,
    "last": 1,
    "node": NODE_BITS,
    "vc": VC_BITS,
    "left": LEFT_BITS,
})


def record_stream():
    """A valid/ready stream of :data:`record_word_layout`: one frame's records, ``last`` on
    the final word."""
    return stream.Signature(record_word_layout)


class FramerCount(py_enum.IntEnum):
    """Transmit framer counters (32-bit, wrapping)."""
    FRAMES = 0          # frames sent
    WORDS = 1           # record words taken
    CUT = 2             # frames longer than the MTU: cut at the MTU, the rest dropped


framer_counts = data.ArrayLayout(32, len(FramerCount))


class DeframerCount(py_enum.IntEnum):
    """Receive counters (32-bit, wrapping): good frames, and the frames dropped for each
    :class:`~scaleup_ip.model.ethx.bridge.FrameError` (the same numbers), in the order the receiver
    checks: RUNT, OVERSIZED, MAC_ERROR, BAD_FCS, ETHERTYPE, DESTINATION, SOURCE, VERSION, LENGTH."""
    FRAMES = 0          # good frames: their record words went on
    RUNT = model.FrameError.RUNT
    OVERSIZED = model.FrameError.OVERSIZED
    BAD_FCS = model.FrameError.BAD_FCS
    ETHERTYPE = model.FrameError.ETHERTYPE
    DESTINATION = model.FrameError.DESTINATION
    SOURCE = model.FrameError.SOURCE
    VERSION = model.FrameError.VERSION
    LENGTH = model.FrameError.LENGTH      # also: a beat whose keep breaks the stream rules
    MAC_ERROR = 9       # the MAC marked the frame bad (``user`` on its last beat)


deframer_counts = data.ArrayLayout(32, len(DeframerCount))


# --- Records [README §2] ---------------------------------------------------------------------

class Kind(enum.Enum, shape=4):
    """A record's kind, bits 3:0 of its header word."""
    PAD = model.Kind.PAD
    READ = model.Kind.READ
    WRITE = model.Kind.WRITE
    READ_DATA = model.Kind.READ_DATA
    WRITE_RESP = model.Kind.WRITE_RESP


#: The header word of a READ or WRITE [README §2.1].
request_header_layout = data.StructLayout({
    "kind": 4, "ext": 1, "strb": 1, "order": 1, "zero": 1, "id": 8, "len": 8, "size": 3,
    "burst": 2, "gen": 3, "addr": 32,
})

#: The attributes a request carries in its extension word besides the address's upper half.
attrs_layout = data.StructLayout({"prot": 3, "cache": 4, "lock": 1, "qos": 4, "region": 4})

#: The extension word: the compression key [README §2.1].
extension_layout = data.StructLayout({"addr_hi": 32, "attrs": attrs_layout, "zero": 16})

#: The header word of a READ_DATA [README §2.2].
read_data_header_layout = data.StructLayout({
    "kind": 4, "last": 1, "nodata": 1, "resp": 2, "id": 8, "count": 8, "size": 3, "burst": 2,
    "len": 8, "addr": 12, "zero": 15,
})

#: The header word of a WRITE_RESP [README §2.2].
write_resp_layout = data.StructLayout({"kind": 4, "zero0": 2, "resp": 2, "id": 8, "zero": 48})

#: A request as the serving side sees it: its header with the address and attributes restored
#: from the compression state, where it came from, and whether it must be refused: ``stale``
#: (compressed against a state this side does not have) or ``foreign`` (from a source beyond
#: the configured ``sources``).
request_layout = data.StructLayout({
    "write": 1, "id": 8, "len": 8, "size": 3, "burst": 2, "order": 1, "strb": 1,
    "addr": 64, "attrs": attrs_layout, "node": NODE_BITS, "vc": VC_BITS,
    "stale": 1, "foreign": 1,
})

#: One item of a request on its way to the serving side: the header (``first``, no data), then
#: for a WRITE its data words and its strobe words (``strobe``); ``head`` on every item;
#: ``last`` on the record's final item.
request_item_layout = data.StructLayout({
    "head": request_layout, "word": WORD_BITS, "first": 1, "strobe": 1, "last": 1,
})

#: One word of a response record on its way to the requester: its header word (``first``) as
#: in :data:`read_data_header_layout` or :data:`write_resp_layout`, then its data words.
response_item_layout = data.StructLayout({
    "word": WORD_BITS, "first": 1, "last": 1, "node": NODE_BITS, "vc": VC_BITS,
})


#: A received record word with what it would mean as a record's header word, worked out two clocks
#: ahead (:class:`~scaleup_ip.ethx.sizes.HeaderSizes`): the words after the header and extension
#: (``body``), a WRITE's data words, and the header's faults.
sized_word_layout = data.StructLayout({
    "word": record_word_layout, "body": 13, "data_words": 13,
    "unknown": 1, "malformed": 1, "truncated": 1,
})


class ParseCount(py_enum.IntEnum):
    """Record parser counters (32-bit, wrapping)."""
    REQUESTS = 0        # READ and WRITE records passed on
    RESPONSES = 1       # READ_DATA and WRITE_RESP records passed on
    STALE = 2           # ... requests among them without valid compression state
    FOREIGN = 3         # ... requests among them from a source beyond ``sources``
    UNKNOWN_KIND = model.RecordError.UNKNOWN_KIND + 3     # the rest of the frame dropped
    TRUNCATED = model.RecordError.TRUNCATED + 3          # ditto
    MALFORMED = model.RecordError.MALFORMED + 3          # ditto


parse_counts = data.ArrayLayout(32, len(ParseCount))


# --- AXI4 ------------------------------------------------------------------------------------

def _address_fields(addr_width, id_width):
    """The fields of an AR or AW channel (AMBA AXI4 names without the ``ar``/``aw`` prefix)
    and their widths, besides ``user``, ``valid`` and ``ready``."""
    return {"id": id_width, "addr": addr_width, "len": 8, "size": 3, "burst": 2, "lock": 1,
            "cache": 4, "prot": 3, "qos": 4, "region": 4}


def _axi4_members(addr_width, data_width, id_width, user_width, channels):
    members = {}
    for ch in channels:
        members.update({f"{ch}{name}": Out(width)
                        for name, width in _address_fields(addr_width, id_width).items()})
        members[f"{ch}valid"] = Out(1)
        members[f"{ch}ready"] = In(1)
        if user_width:
            members[f"{ch}user"] = Out(user_width)
    if "aw" in channels:
        members.update({
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wlast": Out(1),
            "wvalid": Out(1), "wready": In(1),
            "bid": In(id_width), "bresp": In(2), "bvalid": In(1), "bready": Out(1)})
    if "ar" in channels:
        members.update({
            "rid": In(id_width), "rdata": In(data_width), "rresp": In(2), "rlast": In(1),
            "rvalid": In(1), "rready": Out(1)})
    return members


def axi4_signature(addr_width, data_width, id_width, user_width=0):
    """An AXI4 port as its manager sees it (AMBA AXI4 names: ``awaddr``, ``wdata``, ...; a
    subordinate port is ``In(...)``). ``awuser``/``aruser`` only with ``user_width``."""
    return wiring.Signature(_axi4_members(addr_width, data_width, id_width, user_width,
                                          ("aw", "ar")))


def axi4_read_signature(addr_width, data_width, id_width, user_width=0):
    """The read half of :func:`axi4_signature`: AR and R."""
    return wiring.Signature(_axi4_members(addr_width, data_width, id_width, user_width, ("ar",)))


def axi4_write_signature(addr_width, data_width, id_width, user_width=0):
    """The write half of :func:`axi4_signature`: AW, W and B."""
    return wiring.Signature(_axi4_members(addr_width, data_width, id_width, user_width, ("aw",)))


#: AxUSER of the requester's port [README §5, ours]: the destination node, the VC, and the
#: ordering bit (acquire on AR, release on AW), from bit 0 up.
def user_layout(config):
    return data.StructLayout({"node": config.node_bits, "vc": VC_BITS, "order": 1})


#: An AR or AW as the requester's address stage registers it [README §5]: the channel's fields,
#: and the checks made before the register: ``bad`` (a burst the bridge cannot carry) and
#: ``local`` (``bad``, or a destination at or above ``sources``: answered by the bridge).
def address_layout(config):
    return data.StructLayout({**_address_fields(config.addr_width, config.id_width),
                              "user": user_layout(config), "bad": 1, "local": 1})


class Resp(enum.Enum, shape=2):
    OKAY = 0
    EXOKAY = 1
    SLVERR = 2
    DECERR = 3


#: An access window of the serving side [README §4]: requests from the sources whose bits are
#: set in ``sources``, to addresses whose bits above ``size_log2`` (at least 12) equal
#: ``base``'s, are served.
def window_layout(config):
    return data.StructLayout({"base": config.addr_width, "size_log2": 6, "sources": config.sources,
                              "enable": 1})


class CompleterCount(py_enum.IntEnum):
    """Serving-side counters (32-bit, wrapping)."""
    READS = 0           # reads served from memory
    WRITES = 1          # writes done in memory
    STALE = 2           # requests refused with DECERR: no compression state (or foreign)
    DENIED = 3          # ... outside every window open to their source
    ILLEGAL = 4         # ... breaking an AXI4 rule or longer than the write buffer
    MEMORY_ERRORS = 5   # SLVERR/DECERR responses (bursts) from memory


completer_counts = data.ArrayLayout(32, len(CompleterCount))


class AggregateCount(py_enum.IntEnum):
    """Aggregation counters (32-bit, wrapping): frames, and why each was closed."""
    FRAMES = 0          # frames closed
    CHANGE = 1          # ... because the next record was for another destination or VC
    FULL = 2            # ... because the next record would not fit the MTU
    FILL = 3            # ... at the fill watermark
    TIMEOUT = 4         # ... at the timeout with no record waiting
    RECORDS = 5         # records passed on


aggregate_counts = data.ArrayLayout(32, len(AggregateCount))


class ReadCount(py_enum.IntEnum):
    """Requester read-side counters (32-bit, wrapping)."""
    READS = 0           # READ records sent
    ACQUIRES = 1        # ... of which acquires
    LOCAL = 2           # reads answered locally: SLVERR (a rule the bridge cannot carry) or
                        # DECERR (a destination at or above ``sources``)
    UNEXPECTED = 3      # READ_DATA records for no outstanding read of theirs: dropped
    MISMATCHED = 4      # READ_DATA records for an outstanding read whose beats, size, burst,
                        # length, address or ``last`` do not continue it: dropped
    TIMEOUTS = 5        # reads completed SLVERR after ``completion_timeout``
    LATE = 6            # READ_DATA records for a read that timed out: dropped


read_counts = data.ArrayLayout(32, len(ReadCount))


class WriteCount(py_enum.IntEnum):
    """Requester write-side counters (32-bit, wrapping)."""
    WRITES = 0          # AW bursts carried
    RELEASES = 1        # ... of which releases
    LOCAL = 2           # writes answered locally (SLVERR, DECERR) after their W beats
    UNEXPECTED = 3      # WRITE_RESP records for no outstanding piece of theirs: dropped
    PROXY_ERRORS = 4    # remote errors of writes answered early (proxy)
    TIMEOUTS = 5        # writes completed SLVERR (or, answered early, as a proxy error) after
                        # ``completion_timeout``
    LATE = 6            # WRITE_RESP records for a write that timed out: dropped


write_counts = data.ArrayLayout(32, len(WriteCount))
