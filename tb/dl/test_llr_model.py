# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the UALink DL link-level replay golden model rtl/scaleup_ip/model/dl/llr.py (no simulator).

Header vectors from Tables 6-14/6-15; sequence arithmetic and windows from §6.6.4.1, §6.6.6.1
and §6.6.6.3 (with the TxReplay example of Figure 6-19); the Rx and Tx flags and counters one
rule at a time; the DL link states of §6.7.1; two endpoints back to back over a seeded lossy
channel (a delay line each way) with a transmit monitor that re-derives the header rules; the
goodput against the go-back-N bound.
"""

import random

import pytest

from scaleup_ip.model.dl import llr as dl_llr
from scaleup_ip.model.dl.llr import (
    BAD_CRC_AMBIGUOUS,
    CONTROL_FLITS_TO_IDLE,
    EXPLICIT_INTERVAL,
    MAX_UNACKED,
    NOP_FLITS_TO_UP,
    OP_LSB,
    REPLAY_IGNORE_FLITS,
    REPLAY_REQUEST_COPIES,
    SEQ_MODULUS,
    SEQ_RESET,
    SEQ_WINDOW,
    DlEndpoint,
    DlState,
    Flit,
    Header,
    MalformedHeader,
    Op,
    ack_valid,
    decode_header,
    encode_command,
    encode_explicit,
    replay_request_valid,
    rx_seq_calc,
    seq_add,
    seq_diff,
)
from sim import harness
from sim.dl.model_link import Channel, Link, flit_seq


def round_trip(delay):
    """Flit times from sending a flit to sending its replay, best case (see test_round_trip)."""
    return 2 * delay + 3


def test_spec_constants():
    """The rule constants against the values the spec text gives."""
    spec = {
        "SEQ_MODULUS": 511, "SEQ_RESET": 0x1FF,             # §6.6.6.1, §6.6.4.1
        "SEQ_WINDOW": 256, "MAX_UNACKED": 255,              # §6.6.6.3, §6.6.6.5
        "EXPLICIT_INTERVAL": 7, "REPLAY_REQUEST_COPIES": 3,     # §6.6.5.6, §6.6.6.4
        "REPLAY_IGNORE_FLITS": 12, "BAD_CRC_AMBIGUOUS": 7,  # §6.6.6.3, §6.6.6.2
        "BAD_CRC_MAX": 7, "UNEXPECTED_MAX": 255,            # §6.6.4.4, §6.6.4.5
        "REPLAY_LIMIT_DEFAULT": 50, "ACK_TIMEOUT_DEFAULT": 40_000,  # §6.6.4.6, §6.6.5.8
        "ACK_TIMEOUT_MAX": 2**24 - 1,                       # §6.6.5.8
        "NOP_FLITS_TO_UP": 10, "GOOD_FLITS_TO_UP": 2,       # §6.7.1.3
        "CONTROL_FLITS_TO_IDLE": 4,                         # §6.7.1.4
    }
    assert {name: getattr(dl_llr, name) for name in spec} == spec
    ep = DlEndpoint()
    assert (ep.tx.last_seq, ep.rx.last_seq_calc, ep.rx.last_ack, ep.rx.seq_calc) == (0x1FF,) * 4
    assert (ep.tx.explicit_count, ep.tx.replay_req_count, ep.tx.replay_req_seq_no) == (7, 0, 0)
    assert (ep.rx.bad_crc_count, ep.rx.unexpected_count, ep.rx.replay_ignore_count) == (0, 0, 0)
    assert not (ep.rx.ambiguous or ep.rx.replay or ep.tx.replay or ep.tx.first_replay)
    assert (ep.replay_limit, ep.ack_timeout, ep.depth) == (50, 40_000, 255)


# --- Headers [Tables 6-14, 6-15] ------------------------------------------------------------------

def test_explicit_header_bits():
    # op 23:21 | payload 20 | reserved 19:17 | flitSeqNo 16:8 | reserved 7:0  [Table 6-14]
    assert encode_explicit(Op.ORIGINAL, True, 0x1A5) == 0b000_1_000_110100101_00000000
    assert encode_explicit(Op.REPLAY, True, 1) == 0b001_1_000_000000001_00000000
    assert encode_explicit(Op.ORIGINAL, False, 511) == 0b000_0_000_111111111_00000000   # NOP
    assert decode_header(0b001_1_000_110100101_00000000) == Header(Op.REPLAY, True, 0x1A5)


def test_command_header_bits():
    # op 23:21 | payload 20 | ackReqSeq 19:11 | flitSeqLo 10:8 | reserved 7:0  [Table 6-15]
    assert encode_command(Op.ACK, True, 0x1A5, 0b011) == 0b010_1_110100101_011_00000000
    assert encode_command(Op.REPLAY_REQUEST, False, 1, 0b111) == 0b011_0_000000001_111_00000000
    assert encode_command(Op.ACK, False, 7, 0x1FE) == 0b010_0_000000111_110_00000000   # low 3
    h = decode_header(0b011_1_100000001_101_00000000)
    assert h == Header(Op.REPLAY_REQUEST, True, 0b101, 0x101) and not h.explicit


def test_header_round_trip():
    rng = random.Random(1)
    for _ in range(2000):
        payload, seq, lo = rng.random() < 0.5, rng.randrange(512), rng.randrange(8)
        op = rng.choice(list(Op) if payload else [Op.ORIGINAL, Op.ACK, Op.REPLAY_REQUEST])
        if op in (Op.ORIGINAL, Op.REPLAY):
            assert decode_header(encode_explicit(op, payload, seq)) == Header(op, payload, seq)
        else:
            word = encode_command(op, payload, seq, lo)
            assert decode_header(word) == Header(op, payload, lo, seq)


@pytest.mark.parametrize("op", [0b100, 0b101, 0b110, 0b111])
def test_reserved_op(op):
    for payload in (0, 1):
        with pytest.raises(MalformedHeader) as info:
            decode_header(op << OP_LSB | payload << 20 | 5 << 8)
        assert info.value.reason == "reserved_op"


def test_reserved_combinations():
    with pytest.raises(MalformedHeader) as info:         # op rpy with payload = 0 [Table 6-14]
        decode_header(0b001_0_000_000000101_00000000)
    assert info.value.reason == "nop_replay"
    with pytest.raises(ValueError):
        encode_explicit(Op.REPLAY, False, 5)
    with pytest.raises(ValueError):
        encode_explicit(Op.ACK, True, 5)
    with pytest.raises(ValueError):
        encode_command(Op.ORIGINAL, True, 5, 5)
    with pytest.raises(ValueError):
        encode_explicit(Op.ORIGINAL, True, 512)
    # reserved bits are ignored on receive [ours]
    assert decode_header(0b000_1_111_000000101_11111111) == Header(Op.ORIGINAL, True, 5)
    assert decode_header(0b010_1_000000101_001_10101010) == Header(Op.ACK, True, 1, 5)


# --- Sequence numbers [§6.6.4.1, §6.6.6.1] --------------------------------------------------------

def test_seq_wrap():
    assert seq_add(510) == 511 and seq_add(511) == 1 and seq_add(SEQ_RESET) == 1
    assert seq_add(500, 20) == 9 and seq_add(7, SEQ_MODULUS) == 7
    assert seq_diff(1, 511) == 1 and seq_diff(511, 1) == 510 and seq_diff(3, 3) == 0
    assert all(seq_add(s) != 0 for s in range(1, 512))


def cmd(seq, payload=True):
    """A decoded Ack command flit header carrying ``seq``'s flitSeqLo."""
    return decode_header(encode_command(Op.ACK, payload, 1, seq))


