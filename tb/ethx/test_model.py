# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the ETH-X frame format model rtl/scaleup_ip/model/ethx/bridge.py against README §1-3, AXI4's rules and
scapy's reading of the frames."""

import random

import pytest

from scaleup_ip.model.ethx import bridge as ethx
from scaleup_ip.model.ethx.bridge import (
    Attrs,
    Burst,
    FrameError,
    Read,
    ReadData,
    RecordError,
    Resp,
    RxState,
    TxState,
    Write,
    WriteResp,
)

# --- AXI4 beats [AXI4 A3.4.1] -----------------------------------------------------------------

def test_beat_words():
    assert [ethx.beat_words(s) for s in range(7)] == [1, 1, 1, 1, 2, 4, 8]
    assert ethx.data_bytes(3, 0) == 32 and ethx.data_bytes(0, 6) == 64
    assert ethx.container_mask(0x1005, 0) == 1 << 5
    assert ethx.container_mask(0x1007, 1) == 0b11 << 6
    assert ethx.container_mask(0x1005, 2) == 0xF0
    assert ethx.container_mask(0x1005, 3) == 0xFF


def test_beats_examples():
    # WRAP, 4 beats of 4 bytes from 0x34: the 16-byte window 0x30..0x3F.
    assert ethx.beat_addresses(0x34, 3, 2, Burst.WRAP) == [0x34, 0x38, 0x3C, 0x30]
    # Unaligned INCR: the first beat at its address, the rest aligned.
    assert ethx.beat_addresses(0x07, 2, 2, Burst.INCR) == [0x07, 0x08, 0x0C]
    assert ethx.beat_addresses(0x1003, 3, 0, Burst.FIXED) == [0x1003] * 4
    assert ethx.beat_addresses(0x100, 15, 6, Burst.WRAP)[:5] == [0x100, 0x140, 0x180, 0x1C0, 0x200]
    assert ethx.beat_addresses(0x3C0, 15, 6, Burst.WRAP)[:2] == [0x3C0, 0x000]


@pytest.mark.parametrize(("args", "reason"), [
    ((0, 0, 4), "size wider than the bus"),
    ((0, 2, 2, Burst.WRAP), "WRAP length not 2, 4, 8 or 16"),
    ((4, 3, 3, Burst.WRAP), "WRAP address not aligned to the size"),
    ((0, 16, 0, Burst.FIXED), "FIXED burst longer than 16"),
    ((0xFF8, 1, 3, Burst.INCR), "INCR burst crosses a 4 KB boundary"),
    ((0, 0, 0, 3), "reserved burst type"),
    ((1 << 40, 0, 0, Burst.INCR), "address wider than the address width"),
])
def test_axi_errors(args, reason):
    address, length, size, *burst = args
    burst = burst[0] if burst else Burst.INCR
    assert ethx.axi_error(address, length, size, burst, bus_bytes=8, address_width=40) == reason


def test_axi_legal():
    for args in [(0xFF8, 0, 3, Burst.INCR), (0xF00, 31, 3, Burst.INCR), (0xFE0, 3, 3, Burst.WRAP),
                 (0x0, 255, 3, Burst.INCR), (0x13, 15, 0, Burst.FIXED)]:
        assert ethx.axi_error(*args, bus_bytes=8) is None, args
    # Unaligned INCR whose last container ends at the boundary.
    assert ethx.axi_error(0xFC3, 7, 3, Burst.INCR, bus_bytes=8) is None


def test_split_write():
    # 16-byte beats from 0x3F0: one beat before the 1 KB boundary, then the rest.
    assert ethx.split_write(0x3F0, 7, 4, Burst.INCR, 1024) == [(0x3F0, 0, 0), (0x400, 6, 1)]
    # 256 beats of 16 bytes: four whole 1 KB pieces.
    assert ethx.split_write(0x1000, 255, 4, Burst.INCR, 1024) == [
        (0x1000, 63, 0), (0x1400, 63, 64), (0x1800, 63, 128), (0x1C00, 63, 192)]
    assert ethx.split_write(0x3F0, 7, 4, Burst.WRAP, 64) == [(0x3F0, 7, 0)]
    # Byte beats carry a word each: 128 beats make a 1 KB piece.
    assert ethx.split_write(0x7F, 255, 0, Burst.INCR, 1024) == [(0x7F, 0, 0), (0x80, 127, 1),
                                                                 (0x100, 126, 129)]
    # Unaligned start: the first container is at 0x3F8.
    assert ethx.split_write(0x3FB, 1, 3, Burst.INCR, 1024) == [(0x3FB, 0, 0), (0x400, 0, 1)]


