# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the UPLI originator watchdog / Isolation Mode golden model
rtl/scaleup_ip/model/tl/isolation.py alone (no simulator).

Worked by hand from rtl/scaleup_ip/tl/README.md §7 and the UALink 1.0 text (§3.1.3, Table 2-6,
§2.7.4.2, §2.7.5, §2.7.6, §2.7.8): what answers each command class; the watchdog's window, also
against a free-running tick counter simulated clock by clock; matching of responses by tag,
channel and beat count; ISOLATE; each kind of dummy answer; counters and saturation; parameter
checks; and a random run where a spec-abiding TL answers random requests, a faulty one injects
strays and Isolation Mode starts at a random moment, checking that every request gets exactly
one whole answer. The same run with a deliberately broken dummy shows that the check can fail.

Random tests print their seed; ``SEED=n`` reproduces a run.
"""

import random

import pytest

from scaleup_ip.model.tl import isolation
from scaleup_ip.model.tl.flit import Request, WriteResponse
from scaleup_ip.model.tl.isolation import (
    CMPTO,
    COUNTER_MAX,
    ISOLATE,
    MANUFACTURED,
    Answer,
    Originator,
    ReadBeat,
    answer_of,
    expiry_window,
    read_beats,
    tick_window,
)

OKAY, TARGET_ABORT, DECODE_ERROR, PROTECTION_VIOLATION = 0x0, 0x2, 0x3, 0x6
READ, ATOMIC_R, ATOMIC_NR = 0x03, 0x30, 0x32
WRITE, WRITE_FULL, WRITE_MESSAGE = 0x28, 0x29, 0x2A
VENDOR_READS = range(0x08, 0x10)
VENDOR_WRITES = range(0x2C, 0x30)
VENDOR_ATOMICS = range(0x3C, 0x40)
SRC, DST = 0x155, 0x2AA        # ReqSrcPhysAccID, ReqDstPhysAccID: distinct bit patterns


def req(cmd, tag, addr=0, length=15, num_beats=0, vc=2):
    """A request; data commands get ``num_beats + 1`` zero beats."""
    beats = num_beats + 1 if cmd & 0x20 else 0
    return Request(cmd=cmd, vc=vc, asi=0, tag=tag, attr=0, length=length, metadata=0,
                   addr=addr, src_acc=SRC, dst_acc=DST, num_beats=num_beats,
                   data=[bytes(64)] * beats, byte_en=[(1 << 64) - 1] * beats, error=[0] * beats)


def rd(request, offset, num_beats, last, status=OKAY, data=0x1234, tag=None):
    """A TL read beat answering ``request``."""
    return ReadBeat(tag=request.tag if tag is None else tag, vc=request.vc, src_acc=DST,
                    dst_acc=SRC, num_beats=num_beats, offset=offset, last=last, status=status,
                    data=data)


def wr(request, status=OKAY, tag=None):
    """A TL write response answering ``request``."""
    return WriteResponse(vc=request.vc, tag=request.tag if tag is None else tag, src_acc=DST,
                         dst_acc=SRC, status=status)


def isolate(o):
    """Start Isolation Mode by an ISOLATE write response (whose other fields are don't care)."""
    assert o.tl_write_response(WriteResponse(vc=0, tag=0x7FF, src_acc=0, dst_acc=0,
                                             status=ISOLATE)) is False
    assert o.isolated


def fields(beats):
    """``(num_beats, offset, last)`` of each dummy beat."""
    return [(b.num_beats, b.offset, b.last) for b in beats]


# --- answer_of ------------------------------------------------------------------------------------

@pytest.mark.parametrize("addr, length, beats", [
    (0x000, 0, 1),      # 4 bytes
    (0x000, 15, 1),     # 64 bytes aligned
    (0x03C, 0, 1),      # last doubleword of a beat
    (0x03C, 1, 2),      # 8 bytes straddling 0x40
    (0x000, 16, 2),     # 68 bytes
    (0x084, 30, 2),     # 4 + 124 = 128
    (0x084, 31, 3),     # 4 + 128 = 132
    (0x07C, 32, 3),     # 60 + 132 = 192, up to the block's end
    (0x040, 47, 3),     # 192 aligned
    (0x004, 62, 4),     # 4 + 252 = 256
    (0x000, 63, 4),     # 256 aligned
    (0x1_2345_6700, 63, 4),
    (0x0C0, 15, 1),
])
def test_read_beats(addr, length, beats):
    # ⌈(ReqAddr mod 64 + 4·(ReqLen + 1)) / 64⌉ [README §7; UALink 1.0 §2.7.4.4, §2.7.5.3]
    assert answer_of(req(READ, 1, addr=addr, length=length)) == Answer("read", beats, True)
    assert read_beats(addr, length) == beats


def test_read_of_five_beats_counts_as_four():
    # 60 + 200 bytes cross 0x100 [UALink 1.0 §2.7.4.6]: no response carries 5 beats [README §7]
    assert answer_of(req(READ, 1, addr=0x3C, length=49)) == Answer("read", 4, True)


@pytest.mark.parametrize("num_beats", range(4))
def test_atomic_r_is_one_beat(num_beats):
    r = req(ATOMIC_R, 3, addr=0x80, length=3, num_beats=num_beats)
    assert answer_of(r) == Answer("read", 1, True)


@pytest.mark.parametrize("cmd", VENDOR_READS)
@pytest.mark.parametrize("num_beats", range(4))
def test_vendor_read_any_size(cmd, num_beats):
    r = req(cmd, 4, addr=0xFC, length=63, num_beats=num_beats)   # ReqAddr/ReqLen are vendor's
    assert answer_of(r) == Answer("read", num_beats + 1, False)


@pytest.mark.parametrize("cmd", [WRITE_MESSAGE, *VENDOR_ATOMICS])
def test_either_channel(cmd):
    assert answer_of(req(cmd, 5, num_beats=2)) == Answer("either", 0, False)


@pytest.mark.parametrize("cmd", [WRITE, WRITE_FULL, ATOMIC_NR, *VENDOR_WRITES])
def test_write_channel(cmd):
    assert answer_of(req(cmd, 6, length=63, num_beats=3)) == Answer("write", 0, False)


def test_answer_accepts_len_attribute():
    class Plain:                                     # a request with ``len`` instead of ``length``
        cmd, addr, len, num_beats = READ, 0x3C, 1, 0
    assert answer_of(Plain()) == Answer("read", 2, True)


# --- the watchdog's window ------------------------------------------------------------------------

@pytest.mark.parametrize("t, window, ticks", [
    (16, (16, 27), (16, 18)),                       # P = 2
    (17, (17, 28), (24, 27)),                       # P = 3: 9P = 27, one clock under 28
    (24, (24, 36), (24, 27)),
    (1_000_000, (1_000_000, 1_125_009), (1_000_000, 1_125_000)),
    ((1 << 32) - 1, ((1 << 32) - 1, 4_831_838_215), (1 << 32, 4_831_838_208)),
])
def test_expiry_window(t, window, ticks):
    assert expiry_window(t) == window
    assert tick_window(t) == ticks


@pytest.mark.parametrize("t", [0, 1, 15, 1 << 32, -16])
def test_expiry_window_refuses(t):
    with pytest.raises(ValueError, match="completion_timeout"):
        expiry_window(t)


def ninth_tick(t, phase, start):
    """Clock by clock: ticks at every clock ``c`` with ``c mod P = phase``; a request goes to
    the TL at ``start``; its age counts ticks after ``start`` (or at ``start``: ``inclusive``)."""
    period = -(-t // 8)
    out = []
    for inclusive in (False, True):
        age, clock = 0, start if inclusive else start + 1
        while True:
            if clock % period == phase:
                age += 1
                if age == 9:
                    out.append(clock - start)
                    break
            clock += 1
    return out


def test_expiry_window_holds_every_tick_phase():
    for t in range(16, 90):
        low, high = expiry_window(t)
        tick_low, tick_high = tick_window(t)
        seen = set()
        for phase in range(-(-t // 8)):
            for start in range(-(-t // 8)):
                seen.update(ninth_tick(t, phase, start))
        assert min(seen) == tick_low and max(seen) == tick_high, t
        assert low <= tick_low and tick_high < high, t      # at least a clock to spare


# --- parameters -----------------------------------------------------------------------------------

@pytest.mark.parametrize("outstanding", [1, 16, 64])
@pytest.mark.parametrize("timeout", [0, 16, 1_000_000, (1 << 32) - 1])
def test_parameters_accepted(outstanding, timeout):
    o = Originator(outstanding, timeout)
    assert not o.isolated and o.cause is None and o.outstanding() == []
    assert o.counts == dict.fromkeys(
        ("EXPIRED", "STALLED", "ISOLATE", "DUMMY", "DISCARDED", "UNEXPECTED"), 0)


@pytest.mark.parametrize("kwargs, message", [
    ({"outstanding": 0}, r"outstanding must be 1 \.\. 64 entries, not 0"),
    ({"outstanding": 65}, r"outstanding must be 1 \.\. 64 entries, not 65"),
    ({"outstanding": True}, r"outstanding must be"),
    ({"completion_timeout": 15},
     r"completion_timeout must be 0 \(no watchdog\) or 16 \.\. 4294967295 clocks, not 15"),
    ({"completion_timeout": 1 << 32}, r"not 4294967296"),
    ({"completion_timeout": -1}, r"not -1"),
    ({"completion_timeout": 1.5e6}, r"not 1500000.0"),
])
def test_parameters_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Originator(**kwargs)


# --- the table ------------------------------------------------------------------------------------

def test_table_entries_and_tags():
    o = Originator(outstanding=2)
    a, b, c = req(READ, 1), req(WRITE, 2), req(READ, 3)
    assert o.issue(a) is True and o.issue(b) is True
    assert not o.can_issue(c)                       # the table is full
    with pytest.raises(ValueError, match="table is full"):
        o.issue(c)
    assert o.tl_write_response(wr(b)) is True
    assert not o.can_issue(req(WRITE, 1))           # tag 1 is outstanding [§2.7.4.2]
    with pytest.raises(ValueError, match="tag 0x1 cannot be issued: its tag is outstanding"):
        o.issue(req(WRITE, 1))
    assert o.can_issue(c) and o.issue(c)
    assert o.outstanding() == [a, c]                # issue order


# --- matching responses ---------------------------------------------------------------------------

def test_read_multi_beat_passes_and_last_ends():
    o = Originator()
    r = req(READ, 9, addr=0x40, length=47)          # 3 beats
    o.issue(r)
    assert o.tl_read_beat(rd(r, 0, 2, False))
    assert o.open_burst() == 9
    assert o.tl_read_beat(rd(r, 1, 2, False))
    assert o.tl_read_beat(rd(r, 2, 2, True))
    assert o.outstanding() == [] and o.open_burst() is None
    assert not o.tl_read_beat(rd(r, 2, 2, True))    # tag no longer outstanding
    assert o.counts["UNEXPECTED"] == 1


def test_read_single_beat_mode_any_order():
    o = Originator()
    r = req(READ, 9, addr=0x3C, length=1)           # 2 beats
    o.issue(r)
    assert o.tl_read_beat(rd(r, 1, 0, False))       # single-beat mode, any order [§2.7.8]
    assert o.open_burst() is None
    assert o.outstanding() == [r]
    assert o.tl_read_beat(rd(r, 0, 0, True))
    assert o.outstanding() == [] and o.counts["UNEXPECTED"] == 0


@pytest.mark.parametrize("beat", [
    dict(offset=0, num_beats=2, last=False),        # 3 beats for a 2-beat Read
    dict(offset=0, num_beats=3, last=True),
    dict(offset=2, num_beats=0, last=True),         # single beat, offset beyond the Read
    dict(offset=3, num_beats=0, last=False),
])
def test_read_wrong_beat_count(beat):
    o = Originator()
    r = req(READ, 9, addr=0x3C, length=1)           # 2 beats
    o.issue(r)
    assert not o.tl_read_beat(rd(r, **beat))
    assert o.counts["UNEXPECTED"] == 1 and o.outstanding() == [r]   # still outstanding


def test_atomic_r_checked_as_one_beat():
    o = Originator()
    r = req(ATOMIC_R, 7, num_beats=1)
    o.issue(r)
    assert not o.tl_read_beat(rd(r, 0, 1, False))   # 2 beats: wrong
    assert not o.tl_read_beat(rd(r, 0, 3, True))    # 4 beats: wrong
    assert o.tl_read_beat(rd(r, 0, 0, True))
    assert o.counts["UNEXPECTED"] == 2 and o.outstanding() == []


def test_offset_unchecked_when_num_beats_fits():
    # README §7 read literally: RdRspNumBeats + 1 = beats is enough, whatever the offset
    o = Originator()
    r = req(READ, 7, length=31)                     # 2 beats
    o.issue(r)
    assert o.tl_read_beat(rd(r, 3, 1, False))
    assert o.counts["UNEXPECTED"] == 0 and o.outstanding() == [r]


def test_vendor_read_any_size_passes():
    o = Originator()
    r = req(0x0B, 7, num_beats=0)
    o.issue(r)
    assert o.tl_read_beat(rd(r, 0, 3, False))       # 4 beats for NumBeats 0: any size
    assert o.tl_read_beat(rd(r, 3, 0, True))        # also mixed with single beats
    assert not o.tl_write_response(wr(r))           # gone
    assert o.counts["UNEXPECTED"] == 1


def test_wrong_tag_and_wrong_channel():
    o = Originator()
    r, w = req(READ, 1), req(WRITE_FULL, 2, length=15)
    o.issue(r), o.issue(w)
    assert not o.tl_read_beat(rd(r, 0, 0, True, tag=3))     # no such tag
    assert not o.tl_write_response(wr(w, tag=3))
    assert not o.tl_read_beat(rd(w, 0, 0, True))            # a write gets no read beat
    assert not o.tl_write_response(wr(r))                   # a read gets no write response
    assert o.counts["UNEXPECTED"] == 4
    assert o.outstanding() == [r, w]
    assert o.tl_write_response(wr(w, status=DECODE_ERROR))  # any status passes
    assert o.tl_read_beat(rd(r, 0, 0, True, status=TARGET_ABORT))
    assert o.outstanding() == [] and o.counts["UNEXPECTED"] == 4


@pytest.mark.parametrize("cmd", [WRITE_MESSAGE, 0x3E])
def test_either_takes_both_channels(cmd):
    o = Originator()
    a, b = req(cmd, 1), req(cmd, 2)
    o.issue(a), o.issue(b)
    assert o.tl_write_response(wr(a))
    assert o.tl_read_beat(rd(b, 0, 1, False))
    assert o.tl_read_beat(rd(b, 1, 1, True))
    assert o.outstanding() == [] and o.counts["UNEXPECTED"] == 0


def test_error_status_passes():
    # an error read response from the TL (all ones, like a dummy) is the completer's: it passes
    o = Originator()
    r = req(READ, 1)
    o.issue(r)
    beat = rd(r, 0, 0, True, status=PROTECTION_VIOLATION, data=MANUFACTURED)
    assert o.tl_read_beat(beat) is True


# --- Isolation Mode -------------------------------------------------------------------------------

def test_isolate_write_response():
    o = Originator()
    w = req(WRITE, 5)
    o.issue(w)
    assert o.tl_write_response(wr(w, status=ISOLATE)) is False     # its tag, still no match
    assert o.isolated and o.cause == "ISOLATE" and o.counts["ISOLATE"] == 1
    assert o.outstanding() == [w]                                   # ends no request
    assert o.counts["UNEXPECTED"] == 0 and o.counts["DISCARDED"] == 0
    o.expire(5)                                                     # a later cause: counted only
    assert o.cause == "ISOLATE" and o.counts["EXPIRED"] == 1
    isolate(o)
    assert o.counts["ISOLATE"] == 2 and o.counts["DISCARDED"] == 0


def test_expire_and_stall():
    o = Originator(completion_timeout=16)
    r = req(READ, 4)
    o.issue(r)
    with pytest.raises(ValueError, match="no outstanding request has tag 0x5"):
        o.expire(5)
    assert not o.isolated
    o.expire(4)
    assert o.isolated and o.cause == "EXPIRED" and o.counts["EXPIRED"] == 1
    o.stall()
    assert o.cause == "EXPIRED" and o.counts["STALLED"] == 1
    s = Originator()
    s.stall()
    assert s.isolated and s.cause == "STALLED"


def test_no_watchdog_without_timeout():
    o = Originator(completion_timeout=0)
    o.issue(req(READ, 4))
    with pytest.raises(ValueError, match="no watchdog"):
        o.expire(4)
    with pytest.raises(ValueError, match="no watchdog"):
        o.stall()
    assert not o.isolated
    isolate(o)                                      # ISOLATE still works
    assert o.cause == "ISOLATE"


def test_isolation_discards_tl_responses():
    o = Originator()
    r, w = req(READ, 1), req(WRITE, 2)
    o.issue(r), o.issue(w)
    o.stall()
    assert not o.tl_read_beat(rd(r, 0, 0, True))            # matching, still dropped
    assert not o.tl_write_response(wr(w))
    assert not o.tl_read_beat(rd(r, 0, 0, True, tag=9))     # not matching: DISCARDED too
    assert o.counts["DISCARDED"] == 3 and o.counts["UNEXPECTED"] == 0
    assert o.outstanding() == [r, w]


def test_issue_in_isolation_takes_an_entry():
    o = Originator(outstanding=1)
    isolate(o)
    r = req(READ, 3, addr=0x40, length=31)
    assert o.issue(r) is False                      # not sent [§3.1.3 action 1]
    assert o.outstanding() == [r] and not o.can_issue(req(READ, 4))
    assert fields(o.dummy(3)) == [(1, 0, False), (1, 1, True)]
    assert o.can_issue(req(READ, 4))


def test_dummy_read_nothing_delivered():
    o = Originator()
    r = req(READ, 0x5A5, addr=0x84, length=31, vc=3)        # 3 beats
    o.issue(r)
    o.expire(0x5A5)
    beats = o.dummy(0x5A5)
    assert beats == [ReadBeat(tag=0x5A5, vc=3, src_acc=DST, dst_acc=SRC, num_beats=2, offset=i,
                              last=i == 2, status=CMPTO, data=MANUFACTURED, error=0)
                     for i in range(3)]
    assert o.outstanding() == [] and o.counts["DUMMY"] == 1


def test_dummy_multi_beat_continues_burst():
    o = Originator()
    r = req(READ, 8, length=63)                     # 4 beats
    o.issue(r)
    assert o.tl_read_beat(rd(r, 0, 3, False))
    assert o.tl_read_beat(rd(r, 1, 3, False))
    isolate(o)
    assert not o.tl_read_beat(rd(r, 2, 3, False))   # the TL's rest is discarded
    assert o.open_burst() == 8
    assert fields(o.dummy(8)) == [(3, 2, False), (3, 3, True)]
    assert o.open_burst() is None


def test_dummy_single_beat_mode_goes_on_single():
    o = Originator()
    r = req(READ, 8, length=63)                     # 4 beats
    o.issue(r)
    assert o.tl_read_beat(rd(r, 2, 0, False))
    assert o.tl_read_beat(rd(r, 0, 0, False))
    o.stall()
    assert o.open_burst() is None
    assert fields(o.dummy(8)) == [(0, 1, False), (0, 3, True)]


def test_dummy_write_response():
    o = Originator()
    w = req(ATOMIC_NR, 0x123, vc=1)
    o.issue(w)
    isolate(o)
    assert o.dummy(0x123) == [WriteResponse(vc=1, tag=0x123, src_acc=DST, dst_acc=SRC,
                                            status=CMPTO)]
    assert o.counts["DUMMY"] == 1 and o.outstanding() == []


@pytest.mark.parametrize("cmd, expect", [
    (WRITE_MESSAGE, "write"), (0x3F, "write"), (WRITE_FULL, "write"), (0x2D, "write"),
    (0x09, [(2, 0, False), (2, 1, False), (2, 2, True)]),     # vendor read: NumBeats + 1
    (ATOMIC_R, [(0, 0, True)]),
])
def test_dummy_by_command(cmd, expect):
    o = Originator()
    o.issue(req(cmd, 1, num_beats=2 if cmd != ATOMIC_R else 0))
    isolate(o)
    answer = o.dummy(1)
    if expect == "write":
        assert len(answer) == 1 and isinstance(answer[0], WriteResponse)
        assert answer[0].status == CMPTO
    else:
        assert fields(answer) == expect


def test_dummy_either_after_read_beats_stays_on_read():
    o = Originator()
    m = req(WRITE_MESSAGE, 1, num_beats=0)
    o.issue(m)
    assert o.tl_read_beat(rd(m, 0, 1, False))       # a 2-beat read response under way
    isolate(o)
    assert o.open_burst() == 1
    assert fields(o.dummy(1)) == [(1, 1, True)]


def test_dummy_when_nothing_is_left():
    # a faulty TL delivered every offset without RdRspLast: the final beat comes again, last
    o = Originator()
    r, s = req(READ, 1, length=31), req(READ, 2, length=31)   # 2 beats each
    o.issue(r), o.issue(s)
    for offset in (1, 0):
        assert o.tl_read_beat(rd(r, offset, 0, False))
    assert o.tl_read_beat(rd(s, 0, 1, False))
    assert o.tl_read_beat(rd(s, 1, 1, False))
    isolate(o)
    assert fields(o.dummy(2)) == [(1, 1, True)]
    assert fields(o.dummy(1)) == [(0, 1, True)]


def test_dummy_order_and_errors():
    o = Originator()
    r, s, w = req(READ, 1, length=63), req(READ, 2), req(WRITE, 3)
    for x in (r, s, w):
        o.issue(x)
    with pytest.raises(ValueError, match="Isolation Mode only"):
        o.dummy(1)
    assert o.tl_read_beat(rd(r, 0, 3, False))
    isolate(o)
    with pytest.raises(ValueError, match="burst of tag 0x1 must be finished"):
        o.dummy(2)
    assert len(o.dummy(3)) == 1                     # the write channel is free
    assert len(o.dummy(1)) == 3
    assert len(o.dummy(2)) == 1
    with pytest.raises(ValueError, match="no outstanding request has tag 0x2"):
        o.dummy(2)
    assert o.counts["DUMMY"] == 3 and o.outstanding() == []


def test_counters_saturate():
    o = Originator()
    w = req(WRITE, 1)
    for _ in range(COUNTER_MAX + 5):
        o.tl_write_response(wr(w))                  # nothing outstanding: UNEXPECTED
    assert o.counts["UNEXPECTED"] == COUNTER_MAX == 0xFFFF
    for _ in range(COUNTER_MAX + 5):
        o.tl_read_beat(rd(w, 0, 0, True))
    assert o.counts["UNEXPECTED"] == COUNTER_MAX
    for _ in range(COUNTER_MAX + 2):
        o.stall()
    assert o.counts["STALLED"] == COUNTER_MAX and o.counts["DISCARDED"] == 0


def test_read_beat_widths():
    with pytest.raises(ValueError, match="data"):
        ReadBeat(1, 0, 0, 0, 0, 0, True, 0, 1 << 512)
    with pytest.raises(ValueError, match="tag"):
        ReadBeat(1 << 11, 0, 0, 0, 0, 0, True, 0, 0)
    with pytest.raises(ValueError, match="num_beats"):
        ReadBeat(1, 0, 0, 0, 4, 0, True, 0, 0)


# --- a random run ---------------------------------------------------------------------------------

RANDOM_COMMANDS = [READ] * 6 + [ATOMIC_R, 0x08, 0x0F, WRITE, WRITE_FULL, WRITE_MESSAGE,
                                ATOMIC_NR, 0x2C, 0x3C]
READ_STATUSES = (OKAY, OKAY, OKAY, TARGET_ABORT, DECODE_ERROR, PROTECTION_VIOLATION, CMPTO)


def random_request(rng, tag):
    cmd = rng.choice(RANDOM_COMMANDS)
    if cmd == READ:
        addr = rng.randrange(0, 256, 4) + 256 * rng.randrange(1 << 20)
        length = rng.randrange((256 - addr % 256) // 4)
        return req(cmd, tag, addr=addr, length=length, vc=rng.randrange(4))
    return req(cmd, tag, num_beats=0 if cmd == ATOMIC_R else rng.randrange(4),
               vc=rng.randrange(4))


def tl_answer(rng, r):
    """What a spec-abiding completer and TL send back for ``r``.

    ``["w", response]`` or ``["r", beats, multi]`` (the beats in the order they are sent).
    """
    ans = answer_of(r)
    status = rng.choice(READ_STATUSES)
    channel = rng.choice("rw") if ans.channel == "either" else ans.channel[0]
    if channel == "w":
        return ["w", wr(r, status)]
    multi = rng.random() < 0.5
    size = ans.beats or r.num_beats + 1
    if not ans.known and multi:
        size = rng.randint(1, 4)                    # any size [§2.7.4.6]
    order = list(range(size)) if multi else rng.sample(range(size), size)
    beats = [rd(r, off, size - 1 if multi else 0, i == size - 1, status, rng.getrandbits(512))
             for i, off in enumerate(order)]
    return ["r", beats, multi]


class RandomRun:
    """A device, an originator model and a TL; see :func:`test_random_run`."""

    def __init__(self, rng, originator):
        self.rng, self.o = rng, originator
        self.live = {}          # tag -> the device's record of its request
        self.done = []          # records of finished requests
        self.tl = {}            # tag -> TL answer still to deliver
        self.burst = None       # tag of the multi-beat burst on the TL's read channel
        self.device_reads = []  # read beats the device got, in order
        self.expect = dict.fromkeys(self.o.counts, 0)

    def deliver(self, item, dummy):
        rec = self.live[item.tag]                   # the device has the tag outstanding
        rec["items"].append((item, dummy))
        if isinstance(item, ReadBeat):
            self.device_reads.append(item)
        if not isinstance(item, ReadBeat) or item.last:
            self.done.append(self.live.pop(item.tag))

    def issue(self):
        tag = self.rng.randrange(64)
        r = random_request(self.rng, tag)
        if tag in self.live or len(self.live) >= self.o.entries:
            assert not self.o.can_issue(r)
            return
        sent = self.o.issue(r)
        assert sent is not self.o.isolated
        self.live[tag] = {"request": r, "items": [], "sent": sent}
        if sent:
            self.tl[tag] = tl_answer(self.rng, r)
            self.live[tag]["size"] = len(self.tl[tag][1]) if self.tl[tag][0] == "r" else 0

    def tl_item(self, write):
        """The TL delivers one item: a write response, or the next read beat (a multi-beat burst
        runs to its end before another response starts [§2.7.8])."""
        if write:
            tags = [t for t, a in self.tl.items() if a[0] == "w"]
        else:
            tags = [self.burst] if self.burst is not None else [
                t for t, a in self.tl.items() if a[0] == "r"]
        if not tags:
            return
        tag = self.rng.choice(tags)
        answer = self.tl[tag]
        if write:
            item = answer[1]
            del self.tl[tag]
        else:
            item = answer[1].pop(0)
            self.burst = tag if answer[2] and answer[1] else None
            if not answer[1]:
                del self.tl[tag]
        self.pass_item(item)

    def pass_item(self, item):
        method = self.o.tl_read_beat if isinstance(item, ReadBeat) else self.o.tl_write_response
        isolated = self.o.isolated
        passed = method(item)
        assert passed is not isolated
        if isolated:
            self.expect["DISCARDED"] += 1
        else:
            self.deliver(item, dummy=False)

    def stray(self):
        """A faulty TL: an item no outstanding request takes."""
        free = [t for t in range(64) if t not in self.live]
        reads = [t for t, rec in self.live.items() if answer_of(rec["request"]).channel == "read"]
        writes = [t for t, rec in self.live.items()
                  if answer_of(rec["request"]).channel == "write"]
        r = req(READ, self.rng.choice(free))
        kind = self.rng.randrange(4)
        if kind == 0:
            item = rd(r, 0, 0, True)
        elif kind == 1:
            item = wr(r)
        elif kind == 2 and reads:
            item = wr(self.live[self.rng.choice(reads)]["request"])
        elif kind == 3 and writes:
            item = rd(self.live[self.rng.choice(writes)]["request"], 0, 0, True)
        else:
            return
        isolated = self.o.isolated
        assert not (self.o.tl_read_beat(item) if isinstance(item, ReadBeat)
                    else self.o.tl_write_response(item))
        self.expect["DISCARDED" if isolated else "UNEXPECTED"] += 1

    def start_isolation(self):
        cause = self.rng.choice(["EXPIRED", "STALLED", "ISOLATE"])
        if cause == "EXPIRED" and self.live:
            self.o.expire(self.rng.choice(list(self.live)))
        elif cause == "ISOLATE":
            isolate(self.o)
        else:
            cause = "STALLED"
            self.o.stall()
        self.expect[cause] += 1
        assert self.o.isolated and self.o.cause == cause

    def dummy(self):
        burst = self.o.open_burst()
        tag = burst if burst is not None else self.rng.choice(list(self.live))
        for item in self.o.dummy(tag):
            self.deliver(item, dummy=True)
        self.expect["DUMMY"] += 1

    def step(self, isolate_now):
        if isolate_now:
            self.start_isolation()
        choice = self.rng.random()
        if choice < 0.3:
            self.issue()
        elif choice < 0.8:
            self.tl_item(write=choice >= 0.65)
        elif choice < 0.85:
            self.stray()
        elif self.o.isolated and self.live:
            self.dummy()

    def finish(self):
        """Not isolated: the TL delivers the rest; isolated: the dummies answer the rest."""
        while self.live:
            if self.o.isolated:
                self.dummy()
            else:
                self.tl_item(write=self.rng.random() < 0.5)
        while self.tl:                              # the TL's leftovers, all discarded
            self.tl_item(write=self.rng.random() < 0.5)


def check_record(rec):
    """One request got exactly one whole answer, on the right channel."""
    r, items = rec["request"], [item for item, _ in rec["items"]]
    ans = answer_of(r)
    for item, dummy in rec["items"]:
        if dummy:
            assert item.status == CMPTO
            assert (item.vc, item.src_acc, item.dst_acc) == (r.vc, r.dst_acc, r.src_acc)
            if isinstance(item, ReadBeat):
                assert item.data == MANUFACTURED and item.error == 0
    if isinstance(items[0], WriteResponse):
        assert ans.channel in ("write", "either") and len(items) == 1
        return
    assert ans.channel in ("read", "either")
    assert all(isinstance(b, ReadBeat) for b in items)
    assert [b.last for b in items] == [False] * (len(items) - 1) + [True]
    n = items[0].num_beats
    if n:                                           # multi-beat: 0 .. n in order
        assert [(b.num_beats, b.offset) for b in items] == [(n, i) for i in range(n + 1)]
        assert not ans.known or n + 1 == ans.beats
    else:                                           # single beats: every offset once
        assert all(b.num_beats == 0 for b in items)
        tl_beats = not all(dummy for _, dummy in rec["items"])
        size = rec["size"] if tl_beats else ans.beats or r.num_beats + 1
        assert sorted(b.offset for b in items) == list(range(size))


def check_bursts(reads):
    """On the device's read channel a multi-beat burst is contiguous [§2.7.8]."""
    for prev, beat in zip(reads, reads[1:]):
        if prev.num_beats and not prev.last:
            assert (beat.tag, beat.offset) == (prev.tag, prev.offset + 1)


def random_run(rng, steps=400):
    o = Originator(outstanding=rng.choice([1, 3, 16, 64]),
                   completion_timeout=rng.choice([16, 1_000_000]))
    run = RandomRun(rng, o)
    isolate_at = rng.randrange(steps + steps // 4)  # sometimes never
    for i in range(steps):
        run.step(i == isolate_at)
    run.finish()
    assert o.outstanding() == [] and not run.live
    for rec in run.done:
        check_record(rec)
    check_bursts(run.device_reads)
    assert o.counts == run.expect
    return run


def test_random_run(rng):
    runs = [random_run(random.Random(rng.getrandbits(32))) for _ in range(40)]
    requests = sum(len(run.done) for run in runs)
    dummies = sum(run.expect["DUMMY"] for run in runs)
    assert requests > 2000 and dummies > 200        # the run did exercise both endings
    assert any(run.o.cause == cause for run in runs for cause in ("EXPIRED", "STALLED", "ISOLATE"))


def test_random_run_catches_a_broken_dummy(rng, monkeypatch):
    real = isolation._dummy_beats

    def skip_one(entry):                            # drops the first beat still due
        beats = real(entry)
        if len(beats) > 1:
            return beats[1:]
        return beats
    monkeypatch.setattr(isolation, "_dummy_beats", skip_one)
    with pytest.raises(AssertionError):
        for _ in range(40):
            random_run(random.Random(rng.getrandbits(32)))