def test_rx_seq_calc_examples():
    explicit = decode_header(encode_explicit(Op.ORIGINAL, True, 300))
    assert rx_seq_calc(5, explicit) == 300                  # Rx_seq_calc = flitSeqNo
    assert rx_seq_calc(5, cmd(6)) == 6
    assert rx_seq_calc(5, cmd(5)) == 13                     # delta_lo 0 -> 8 for a payload
    assert rx_seq_calc(5, cmd(5, payload=False)) == 5       # a NOP keeps Tx_last_seq
    assert rx_seq_calc(5, cmd(4)) == 12
    assert rx_seq_calc(SEQ_RESET, cmd(1)) == 1              # 511 -> 1: modulo 512 skips 0
    assert rx_seq_calc(510, cmd(511)) == 511
    assert rx_seq_calc(510, cmd(1)) == 1
    assert rx_seq_calc(505, cmd(8)) == 0                    # 512 % 512: never expected


def test_rx_seq_calc_reach():
    """A command flit after k - 1 lost payload flits is placed exactly for k <= 7 (a NOP after
    k lost for k <= 6); 7 lost alias next to the wrap, 8 lost away from it. So the ambiguity
    threshold of 7 bad CRCs [§6.6.6.2] is the first loss count that can alias."""
    aliases = {k: 0 for k in (8, 9)}
    for last in range(1, 512):
        for k in range(1, 8):
            assert rx_seq_calc(last, cmd(seq_add(last, k))) == seq_add(last, k)
        for k in range(7):
            assert rx_seq_calc(last, cmd(seq_add(last, k), False)) == seq_add(last, k)
        for k in aliases:
            aliases[k] += rx_seq_calc(last, cmd(seq_add(last, k))) == seq_add(last)
    assert aliases == {8: 7, 9: 503} and BAD_CRC_AMBIGUOUS == 7