def test_worst_response():
    assert ethx.worst(Resp.OKAY, Resp.SLVERR) == Resp.SLVERR
    assert ethx.worst(Resp.DECERR, Resp.SLVERR, Resp.OKAY) == Resp.DECERR
    assert ethx.worst(Resp.OKAY, Resp.OKAY) == Resp.OKAY


# --- A frame assembled by hand from README §1-2 -----------------------------------------------

def test_hand_assembled_frame():
    """Node 0x0102 to 0x0A0B on VC 5: a READ (id 7, 0x1234_5678_9ABC_DEF0, 4 beats of 8 bytes,
    INCR, acquire, cache 3) with its extension, then a WRITE_RESP (id 2, SLVERR)."""
    read = Read(id=7, addr=0x1234_5678_9ABC_DEF0, len=3, size=3, burst=Burst.INCR, order=True,
                attrs=Attrs(cache=3))
    frame = ethx.encode_frame(0x0A0B, 0x0102, 5, [read, WriteResp(id=2, resp=Resp.SLVERR)],
                              TxState())
    header = bytes.fromhex("02000000 0a0b 02000000 0102 88b5".replace(" ", ""))
    link = bytes([0x51, 0x00])                       # version 1, VC 5
    # kind 1 | ext 1<<4 | order 1<<6 | id 7<<8 | len 3<<16 | size 3<<24 | INCR 1<<27 | gen 1<<29
    word0 = (1 | 1 << 4 | 1 << 6 | 7 << 8 | 3 << 16 | 3 << 24 | 1 << 27 | 1 << 29
             | 0x9ABC_DEF0 << 32)
    word1 = 0x1234_5678 | 3 << 35
    word2 = 4 | 2 << 6 | 2 << 8
    body = b"".join(w.to_bytes(8, "little") for w in (word0, word1, word2)) + bytes(24)
    assert frame[:-4] == header + link + body
    assert len(frame) == 68
    assert frame[-4:] == ethx.fcs_of(frame[:-4])
    assert word0.to_bytes(8, "little").hex() == "5107032bf0debc9a"


def test_records_round_trip():
    rng = random.Random(1)
    tx, rx = TxState(), {}
    records = []
    for _ in range(200):
        size = rng.randrange(0, 7)
        length = rng.randrange(0, 16)
        kind = rng.randrange(4)
        addr = rng.choice([0x10_0000_0000, 0x20_0000_0000]) | rng.getrandbits(32)
        attrs = Attrs(prot=rng.randrange(8)) if rng.random() < 0.2 else Attrs()
        if kind == 0:
            records.append(Read(id=rng.randrange(256), addr=addr, len=length, size=size,
                                burst=rng.randrange(3), order=rng.random() < 0.5, attrs=attrs))
        elif kind == 1:
            nbytes = ethx.data_bytes(length, size)
            strb = -1 if rng.random() < 0.5 else rng.getrandbits(nbytes)
            records.append(Write(id=rng.randrange(256), addr=addr, len=length, size=size,
                                 burst=rng.randrange(3), data=rng.randbytes(nbytes), strb=strb,
                                 order=rng.random() < 0.5, attrs=attrs))
        elif kind == 2:
            count = rng.randrange(0, length + 1)
            data = None if rng.random() < 0.2 else rng.randbytes(ethx.data_bytes(count, size))
            records.append(ReadData(id=rng.randrange(256), resp=rng.randrange(4),
                                    last=rng.random() < 0.5, count=count, size=size,
                                    burst=rng.randrange(3), len=length, addr=rng.getrandbits(12),
                                    data=data))
        else:
            records.append(WriteResp(id=rng.randrange(256), resp=rng.randrange(4)))
    got = []
    batch = []
    for record in records + [None]:
        words = sum(ethx.record_words(r, ext=True) for r in batch)
        if record is None or words + ethx.record_words(record, ext=True) > ethx.capacity(1500):
            frame = ethx.encode_frame(3, 9, 2, batch, tx)
            decoded = ethx.decode_frame(frame, 3, rx)
            assert decoded.error is None and (decoded.src, decoded.vc) == (9, 2)
            got += decoded.records
            batch = []
        if record is not None:
            batch.append(record)
    def normal(r):
        if isinstance(r, Write) and r.elided():
            return Write(**{**r.__dict__, "strb": -1})
        return r
    assert [normal(r) for r in got] == [normal(r) for r in records]


