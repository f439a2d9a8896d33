# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of the ETH-X bridge's frame format: AXI4 transactions as records in Ethernet frames.

Written from ``rtl/scaleup_ip/ethx/README.md`` §1–3 (the format is ours [ours]: the ETH-X formats
are not public) and the AXI4 rules it relies on (AMBA AXI4 A3.4.1 beat addresses, A3.4.1 4 KB and
WRAP rules), independently of the RTL. Pure Python: the tests and host tools encode and decode
frames with it, and :func:`naive_bytes`/:func:`wire_bytes` give the benchmark's byte counts.

A frame is ``DA SA EtherType link-header records [FCS]``; records are whole 8-byte words
(:class:`Kind`). :class:`TxState` and :class:`RxState` hold the address-compression state of one
transmitter (per destination) and one receiver (per source).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from enum import IntEnum

__all__ = [
    "ETHERTYPE", "HEADER_BYTES", "MAC_PREFIX", "MIN_WORDS", "NAIVE_HEADER", "NAIVE_INSTRUCTION",
    "VERSION", "WIRE_EXTRA", "WORD", "Attrs", "Burst", "Decoded", "FrameError", "Kind",
    "Read", "ReadData", "RecordError", "Resp", "RxState", "TxState", "Write", "WriteResp",
    "axi_error", "beat_addresses", "beat_words", "capacity", "container", "container_mask",
    "data_bytes", "decode_frame", "decode_words",
    "encode_frame", "fcs_of", "header", "mac", "naive_bytes", "node_of", "record_words", "split_write", "vc_of",
    "wire_bytes", "worst",
]

ETHERTYPE = 0x88B5          #: IEEE 802 Local Experimental EtherType 1 [protocols.md §5]
VERSION = 1                 #: link header version [ours]
MAC_PREFIX = bytes([0x02, 0, 0, 0])    #: locally administered unicast; node ID in the last 2 bytes
HEADER_BYTES = 16           #: DA 6 + SA 6 + EtherType 2 + link header 2
WORD = 8                    #: record word, bytes [ours]
MIN_WORDS = 6               #: record words in the smallest frame: 16 + 48 = 64 bytes without FCS
FCS_BYTES = 4
WIRE_EXTRA = 8 + 12         #: preamble + SFD, inter-frame gap [802.3]
NAIVE_INSTRUCTION = 16      #: the white paper's naive encoding: a 16-byte instruction...
NAIVE_HEADER = 34           #: ...and 34 bytes of Ethernet + IP + UDP header per message
FOUR_KB = 4096


class Kind(IntEnum):
    PAD = 0
    READ = 1
    WRITE = 2
    READ_DATA = 3
    WRITE_RESP = 4


class Burst(IntEnum):
    FIXED = 0
    INCR = 1
    WRAP = 2


class Resp(IntEnum):
    OKAY = 0
    EXOKAY = 1
    SLVERR = 2
    DECERR = 3


class FrameError(IntEnum):
    """Why a whole frame is dropped, in the order the receiver checks."""
    RUNT = 1            #: shorter than 64 bytes with FCS
    OVERSIZED = 2       #: longer than 14 + MTU (+ FCS)
    BAD_FCS = 3
    ETHERTYPE = 4       #: not 0x88B5
    DESTINATION = 5     #: DA is not this node's address
    SOURCE = 6          #: SA is not of the form 02:00:00:00:hi:lo
    VERSION = 7         #: link header version or reserved bits wrong
    LENGTH = 8          #: not 16 + 8n bytes with n >= 6


class RecordError(IntEnum):
    """Why the rest of a frame is dropped from a record on (earlier records stand); checked
    in the order kind, header, length, extension word [README §2]."""
    UNKNOWN_KIND = 1    #: kinds 5..15
    TRUNCATED = 2       #: the record runs past the frame's end
    MALFORMED = 3       #: a reserved bit set, burst 3, or a READ with strobes


def worst(*resps):
    """The response a merged B carries: DECERR over SLVERR over EXOKAY/OKAY."""
    rank = {Resp.OKAY: 0, Resp.EXOKAY: 0, Resp.SLVERR: 1, Resp.DECERR: 2}
    return max((Resp(r) for r in resps), key=lambda r: rank[r])


# --- AXI4 beats ------------------------------------------------------------------------------

def container(address, size):
    """The address of a beat's container: ``address`` aligned down to ``2**size``."""
    return address & ~((1 << size) - 1)