# --- Windows [§6.6.6.3, Figure 6-19] --------------------------------------------------------------

def test_window_example():
    # TxReplay holds 5 .. 9, Rx_last_ack = 4, Tx_last_seq = 9
    assert [s for s in range(1, 16) if ack_valid(s, 4, 9)] == [4, 5, 6, 7, 8, 9]
    assert [s for s in range(1, 16) if replay_request_valid(s, 4, 9)] == [5, 6, 7, 8, 9]


@pytest.mark.parametrize("last_ack", [4, 300, 500, 511])
def test_window_edges(last_ack):
    far = seq_add(last_ack, SEQ_WINDOW)
    # (ackReqSeq - Rx_last_ack) % 511 <= 256: accept at 256, reject at 257
    assert ack_valid(far, last_ack, far)
    assert not ack_valid(seq_add(far), last_ack, seq_add(far))
    # (Tx_last_seq - ackReqSeq) % 511 <= 256
    first = seq_add(last_ack)
    assert ack_valid(first, last_ack, seq_add(first, SEQ_WINDOW))
    assert not ack_valid(first, last_ack, seq_add(first, SEQ_WINDOW + 1))
    # (ackReqSeq - Rx_last_ack - 1) % 511 <= 256
    assert replay_request_valid(seq_add(first, SEQ_WINDOW), last_ack, seq_add(first, SEQ_WINDOW))
    far = seq_add(first, SEQ_WINDOW + 1)
    assert not replay_request_valid(far, last_ack, far)
    assert replay_request_valid(first, last_ack, seq_add(first, SEQ_WINDOW))
    assert not replay_request_valid(first, last_ack, seq_add(first, SEQ_WINDOW + 1))
    # stale: the last Ack itself is no Replay Request, one before it is no Ack
    assert not replay_request_valid(last_ack, last_ack, seq_add(last_ack, 5))
    assert not ack_valid(seq_add(last_ack, -1), last_ack, seq_add(last_ack, 5))


def test_window_overlap_with_empty_buffer():
    """The two 257-wide windows overlap by 3 on the 511 ring: with TxReplay empty
    (Tx_last_seq = Rx_last_ack) the spec's tests still pass Acks 255 .. 256 ahead and Replay
    Requests 255 .. 257 ahead. Only a corrupt or rogue header can carry them."""
    la = 100
    assert [k for k in range(SEQ_MODULUS) if ack_valid(seq_add(la, k), la, la)] == [0, 255, 256]
    assert [k for k in range(SEQ_MODULUS)
            if replay_request_valid(seq_add(la, k), la, la)] == [255, 256, 257]


# --- One endpoint, driven flit by flit ------------------------------------------------------------

def explicit_nop(seq):
    return Flit(encode_explicit(Op.ORIGINAL, False, seq))


def partner_nop(ep, op=Op.ACK, ack_req_seq=None):
    """A good command NOP flit as ``ep``'s partner would send it now (an expected NOP)."""
    ack = ep.rx.last_ack if ack_req_seq is None else ack_req_seq
    return Flit(encode_command(op, False, ack, ep.rx.last_seq_calc))


def lone_up(**kwargs):
    """An endpoint brought to DL Up by a fake partner sending explicit NOP flits."""
    ep = DlEndpoint(**kwargs)
    for _ in range(40):
        ep.send()
        ep.receive(explicit_nop(SEQ_RESET))
        if ep.state is DlState.UP:
            return ep
    raise AssertionError("not up")


def sent_payloads(ep, n):
    """``ep`` sends ``n`` payload flits (0 .. n-1) while its partner sends only NOPs."""
    flits = []
    for k in range(n):
        ep.push(k)
        flits.append(ep.send())
        ep.receive(partner_nop(ep))
    return flits


