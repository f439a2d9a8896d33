# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the ETH-X link layer golden model rtl/scaleup_ip/model/ethx/link.py (no simulator).

Written from rtl/scaleup_ip/ethx/link/README.md: frame formats byte by byte from the §1 tables (FCS
recomputed here with zlib.crc32), every receive check of §1, the sequence classes of §2, every
row of the receiver table (§3.1) and the transmitter table (§3.2), credits (§4), and end-to-end
runs of :class:`ModelLink` over lossy channels (each run prints its seed; ``SEED=n`` fixes the
random one), with the goodput against the go-back-N bound.
"""

import os
import random
import zlib
from collections import deque

import pytest

from scaleup_ip.model.ethx import link
from scaleup_ip.model.ethx.bridge import TxState as BridgeTx
from scaleup_ip.model.ethx.bridge import WriteResp, encode_frame, header, mac
from scaleup_ip.model.ethx.link import (
    Class,
    CreditReceiver,
    CreditSender,
    Ctl,
    Fate,
    LlrRx,
    LlrTx,
    ModelLink,
    RxState,
    SeqClass,
    TxState,
    Why,
    classify,
    encode_control,
    goodput_bound,
    pkt_credits,
    random_loss,
    seq_class,
    to_wire,
    wire_bytes_of,
)

RX_NAMES = ("RX_OK RX_DUPLICATE RX_MISSING RX_BAD RX_DISCARD RX_OVERFLOW RX_FOREIGN ACK_TX "
            "NACK_TX INIT_RX INIT_ECHO_TX CF_TX CC_RX RX_POISONED").split()   # [link README §5]
TX_NAMES = ("TX_OK TX_REPLAYED TX_REPLAY_NACK TX_REPLAY_TIMER TX_FLUSHED ACK_RX NACK_RX "
            "INIT_ECHO_RX ACK_NACK_SEQ_ERROR INIT_TX CC_TX CF_RX CREDIT_ERROR "
            "PEAK_REPLAY TX_MALFORMED TX_POISONED").split()                      # [link README §5]


def with_fcs(body):
    """``body`` + its 802.3 FCS, computed here independently of the model."""
    return body + zlib.crc32(body).to_bytes(4, "little")


def fcs_ok(wire):
    return zlib.crc32(wire[:-4]).to_bytes(4, "little") == wire[-4:]


def bridge(vc, index, words=6, src=0, dst=1):
    """A bridge frame (no FCS) of ``16 + 8 * words`` bytes on ``vc``, tagged with ``index``."""
    body = index.to_bytes(4, "little") + bytes([vc]) + bytes(8 * words - 5)
    return header(dst, src, vc) + body


def seed_of(name, fixed=None):
    seed = fixed if fixed is not None else int(
        os.environ.get("SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"{name}: seed {seed}")
    return seed


# --- Constants -------------------------------------------------------------------------------

def test_constants():
    assert link.LINK_ETHERTYPE == 0x88B6
    assert link.CONTROL_DA == bytes.fromhex("030000000001")
    assert (link.LINK_WORD_AT, link.CONTROL_BYTES, link.MAX_VCS) == (16, 64, 8)
    assert (link.COUNT_BITS, link.SEQ_BITS) == (20, 20)
    assert [int(k) for k in Ctl] == [1, 2, 3, 4, 16, 17]
    assert [k.name for k in Ctl] == ["ACK", "NACK", "INIT", "INIT_ECHO", "CF_UPDATE",
                                     "CC_UPDATE"]
    assert list(LlrRx(ack_bytes=1, ack_delay=0).counters) == RX_NAMES
    tx = LlrTx(replay_frames=4, replay_timeout=1, replay_max=0, init_period=1, down_max=0)
    assert list(tx.counters) == TX_NAMES
    assert set(tx.counters.values()) == {0}


# --- Frames [link README §1] -----------------------------------------------------------------

def test_data_frame_bytes():
    frame = encode_frame(1, 2, 3, [WriteResp(id=5, resp=0)], BridgeTx(), fcs=False)
    assert frame == bytes.fromhex("020000000001" "020000000002" "88b5" "3100"
                                  "0405000000000000") + bytes(40)
    wire = to_wire(frame, 0x12345)
    assert len(wire) == 76 == 28 + 8 * 6 == wire_bytes_of(64)
    assert wire[:-4] == bytes.fromhex("020000000001" "020000000002" "88b5" "3100"
                                      "4523010000000000"             # link word, LE
                                      "0405000000000000") + bytes(40)
    assert wire[-4:] == zlib.crc32(wire[:-4]).to_bytes(4, "little")
    assert to_wire(frame, 0xFFFFF)[16:24] == bytes.fromhex("ffff0f0000000000")
    assert to_wire(frame, 5, seq_bits=6)[16:24] == bytes.fromhex("0500000000000000")
    assert wire_bytes_of(1512) == 1524 == link.max_wire_bytes(1500)


@pytest.mark.parametrize("size", [0, 15, 17, 63, 65, 70])
def test_to_wire_length_rule(size):
    with pytest.raises(ValueError):
        to_wire(bytes(size), 0)


def test_to_wire_seq_range():
    frame = bridge(0, 0)
    with pytest.raises(ValueError):
        to_wire(frame, 1 << 20)
    with pytest.raises(ValueError):
        to_wire(frame, 64, seq_bits=6)
    with pytest.raises(ValueError):
        to_wire(frame, -1)
    assert len(to_wire(bridge(0, 0)[:16], 0)) == 28             # n = 0 is still a 16 + 8n shape


def test_control_frame_bytes():
    ack = encode_control(Ctl.ACK, 0x0102, seq=0xABCDE)
    assert len(ack) == 68 and fcs_ok(ack)
    assert ack[:-4] == bytes.fromhex("030000000001" "020000000102" "88b6" "01" "00"
                                     "debc0a0000000000") + bytes(40)
    for kind, code in ((Ctl.NACK, 2), (Ctl.INIT, 3), (Ctl.INIT_ECHO, 4)):
        frame = encode_control(kind, 7, seq=9)
        assert frame[14:24] == bytes([code, 0, 9]) + bytes(7) and frame[24:64] == bytes(40)
    cf = encode_control(Ctl.CF_UPDATE, 7, counts=(1, 0xFFFFF, 0x12345))
    assert cf[:-4] == bytes.fromhex("030000000001" "020000000007" "88b6" "10" "00"
                                    "0000000000000000"
                                    "01000000" "ffff0f00" "45230100") + bytes(20 + 8)
    assert fcs_ok(cf)
    cc = encode_control(Ctl.CC_UPDATE, 7, seq=0xFFFFF, counts=(0,) * 7 + (0x80000,))
    assert cc[:-4] == bytes.fromhex("030000000001" "020000000007" "88b6" "11" "00"
                                    "ffff0f0000000000") + bytes(28) + bytes.fromhex(
                                        "00000800") + bytes(8)
    assert fcs_ok(cc)
    assert encode_control(Ctl.INIT, 0, seq=63, seq_bits=6)[16] == 63


@pytest.mark.parametrize("kwargs", [
    dict(kind=Ctl.ACK, seq=1 << 20),
    dict(kind=Ctl.ACK, seq=64, seq_bits=6),
    dict(kind=Ctl.ACK, counts=(1,)),
    dict(kind=Ctl.CF_UPDATE, seq=1),
    dict(kind=Ctl.CF_UPDATE, counts=(0,) * 9),
    dict(kind=Ctl.CC_UPDATE, counts=(1 << 20,)),
    dict(kind=5),
])
def test_control_frame_errors(kwargs):
    kind = kwargs.pop("kind")
    with pytest.raises(ValueError):
        encode_control(kind, 1, **kwargs)


MAX = 1524


def test_classify_data():
    frame = bridge(5, 77, words=10, src=0x0203)
    got = classify(to_wire(frame, 0x54321), max_bytes=MAX)
    assert got.cls is Class.DATA and got.frame == frame
    assert (got.seq, got.vc, got.node, got.kind) == (0x54321, 5, 0x0203, None)
    assert classify(to_wire(frame, 0x54321), max_bytes=MAX, seq_bits=6).seq == 0x21
    odd = bytearray(frame)
    odd[14] = 0x7F                                              # VC is bits 6:4 of byte 14
    assert classify(to_wire(bytes(odd), 0), max_bytes=MAX).vc == 7
    foreign_sa = frame[:6] + bytes.fromhex("00aabbccddee") + frame[12:]
    assert classify(to_wire(foreign_sa, 0), max_bytes=MAX).node is None


def test_classify_poisoned():
    """A data frame with its FCS poisoned is POISONED (its fields read as a DATA frame's); a
    control frame with a poisoned FCS, an inverted FCS, or a poisoned frame with one more bit
    wrong, is BAD
    [link README §1]."""
    frame = bridge(2, 9, words=7)
    wire = to_wire(frame, 33, poisoned=True)
    assert wire[:-4] == to_wire(frame, 33)[:-4]
    assert wire[-4:] == (zlib.crc32(wire[:-4]) ^ 0x5A5A_5A5A).to_bytes(4, "little")
    inverted = wire[:-4] + bytes(b ^ 0xFF for b in to_wire(frame, 33)[-4:])
    assert classify(inverted, max_bytes=MAX).why is Why.FCS     # a burst over the FCS: bad
    got = classify(wire, max_bytes=MAX)
    assert got.cls is Class.POISONED and (got.seq, got.vc, got.frame) == (33, 2, frame)
    ack = encode_control(Ctl.ACK, 3, seq=5)
    assert classify(ack[:-4] + link.poison(ack[-4:]), max_bytes=MAX).why is Why.FCS
    worse = bytearray(wire)
    worse[20] ^= 1
    assert classify(bytes(worse), max_bytes=MAX).why is Why.FCS
    assert classify(wire, max_bytes=MAX, user=True).why is Why.USER


def test_llr_rx_poisoned():
    """A poisoned frame with the expected number is taken without a NACK (RX_POISONED, not
    RX_OK); one ahead is a gap (NACK), one behind a duplicate [link README §3.1]."""
    rx = LlrRx(ack_bytes=10_000, ack_delay=1000)
    rx.init(0, 0)
    rx.take(0)
    assert rx.eligible(0, 64, 1, room=False, poisoned=True)
    assert rx.expected == 1 and rx.state is RxState.SEND_ACKS and not rx.pending()
    assert not rx.eligible(0, 64, 2, poisoned=True)             # a duplicate: an ACK
    assert rx.pending() == [(Ctl.ACK, 0)]
    rx.take(2)
    assert not rx.eligible(3, 64, 3, poisoned=True)             # ahead: a gap, NACKed
    assert rx.pending() == [(Ctl.NACK, 0)] and rx.state is RxState.NACK_SENT
    c = rx.counters
    assert (c["RX_POISONED"], c["RX_OK"], c["RX_DUPLICATE"], c["RX_MISSING"], c["RX_BAD"]) == (
        1, 0, 1, 1, 0)


def test_classify_control():
    for kind in (Ctl.ACK, Ctl.NACK, Ctl.INIT, Ctl.INIT_ECHO):
        got = classify(encode_control(kind, 9, seq=0xFEDCB), max_bytes=MAX)
        assert (got.cls, got.kind, got.seq, got.node, got.counts) == (
            Class.CONTROL, kind, 0xFEDCB, 9, ())
    counts = (1, 2, 3, 4, 5, 6, 7, 0xFFFFF)
    got = classify(encode_control(Ctl.CF_UPDATE, 9, counts=counts), max_bytes=MAX)
    assert (got.cls, got.kind, got.counts) == (Class.CONTROL, Ctl.CF_UPDATE, counts)
    got = classify(encode_control(Ctl.CF_UPDATE, 9, counts=(1, 2)), max_bytes=MAX)
    assert got.counts == (1, 2, 0, 0, 0, 0, 0, 0)
    got = classify(encode_control(Ctl.CC_UPDATE, 9, seq=33, counts=counts), max_bytes=MAX)
    assert (got.cls, got.kind, got.seq, got.counts) == (Class.CC, Ctl.CC_UPDATE, 33, counts)
    raw = bytearray(encode_control(Ctl.CF_UPDATE, 9, counts=(5,))[:-4])
    raw[26] |= 0xF0                                             # count bits 31:20 ignored
    raw[27] = 0xFF
    assert classify(with_fcs(bytes(raw)), max_bytes=MAX).counts[0] == 5


def frame_of(ethertype, size, kind=1):
    """A frame with a good FCS of ``size`` bytes (FCS included)."""
    body = bytearray(mac(1) + mac(2) + ethertype.to_bytes(2, "big")) + bytearray(size - 18)
    if size > 14:
        body[14] = kind
    return with_fcs(bytes(body))


@pytest.mark.parametrize("wire, user, why", [
    (frame_of(0x88B5, 76), True, Why.USER),
    (frame_of(0x88B5, 60), False, Why.RUNT),                    # 60 = 4 mod 8: only short
    (frame_of(0x0800, 63), False, Why.RUNT),
    (frame_of(0x88B5, 100 + 8), False, Why.GIANT),
    (frame_of(0x0800, 101), False, Why.GIANT),
    (frame_of(0x88B5, 72), False, Why.LENGTH),
    (frame_of(0x88B5, 64), False, Why.LENGTH),
    (frame_of(0x88B6, 72), False, Why.LENGTH),
    (frame_of(0x88B6, 64), False, Why.LENGTH),
    (frame_of(0x88B6, 76, kind=99), False, Why.LENGTH),         # length before kind
    (frame_of(0x88B5, 76)[:-1] + b"\x00", False, Why.FCS),
    # the order of the checks
    (frame_of(0x88B5, 60)[:-4] + bytes(4), True, Why.USER),
    (frame_of(0x88B5, 60)[:-4] + bytes(4), False, Why.RUNT),
    (frame_of(0x88B5, 110)[:-4] + bytes(4), False, Why.GIANT),
    (frame_of(0x88B5, 72)[:-4] + bytes(4), False, Why.LENGTH),
])
def test_classify_bad(wire, user, why):
    got = classify(wire, user=user, max_bytes=100)
    assert (got.cls, got.why) == (Class.BAD, why)


def test_classify_bad_fcs_every_byte():
    wire = to_wire(bridge(1, 1), 3)
    for k in range(len(wire)):
        hit = wire[:k] + bytes([wire[k] ^ 0x80]) + wire[k + 1:]
        assert classify(hit, max_bytes=MAX).why is Why.FCS


def test_classify_edges():
    assert classify(frame_of(0x0800, 64), max_bytes=100).cls is Class.FOREIGN
    assert classify(frame_of(0x0800, 100), max_bytes=100).cls is Class.FOREIGN
    data = to_wire(bridge(0, 0, words=9), 0)
    assert len(data) == 100 and classify(data, max_bytes=100).cls is Class.DATA
    assert classify(to_wire(bridge(0, 0, words=5), 0), max_bytes=100).cls is Class.DATA  # 68


@pytest.mark.parametrize("wire, why", [
    (frame_of(0x0800, 64), Why.ETHERTYPE),
    (frame_of(0x0800, 65), Why.ETHERTYPE),                      # no length rule
    (frame_of(0x88B7, 68), Why.ETHERTYPE),
    (frame_of(0x88B6, 68, kind=0), Why.KIND),
    (frame_of(0x88B6, 68, kind=5), Why.KIND),
    (frame_of(0x88B6, 68, kind=15), Why.KIND),
    (frame_of(0x88B6, 68, kind=18), Why.KIND),
    (frame_of(0x88B6, 68, kind=255), Why.KIND),
])
def test_classify_foreign(wire, why):
    got = classify(wire, max_bytes=MAX)
    assert (got.cls, got.why, got.node) == (Class.FOREIGN, why, 2)
    assert classify(wire[:-1] + bytes([wire[-1] ^ 1]), max_bytes=MAX).cls is Class.BAD


# --- Sequence numbers [link README §2] -------------------------------------------------------

def test_seq_class_edges():
    E, D, A = SeqClass.EXPECTED, SeqClass.DUPLICATE, SeqClass.AHEAD
    cases = {10: E, 9: D, 42: D, 43: D, 41: A, 11: A}          # e = 10, 2**6: half is 32
    for s, want in cases.items():
        assert seq_class(s, 10, 6) is want, s
    cases = {0: E, 63: D, 32: D, 33: D, 31: A, 1: A}            # e = 0: the wrap
    for s, want in cases.items():
        assert seq_class(s, 0, 6) is want, s
    assert seq_class(0, 1 << 19, 20) is D and seq_class((1 << 20) - 1, 1 << 19, 20) is A
    assert seq_class((1 << 20) - 1, 0) is D and seq_class(1 << 19, 0) is D
    assert seq_class((1 << 19) - 1, 0) is A


def test_seq_class_counts():
    """Per ``e``: 1 expected, 2**(b-1) duplicates, 2**(b-1) - 1 ahead."""
    for e in range(16):
        got = [seq_class(s, e, 4) for s in range(16)]
        assert got.count(SeqClass.EXPECTED) == 1
        assert got.count(SeqClass.DUPLICATE) == 8
        assert [seq_class((e + k) % 16, e, 4) for k in range(1, 8)] == [SeqClass.AHEAD] * 7


def test_goodput_bound():
    assert goodput_bound(0, 50) == 1
    assert goodput_bound(0.1, 1) == pytest.approx(0.9)
    assert goodput_bound(0.1, 11) == pytest.approx(0.45)


# --- Receiver [link README §3.1] -------------------------------------------------------------

def new_rx(**kwargs):
    kwargs = {"seq_bits": 6, "ack_bytes": 10_000, "ack_delay": 10_000, **kwargs}
    return LlrRx(**kwargs)


def in_state(state, e=10, **kwargs):
    rx = new_rx(**kwargs)
    if state is not RxState.OFF:
        rx.init(e, 0)
        assert rx.take(0) == (Ctl.INIT_ECHO, e)
    if state is RxState.NACK_SENT:
        rx.bad(0)
        assert rx.take(0) == (Ctl.NACK, e - 1)
    assert rx.state is state
    rx.counters.update(dict.fromkeys(rx.counters, 0))
    return rx


def test_rx_reset():
    rx = new_rx()
    assert (rx.state, rx.expected, rx.pending(), rx.take(0)) == (RxState.OFF, 0, [], None)
    assert set(rx.counters.values()) == {0}


@pytest.mark.parametrize("state", list(RxState))
def test_rx_init(state):
    rx = in_state(state)
    rx.init(40, 1)
    assert (rx.state, rx.expected) == (RxState.SEND_ACKS, 40)
    assert rx.pending()[0] == (Ctl.INIT_ECHO, 40)
    assert rx.take(1) == (Ctl.INIT_ECHO, 40)
    assert (rx.counters["INIT_RX"], rx.counters["INIT_ECHO_TX"]) == (1, 1)
    assert rx.eligible(40, 76, 2) and rx.expected == 41


def test_rx_off_row():
    rx = in_state(RxState.OFF)
    for s in (0, 1, 63, 32):
        assert not rx.eligible(s, 76, 0)
    assert not rx.eligible(0, 76, 0, room=False)
    rx.bad(0)
    rx.foreign(0)
    rx.tick(50_000)
    assert rx.counters["RX_DISCARD"] == 5 and rx.counters["RX_BAD"] == 1
    assert rx.counters["RX_FOREIGN"] == 1 and rx.counters["RX_OVERFLOW"] == 0
    assert (rx.state, rx.expected, rx.pending()) == (RxState.OFF, 0, [])


def test_rx_send_acks_rows():
    rx = in_state(RxState.SEND_ACKS)
    assert rx.eligible(10, 76, 1) and rx.expected == 11 and rx.counters["RX_OK"] == 1
    assert rx.pending() == []
    assert not rx.eligible(10, 76, 2)                           # duplicate: ACK now
    assert rx.counters["RX_DUPLICATE"] == 1 and rx.pending() == [(Ctl.ACK, 10)]
    assert rx.take(2) == (Ctl.ACK, 10) and rx.counters["ACK_TX"] == 1
    assert not rx.eligible(12, 76, 3)                           # ahead: NACK
    assert rx.counters["RX_MISSING"] == 1 and rx.state is RxState.NACK_SENT
    assert rx.pending() == [(Ctl.NACK, 10)] and rx.expected == 11
    assert rx.take(3) == (Ctl.NACK, 10) and rx.counters["NACK_TX"] == 1


def test_rx_send_acks_bad_and_overflow():
    rx = in_state(RxState.SEND_ACKS)
    rx.bad(1)
    assert rx.state is RxState.NACK_SENT and rx.pending() == [(Ctl.NACK, 9)]
    assert rx.counters["RX_BAD"] == 1
    rx = in_state(RxState.SEND_ACKS)
    assert not rx.eligible(10, 76, 1, room=False)
    assert (rx.counters["RX_BAD"], rx.counters["RX_OVERFLOW"], rx.counters["RX_OK"]) == (1, 1, 0)
    assert rx.state is RxState.NACK_SENT and rx.pending() == [(Ctl.NACK, 9)]
    assert rx.expected == 10


def test_rx_nack_sent_rows():
    rx = in_state(RxState.NACK_SENT)
    assert not rx.eligible(9, 76, 1)                            # duplicate: ACK(e - 1) [ours]
    assert rx.take(1) == (Ctl.ACK, 9)
    assert not rx.eligible(11, 76, 1)                           # ahead: no NACK
    rx.bad(1)
    assert not rx.eligible(10, 76, 1, room=False)               # no room: as bad
    c = rx.counters
    assert (c["RX_DUPLICATE"], c["RX_MISSING"], c["RX_BAD"], c["RX_OVERFLOW"]) == (1, 1, 2, 1)
    assert rx.pending() == [] and rx.state is RxState.NACK_SENT and rx.expected == 10
    rx.tick(50_000)                                             # no ACK by the clock
    assert rx.pending() == []
    assert rx.eligible(10, 76, 2)                               # expected: back to SEND_ACKS
    assert rx.state is RxState.SEND_ACKS and c["RX_OK"] == 1 and rx.expected == 11


def test_rx_window_edges():
    rx = in_state(RxState.SEND_ACKS, e=10)
    assert not rx.eligible(42, 76, 0)                           # e - 32: duplicate
    assert rx.counters["RX_DUPLICATE"] == 1 and rx.state is RxState.SEND_ACKS
    assert not rx.eligible(41, 76, 0)                           # e + 31: ahead
    assert rx.counters["RX_MISSING"] == 1 and rx.state is RxState.NACK_SENT


def test_rx_wrap():
    rx = in_state(RxState.SEND_ACKS, e=62)
    assert all(rx.eligible(s, 76, 0) for s in (62, 63, 0, 1))
    assert rx.expected == 2 and not rx.eligible(63, 76, 0)
    assert rx.take(0) == (Ctl.ACK, 1)


def test_rx_values_when_leaving():
    rx = in_state(RxState.SEND_ACKS)
    rx.eligible(10, 76, 0)
    rx.eligible(10, 76, 0)                                      # ACK queued at e = 11
    rx.eligible(11, 76, 0)
    rx.eligible(12, 76, 0)
    assert rx.take(0) == (Ctl.ACK, 12)                          # e - 1 when it leaves
    rx.bad(0)                                                   # NACK queued at e = 13
    assert rx.eligible(13, 76, 0) and rx.eligible(14, 76, 0)
    assert rx.take(0) == (Ctl.NACK, 14)


def test_rx_priority():
    rx = in_state(RxState.SEND_ACKS)
    rx.bad(0)                                                   # NACK
    rx.eligible(10, 76, 0)                                      # back to SEND_ACKS
    rx.eligible(5, 76, 0)                                       # duplicate: ACK
    rx.init(20, 0)                                              # INIT_ECHO
    assert rx.pending() == [(Ctl.INIT_ECHO, 20), (Ctl.NACK, 19), (Ctl.ACK, 19)]
    assert [rx.take(0) for _ in range(4)] == [(Ctl.INIT_ECHO, 20), (Ctl.NACK, 19),
                                              (Ctl.ACK, 19), None]
    c = rx.counters
    assert (c["INIT_ECHO_TX"], c["NACK_TX"], c["ACK_TX"]) == (1, 1, 1)


def test_rx_nack_replaces_pending_ack():
    rx = in_state(RxState.SEND_ACKS)
    rx.eligible(5, 76, 0)
    assert rx.pending() == [(Ctl.ACK, 9)]
    rx.bad(0)
    assert rx.pending() == [(Ctl.NACK, 9)]


def test_rx_ack_bytes():
    """Bytes accepted since the last ACK or NACK was queued reach ack_bytes."""
    rx = in_state(RxState.SEND_ACKS, e=0, ack_bytes=200)
    rx.eligible(0, 76, 0)
    rx.eligible(1, 76, 0)
    assert rx.pending() == []                                   # 152
    rx.eligible(2, 76, 0)
    assert rx.pending() == [(Ctl.ACK, 2)]                       # 228 >= 200
    rx.eligible(3, 76, 0)                                       # counts towards the next
    assert rx.take(0) == (Ctl.ACK, 3)
    rx.eligible(4, 76, 0)
    assert rx.pending() == []                                   # 152 since the queueing
    rx.eligible(5, 76, 0)
    assert rx.take(0) == (Ctl.ACK, 5)
    rx.eligible(6, 76, 0)
    rx.eligible(7, 76, 0)
    rx.bad(0)                                                   # a NACK restarts the count
    assert rx.take(0) == (Ctl.NACK, 7)
    rx.eligible(8, 76, 0)
    rx.eligible(9, 76, 0)
    assert rx.pending() == []
    rx.eligible(10, 200, 0)                                     # exactly ack_bytes alone
    assert rx.take(0) == (Ctl.ACK, 10)
    assert not rx.eligible(10, 10_000, 0) and rx.take(0) == (Ctl.ACK, 10)   # duplicate
    rx.eligible(11, 199, 0)
    assert rx.pending() == []


def test_rx_ack_delay():
    rx = in_state(RxState.SEND_ACKS, e=0, ack_delay=10)
    rx.tick(100)
    assert rx.pending() == []                                   # nothing to acknowledge
    rx.eligible(0, 76, 105)
    rx.tick(114)
    assert rx.pending() == []
    rx.tick(115)                                                # >= ack_delay later
    assert rx.pending() == [(Ctl.ACK, 0)]
    rx.eligible(1, 76, 116)                                     # starts the next delay
    assert rx.take(117) == (Ctl.ACK, 1)
    rx.tick(125)
    assert rx.pending() == []
    rx.tick(126)
    assert rx.take(126) == (Ctl.ACK, 1)
    rx.tick(200)
    assert rx.pending() == []
    rx.eligible(2, 76, 300)                                     # a NACK stops the delay
    rx.bad(301)
    rx.take(301)
    rx.tick(400)
    assert rx.pending() == []
    rx = in_state(RxState.SEND_ACKS, e=0, ack_delay=0)
    rx.eligible(0, 76, 3)
    rx.tick(3)
    assert rx.take(3) == (Ctl.ACK, 0)


# --- Transmitter [link README §3.2] ----------------------------------------------------------

def new_tx(**kwargs):
    kwargs = {"seq_bits": 6, "replay_frames": 8, "replay_timeout": 20, "replay_max": 2,
              "init_period": 10, "down_max": 30, **kwargs}
    return LlrTx(**kwargs)


def synced(frames=0, now=0, **kwargs):
    tx = new_tx(**kwargs)
    for k in range(frames):
        tx.push(f"p{k}")
    tx.up(True, now)
    assert tx.send(now) == (Ctl.INIT, 0, None)
    tx.init_echo(0, now)
    assert tx.state is TxState.ADVANCE and tx.synchronized
    return tx


def send_all(tx, now=0):
    out = []
    while (got := tx.send(now)) is not None:
        out.append(got[1])
    return out


def pointers(tx):
    return tx.acked, tx.sent, tx.next


def test_tx_reset():
    tx = new_tx()
    assert (tx.state, tx.synchronized, pointers(tx)) == (TxState.OFF, False, (0, 0, 0))
    assert set(tx.counters.values()) == {0}
    tx.push("a")
    assert tx.send(0) is None                                   # OFF sends nothing
    tx.tick(10_000)
    assert tx.state is TxState.OFF                              # no down_max without a fall
    tx.reset()
    assert pointers(tx) == (0, 0, 0) and not tx.ring


def test_tx_ring_room():
    tx = new_tx()
    assert [tx.push(k) for k in range(8)] == list(range(8))
    assert not tx.room() and tx.counters["PEAK_REPLAY"] == 8
    with pytest.raises(RuntimeError):
        tx.push(8)
    tx = new_tx(replay_bytes=200)
    tx.push("a", 150)
    assert tx.room(50) and not tx.room(51)
    with pytest.raises(ValueError):
        new_tx(replay_frames=33)                                # > 2**(seq_bits - 1)
    new_tx(replay_frames=32)


def test_tx_init_exchange():
    tx = new_tx()
    tx.push("a")
    tx.push("b")
    tx.up(True, 5)
    assert tx.state is TxState.INIT and not tx.synchronized
    assert tx.send(5) == (Ctl.INIT, 0, None)                    # the first at once
    assert [tx.send(t) for t in range(6, 15)] == [None] * 9     # no eligible frame in INIT
    assert tx.send(15) == (Ctl.INIT, 0, None)                   # every init_period
    assert tx.send(17) is None and tx.counters["INIT_TX"] == 2
    tx.init_echo(1, 18)                                         # another number: ignored
    assert tx.state is TxState.INIT and tx.counters["ACK_NACK_SEQ_ERROR"] == 1
    tx.init_echo(0, 19)
    assert tx.state is TxState.ADVANCE and tx.synchronized
    assert tx.send(19) == ("DATA", 0, "a") and tx.counters["TX_OK"] == 1
    tx.init_echo(0, 20)                                         # outside INIT: ignored
    tx.init_echo(7, 20)
    assert tx.state is TxState.ADVANCE and tx.counters["ACK_NACK_SEQ_ERROR"] == 1
    assert tx.counters["INIT_ECHO_RX"] == 4


def test_tx_ack_validity():
    tx = synced(5)
    assert send_all(tx) == [0, 1, 2, 3, 4] and tx.counters["TX_OK"] == 5
    assert not tx.ack(5, 1)                                     # d = 6 > sent - acked = 5
    assert tx.counters["ACK_NACK_SEQ_ERROR"] == 1 and tx.acked == 0
    assert tx.ack(63, 1) and tx.acked == 0                      # d = 0: valid, no progress
    assert tx.ack(1, 1) and pointers(tx) == (2, 5, 5) and tx.kept() == 3
    assert tx.ack(4, 1) and pointers(tx) == (5, 5, 5) and tx.kept() == 0   # d = sent - acked
    assert tx.ack(4, 1) and not tx.ack(5, 1) and not tx.ack(36, 1)
    assert tx.counters["ACK_RX"] == 7 and tx.counters["ACK_NACK_SEQ_ERROR"] == 3
    tx.push("x")
    assert tx.ack(4, 1) and not tx.ack(5, 1)                    # pushed, not sent: not ackable


def test_tx_nack():
    tx = synced(6)
    send_all(tx)
    assert tx.nack(2, 1)                                        # frees 0..2, goes back to 3
    assert pointers(tx) == (3, 3, 6) and tx.state is TxState.REPLAY
    assert tx.counters["TX_REPLAY_NACK"] == 1 and tx.replay_count == 1
    assert send_all(tx) == [3, 4, 5] and tx.counters["TX_REPLAYED"] == 3
    assert tx.state is TxState.ADVANCE and tx.counters["TX_OK"] == 6
    tx.push("p6")
    assert tx.send(2) == ("DATA", 6, "p6") and tx.counters["TX_OK"] == 7
    assert tx.nack(6, 3)                                        # s + 1 == sent: frees only
    assert pointers(tx) == (7, 7, 7) and tx.counters["TX_REPLAY_NACK"] == 1
    assert tx.replay_count == 0                                 # progress cleared it
    assert not tx.nack(7, 3) and tx.counters["ACK_NACK_SEQ_ERROR"] == 1
    assert tx.counters["NACK_RX"] == 3


def test_tx_nack_without_progress():
    tx = synced(3)
    send_all(tx)
    assert tx.nack(63, 1)                                       # frees nothing, replays all
    assert pointers(tx) == (0, 0, 3) and tx.replay_count == 1
    assert tx.state is TxState.REPLAY


def test_tx_replay_then_advance():
    """REPLAY while sent is below the highest sent; new frames behind the replay are TX_OK."""
    tx = synced(4)
    assert tx.send(0)[1] == 0 and tx.send(0)[1] == 1
    tx.nack(63, 0)
    tx.push("p4")
    assert [tx.send(0)[1] for _ in range(2)] == [0, 1] and tx.state is TxState.ADVANCE
    assert send_all(tx) == [2, 3, 4]
    assert (tx.counters["TX_OK"], tx.counters["TX_REPLAYED"]) == (5, 2)


def test_tx_timer():
    tx = synced(3)
    tx.send(1)                                                  # the timer starts at 1
    tx.send(2)
    for t in range(1, 21):
        tx.tick(t)
    assert tx.sent == 2 and tx.counters["TX_REPLAY_TIMER"] == 0
    tx.tick(21)                                                 # replay_timeout after 1
    assert pointers(tx) == (0, 0, 3) and tx.state is TxState.REPLAY
    assert tx.counters["TX_REPLAY_TIMER"] == 1 and tx.replay_count == 1
    tx.tick(200)                                                # not running: sent == acked
    assert tx.counters["TX_REPLAY_TIMER"] == 1
    tx.send(300)
    tx.send(300)
    tx.ack(0, 305)                                              # progress restarts it
    assert tx.replay_count == 0
    tx.tick(324)
    assert tx.counters["TX_REPLAY_TIMER"] == 1
    tx.tick(325)
    assert tx.counters["TX_REPLAY_TIMER"] == 2 and pointers(tx) == (1, 1, 3)


def test_tx_timer_only_with_outstanding_frames():
    tx = synced(1)
    tx.send(0)
    tx.ack(0, 5)
    tx.tick(1000)
    assert tx.counters["TX_REPLAY_TIMER"] == 0
    tx.push("x")
    tx.send(1000)
    tx.up(False, 1001)
    tx.tick(1025)                                               # OFF: no timer
    assert tx.counters["TX_REPLAY_TIMER"] == 0 and tx.state is TxState.OFF


@pytest.mark.parametrize("how", ["nack", "timer"])
def test_tx_replay_max_flush(how):
    tx = synced(4)
    now = 0
    for k in range(3):                                          # replay_max = 2
        send_all(tx, now)
        if how == "nack":
            tx.nack(63, now)
        else:
            now += 20
            tx.tick(now)
        if k < 2:
            assert tx.state is TxState.REPLAY and tx.replay_count == k + 1
    assert tx.state is TxState.FLUSH and tx.send(now) is None
    tx.push("late")
    tx.tick(now + 1)
    assert tx.counters["TX_FLUSHED"] == 5 and not tx.ring
    assert pointers(tx) == (5, 5, 5) and not tx.synchronized
    assert tx.state is TxState.INIT                             # up: INIT
    assert tx.send(now + 1) == (Ctl.INIT, 5, None)
    tx.init_echo(5, now + 2)
    assert tx.state is TxState.ADVANCE


def test_tx_progress_clears_replay_count():
    tx = synced(6)
    send_all(tx)
    tx.nack(63, 0)
    send_all(tx)
    tx.nack(63, 0)
    assert tx.replay_count == 2
    send_all(tx)
    tx.ack(0, 0)                                                # progress
    assert tx.replay_count == 0
    for _ in range(2):
        send_all(tx)
        tx.nack(0, 0)
    assert tx.state is TxState.REPLAY and tx.counters["TX_FLUSHED"] == 0


def test_tx_up_down():
    tx = synced(4)
    tx.send(1)
    tx.send(2)
    tx.up(False, 10)
    assert tx.state is TxState.OFF and tx.kept() == 4 and tx.send(11) is None
    tx.push("p4")                                               # enters in any state
    tx.tick(39)
    assert tx.state is TxState.OFF
    tx.up(True, 39)                                             # synchronized: REPLAY from acked
    assert tx.state is TxState.REPLAY and pointers(tx) == (0, 0, 5) and tx.synchronized
    assert send_all(tx, 40) == [0, 1, 2, 3, 4]
    assert (tx.counters["TX_REPLAYED"], tx.counters["TX_OK"]) == (2, 5)
    assert tx.counters["TX_REPLAY_TIMER"] == tx.counters["TX_REPLAY_NACK"] == 0
    tx.ack(1, 41)
    tx.up(False, 50)
    tx.tick(79)
    assert tx.state is TxState.OFF
    tx.tick(80)                                                 # down_max clocks down
    assert tx.state is TxState.FLUSH
    tx.tick(81)
    assert tx.state is TxState.OFF and tx.counters["TX_FLUSHED"] == 3
    assert pointers(tx) == (5, 5, 5) and not tx.synchronized
    tx.tick(500)
    assert tx.state is TxState.OFF and tx.counters["TX_FLUSHED"] == 3
    tx.up(True, 600)
    assert tx.state is TxState.INIT and tx.send(600) == (Ctl.INIT, 5, None)


def test_tx_up_during_flush():
    tx = synced(2)
    send_all(tx)
    tx.up(False, 0)
    tx.tick(30)
    assert tx.state is TxState.FLUSH
    tx.up(True, 30)
    tx.tick(31)
    assert tx.state is TxState.INIT and tx.counters["TX_FLUSHED"] == 2


def test_tx_wrap():
    tx = synced(0, replay_frames=32)
    seqs = []
    for k in range(200):
        seqs.append(tx.push(k))
        assert tx.send(k)[2] == k
        if k % 3 == 2:
            tx.ack(seqs[-1], k)
    assert seqs == [k % 64 for k in range(200)]
    assert tx.counters["TX_OK"] == 200 and tx.counters["ACK_NACK_SEQ_ERROR"] == 0
    assert pointers(tx) == (198 % 64, 200 % 64, 200 % 64)
    tx.nack(197, 200)                                           # frees nothing, goes back
    assert pointers(tx) == (198 % 64, 198 % 64, 200 % 64)


# --- Credits [link README §4] ----------------------------------------------------------------

def test_pkt_credits():
    assert pkt_credits(64, 64) == 1
    assert pkt_credits(65, 64) == 2
    assert pkt_credits(64, 64, overhead=1) == 2
    assert pkt_credits(1500, 128) == 12
    assert pkt_credits(1512, 256, overhead=16) == 6
    assert pkt_credits(1512, 256, overhead=25) == 7
    assert pkt_credits(1, 2048) == 1
    with pytest.raises(ValueError):
        pkt_credits(64, 64, overhead=128)
    with pytest.raises(ValueError):
        pkt_credits(64, 64, overhead=-16)


def test_sender_limits():
    s = CreditSender(vcs=2, credit_size=64, limits=[3, 2], port_limit=4)
    for _ in range(3):
        assert s.may_send(0, 64)
        s.consume(0, 64)
    assert not s.may_send(0, 64) and s.in_use(0) == 3           # S_CU + c > S_CL
    assert s.may_send(1, 64) and not s.may_send(1, 65)          # port: 3 + 2 > 4
    s.consume(1, 64)
    assert not s.may_send(1, 64) and s.in_use(1) == 1           # port: 4 + 1 > 4
    with pytest.raises(RuntimeError):
        s.consume(1, 64)
    s.cf_update([2, 0])
    assert s.S_CF == [2, 0] and s.in_use(0) == 1
    assert s.may_send(1, 64) and not s.may_send(1, 65)          # VC 1: 1 + 2 > 2
    s.consume(1, 64)
    assert s.S_CC == [3, 2] and s.cc_values() == [3, 2] and s.counters["CF_RX"] == 1
    zero = CreditSender(vcs=2, credit_size=64, limits=[0, 5], port_limit=5)
    assert not zero.may_send(0, 1) and zero.may_send(1, 64)


def test_cf_validity():
    s = CreditSender(vcs=2, credit_size=64, limits=[10, 10], port_limit=20)
    for _ in range(3):
        s.consume(0, 64)
        s.consume(1, 64)
    s.cf_update([4, 3])                                         # VC 0: 4 > S_CU = 3
    assert s.S_CF == [0, 3] and s.counters["CREDIT_ERROR"] == 1
    s.cf_update([3, 3])                                         # equal to S_CU: valid
    assert s.S_CF == [3, 3] and s.in_use(0) == 0
    s.cf_update([2, 3])                                         # behind S_CF: invalid
    assert s.S_CF == [3, 3] and s.counters["CREDIT_ERROR"] == 2
    s.cf_update([3, 3, 99, 99, 99, 99, 99, 99])                 # VCs beyond vcs ignored
    assert s.counters["CREDIT_ERROR"] == 2
    w = CreditSender(vcs=1, credit_size=64, limits=[10], port_limit=10)
    w.S_CC = [(1 << 20) - 2]
    w.S_CF = [(1 << 20) - 2]
    for _ in range(3):
        w.consume(0, 64)
    assert w.S_CC == [1] and w.in_use(0) == 3                   # cyclic
    w.cf_update([0])
    assert w.S_CF == [0] and w.in_use(0) == 1
    w.cf_update([2])
    assert w.S_CF == [0] and w.counters["CREDIT_ERROR"] == 1
    w.cf_update([1])
    assert w.in_use(0) == 0


def test_limits_checked():
    with pytest.raises(ValueError):
        CreditSender(vcs=1, credit_size=64, limits=[1 << 20], port_limit=1)
    with pytest.raises(ValueError):
        CreditSender(vcs=2, credit_size=64, limits=[1], port_limit=1)
    with pytest.raises(ValueError):
        CreditReceiver(vcs=9, credit_size=64)


def test_receiver_and_cc_leak_recovery():
    """Five frames counted by the sender, two of them lost in a FLUSH: the CF_UPDATEs alone
    leave 2 credits in use for ever; the CC_UPDATE brings them back."""
    s = CreditSender(vcs=2, credit_size=64, overhead=8, limits=[20, 20], port_limit=40)
    r = CreditReceiver(vcs=2, credit_size=64, overhead=8)
    for _ in range(5):
        s.consume(0, 56)                                        # (56 + 8) / 64: 1 credit
    s.consume(1, 120)                                           # 2 credits, delivered
    for _ in range(3):
        r.accept(0, 56)
    r.accept(1, 120)
    assert r.R_CC == [3, 2] and r.held(0) == 3
    for _ in range(2):
        r.free(0, 56)
    r.free(1, 120)
    s.cf_update(r.cf_values())
    assert [s.in_use(v) for v in range(2)] == [3, 0]            # one buffered, two leaked
    r.cc_update(s.cc_values())
    assert r.R_CC == [5, 2] and r.R_CF == [4, 2] and r.counters["CC_RX"] == 1
    s.cf_update(r.cf_values())
    assert [s.in_use(v) for v in range(2)] == [1, 0]            # the buffered frame only
    r.free(0, 56)
    s.cf_update(r.cf_values())
    assert s.in_use(0) == 0 and s.counters["CREDIT_ERROR"] == 0
    r.cc_update(s.cc_values())                                  # nothing leaked: no change
    assert r.R_CF == [5, 2]


# --- End to end ------------------------------------------------------------------------------

def offer_traffic(ml, rng, count, words=(6, 30)):
    for index in range(count):
        vc = rng.randrange(ml.vcs)
        ml.offer(bridge(vc, index, words=rng.randint(*words)))


def run_checked(ml, clocks, feed=None):
    """Step ``clocks``, checking the credit and buffer bounds every clock."""
    s, r = ml.sender, ml.receiver
    for _ in range(clocks):
        if feed:
            feed(ml)
        ml.step()
        assert ml.buffer_bytes <= ml.rx_bytes
        assert all(s.in_use(v) <= s.S_CL[v] for v in range(ml.vcs))
        assert s.port_in_use() <= s.port_limit
        assert sum(r.held(v) for v in range(ml.vcs)) * s.credit_size <= ml.rx_bytes


def check_end(ml):
    for v in range(ml.vcs):
        assert ml.delivered[v] == ml.offered[v], f"VC {v}"     # exactly once, in order
    assert ml.quiet() and not any(ml.queues) and not ml.buffer and not ml.tx.ring
    assert all(ml.sender.in_use(v) == 0 for v in range(ml.vcs))
    assert ml.receiver.R_CC == ml.receiver.R_CF == ml.sender.S_CC == ml.sender.S_CF
    tc, rc = ml.tx.counters, ml.rx.counters
    assert tc["TX_FLUSHED"] == tc["CREDIT_ERROR"] == 0
    assert rc["RX_OVERFLOW"] == rc["RX_DISCARD"] == 0
    assert rc["RX_OK"] == tc["TX_OK"] == sum(map(len, ml.offered)) + tc["CC_TX"]


E2E = {
    # name: (q, seq_bits, corrupt fraction, cc_period)
    "clean": (0.0, 20, 0.5, 0),
    "q1e-2-wrap": (0.01, 6, 0.5, 0),
    "q5e-2-wrap-cc": (0.05, 6, 0.5, 100),
    "q5e-2-lost": (0.05, 20, 0.0, 150),
    "q15e-2-wrap": (0.15, 6, 0.7, 0),
    "q3e-1-wrap-cc": (0.30, 7, 0.5, 80),
}


def e2e(name, seed, frames=600, fixes=True):
    q, seq_bits, corrupt, cc_period = E2E[name]
    rng = random.Random(seed_of(f"e2e {name}", seed))
    ml = ModelLink(vcs=3, seq_bits=seq_bits, delay=6, loss=random_loss(rng, q, corrupt=corrupt),
                   replay_frames=min(32, 1 << (seq_bits - 1)), replay_timeout=60, replay_max=30,
                   ack_bytes=600, ack_delay=10, credit_size=64, port_limit=48, rx_bytes=3072,
                   drain=80, cf_bytes=400, cf_period=40, cc_period=cc_period, fixes=fixes)
    offer_traffic(ml, rng, frames)
    run_checked(ml, 3000)
    for _ in range(100):
        if ml.quiet():
            break
        run_checked(ml, 500)
    return ml


@pytest.mark.parametrize("name", E2E)
def test_end_to_end(name):
    ml = e2e(name, seed=sorted(E2E).index(name) + 1)
    check_end(ml)
    tc, rc = ml.tx.counters, ml.rx.counters
    print(name, tc, rc)
    assert ml.peak_port_in_use == ml.sender.port_limit          # credits were the limit
    if E2E[name][0]:
        assert tc["TX_REPLAYED"] > 0 and ml.fwd.lost + ml.fwd.corrupted > 0
        assert ml.rev.lost + ml.rev.corrupted > 0
    if E2E[name][1] < 20:
        assert tc["TX_OK"] > 2 << E2E[name][1]                  # sequence numbers wrapped
    if E2E[name][3]:
        assert tc["CC_TX"] > 0 and rc["CC_RX"] == tc["CC_TX"]


def test_end_to_end_random_seed():
    """A fresh seed each run (without the README's mends about 1 run in 150 of this
    configuration ends in a FLUSH: see test_readme_gap_in_random_run)."""
    ml = e2e("q15e-2-wrap", seed=None, frames=400)
    check_end(ml)


def test_readme_gap_in_random_run():
    """Seed 1081 of the q15e-2-wrap run: with the rules as first written the LLR stalls into
    a FLUSH and a re-INIT; with the README's mends the same traffic and losses go through."""
    ml = e2e("q15e-2-wrap", seed=1081, frames=400, fixes=False)
    assert ml.tx.counters["TX_FLUSHED"] > 0 and ml.tx.counters["INIT_TX"] >= 2
    check_end(e2e("q15e-2-wrap", seed=1081, frames=400, fixes=True))


def test_zero_limit_vc_does_not_block():
    rng = random.Random(seed_of("zero limit", 3))
    ml = ModelLink(vcs=3, seq_bits=8, delay=5, loss=random_loss(rng, 0.03),
                   limits=[0, 48, 48], port_limit=48, rx_bytes=3072, drain=100)
    for index in range(300):
        ml.offer(bridge(index % 3, index, words=rng.randint(6, 20)))
    run_checked(ml, 4000)
    assert ml.drain_all(20_000, vcs=[1, 2])
    assert ml.delivered[0] == [] and ml.queues[0] == deque(ml.offered[0])
    assert ml.delivered[1] == ml.offered[1] and ml.delivered[2] == ml.offered[2]
    assert ml.sender.S_CC[0] == 0


def test_init_exchange_with_losses():
    """The first three INITs and the first INIT_ECHO are lost: INITs repeat every
    init_period until one is echoed."""
    killed = {"fwd": 0, "rev": 0}

    def loss(direction, wire, now):
        is_init = wire[12:14] == b"\x88\xb6" and wire[14] in (Ctl.INIT, Ctl.INIT_ECHO)
        if is_init and killed[direction] < (3 if direction == "fwd" else 1):
            killed[direction] += 1
            return Fate.LOSE
        return Fate.DELIVER

    ml = ModelLink(vcs=1, delay=4, loss=loss, init_period=20)
    for index in range(20):
        ml.offer(bridge(0, index))
    run_checked(ml, 300)
    assert ml.drain_all(5000)
    check_end(ml)
    assert ml.tx.counters["INIT_TX"] == 5 and ml.rx.counters["INIT_RX"] == 2


def test_link_down_short_keeps_frames():
    """up falls for less than down_max: frames kept, replayed from acked, delivered once."""
    rng = random.Random(seed_of("down short", 9))
    ml = ModelLink(vcs=2, seq_bits=6, replay_frames=32, delay=5,
                   loss=random_loss(rng, 0.02), down_max=200)
    offer_traffic(ml, rng, 400)
    run_checked(ml, 300)
    ml.up = False
    run_checked(ml, 150)
    assert ml.tx.state is TxState.OFF
    ml.up = True
    run_checked(ml, 2000)
    assert ml.drain_all(20_000)
    check_end(ml)


def test_flush_and_cc_recovery():
    """The forward wire is cut until the replay count passes replay_max (FLUSH) and INITs go
    unanswered; the link re-inits, the flushed frames are lost, nothing is duplicated or
    reordered, and CC_UPDATE brings back the credits of the flushed frames."""
    for cc_period in (60, 0):
        rng = random.Random(seed_of("flush", 21))
        cut = {"on": False}
        ml = ModelLink(vcs=2, delay=5, replay_timeout=40, replay_max=2, cc_period=cc_period,
                       loss=lambda d, w, t: Fate.LOSE if cut["on"] and d == "fwd"
                       else Fate.DELIVER)
        offer_traffic(ml, rng, 300)
        run_checked(ml, 200)
        cut["on"] = True
        run_checked(ml, 400)
        cut["on"] = False
        run_checked(ml, 3000)
        tc = ml.tx.counters
        assert tc["TX_FLUSHED"] > 0 and tc["INIT_TX"] >= 2 and ml.tx.synchronized
        for v in range(2):
            got, sent = ml.delivered[v], ml.offered[v]
            assert len(set(got)) == len(got)
            positions = [sent.index(f) for f in got]
            assert positions == sorted(positions)               # in order, no duplicates
        queued = sum(map(len, ml.queues))
        lost = sum(map(len, ml.offered)) - sum(map(len, ml.delivered)) - queued
        assert 0 < lost <= tc["TX_FLUSHED"] and tc["CREDIT_ERROR"] == 0
        leaked = ml.sender.port_in_use()
        if cc_period:
            assert ml.quiet() and leaked == 0 and ml.receiver.R_CC == ml.sender.S_CC
            assert tc["CC_TX"] > 0 and ml.rx.counters["CC_RX"] > 0
        else:                                                   # without CC_UPDATE: leaked
            assert ml.drain_all(2000) is False and leaked >= lost and queued


# --- Goodput against go-back-N ---------------------------------------------------------------

def saturated(delay, loss, trace=False):
    ml = ModelLink(vcs=1, delay=delay, loss=loss, replay_frames=64, replay_timeout=2 * delay + 24,
                   replay_max=1000, ack_bytes=300, ack_delay=4, credit_size=64,
                   port_limit=1024, rx_bytes=1 << 16, drain=128, cf_bytes=256, cf_period=32,
                   trace=trace)
    counter = iter(range(1 << 30))

    def feed(ml):
        if not ml.queues[0]:
            ml.offer(bridge(0, next(counter)))                  # 64-byte frames, 76 on the wire
    return ml, feed


def measure_m(delay):
    """m: clocks (= frame times, one frame per clock) from the first send of a corrupted frame
    to its replay, in a saturated run where only that frame is hit."""
    target = 100

    def loss(direction, wire, now):
        hit = direction == "fwd" and wire[12:14] == b"\x88\xb5" and wire[16] == target
        if hit and not loss.done:
            loss.done = True
            return Fate.CORRUPT
        return Fate.DELIVER
    loss.done = False
    ml, feed = saturated(delay, loss, trace=True)
    while len([s for s in ml.sends if s[1] == target]) < 2:
        feed(ml)
        ml.step()
    (t0, _, first), (t1, _, again) = [s for s in ml.sends if s[1] == target]
    assert first and not again
    sent_between = [s for s in ml.sends if t0 <= s[0] < t1]
    assert len(sent_between) == t1 - t0                         # the wire was never idle
    return t1 - t0


@pytest.mark.parametrize("delay", [1, 4, 10])
def test_round_trip(delay):
    assert measure_m(delay) == 2 * delay


@pytest.mark.parametrize("q, delay", [(0.005, 10), (0.02, 10), (0.03, 4)])
def test_goodput_vs_go_back_n(q, delay):
    """Forward data frames corrupted with probability q (bad FCS, so the receiver NACKs at
    once), nothing lost in reverse; goodput is delivered frames per clock after the INIT
    exchange, compared with goodput_bound(q_measured, m)."""
    m = measure_m(delay)
    rng = random.Random(seed_of(f"goodput q={q}", 5))
    ml, feed = saturated(delay, random_loss(rng, q, 0.0, corrupt=1.0))
    while ml.tx.state is not TxState.ADVANCE:
        feed(ml)
        ml.step()
    run_checked(ml, 200, feed)
    start, base = ml.now, len(ml.delivered[0])
    sent0, hit0 = ml.fwd.sent, ml.fwd.corrupted
    run_checked(ml, 40_000, feed)
    g = (len(ml.delivered[0]) - base) / (ml.now - start)
    q_hat = (ml.fwd.corrupted - hit0) / (ml.fwd.sent - sent0)
    eta = goodput_bound(q_hat, m)
    print(f"goodput q={q} (measured {q_hat:.4f}) m={m}: model {g:.4f}, go-back-N {eta:.4f}, "
          f"ratio {g / eta:.4f}; timer replays {ml.tx.counters['TX_REPLAY_TIMER']}")
    assert abs(g / eta - 1) < 0.03
    assert ml.tx.counters["TX_FLUSHED"] == 0


# --- README liveness gaps: the rules as first written against the README's mends ----------

def test_tx_ack_past_sent_after_timer():
    """§3.2 as written: after a timer replay (``sent = acked``) an ACK of frames sent before it
    is invalid until the replay catches up. With ``ack_to_highest`` (proposed fix) it is valid
    and moves ``sent`` up past the acknowledged frames."""
    for fix in (False, True):
        tx = synced(5, ack_to_highest=fix)
        send_all(tx, 0)
        tx.tick(20)
        assert pointers(tx) == (0, 0, 5) and tx.counters["TX_REPLAY_TIMER"] == 1
        assert tx.send(21)[1] == 0
        assert tx.ack(3, 22) is fix
        assert tx.counters["ACK_NACK_SEQ_ERROR"] == (not fix)
        if fix:
            assert pointers(tx) == (4, 4, 5) and tx.state is TxState.REPLAY
            assert tx.send(23)[1] == 4 and tx.counters["TX_REPLAYED"] == 2
            assert tx.state is TxState.ADVANCE
        assert not tx.ack(5, 24)                                # never sent: invalid in both


def test_rx_duplicate_in_nack_sent_option():
    rx = in_state(RxState.NACK_SENT, ack_in_nack_sent=True)
    assert not rx.eligible(9, 76, 1) and rx.counters["RX_DUPLICATE"] == 1
    assert rx.pending() == [(Ctl.ACK, 9)] and rx.state is RxState.NACK_SENT


def gap_ack_validity(fixes):
    """Every ACK is lost for a while; the transmitter has sent frames 0 .. ~20 and holds 32.
    Its timer replays restart every 15 clocks from ``acked``; the receiver's ACKs of what it
    holds answer the duplicates but name frames beyond ``sent``."""
    ml = ModelLink(vcs=1, delay=3, replay_frames=32, replay_timeout=15, replay_max=5,
                   ack_bytes=10_000, ack_delay=2, port_limit=1000, rx_bytes=64_000, drain=1000,
                   cf_period=20, fixes=fixes,
                   loss=lambda d, w, now: Fate.LOSE if d == "rev" and 12 <= now < 60
                   else Fate.DELIVER)
    for index in range(40):
        ml.offer(bridge(0, index))
    ml.run(1500)
    return ml


def test_readme_gap_ack_validity_livelock():
    """As written, no ACK is ever valid again: replay count > replay_max, FLUSH, and the kept
    frames never sent are lost. With the fixes every frame arrives and nothing is flushed."""
    ml = gap_ack_validity(fixes=False)
    tc = ml.tx.counters
    assert tc["ACK_NACK_SEQ_ERROR"] > 0 and tc["TX_FLUSHED"] > 0
    got, sent = ml.delivered[0], ml.offered[0]
    positions = [sent.index(f) for f in got]
    assert len(got) < len(sent) and positions == sorted(set(positions))    # a gap, in order
    ml = gap_ack_validity(fixes=True)
    check_end(ml)


def gap_lost_nack(fixes):
    """Two frames, both accepted; their ACK and (after the first timer replay, whose first
    frame is corrupted) the receiver's NACK are lost. The ring (2 frames) is full."""
    sent = {"frame 0": 0}

    def loss(direction, wire, now):
        if direction == "rev" and 8 <= now < 40:
            return Fate.LOSE
        if direction == "fwd" and wire[12:14] == b"\x88\xb5" and wire[16] == 0:
            sent["frame 0"] += 1
            if sent["frame 0"] == 2:
                return Fate.CORRUPT
        return Fate.DELIVER

    ml = ModelLink(vcs=1, delay=3, replay_frames=2, replay_timeout=15, replay_max=5,
                   ack_bytes=10_000, ack_delay=2, loss=loss, fixes=fixes)
    ml.offer(bridge(0, 0))
    ml.offer(bridge(0, 1))
    ml.run(400)
    return ml


def test_readme_gap_lost_nack_stall():
    """As written, the receiver sits in NACK_SENT waiting for frame 2, which does not exist,
    and drops the timer's replays silently: FLUSH and re-INIT although nothing was lost. With
    the fixes the duplicates are ACKed and the link goes on."""
    ml = gap_lost_nack(fixes=False)
    assert ml.tx.counters["TX_FLUSHED"] == 2 and ml.tx.counters["INIT_TX"] == 2
    assert ml.delivered[0] == ml.offered[0]
    ml = gap_lost_nack(fixes=True)
    check_end(ml)
    assert ml.tx.counters["INIT_TX"] == 1


@pytest.mark.parametrize("seed", [1, 2])
def test_end_to_end_short_timer_with_fixes(seed):
    """With the fixes, a replay timeout below the ACK round trip and 20 % loss still deliver
    everything without a FLUSH (as written, such runs FLUSH)."""
    rng = random.Random(seed_of("short timer", seed))
    ml = ModelLink(vcs=3, seq_bits=6, delay=6, loss=random_loss(rng, 0.2), replay_frames=24,
                   replay_timeout=12, replay_max=40, ack_bytes=400, ack_delay=6,
                   port_limit=48, rx_bytes=3072, drain=90, cf_bytes=300, cf_period=40,
                   fixes=True)
    offer_traffic(ml, rng, 300)
    run_checked(ml, 3000)
    for _ in range(60):
        if ml.quiet():
            break
        run_checked(ml, 500)
    check_end(ml)
    assert ml.tx.counters["TX_REPLAY_TIMER"] > 0


# --- The 802.1Q tag option [link README §1] ----------------------------------------------------

#: VID 0x123; the receiver's PCP → VC table: PCP p enters VC 3 - p % 4.
VLAN = link.Vlan(vid=0x123, vc_of_pcp=(3, 2, 1, 0, 3, 2, 1, 0))


def test_tag_bytes():
    """Worked by hand from §1: TPID, TCI (PCP 5, DEI 0, VID 0x123: 0xA123, big-endian), the
    untagged bytes 12 .. 15, four zeros, then bytes 16 on."""
    frame = bytes(range(40))
    tagged = link.tag(frame, 5, 0x123)
    assert tagged == (bytes(range(12)) + bytes.fromhex("8100a123") + bytes(range(12, 16))
                      + bytes(4) + bytes(range(16, 40)))
    assert link.untag(tagged) == (frame, (5, 0, 0x123))
    assert link.untag(frame) == (frame, None)
    with pytest.raises(ValueError):
        link.tag(frame, 8, 0)
    with pytest.raises(ValueError):
        link.tag(frame, 0, 0x1000)


def test_classify_tagged_data():
    """A tagged data frame: 8 bytes longer, still 4 mod 8, its FCS over the tagged bytes; the
    VC from the PCP by the table, not from the link header (VC 1 there)."""
    b = bridge(1, 7)
    wire = to_wire(b, 9, tagged=(6, 0x123))
    assert len(wire) == wire_bytes_of(len(b)) + 8 and len(wire) % 8 == 4 and fcs_ok(wire)
    assert wire[12:16] == bytes.fromhex("8100c123") and wire[16:18] == bytes.fromhex("88b5")
    assert wire[20:24] == bytes(4) and int.from_bytes(wire[24:32], "little") == 9
    got = classify(wire, max_bytes=2000, vlan=VLAN)
    assert (got.cls, got.seq, got.frame, got.vc) == (Class.DATA, 9, b, 1)      # 3 - 6 % 4
    got = classify(link.to_wire(b, 9, tagged=(0, 0x123)), max_bytes=2000, vlan=VLAN)
    assert got.vc == 3
    poisoned = to_wire(b, 9, tagged=(6, 0x123), poisoned=True)
    assert classify(poisoned, max_bytes=2000, vlan=VLAN).cls is Class.POISONED
    # Without the option, or of another VID: foreign (a good FCS).
    assert classify(wire, max_bytes=2000).why is Why.ETHERTYPE
    other = link.Vlan(vid=0x124, vc_of_pcp=VLAN.vc_of_pcp)
    assert classify(wire, max_bytes=2000, vlan=other).why is Why.VID
    # The untagged frame is still taken with the option, its VC from the link header.
    assert classify(to_wire(b, 9), max_bytes=2000, vlan=VLAN).vc == 1
    # A bit of the tag flipped: a bad FCS.
    bad = bytearray(wire)
    bad[14] ^= 0x20
    assert classify(bytes(bad), max_bytes=2000, vlan=VLAN).why is Why.FCS
    assert classify(wire, max_bytes=len(wire) - 1, vlan=VLAN).why is Why.GIANT


def test_classify_tagged_control():
    """A tagged control frame is 76 bytes; its counts where the untagged frame has them, 8
    bytes on; the length rule applies to the untagged length."""
    wire = encode_control(Ctl.CF_UPDATE, 5, counts=[7, 8], tagged=(7, 0x123))
    assert len(wire) == 76 and fcs_ok(wire)
    assert wire[12:20] == bytes.fromhex("8100e12388b61000")
    assert int.from_bytes(wire[32:36], "little") == 7
    got = classify(wire, max_bytes=2000, vlan=VLAN)
    assert (got.cls, got.kind, got.counts[:3], got.node) == (Class.CONTROL, Ctl.CF_UPDATE,
                                                             (7, 8, 0), 5)
    longer = with_fcs(wire[:-4] + bytes(8))
    assert classify(longer, max_bytes=2000, vlan=VLAN).why is Why.LENGTH


def test_classify_tagged_lengths():
    """With the option, the runt and giant rules of the link's frames read the untagged length:
    a tagged data frame of 68 bytes (60 untagged) is a runt; an untagged one longer than the
    longest tagged frame less 8 is a giant; a foreign frame may use the whole length."""
    short = with_fcs(link.tag(bridge(0, 1)[:16] + bytes(40), 0, 0x123))
    assert len(short) == 68 and classify(short, max_bytes=2000, vlan=VLAN).why is Why.RUNT
    longest = to_wire(bridge(0, 1, words=20), 0)                    # untagged: 188 bytes
    assert classify(longest, max_bytes=len(longest) + 8, vlan=VLAN).cls is Class.DATA
    assert classify(longest, max_bytes=len(longest) + 7, vlan=VLAN).why is Why.GIANT
    foreign = with_fcs(bytes(12) + b"\x08\x00" + bytes(len(longest) - 18))
    assert classify(foreign, max_bytes=len(longest), vlan=VLAN).why is Why.ETHERTYPE