def beat_addresses(address, length, size, burst):
    """The addresses of the ``length + 1`` beats of a burst [AXI4 A3.4.1]: beat 0 at
    ``address`` (possibly unaligned), later beats at aligned addresses; WRAP wraps at the
    ``(length + 1) * 2**size`` boundary, FIXED repeats ``address``."""
    beats = length + 1
    step = 1 << size
    if burst == Burst.FIXED:
        return [address] * beats
    aligned = container(address, size)
    if burst == Burst.INCR:
        return [address] + [aligned + k * step for k in range(1, beats)]
    total = beats * step
    low = address - address % total
    return [address] + [low + (aligned - low + k * step) % total for k in range(1, beats)]


def beat_words(size):
    """Words a beat carries: the aligned 8-byte words that hold its container."""
    return max(1, (1 << size) // WORD)


def data_bytes(length, size):
    """Data bytes of ``length + 1`` beats: whole words, :func:`beat_words` per beat."""
    return (length + 1) * beat_words(size) * WORD


def container_mask(address, size):
    """Which of a beat's carried bytes are its container (one bit per byte): all of them from
    8-byte beats up, else the ``2**size`` bytes at ``address % 8`` aligned down."""
    if size >= 3:
        return (1 << (1 << size)) - 1
    return ((1 << (1 << size)) - 1) << (container(address, size) % WORD)


def axi_error(address, length, size, burst, *, bus_bytes, address_width=64):
    """Why a requester cannot carry this burst (an AXI4 rule it breaks), or ``None``."""
    if (1 << size) > bus_bytes:
        return "size wider than the bus"
    if burst not in (Burst.FIXED, Burst.INCR, Burst.WRAP):
        return "reserved burst type"
    if burst == Burst.WRAP and length not in (1, 3, 7, 15):
        return "WRAP length not 2, 4, 8 or 16"
    if burst == Burst.WRAP and address % (1 << size):
        return "WRAP address not aligned to the size"
    if burst == Burst.FIXED and length > 15:
        return "FIXED burst longer than 16"
    if address >> address_width:
        return "address wider than the address width"
    if burst == Burst.INCR:
        last = container(address, size) + (length << size) + (1 << size) - 1
        if address // FOUR_KB != last // FOUR_KB:
            return "INCR burst crosses a 4 KB boundary"
    return None


def split_write(address, length, size, burst, piece):
    """The pieces ``(address, length, first_beat)`` a requester sends for a write burst: an INCR
    burst is cut where its data would pass a multiple of ``piece`` carried bytes, at address
    boundaries of ``piece`` / :func:`beat_words` / 8 beats (``piece`` bytes from 8-byte beats
    up); FIXED and WRAP bursts go whole (README §2.1)."""
    if burst != Burst.INCR:
        return [(address, length, 0)]
    boundary = piece // (beat_words(size) * WORD) << size
    pieces, beat, addrs = [], 0, beat_addresses(address, length, size, burst)
    while beat <= length:
        end = beat + 1
        while end <= length and addrs[end] // boundary == addrs[beat] // boundary:
            end += 1
        pieces.append((addrs[beat], end - beat - 1, beat))
        beat = end
    return pieces


# --- Records ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Attrs:
    """The part of the compression key besides the address's upper half."""
    prot: int = 0
    cache: int = 0
    lock: int = 0
    qos: int = 0
    region: int = 0


@dataclass(frozen=True)
class Read:
    id: int
    addr: int
    len: int
    size: int
    burst: int = Burst.INCR
    order: bool = False         #: acquire
    attrs: Attrs = Attrs()
    stale: bool = False         #: decoded without valid compression state: answer DECERR


@dataclass(frozen=True)
class Write:
    id: int
    addr: int
    len: int
    size: int
    burst: int
    data: bytes                 #: the carried words' bytes, :func:`data_bytes` of them
    strb: int = -1              #: one bit per data byte; -1: the containers' bytes (elided)
    order: bool = False         #: release
    attrs: Attrs = Attrs()
    stale: bool = False

    def containers(self):
        """The strobes that select exactly every beat's container."""
        step = beat_words(self.size) * WORD
        return sum(container_mask(a, self.size) << (k * step) for k, a in
                   enumerate(beat_addresses(self.addr, self.len, self.size, self.burst)))

    def strobes(self):
        """The strobe bits as an integer, elided ones spelled out."""
        return self.containers() if self.strb == -1 else self.strb

    def elided(self):
        """Whether the strobes go unsent: they are exactly the containers."""
        return self.strobes() == self.containers()

    def written(self):
        """The bytes the write changes (one bit per carried byte): its strobes on its beats'
        containers only; a strobe outside a narrow beat's container is ignored [AXI4 A3.4.3;
        README §2.1]."""
        return self.strobes() & self.containers()


@dataclass(frozen=True)
class ReadData:
    id: int
    resp: int
    last: bool
    count: int                  #: beats - 1
    size: int
    burst: int
    len: int
    addr: int                   #: address bits 11:0 of the first beat
    data: bytes | None          #: None: ``nodata`` (the beats carry zeros)


@dataclass(frozen=True)
class WriteResp:
    id: int
    resp: int


def _words(nbytes):
    return -(-nbytes // WORD)


def record_words(record, *, ext=False):
    """Words a record takes on the wire (``ext``: with the extension word)."""
    if isinstance(record, Read):
        return 1 + ext
    if isinstance(record, Write):
        strobes = 0 if record.elided() else _words(len(record.data) // 8)
        return 1 + ext + _words(len(record.data)) + strobes
    if isinstance(record, ReadData):
        return 1 + (0 if record.data is None else _words(len(record.data)))
    if isinstance(record, WriteResp):
        return 1
    raise TypeError(f"not a record: {record!r}")


def _field(value, width, name):
    if not 0 <= value < (1 << width):
        raise ValueError(f"{name} {value} does not fit {width} bits")
    return value


def _pad(data):
    return bytes(data) + bytes(-len(data) % WORD)


@dataclass
class TxState:
    """A transmitter's compression state toward one destination."""
    key: tuple | None = None
    gen: int = 0


@dataclass
class RxState:
    """A receiver's compression state for one source."""
    key: tuple | None = None
    gen: int = 0


def _key(record):
    return (record.addr >> 32, record.attrs)


def _encode_request(record, state):
    kind = Kind.READ if isinstance(record, Read) else Kind.WRITE
    ext = state.key != _key(record)
    if ext:
        state.key, state.gen = _key(record), (state.gen + 1) % 8
    strb = kind == Kind.WRITE and not record.elided()
    if kind == Kind.WRITE and len(record.data) != data_bytes(record.len, record.size):
        raise ValueError(f"write data is {len(record.data)} bytes, the burst has "
                         f"{data_bytes(record.len, record.size)}")
    header = (kind | ext << 4 | strb << 5 | int(record.order) << 6
              | _field(record.id, 8, "id") << 8 | _field(record.len, 8, "len") << 16
              | _field(record.size, 3, "size") << 24 | _field(record.burst, 2, "burst") << 27
              | state.gen << 29 | (record.addr & 0xFFFF_FFFF) << 32)
    out = header.to_bytes(WORD, "little")
    if ext:
        a = record.attrs
        word = (_field(record.addr >> 32, 32, "address bits 63:32") | _field(a.prot, 3, "prot") << 32
                | _field(a.cache, 4, "cache") << 35 | _field(a.lock, 1, "lock") << 39
                | _field(a.qos, 4, "qos") << 40 | _field(a.region, 4, "region") << 44)
        out += word.to_bytes(WORD, "little")
    if kind == Kind.WRITE:
        out += _pad(record.data)
        if strb:
            out += _pad(record.strobes().to_bytes(len(record.data) // 8, "little"))
    return out


def _encode_response(record):
    if isinstance(record, WriteResp):
        word = Kind.WRITE_RESP | _field(record.resp, 2, "resp") << 6 | _field(record.id, 8, "id") << 8
        return word.to_bytes(WORD, "little")
    nodata = record.data is None
    if not nodata and len(record.data) != data_bytes(record.count, record.size):
        raise ValueError(f"read data is {len(record.data)} bytes, {record.count + 1} beats "
                         f"of size {record.size} have {data_bytes(record.count, record.size)}")
    word = (Kind.READ_DATA | int(record.last) << 4 | nodata << 5 | _field(record.resp, 2, "resp") << 6
            | _field(record.id, 8, "id") << 8 | _field(record.count, 8, "count") << 16
            | _field(record.size, 3, "size") << 24 | _field(record.burst, 2, "burst") << 27
            | _field(record.len, 8, "len") << 29 | _field(record.addr, 12, "addr") << 37)
    return word.to_bytes(WORD, "little") + (b"" if nodata else _pad(record.data))


def encode_records(records, state):
    """The record words of ``records`` (bytes), compressing requests against ``state``."""
    out = b""
    for record in records:
        if isinstance(record, (Read, Write)):
            out += _encode_request(record, state)
        else:
            out += _encode_response(record)
    return out


# --- Frames ----------------------------------------------------------------------------------

def mac(node):
    """A node's MAC address."""
    return MAC_PREFIX + _field(node, 16, "node").to_bytes(2, "big")


def node_of(address):
    """The node ID in a MAC address of our form, or ``None``."""
    return int.from_bytes(address[4:6], "big") if address[:4] == MAC_PREFIX else None


def fcs_of(frame):
    """The 802.3 FCS of ``frame`` (4 bytes, appended as they come)."""
    return zlib.crc32(frame).to_bytes(4, "little")


def capacity(mtu):
    """Record words in the largest frame for ``mtu``."""
    return (mtu - 2) // WORD


def header(dst, src, vc=0):
    """A frame's first 16 bytes: DA, SA, EtherType and the link header naming ``vc``."""
    link = VERSION | _field(vc, 3, "vc") << 4
    return mac(dst) + mac(src) + ETHERTYPE.to_bytes(2, "big") + link.to_bytes(2, "little")


def vc_of(frame):
    """The VC a frame's link header names (bits 6:4 of byte 14)."""
    return frame[14] >> 4 & 7


def encode_frame(dst, src, vc, records, state, *, fcs=True, mtu=1500):
    """A whole frame from ``src`` to ``dst`` on ``vc`` carrying ``records``; ``state`` is the
    transmitter's :class:`TxState` toward ``dst`` (updated)."""
    body = encode_records(records, state)
    if len(body) // WORD > capacity(mtu):
        raise ValueError(f"{len(body) // WORD} record words do not fit MTU {mtu}")
    body += bytes(max(0, MIN_WORDS * WORD - len(body)))
    frame = header(dst, src, vc) + body
    return frame + fcs_of(frame) if fcs else frame


@dataclass
class Decoded:
    """A frame the receiver took: its source, VC, the records before any error, and the error
    that stopped it (``None``: every record was read)."""
    src: int
    vc: int
    records: list = field(default_factory=list)
    error: RecordError | None = None


def _decode_request(kind, word, words, at, state):
    ext, strb, order = word >> 4 & 1, word >> 5 & 1, bool(word >> 6 & 1)
    rid, length, size = word >> 8 & 0xFF, word >> 16 & 0xFF, word >> 24 & 7
    burst, gen, low = word >> 27 & 3, word >> 29 & 7, word >> 32
    if word >> 7 & 1 or burst == 3 or (kind == Kind.READ and strb):
        return None, RecordError.MALFORMED
    # The header gives the record's length: one that runs past the frame is not used at all,
    # its extension word neither checked nor taken [README §2].
    nbytes = data_bytes(length, size) if kind == Kind.WRITE else 0
    need = _words(nbytes) + (_words(nbytes // 8) if strb else 0)
    if at + ext + need > len(words):
        return None, RecordError.TRUNCATED
    stale = False
    if ext:
        e = words[at]
        at += 1
        if e >> 48:
            return None, RecordError.MALFORMED
        attrs = Attrs(prot=e >> 32 & 7, cache=e >> 35 & 15, lock=e >> 39 & 1, qos=e >> 40 & 15,
                      region=e >> 44 & 15)
        state.key, state.gen = (e & 0xFFFF_FFFF, attrs), gen
    elif state.key is None or state.gen != gen:
        stale = True
    high, attrs = state.key if state.key is not None else (0, Attrs())
    addr = high << 32 | low
    fields = dict(id=rid, addr=addr, len=length, size=size, burst=burst, order=order,
                  attrs=attrs, stale=stale)
    if kind == Kind.READ:
        return (Read(**fields), at), None
    raw = b"".join(w.to_bytes(WORD, "little") for w in words[at:at + need])
    data = raw[:nbytes]
    strobes = -1
    if strb:
        strobes = int.from_bytes(raw[nbytes:nbytes + nbytes // 8], "little")
    return (Write(data=data, strb=strobes, **fields), at + need), None


def _decode_response(kind, word, words, at):
    if kind == Kind.WRITE_RESP:
        if word & 0x30 or word >> 16:
            return None, RecordError.MALFORMED
        return (WriteResp(id=word >> 8 & 0xFF, resp=word >> 6 & 3), at), None
    nodata, count, size = word >> 5 & 1, word >> 16 & 0xFF, word >> 24 & 7
    if word >> 49 or word >> 27 & 3 == 3:
        return None, RecordError.MALFORMED
    data = None
    if not nodata:
        nbytes = data_bytes(count, size)
        if at + _words(nbytes) > len(words):
            return None, RecordError.TRUNCATED
        data = b"".join(w.to_bytes(WORD, "little") for w in words[at:at + _words(nbytes)])
        data, at = data[:nbytes], at + _words(nbytes)
    return (ReadData(id=word >> 8 & 0xFF, resp=word >> 6 & 3, last=bool(word >> 4 & 1),
                     count=count, size=size, burst=word >> 27 & 3, len=word >> 29 & 0xFF,
                     addr=word >> 37 & 0xFFF, data=data), at), None


def decode_frame(frame, node, states, *, fcs=True, mtu=1500):
    """Read a received frame as node ``node``. ``states`` maps a source node to its
    :class:`RxState` (missing ones are created). Returns a :class:`Decoded`, or the
    :class:`FrameError` that drops the whole frame."""
    total = len(frame) + (0 if fcs else FCS_BYTES)
    if total < 64:
        return FrameError.RUNT
    if total > 14 + mtu + FCS_BYTES:
        return FrameError.OVERSIZED
    if fcs:
        if fcs_of(frame[:-FCS_BYTES]) != frame[-FCS_BYTES:]:
            return FrameError.BAD_FCS
        frame = frame[:-FCS_BYTES]
    if int.from_bytes(frame[12:14], "big") != ETHERTYPE:
        return FrameError.ETHERTYPE
    if frame[:6] != mac(node):
        return FrameError.DESTINATION
    src = node_of(frame[6:12])
    if src is None:
        return FrameError.SOURCE
    link = int.from_bytes(frame[14:16], "little")
    if link & 0xF != VERSION or link >> 7:
        return FrameError.VERSION
    if (len(frame) - HEADER_BYTES) % WORD or len(frame) < HEADER_BYTES + MIN_WORDS * WORD:
        return FrameError.LENGTH
    words = [int.from_bytes(frame[k:k + WORD], "little")
             for k in range(HEADER_BYTES, len(frame), WORD)]
    out = Decoded(src=src, vc=link >> 4 & 7)
    state = states.setdefault(src, RxState())
    at = 0
    while at < len(words):
        word = words[at]
        kind = word & 0xF
        if kind == Kind.PAD:
            break
        if kind in (Kind.READ, Kind.WRITE):
            result, error = _decode_request(Kind(kind), word, words, at + 1, state)
        elif kind in (Kind.READ_DATA, Kind.WRITE_RESP):
            result, error = _decode_response(Kind(kind), word, words, at + 1)
        else:
            result, error = None, RecordError.UNKNOWN_KIND
        if error:
            out.error = error
            break
        record, at = result
        out.records.append(record)
    return out


def decode_words(words, states, *, node=1, src=0):
    """The records of a list of record words (64-bit integers) as node ``node`` reads them from
    ``src`` (with ``states`` as in :func:`decode_frame`): a :class:`Decoded`."""
    frame = header(node, src) + b"".join(w.to_bytes(WORD, "little") for w in words)
    frame += bytes(max(0, HEADER_BYTES + MIN_WORDS * WORD - len(frame)))
    return decode_frame(frame, node, states, fcs=False, mtu=9000)


# --- Byte counts for the benchmark -----------------------------------------------------------

def wire_bytes(frame_bytes):
    """Bytes a frame of ``frame_bytes`` (with FCS) occupies on the wire: + preamble, SFD, gap."""
    return frame_bytes + WIRE_EXTRA


def naive_bytes(payload, *, request_data, response_data, wire=True, mtu=1500):
    """The white paper's naive encoding of one transaction: a request message and a response
    message, each a 16-byte instruction plus 34 bytes of header plus its data, each its own
    frame (+ FCS, preamble and gap with ``wire``), unpadded as the white paper counts them. A
    message whose data does not fit one frame of ``mtu`` (the 34 header bytes are Ethernet's
    14 and IP's 20) is sent as several, each with the header and instruction [ours].
    Returns (bytes, efficiency)."""
    room = mtu - (NAIVE_HEADER - 14) - NAIVE_INSTRUCTION
    total = 0
    for data in (request_data, response_data):
        frames = max(1, -(-data // room))
        total += data + frames * (NAIVE_HEADER + NAIVE_INSTRUCTION
                                  + (FCS_BYTES + WIRE_EXTRA if wire else 0))
    return total, payload / total