def test_nop_uses_tx_last_seq():
    ep = lone_up()
    sent_payloads(ep, 3)
    for _ in range(2 * EXPLICIT_INTERVAL):
        f = ep.send()
        h = decode_header(f.header)
        assert f.payload is None and h.nop
        assert h.seq == (3 if h.explicit else 3 & 7)       # Tx_last_seq, not consumed
    assert ep.tx.last_seq == 3


def test_explicit_cadence_from_reset():
    ep = DlEndpoint()
    headers = []
    for k in range(60):
        ep.push(k)
        f = ep.send()
        ep.receive(explicit_nop(SEQ_RESET))
        if f is not None:
            headers.append(decode_header(f.header))
    assert ep.state is DlState.UP and any(h.payload for h in headers)
    assert [i for i, h in enumerate(headers, 1) if h.explicit] == list(range(7, 57, 7))


def test_ack_processing():
    ep = lone_up()
    sent_payloads(ep, 5)
    assert [s for s, _ in ep.tx.buffer] == [1, 2, 3, 4, 5] and ep.rx.last_ack == SEQ_RESET
    ep.receive(partner_nop(ep, ack_req_seq=3))
    assert [s for s, _ in ep.tx.buffer] == [4, 5] and ep.rx.last_ack == 3
    ep.receive(partner_nop(ep, ack_req_seq=3))            # the same Ack again: no change
    ep.receive(partner_nop(ep, ack_req_seq=2))            # behind Rx_last_ack
    ep.receive(partner_nop(ep, ack_req_seq=6))            # beyond Tx_last_seq
    assert ep.counters.ack_seq_errors == 2 and len(ep.tx.buffer) == 2
    ep.receive(partner_nop(ep, ack_req_seq=5))
    assert not ep.tx.buffer and ep.counters.flits_acked == 5


def test_replay_request_and_ignore_window():
    ep = lone_up()
    sent_payloads(ep, 5)
    ep.receive(partner_nop(ep, Op.REPLAY_REQUEST, 6))     # beyond Tx_last_seq
    ep.receive(partner_nop(ep, Op.REPLAY_REQUEST, SEQ_RESET))   # = Rx_last_ack
    assert ep.counters.replay_request_seq_errors == 2 and not ep.tx.replay
    ep.receive(partner_nop(ep, Op.REPLAY_REQUEST, 2))
    assert ep.tx.replay and ep.counters.replays_started == 1
    ep.push("waits")
    assert not ep.ready                                   # back-pressure during a replay
    for _ in range(REPLAY_IGNORE_FLITS - 1):               # the next 11 flits are ignored
        ep.receive(partner_nop(ep, Op.REPLAY_REQUEST, 2))
    assert ep.counters.replays_started == 1
    assert ep.counters.replay_requests_ignored == REPLAY_IGNORE_FLITS - 1
    ep.receive(partner_nop(ep, Op.REPLAY_REQUEST, 3))      # the 12th is taken
    assert ep.counters.replays_started == 2
    headers = [decode_header(ep.send().header) for _ in range(4)]
    assert headers[0] == Header(Op.REPLAY, True, 3)       # first replay flit: explicit
    assert [h.seq for h in headers[1:3]] == [4, 5] and not headers[1].explicit
    assert not ep.tx.replay and headers[3].payload and ep.counters.replayed_flits == 3
    assert headers[3] == Header(Op.ACK, True, 6, ep.rx.last_seq_calc)     # then new flits
    assert ep.ready and len(ep.tx.buffer) == 6            # a replay request is no Ack


def test_replay_overtaken_by_ack():
    ep = lone_up()
    sent_payloads(ep, 5)
    ep.receive(partner_nop(ep, Op.REPLAY_REQUEST, 2))
    assert decode_header(ep.send().header) == Header(Op.REPLAY, True, 2)
    ep.receive(partner_nop(ep, ack_req_seq=5))            # 3 .. 5 need no replay now
    assert ep.tx.replay and not ep.ready and not ep.tx.buffer
    assert decode_header(ep.send().header).nop and ep.ready and not ep.tx.first_replay
    assert ep.counters.replayed_flits == 1


def test_first_replay_flit_restarts_cadence():
    ep = lone_up()
    sent_payloads(ep, 20)
    ep.receive(partner_nop(ep, Op.REPLAY_REQUEST, 4))
    headers = [decode_header(ep.send().header) for _ in range(17)]
    assert [i for i, h in enumerate(headers) if h.explicit] == [0, 7, 14]
    assert all(h.op is Op.REPLAY for h in headers if h.explicit)
    assert [h.seq & 7 for h in headers] == [s & 7 for s in range(4, 21)]