def test_compression():
    tx, rx = TxState(), {}
    a = Read(id=1, addr=0x5_0000_1000, len=0, size=3)
    b = Read(id=1, addr=0x5_0000_2000, len=0, size=3)
    c = Read(id=1, addr=0x6_0000_2000, len=0, size=3)
    d = Read(id=1, addr=0x6_0000_2000, len=0, size=3, attrs=Attrs(qos=4))
    words = [ethx.encode_records([r], tx) for r in (a, b, c, c, d)]
    assert [len(w) // 8 for w in words] == [2, 1, 2, 1, 2]
    assert tx.gen == 3
    frame = ethx.encode_frame(1, 2, 0, [a, b, c, c, d], TxState())
    assert ethx.decode_frame(frame, 1, rx).records == [a, b, c, c, d]


def test_lost_extension_is_stale():
    """A request compressed against an extension the receiver never saw decodes as stale."""
    tx, rx = TxState(), {}
    first = ethx.encode_frame(1, 2, 0, [Read(id=0, addr=0x1_0000_0000, len=0, size=0)], tx)
    ethx.encode_frame(1, 2, 0, [Read(id=0, addr=0x2_0000_0000, len=0, size=0)], tx)  # lost
    third = ethx.encode_frame(1, 2, 0, [Read(id=0, addr=0x2_0000_0040, len=0, size=0)], tx)
    assert not ethx.decode_frame(first, 1, rx).records[0].stale
    (record,) = ethx.decode_frame(third, 1, rx).records
    assert record.stale
    # With no state at all (a receiver reset), too.
    assert ethx.decode_frame(third, 1, {}).records[0].stale


def test_write_words():
    full = Write(id=0, addr=0, len=15, size=3, burst=Burst.INCR, data=bytes(128))
    assert ethx.record_words(full) == 17
    assert ethx.record_words(Write(**{**full.__dict__, "strb": 1})) == 19     # 128 strobe bits
    # Narrow beats carry the word that holds them, verbatim: 3 bytes at 5, 6, 7 in 3 words.
    byte = Write(id=0, addr=5, len=2, size=0, burst=Burst.INCR, data=bytes(24), strb=0b101 << 5)
    assert byte.containers() == 1 << 5 | 1 << 14 | 1 << 23 and not byte.elided()
    assert ethx.record_words(byte, ext=True) == 6
    frame = ethx.encode_frame(1, 2, 0, [byte], TxState())
    assert ethx.decode_frame(frame, 1, {}).records == [byte]
    # 2-byte beats of a WRAP from 0xC: containers at 0xC, 0xE, 0x0, 0x2 (bytes 4-5, 6-7, 0-1, 2-3).
    wrap = Write(id=0, addr=0xC, len=3, size=1, burst=Burst.WRAP, data=bytes(32))
    assert wrap.containers() == 0x30 | 0xC0 << 8 | 0x03 << 16 | 0x0C << 24 and wrap.elided()
    assert ethx.record_words(wrap) == 5
    # 16-byte beats from an unaligned address: containers are whole.
    wide = Write(id=0, addr=0x1003, len=1, size=4, burst=Burst.INCR, data=bytes(32))
    assert wide.containers() == (1 << 32) - 1
    # Strobes outside a narrow beat's container are ignored: a byte at 5 with all 8 strobes.
    stray = Write(id=0, addr=0x80005, len=0, size=0, burst=Burst.INCR, data=bytes(8), strb=0xFF)
    assert not stray.elided() and stray.written() == 1 << 5
    assert Write(**{**wrap.__dict__, "strb": (1 << 32) - 1}).written() == wrap.containers()


# --- Bad frames and records ------------------------------------------------------------------

def _frame(records=(WriteResp(id=1, resp=0),), **kwargs):
    return ethx.encode_frame(1, 2, 0, list(records), TxState(), **kwargs)


def _refcs(body):
    return body + ethx.fcs_of(body)


@pytest.mark.parametrize(("make", "error"), [
    (lambda f: f[:60], FrameError.RUNT),
    (lambda f: _refcs(f[:-4] + bytes(1500)), FrameError.OVERSIZED),
    (lambda f: f[:-1] + bytes([f[-1] ^ 1]), FrameError.BAD_FCS),
    (lambda f: f[:20] + bytes([f[20] ^ 4]) + f[21:], FrameError.BAD_FCS),
    (lambda f: _refcs(f[:12] + b"\x08\x00" + f[14:-4]), FrameError.ETHERTYPE),
    (lambda f: _refcs(ethx.mac(7) + f[6:-4]), FrameError.DESTINATION),
    (lambda f: _refcs(f[:6] + bytes(6) + f[12:-4]), FrameError.SOURCE),
    (lambda f: _refcs(f[:14] + b"\x02\x00" + f[16:-4]), FrameError.VERSION),
    (lambda f: _refcs(f[:14] + b"\x81\x00" + f[16:-4]), FrameError.VERSION),
    (lambda f: _refcs(f[:-4] + b"\x00"), FrameError.LENGTH),
])
def test_frame_errors(make, error):
    assert ethx.decode_frame(make(_frame()), 1, {}) == error


def test_frame_without_fcs():
    frame = _frame(fcs=False)
    assert len(frame) == 64
    assert ethx.decode_frame(frame, 1, {}, fcs=False).records == [WriteResp(id=1, resp=0)]
    assert ethx.decode_frame(frame[:56], 1, {}, fcs=False) == FrameError.RUNT


def test_record_errors():
    good = WriteResp(id=1, resp=0)
    body = ethx.encode_records([good], TxState())
    head = ethx.mac(1) + ethx.mac(2) + b"\x88\xb5\x01\x00"

    def decode(words):
        frame = head + body + words + bytes(max(0, 48 - len(body) - len(words)))
        return ethx.decode_frame(_refcs(frame), 1, {})
    assert decode((5).to_bytes(8, "little")).error == RecordError.UNKNOWN_KIND
    assert decode((4 | 1 << 20).to_bytes(8, "little")).error == RecordError.MALFORMED
    assert decode((1 | 3 << 27).to_bytes(8, "little")).error == RecordError.MALFORMED
    assert decode((1 | 1 << 5).to_bytes(8, "little")).error == RecordError.MALFORMED
    # A 16-beat write of 8 bytes whose data runs past the frame.
    long_write = 2 | 15 << 16 | 3 << 24 | 1 << 27
    result = decode(long_write.to_bytes(8, "little"))
    assert result.error == RecordError.TRUNCATED and result.records == [good]
    # The order of the checks [README §2]: kind, header fields, length, extension word. A
    # record that runs past its frame is not used at all: its extension sets no state.
    states = {}
    ext = ethx.encode_records([Write(id=1, addr=0x5_0000_0040, len=0, size=3, burst=1,
                                     data=bytes(8))], TxState())
    frame = head + ext[:16] + bytes(32)       # header and extension only; 16 beats claimed
    frame = frame[:16] + (int.from_bytes(frame[16:24], "little") | 15 << 16).to_bytes(
        8, "little") + frame[24:]
    result = ethx.decode_frame(_refcs(frame), 1, states)
    assert result.error == RecordError.TRUNCATED and states[2].key is None
    # Too long and a reserved bit in the extension: TRUNCATED (the length is known first).
    bad_ext = int.from_bytes(frame[24:32], "little") | 1 << 60
    frame = frame[:24] + bad_ext.to_bytes(8, "little") + frame[32:]
    assert ethx.decode_frame(_refcs(frame), 1, states).error == RecordError.TRUNCATED
    # A PAD word ends the records; what follows is ignored.
    assert decode(bytes(8) + (5).to_bytes(8, "little")).records == [good]


# --- Byte counts -----------------------------------------------------------------------------

def test_naive_figures():
    """The white paper's example: a 128-byte load naively is 128/228 = 56 %, 46 % on the wire."""
    total, eff = ethx.naive_bytes(128, request_data=0, response_data=128, wire=False)
    assert total == 228 and round(eff, 3) == 0.561
    total, eff = ethx.naive_bytes(128, request_data=0, response_data=128)
    assert total == 276 and round(eff, 2) == 0.46


def test_naive_segments():
    """A 4 KB write naively: the request's data needs three frames of at most 1464 data
    bytes (1500 - IP 20 - instruction 16), the response one: 4 headers and instructions."""
    total, _ = ethx.naive_bytes(4096, request_data=4096, response_data=0, wire=False)
    assert total == 4096 + 4 * 50
    total, _ = ethx.naive_bytes(1464, request_data=1464, response_data=0, wire=False)
    assert total == 1464 + 2 * 50
    total, _ = ethx.naive_bytes(4096, request_data=4096, response_data=0, wire=False, mtu=9000)
    assert total == 4096 + 2 * 50


def test_full_frames_of_loads():
    """11 read-data records of 128 bytes fill a 1500-byte MTU frame exactly."""
    rd = ReadData(id=0, resp=0, last=True, count=15, size=3, burst=1, len=15, addr=0,
                  data=bytes(128))
    frame = ethx.encode_frame(1, 2, 0, [rd] * 11, TxState())
    assert len(frame) == 16 + 11 * 136 + 4 and ethx.capacity(1500) == 187
    assert ethx.decode_frame(frame, 1, {}).records == [rd] * 11
    with pytest.raises(ValueError, match="do not fit MTU"):
        ethx.encode_frame(1, 2, 0, [rd] * 12, TxState())


# --- pcap through scapy ----------------------------------------------------------------------

def test_pcap_round_trip(tmp_path):
    from scapy.layers.l2 import Ether
    from scapy.utils import rdpcap, wrpcap
    rng = random.Random(2)
    tx = TxState()
    frames = [ethx.encode_frame(1, 2, rng.randrange(8),
                                [Read(id=k, addr=rng.getrandbits(40), len=3, size=3)], tx)
              for k in range(20)]
    path = tmp_path / "ethx.pcap"
    wrpcap(str(path), [Ether(f) for f in frames])
    back = rdpcap(str(path))
    assert [bytes(p) for p in back] == frames
    assert back[0][Ether].type == 0x88B5 and back[0][Ether].dst == "02:00:00:00:00:01"
    states = {}
    records = [ethx.decode_frame(bytes(p), 1, states).records[0] for p in back]
    assert [r.id for r in records] == list(range(20)) and not any(r.stale for r in records)


def test_rx_state_isolated_by_source():
    tx2, tx3, rx = TxState(), TxState(), {}
    f2 = ethx.encode_frame(1, 2, 0, [Read(id=0, addr=0x2_0000_0000, len=0, size=0)], tx2)
    f3 = ethx.encode_frame(1, 3, 0, [Read(id=0, addr=0x3_0000_0000, len=0, size=0)], tx3)
    g2 = ethx.encode_frame(1, 2, 0, [Read(id=0, addr=0x2_0000_0008, len=0, size=0)], tx2)
    for frame in (f2, f3):
        ethx.decode_frame(frame, 1, rx)
    (record,) = ethx.decode_frame(g2, 1, rx).records
    assert record.addr == 0x2_0000_0008 and not record.stale
    assert isinstance(rx[2], RxState) and rx[3].key[0] == 3


def test_decode_words():
    words = [int.from_bytes(ethx.encode_records([WriteResp(id=9, resp=Resp.DECERR)],
                                                TxState()), "little")]
    decoded = ethx.decode_words(words, {}, node=3, src=4)
    assert decoded.records == [WriteResp(id=9, resp=Resp.DECERR)] and decoded.src == 4