def test_malformed_flits_dropped():
    ep = lone_up()
    sent_payloads(ep, 2)
    last = ep.rx.last_seq_calc
    bad = [
        Flit(encode_command(Op.ACK, True, 0, seq_add(last)), "x"),       # ackReqSeq = 0
        Flit(encode_command(Op.REPLAY_REQUEST, False, 0, last)),
        Flit(encode_explicit(Op.ORIGINAL, True, 0), "x"),                 # flitSeqNo = 0
        Flit(0b101_1_000_000000000_00000000 | seq_add(last) << 8, "x"),   # reserved op
        Flit(0b001_0_000_000000000_00000000 | last << 8),                 # rpy NOP
    ]
    for f in bad:
        assert ep.receive(f) is None
    assert ep.counters.malformed == len(bad) and ep.rx.last_seq_calc == last
    assert not ep.rx.replay and len(ep.tx.buffer) == 2
    assert ep.receive(Flit(encode_command(Op.ACK, True, 1, seq_add(last)), "y")) == "y"


def test_255_unacknowledged():
    ep = lone_up(depth=MAX_UNACKED)
    flits = sent_payloads(ep, MAX_UNACKED + 10)
    assert [f.payload for f in flits if f.payload is not None] == list(range(MAX_UNACKED))
    assert len(ep.tx.buffer) == MAX_UNACKED and not ep.ready
    assert ep.counters.peak_occupancy == MAX_UNACKED and ep.tx.last_seq == 255
    ep.receive(partner_nop(ep, ack_req_seq=10))
    assert ep.ready and ep.send().payload == MAX_UNACKED


@pytest.mark.parametrize("depth", [1, 4])
def test_replay_buffer_depth(depth):
    ep = lone_up(depth=depth)
    flits = sent_payloads(ep, 10)
    assert sum(f.payload is not None for f in flits) == depth and len(ep.tl_queue) == 10 - depth


def test_bad_parameters():
    for kwargs in ({"depth": 0}, {"depth": 256}, {"replay_limit": 0}, {"replay_limit": 256},
                   {"ack_timeout": 0}, {"ack_timeout": 1 << 24}, {"rr_group": 0}):
        with pytest.raises(ValueError):
            DlEndpoint(**kwargs)
    with pytest.raises(ValueError):
        DlEndpoint().push(None)


def into_replay(ep):
    """Make ``ep``'s receiver see an unexpected explicit payload flit (one flit missing)."""
    ahead = seq_add(ep.rx.last_seq_calc, 2)
    ep.receive(Flit(encode_explicit(Op.ORIGINAL, True, ahead), "skipped"))
    assert ep.rx.replay


@pytest.mark.parametrize("rr_group", [1, 3])
def test_three_replay_request_copies(rr_group):
    ep = lone_up(rr_group=rr_group)
    want = seq_add(ep.rx.last_seq_calc)
    into_replay(ep)
    assert ep.tx.replay_req_count == REPLAY_REQUEST_COPIES and ep.counters.replay_entries == 1
    times = []
    for _ in range(6 * rr_group + 4):
        t = ep.tx.flit_time
        h = decode_header(ep.send().header)
        if h.op is Op.REPLAY_REQUEST:
            assert h.ack_req_seq == want
            times.append(t)
    assert len(times) == REPLAY_REQUEST_COPIES
    groups = [t // rr_group for t in times]
    assert len(set(groups)) == 3 and groups[2] - groups[0] <= 3      # as quickly as possible


def test_bad_crc_and_ambiguity():
    ep = lone_up()
    last = ep.rx.last_seq_calc
    for n in range(1, BAD_CRC_AMBIGUOUS + 3):
        ep.receive(None, crc_ok=False)
        assert ep.rx.bad_crc_count == min(n, 7) and ep.rx.ambiguous == (n >= 7)
    assert ep.counters.ambiguous_entries == 1 and not ep.rx.replay
    assert ep.receive(Flit(encode_command(Op.ACK, True, 1, seq_add(last)), "x")) is None
    assert ep.counters.dropped == 1 and not ep.rx.replay        # not checked, no replay
    assert ep.receive(Flit(encode_explicit(Op.ORIGINAL, True, seq_add(last)), "y")) == "y"
    assert not ep.rx.ambiguous and ep.rx.bad_crc_count == 0


def test_ambiguous_unexpected_explicit_requests_replay():
    ep = lone_up()
    for _ in range(BAD_CRC_AMBIGUOUS):
        ep.receive(None, crc_ok=False)
    into_replay(ep)
    assert ep.rx.ambiguous and ep.tx.replay_req_count == REPLAY_REQUEST_COPIES


@pytest.mark.parametrize("rearm", [True, False])
def test_replay_limit(rearm):
    limit = 5
    ep = lone_up(replay_limit=limit, rearm_replay_limit=rearm)
    into_replay(ep)
    ep.tx.replay_req_count = 0                              # as if the copies were sent
    ep.receive(None, crc_ok=False)                          # bad CRC counts too [§6.6.6.2]
    assert ep.rx.unexpected_count == 1 and ep.tx.replay_req_count == 0
    fires = []
    for _ in range(3 * limit):
        ep.receive(partner_nop(ep))                         # unchecked while Rx_replay
        fires.append(ep.tx.replay_req_count == REPLAY_REQUEST_COPIES)
        ep.tx.replay_req_count = 0
    if rearm:
        assert [i for i, f in enumerate(fires) if f] == [3, 8, 13]
    else:                                                   # literal: fires on every flit
        assert [i for i, f in enumerate(fires) if f] == list(range(3, 3 * limit))
    assert ep.rx.replay and ep.rx.bad_crc_count == 0


def test_replay_ends_on_expected_explicit():
    ep = lone_up()
    want = seq_add(ep.rx.last_seq_calc)
    into_replay(ep)
    assert ep.receive(Flit(encode_command(Op.ACK, True, 1, want), "cmd")) is None
    stale = seq_add(want, -1)
    assert ep.receive(Flit(encode_explicit(Op.REPLAY, True, stale), "dup")) is None
    assert ep.counters.duplicates == 1 and ep.rx.unexpected_count == 2
    assert ep.receive(Flit(encode_explicit(Op.REPLAY, True, want), "ok")) == "ok"
    assert not ep.rx.replay and ep.rx.unexpected_count == 0 and ep.rx.last_seq_calc == want


def test_ack_timer():
    ep = lone_up(ack_timeout=20)
    ep.push("p")
    sends = 0
    while ep.state is DlState.UP:
        ep.send()
        ep.receive(None, crc_ok=False)                      # no Ack ever gets through
        sends += 1
        assert sends < 100
    assert sends == 22 and ep.state is DlState.IDLE      # add, 20 flit times, then Idle
    assert ep.counters.ack_timeouts == 1 and len(ep.tx.buffer) == 1


def test_ack_rearms_timer():
    ep = lone_up(ack_timeout=20)
    for k in range(60):
        ep.push(k)
        ep.send()
        ep.receive(partner_nop(ep, ack_req_seq=seq_add(ep.rx.last_ack, k % 2)))
    assert ep.state is DlState.UP and ep.tx.ack_counter >= 18


def test_stale_replay_aliases():
    """Why the model rearms Rx_replay_limit and keeps Replay Request copies inside the
    ignore window: a replay from 8 (or 16 ..) behind the receiver whose explicit first flit
    is lost is read as new data by §6.6.4.1. With the literal limit rule or codeword groups of
    6 or more flits, second replays happen and the back-to-back soak misdelivers."""
    ep = lone_up()
    flits = sent_payloads(ep, 20)
    rx = lone_up()
    assert [rx.receive(f) for f in flits] == list(range(20))
    rx.receive(None, crc_ok=False)                          # stale replay of 12: lost
    aliased = Flit(encode_command(Op.ACK, True, 1, flit_seq(12)), 12)
    assert rx.receive(aliased) == 12                        # taken as the 21st flit


# --- Link states [§6.7.1] -------------------------------------------------------------------------

def test_bring_up_handshake():
    ep = DlEndpoint()
    assert ep.state is DlState.FAULT and ep.send() is None
    assert ep.state is DlState.IDLE and not ep.ready
    ep.enable = False
    assert ep.send() is None and ep.state is DlState.IDLE
    ep.enable = True
    nops = 0
    while nops < NOP_FLITS_TO_UP + 5:                       # partner silent: stays in NOP
        f = ep.send()
        assert decode_header(f.header).nop and ep.state is DlState.NOP
        ep.receive(None)
        nops += 1
    ep.receive(explicit_nop(SEQ_RESET))
    ep.receive(None, crc_ok=False)
    ep.receive(explicit_nop(SEQ_RESET))                     # not two in a row yet
    ep.send()
    assert ep.state is DlState.NOP
    ep.receive(explicit_nop(SEQ_RESET))                     # two in a row
    ep.send()
    assert ep.state is DlState.UP and ep.counters.link_ups == 1


def test_up_needs_ten_nops():
    ep = DlEndpoint()
    ep.send()
    for n in range(1, NOP_FLITS_TO_UP + 1):
        ep.send()
        assert ep.state is DlState.NOP
        ep.receive(explicit_nop(SEQ_RESET))
    ep.send()
    assert ep.state is DlState.UP


def test_control_flits_take_link_down():
    ep = lone_up()
    for _ in range(CONTROL_FLITS_TO_IDLE - 1):
        ep.receive(None)
    ep.receive(explicit_nop(SEQ_RESET))
    for _ in range(CONTROL_FLITS_TO_IDLE - 1):
        ep.receive(None)
    ep.send()
    assert ep.state is DlState.UP
    ep.receive(None)
    assert ep.send() is None and ep.state is DlState.IDLE and ep.counters.link_downs == 1
    ep.send()
    assert ep.state is DlState.NOP and ep.rx.ambiguous          # waits for an explicit flit


def test_containment():
    ep = lone_up()
    ep.contain()
    assert ep.send() is None and ep.state is DlState.IDLE
    ep.send()
    assert ep.state is DlState.IDLE
    ep.enable = True
    ep.send()
    assert ep.state is DlState.NOP


def test_fault_resets_replay_state():
    ep = lone_up()
    sent_payloads(ep, 5)
    ep.rs_fault = True
    assert ep.send() is None and ep.state is DlState.FAULT
    assert ep.counters.lost_on_fault == 5 and not ep.tx.buffer
    assert ep.tx.last_seq == ep.rx.last_seq_calc == ep.rx.last_ack == SEQ_RESET
    ignored = ep.counters.ignored_flits
    ep.receive(explicit_nop(3))
    assert ep.counters.ignored_flits == ignored + 1 and ep.send() is None
    ep.rs_fault = False
    ep.send()
    assert ep.state is DlState.IDLE


# --- Two endpoints over a lossy channel -----------------------------------------------------------

SOAK = {
    # name: (q, delay, depth, extra channel / endpoint settings)
    "clean": (0.0, 5, 64, {}),
    "q1e-3": (1e-3, 10, 64, {}),
    "q1e-2": (1e-2, 10, 64, {}),
    "q1e-1-short": (1e-1, 2, 32, {}),
    "q1e-1-long": (1e-1, 20, 255, {}),
    "bursts": (1e-3, 8, 64, {"burst_rate": 5e-3, "burst_max": 24}),
    "full-buffer": (1e-2, 20, 4, {}),
    "rr-group-4": (5e-2, 10, 64, {"rr_group": 4}),
    "rr-group-5": (1e-1, 3, 64, {"rr_group": 5}),
}


def soak(name, seed, flit_times=4000):
    q, delay, depth, extra = SOAK[name]
    print(f"soak {name}: seed {seed}")
    rng = random.Random(seed)
    burst = {k: extra[k] for k in ("burst_rate", "burst_max") if k in extra}
    ep_kwargs = {k: v for k, v in extra.items() if k not in burst}
    link = Link(rng, Channel(delay, rng, q, **burst), Channel(delay, rng, q, **burst),
                depth=depth, replay_limit=min(255, 2 * round_trip(delay)), **ep_kwargs)
    link.run(flit_times)
    link.drain(200 * flit_times)
    return link


@pytest.mark.parametrize("name", SOAK)
def test_soak(name):
    link = soak(name, seed=sorted(SOAK).index(name) + 1)
    a, b = (ep.counters for ep in link.ends)
    assert min(link.offered) > SEQ_MODULUS                  # sequence numbers wrapped
    for c in (a, b):
        assert c.link_ups == 1 and c.malformed == 0 and c.lost_on_fault == 0
        assert c.ack_seq_errors == c.replay_request_seq_errors == 0
        if SOAK[name][0]:
            assert c.bad_crc and c.replays_started and c.replayed_flits
    if name == "full-buffer":
        assert a.peak_occupancy == b.peak_occupancy == 4
    if name == "bursts":
        assert a.ambiguous_entries + b.ambiguous_entries > 0
    if name.startswith("q1e-1"):
        assert a.replay_rerequests + b.replay_rerequests > 0


def test_soak_random_seed():
    seed = harness.seed()
    soak("q1e-1-long", seed, flit_times=3000)


def _first_of(index):
    """A channel hook that loses the first transmission of payload ``(0, index)``."""
    first = iter([True])

    def hook(flit):
        return flit.payload == (0, index) and next(first, False)
    return hook


def test_round_trip():
    """The replay of a lost flit leaves 2d + 3 flit times after it (2d + 4 when the Replay
    Request meets an explicit flit), d the one-way delay, with this harness's ordering."""
    for delay in (0, 1, 5, 20):
        rng = random.Random(delay)
        link = Link(rng, Channel(delay, rng, hook=_first_of(100)), Channel(delay, rng),
                    load=(1, 0))
        times = []
        while len(times) < 2:
            flit_time, counters = link.t, link.ends[0].counters
            before = counters.payload_flits + counters.replayed_flits
            link.step()
            sent = counters.payload_flits + counters.replayed_flits > before
            if sent and link.monitors[0].last_index == 100:
                times.append(flit_time)
        assert times[1] - times[0] in (round_trip(delay), round_trip(delay) + 1)


def test_ack_loss_needs_no_replay():
    rng = random.Random(7)
    link = Link(rng, Channel(6, rng), Channel(6, rng, q=0.3), load=(0.9, 0.0),
                replay_limit=2 * round_trip(6))
    link.run(3000)
    link.drain(20000)
    a, b = (ep.counters for ep in link.ends)
    assert a.bad_crc > 500 and a.replays_started == 0 and b.replay_entries == 0
    assert a.flits_acked == link.offered[0]


def test_replay_request_loss():
    """Every Replay Request copy of the first replay, then half of them, is lost: the
    receiver resends after Rx_replay_limit flit times."""
    rng = random.Random(11)
    state = {"killed": 0}

    def kill(flit):
        if flit.header >> OP_LSB != Op.REPLAY_REQUEST:
            return False
        state["killed"] += 1
        return state["killed"] <= REPLAY_REQUEST_COPIES or rng.random() < 0.5

    link = Link(rng, Channel(8, rng, q=0.02), Channel(8, rng, hook=kill), load=(0.9, 0.3),
                replay_limit=2 * round_trip(8))
    link.run(4000)
    link.drain(50000)
    b = link.ends[1].counters
    assert state["killed"] > 10 and b.replay_rerequests > 0


def test_link_down_and_up_keeps_flits():
    """An ack timeout takes the link down mid-traffic; when the channel heals the link comes
    back up and every accepted flit is delivered once."""
    rng = random.Random(5)
    cut = {"on": False}
    link = Link(rng, Channel(4, rng, q=0.01), Channel(4, rng, hook=lambda f: cut["on"]),
                ack_timeout=300, replay_limit=2 * round_trip(4))
    link.run(1000)
    cut["on"] = True
    link.run(600)
    a, b = (ep.counters for ep in link.ends)
    assert a.ack_timeouts == 1 and b.link_downs >= 1
    cut["on"] = False
    link.run(1000)
    link.drain(50000)
    assert all(ep.state is DlState.UP for ep in link.ends) and a.link_ups == 2


# --- Goodput against go-back-N --------------------------------------------------------------------

def goodput(q, delay, flit_times=40000, seed=1):
    """Delivered payloads per flit time, saturated one way, errors that way only, after Up."""
    rng = random.Random(seed)
    link = Link(rng, Channel(delay, rng, q), Channel(delay, rng), load=(1.0, 0.0),
                replay_limit=min(255, 2 * round_trip(delay)))
    while link.ends[0].state is not DlState.UP:
        link.step()
    start, base = link.t, link.delivered[0]
    link.run(flit_times)
    return (link.delivered[0] - base) / (link.t - start)


@pytest.mark.parametrize("q, delay", [(1e-3, 10), (1e-2, 10), (1e-1, 10), (1e-2, 40),
                                      (1e-1, 2)])
def test_goodput_vs_go_back_n(q, delay):
    m = round_trip(delay)
    eta = (1 - q) / (1 + (m - 1) * q)
    g = goodput(q, delay)
    print(f"goodput q={q} m={m}: model {g:.4f}, go-back-N {eta:.4f}, ratio {g / eta:.3f}")
    assert 0.7 * eta <= g <= 1.1 * eta
