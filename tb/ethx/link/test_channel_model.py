# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the Ethernet channel golden model ``rtl/scaleup_ip/model/ethx/channel.py`` (no simulator).

Written from the ``EthxChannel`` and ``ChannelConfig`` docstrings in
``rtl/scaleup_ip/ethx/link/channel.py`` (steps cited as ``[step n]``): hand-worked examples from the
first draws of seed 1 (pinned below by an xorshift64 written here), every step's corner, and
statistical checks of the drop, bit-error and burst rates (each prints its seed; ``SEED=n`` fixes
it).
"""

import math
import os
import random

import pytest

from scaleup_ip.model.dl.err_link import ZERO_SEED, Generator
from scaleup_ip.model.ethx.channel import (
    BURST_BITS,
    COUNTER_BITS,
    COUNTERS,
    KIND_MASK_BITS,
    Beat,
    ChannelModel,
    Controls,
    ber_threshold,
    beats_of,
    frame_threshold,
    max_rows,
    payload_of,
)
from scaleup_ip.model.ethx.link import LINK_ETHERTYPE, Ctl
from sim.stats import plausible

WIDTHS = (8, 32, 64)
MAX = (1 << 32) - 1             # a threshold every draw but 2**32 - 1 is below
SMALL_MAX = 64                  # smallest max_frame_bytes
BIG_MAX = 1500

# Seed 1's first draws, by hand: xorshift64(1): 1 ^ 1<<13 = 0x2001; ^ 0x2001>>7 = 0x2041;
# ^ 0x2041<<17 = 0x40822041. Beat 0 takes words 1 and 2, beat 1 words 3 and 4 (the first
# word's low 32 bits are ``bit``, bits 32-40 ``bit_position``; the second word's low half
# ``burst``, high half ``drop``).
SEED = 1
SEED1_WORDS = (0x40822041, 0x100041060C011441)
BIT0, POS0, DROP0 = 0x40822041, 0, 0x10004106           # beat 0: bit, bit_position, drop
BIT1, POS1, DROP1 = 1854285353, 47, 4115985667          # beat 1
BIT2 = 2421789285                                       # beat 2


def xorshift64(x):
    """Marsaglia's xor64 step (13, 7, 17), written here independently."""
    mask = (1 << 64) - 1
    x ^= (x << 13) & mask
    x ^= x >> 7
    return x ^ ((x << 17) & mask)


def seed_of(name):
    seed = int(os.environ.get("SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"{name}: seed {seed}")
    return seed


def counts(**nonzero):
    return {name: nonzero.get(name, 0) for name in COUNTERS}


def model(width=64, max_bytes=BIG_MAX, seed=SEED, **controls):
    return ChannelModel(width, max_bytes, seed, Controls(**controls))


def ctl_frame(kind, ethertype=LINK_ETHERTYPE, size=64):
    """A frame with ``ethertype`` at bytes 12-13 (big-endian) and ``kind`` at byte 14."""
    head = bytes(range(1, 13)) + ethertype.to_bytes(2, "big") + bytes([kind])
    return (head + bytes(size))[:size]


def draws(seed, count):
    generator = Generator(seed)
    return [generator.next() for _ in range(count)]


# --- Constants and helpers ------------------------------------------------------------------

def test_constants():
    assert COUNTERS == ("frames", "dropped", "cut", "ctl_dropped", "oversize", "error_beats",
                        "bursts", "burst_beats")
    assert (COUNTER_BITS, BURST_BITS, KIND_MASK_BITS) == (32, 16, 32)
    assert LINK_ETHERTYPE == 0x88B6
    assert Controls() == Controls(enable=1, cut=0, ber_threshold=0, burst_threshold=0,
                                  burst_length=0, drop_threshold=0, ctl_threshold=0,
                                  ctl_kinds=0, delay=0)


def test_seed1_draws_pinned():
    """The draws used by the hand-worked examples, from an xorshift64 written here."""
    first = xorshift64(SEED)
    assert (first, xorshift64(first)) == SEED1_WORDS
    d = draws(SEED, 3)
    assert (d[0].bit, d[0].bit_position, d[0].drop) == (BIT0, POS0, DROP0)
    assert (d[1].bit, d[1].bit_position, d[1].drop) == (BIT1, POS1, DROP1)
    assert d[2].bit == BIT2
    assert BIT0 < BIT1 < BIT2


def test_thresholds():
    assert frame_threshold(0) == 0
    assert frame_threshold(0.25) == 1 << 30
    assert frame_threshold(1) == MAX
    for ber in (0, 1e-9, 1e-4, 0.5):
        for width in WIDTHS:
            assert ber_threshold(ber, width) == min(round((1 - (1 - ber) ** width) * 2**32), MAX)
    assert ber_threshold(1, 64) == MAX
    with pytest.raises(ValueError):
        frame_threshold(1.5)
    with pytest.raises(ValueError):
        ber_threshold(-0.1, 8)


def test_max_rows():
    assert max_rows(64, 64) == 8
    assert max_rows(64, 65) == 9
    assert max_rows(32, 66) == 17
    assert max_rows(8, 1500) == 1500


def test_beats_of():
    assert beats_of(bytes([1, 2, 3, 4, 5]), 32, user=1) == [
        Beat(0x04030201, 0xF, 0, 1), Beat(0x05, 0x1, 1, 1)]
    assert beats_of(bytes(range(8)), 64) == [Beat(0x0706050403020100, 0xFF, 1, 0)]
    assert payload_of([Beat(0x0A0B0C0D, 0b0101, 1)], 32) == bytes([0x0D, 0x0B])
    with pytest.raises(ValueError):
        beats_of(b"", 8)


def test_bad_configs():
    for width, max_bytes in ((16, 64), (64, 63), (64, 16385)):
        with pytest.raises(ValueError):
            ChannelModel(width, max_bytes)
    m = model(ber_threshold=1 << 32)
    with pytest.raises(ValueError):
        m.frame(b"x")
    m = model(burst_length=1 << BURST_BITS)
    with pytest.raises(ValueError):
        m.frame(b"x")


# --- Transparent channel --------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_thresholds_zero_change_nothing(width):
    rng = random.Random(seed_of(f"transparent {width}"))
    m = model(width, seed=rng.getrandbits(64))
    frames = [rng.randbytes(rng.randint(1, BIG_MAX)) for _ in range(30)]
    for k, payload in enumerate(frames):
        user = k % 2
        expected = beats_of(payload, width, user)
        assert m.frame_beats(payload, user) == expected
        assert m.out[-1].data == payload and m.out[-1].user == user
    assert m.counters == counts(frames=len(frames))


def test_enable_low_only_delays():
    m = model(enable=0, ber_threshold=MAX, burst_threshold=MAX, burst_length=3,
              drop_threshold=MAX, ctl_threshold=MAX, ctl_kinds=(1 << KIND_MASK_BITS) - 1)
    for kind in Ctl:
        assert m.frame(ctl_frame(kind)) == ctl_frame(kind)
    assert m.counters == counts(frames=len(Ctl))


def test_keep_last_user_pass_unchanged():
    m = model(32)
    beats = [Beat(0x11223344, 0b1111, 0, 3), Beat(0x55667788, 0b0101, 1, 2)]
    for beat in beats:
        assert m.beat(*beat) == beat
    assert m.out[-1].beats == tuple(beats) and m.out[-1].user == 2
    assert m.out[-1].data == bytes([0x44, 0x33, 0x22, 0x11, 0x88, 0x66])


def test_generator_moves_on_every_accepted_beat():
    """Passed, dropped, cut and oversize beats all take their draws [channel]."""
    m = model(64, SMALL_MAX, seed=99)
    total = 0
    for controls, size in (({}, 20), ({"drop_threshold": MAX}, 30), ({"cut": 1}, 9),
                           ({}, 100), ({"enable": 0}, 1)):
        m.controls = Controls(**controls)
        m.frame(bytes(size))
        total += math.ceil(size / 8)
    reference = Generator(99)
    for _ in range(total):
        reference.next()
    assert m.generator.state == reference.state


# --- Step 1: cut and drop ---------------------------------------------------------------------

def test_drop_threshold_max_drops_every_frame():
    m = model(64, seed=1234, drop_threshold=MAX, ber_threshold=MAX, burst_threshold=MAX,
              burst_length=2)
    sizes = [1, 8, 9, 64, 200]
    first_draws, at = [], 0
    all_draws = draws(1234, sum(math.ceil(s / 8) for s in sizes))
    for size in sizes:
        first_draws.append(all_draws[at].drop)
        at += math.ceil(size / 8)
    assert MAX not in first_draws
    assert all(m.frame(bytes(size)) is None for size in sizes)
    assert m.counters == counts(dropped=len(sizes))          # no error, no burst counted


def test_drop_uses_first_beat_draw():
    assert model(drop_threshold=DROP0 + 1).frame(bytes(16)) is None
    m = model(drop_threshold=DROP0)                          # not below: passes
    assert m.frame(bytes(16)) == bytes(16)
    assert m.counters == counts(frames=1)


def test_drop_threshold_sampled_at_first_beat():
    m = model(8)
    m.beat(0x41, 1, 0)
    m.controls.drop_threshold = MAX
    m.beat(0x42, 1, 1)
    assert m.out[-1].data == b"AB"
    m.controls.drop_threshold = 0
    m.controls.cut = 1
    assert m.frame(b"C") is None                        # cut wins over a zero threshold
    assert m.counters == counts(frames=1, cut=1)


def test_cut():
    m = model(drop_threshold=MAX, cut=1, ber_threshold=MAX)
    assert m.frame(bytes(20)) is None
    assert m.counters == counts(cut=1)                       # cut first, not "dropped"
    m.controls.enable = 0                                    # cut acts with enable low
    assert m.frame(bytes(20)) is None
    assert m.counters == counts(cut=2)


def test_cut_sampled_at_first_beat():
    m = model(8)
    m.beat(0x41, 1, 0)
    m.controls.cut = 1
    m.beat(0x42, 1, 1)
    assert m.out[-1].data == b"AB"
    m.beat(0x43, 1, 0)                                       # frame starts cut ...
    m.controls.cut = 0
    assert m.beat(0x44, 1, 1) is None                        # ... and stays dropped
    assert m.counters == counts(frames=1, cut=1)


# --- Step 2: bit errors -----------------------------------------------------------------------

@pytest.mark.parametrize("width, flipped", [
    (64, {0: 0x01, 8 + POS1 // 8: 0x80}),                    # bit 47 of beat 1: byte 13
    (32, {0: 0x01, 4 + POS1 % 32 // 8: 0x80}),               # 47 % 32 = 15: byte 5
    (8, {0: 0x01, 1: 0x80}),                                 # 47 % 8 = 7: byte 1
])
def test_bit_error_hand_worked(width, flipped):
    """Seed 1, threshold above beats 0-1's ``bit`` draws but not beat 2's: bit 0 of beat 0 and
    bit ``47 % eth_width`` of beat 1 flip [step 2]."""
    size = 2 * width // 8 + 1
    m = model(width, ber_threshold=BIT1 + 1)
    out = m.frame(bytes(size))
    expected = bytearray(size)
    for at, mask in flipped.items():
        expected[at] ^= mask
    assert out == bytes(expected)
    assert m.counters == counts(frames=1, error_beats=2)


def test_bit_error_threshold_strict():
    m = model(ber_threshold=BIT0)                            # draw == threshold: no error
    assert m.frame(bytes(8)) == bytes(8)
    assert m.counters["error_beats"] == 0


def test_bit_error_outside_keep_still_counted():
    m = model(64)
    m.frame(b"\x00")                                         # beat 0 passes untouched
    m.controls.ber_threshold = BIT1 + 1                      # beat 1: bit 47, byte 5
    beats = m.frame_beats(b"\x5a")
    assert beats == [Beat(0x5A ^ 1 << POS1, 0x01, 1, 0)]
    assert m.out[-1].data == b"\x5a"
    assert m.counters == counts(frames=2, error_beats=1)


# --- Step 3: bursts ---------------------------------------------------------------------------

def test_burst_crosses_frames():
    """A burst of 3 started at beat 0 inverts frame A's 2 beats and frame B's first [step 3]."""
    m = model(8, burst_threshold=MAX, burst_length=3)
    m.beat(0x0F, 1, 0)
    m.controls.burst_threshold = 0
    m.beat(0x10, 1, 1)
    assert m.frame(b"\x20\x30") == b"\xdf\x30"
    assert m.out[0].data == b"\xf0\xef"
    assert m.counters == counts(frames=2, bursts=1, burst_beats=3)


def test_bursts_do_not_overlap():
    m = model(8, burst_threshold=MAX, burst_length=3)
    assert MAX not in [d.burst for d in draws(SEED, 7)]
    assert m.frame(bytes(7)) == b"\xff" * 7
    assert m.counters == counts(frames=1, bursts=3, burst_beats=7)     # starts at 0, 3, 6


def test_burst_inverts_whole_beat_outside_keep():
    m = model(32, burst_threshold=MAX, burst_length=1)
    assert m.frame_beats(b"\x01") == [Beat(0xFFFFFFFE, 0x1, 1, 0)]


def test_burst_on_top_of_bit_error():
    """[ambiguous, ours] The inversion applies after the bit error: that bit comes out as it
    came in."""
    m = model(64, ber_threshold=BIT0 + 1, burst_threshold=MAX, burst_length=1)
    assert m.frame(bytes(8)) == b"\xfe" + b"\xff" * 7         # beat 0's error is at bit 0
    assert m.counters == counts(frames=1, error_beats=1, bursts=1, burst_beats=1)


def test_burst_skips_dropped_frames():
    m = model(8, burst_threshold=MAX, burst_length=4)
    m.frame(b"\x00\x00")
    m.controls.burst_threshold = 0
    m.controls.cut = 1
    assert m.frame(b"\x00\x00") is None                      # takes no part in the burst
    m.controls.cut = 0
    assert m.frame(b"\x00\x00\x00") == b"\xff\xff\x00"
    assert m.counters == counts(frames=2, cut=1, bursts=1, burst_beats=4)


def test_enable_low_ends_burst():
    m = model(8, burst_threshold=MAX, burst_length=10)
    assert m.frame(b"\x00") == b"\xff"
    m.controls = Controls(enable=0, burst_length=10)
    assert m.frame(b"\x00") == b"\x00"
    m.controls.enable = 1
    assert m.frame(b"\x00\x00") == b"\x00\x00"
    assert m.counters == counts(frames=3, bursts=1, burst_beats=1)


def test_burst_length_zero_no_burst():
    m = model(8, burst_threshold=MAX, burst_length=0)
    assert m.frame(b"\x00" * 4) == b"\x00" * 4
    assert m.counters == counts(frames=1)


# --- Step 4: oversize -------------------------------------------------------------------------

@pytest.mark.parametrize("width, max_bytes, fine", [(64, 64, 64), (64, 65, 72), (32, 66, 68),
                                                    (8, 64, 64)])
def test_oversize_at_max_rows(width, max_bytes, fine):
    """``max_rows`` beats pass (up to ``max_rows * W`` bytes, even above ``max_frame_bytes``);
    one more beat drops the frame, counted once [step 4]."""
    m = model(width, max_bytes)
    assert m.frame(bytes(fine)) == bytes(fine)
    assert m.frame(bytes(fine + 1)) is None
    assert m.frame(bytes(3 * fine)) is None
    assert m.frame(b"ok") == b"ok"                           # the next frame is fine
    assert m.counters == counts(frames=2, oversize=2)


def test_oversize_beat_takes_no_error():
    """Beats 0..7 of a 9-beat frame got errors; beat 8 (oversize) and on take none."""
    assert MAX not in [d.bit for d in draws(SEED, 9)]
    m = model(64, SMALL_MAX, ber_threshold=MAX)
    assert m.frame(bytes(9 * 8)) is None
    assert m.counters == counts(oversize=1, error_beats=8)


def test_oversize_beat_takes_no_part_in_burst():
    m = model(64, SMALL_MAX, burst_threshold=MAX, burst_length=10)
    m.beat(0, 0xFF, 0)
    m.controls.burst_threshold = 0
    for _ in range(9):                                       # beats 1..7 in burst, 8.. oversize
        m.beat(0, 0xFF, 0)
    m.beat(0, 0xFF, 1)
    assert m.frame(bytes(24)) == b"\xff" * 16 + bytes(8)     # burst beats 9 and 10
    assert m.counters == counts(frames=1, oversize=1, bursts=1, burst_beats=10)


def test_dropped_frame_not_counted_oversize():
    """[ambiguous, ours] A frame dropped at its first beat is not also counted oversize."""
    m = model(64, SMALL_MAX, cut=1)
    assert m.frame(bytes(200)) is None
    assert m.counters == counts(cut=1)


# --- Step 5: control drop ---------------------------------------------------------------------

ALL_KINDS = (1 << KIND_MASK_BITS) - 1


@pytest.mark.parametrize("width", WIDTHS)
def test_ctl_drop_kinds(width):
    m = model(width, ctl_threshold=MAX, ctl_kinds=1 << Ctl.ACK | 1 << Ctl.INIT)
    for kind in (Ctl.ACK, Ctl.INIT):
        assert m.frame(ctl_frame(kind)) is None
    for kind in (Ctl.NACK, Ctl.INIT_ECHO):
        assert m.frame(ctl_frame(kind)) == ctl_frame(kind)
    assert m.counters == counts(frames=2, ctl_dropped=2)


def test_ctl_drop_needs_link_ethertype():
    m = model(ctl_threshold=MAX, ctl_kinds=ALL_KINDS)
    for frame in (ctl_frame(Ctl.ACK, 0x88B5), ctl_frame(Ctl.ACK, 0xB688),
                  ctl_frame(Ctl.ACK, 0x0800)):
        assert m.frame(frame) == frame
    assert m.frame(ctl_frame(Ctl.ACK)) is None
    assert m.counters == counts(frames=3, ctl_dropped=1)


def test_ctl_kinds_from_32_never_match():
    m = model(ctl_threshold=MAX, ctl_kinds=ALL_KINDS)
    for kind in (KIND_MASK_BITS, KIND_MASK_BITS + 1, 0xFF):
        assert m.frame(ctl_frame(kind)) == ctl_frame(kind)
    for kind in (0, Ctl.CF_UPDATE, Ctl.CC_UPDATE):             # bit 0 is a kind too
        assert m.frame(ctl_frame(kind)) is None
    assert m.counters == counts(frames=3, ctl_dropped=3)


def test_ctl_drop_uses_last_beat_draw():
    """A 16-byte frame at 64 bits: beats 0 (drop draw DROP0) and 1 (DROP1 > DROP0)."""
    frame = ctl_frame(Ctl.ACK, size=16)
    for threshold, dropped in ((DROP1 + 1, True), (DROP1, False), (DROP0 + 1, False)):
        m = model(64, ctl_threshold=threshold, ctl_kinds=1 << Ctl.ACK)
        assert (m.frame(frame) is None) == dropped
        assert m.counters == counts(ctl_dropped=int(dropped), frames=int(not dropped))


def test_ctl_sampled_at_last_beat():
    m = model(64)
    beats = beats_of(ctl_frame(Ctl.NACK, size=16), 64)
    m.beat(*beats[0])
    m.controls.ctl_threshold, m.controls.ctl_kinds = MAX, 1 << Ctl.NACK
    m.beat(*beats[1])
    assert m.out == []
    m.beat(*beats[0])
    m.controls.enable = 0                                    # enable low at the last beat
    m.beat(*beats[1])
    assert len(m.out) == 1
    assert m.counters == counts(frames=1, ctl_dropped=1)


def test_ctl_drop_reads_bytes_as_they_came_in():
    """Every beat inverted by a burst: a control frame is still dropped, a frame that only
    looks like one after inversion is not [step 5]."""
    m = model(32, burst_threshold=MAX, burst_length=(1 << BURST_BITS) - 1, ctl_threshold=MAX,
              ctl_kinds=1 << Ctl.ACK)
    assert m.frame(ctl_frame(Ctl.ACK)) is None
    looks = bytes(b ^ 0xFF for b in ctl_frame(Ctl.ACK))
    assert m.frame(looks) == ctl_frame(Ctl.ACK)
    assert m.counters == counts(frames=1, ctl_dropped=1, bursts=1, burst_beats=32)


def test_ctl_dropped_frame_beats_still_get_errors():
    m = model(64, ber_threshold=MAX, ctl_threshold=MAX, ctl_kinds=1 << Ctl.ACK)
    assert m.frame(ctl_frame(Ctl.ACK)) is None
    assert m.counters == counts(ctl_dropped=1, error_beats=8)


def test_ctl_drop_needs_byte_14_beat():
    """At 8 bits a 14-byte frame never takes beat 14; 15 bytes do."""
    m = model(8, ctl_threshold=MAX, ctl_kinds=ALL_KINDS)
    short = ctl_frame(Ctl.ACK, size=14)
    assert m.frame(short) == short
    assert m.frame(ctl_frame(Ctl.ACK, size=15)) is None
    assert m.counters == counts(frames=1, ctl_dropped=1)


def test_ctl_byte_14_read_from_data_beyond_keep():
    """[ambiguous, ours] At 64 bits a 14-byte frame takes beat 1 (bytes 8-15): byte 14 is read
    from the data bits even where ``keep`` leaves it out."""
    m = model(64, ctl_threshold=MAX, ctl_kinds=1 << Ctl.ACK)
    m.beat(0, 0xFF, 0)
    m.beat(Ctl.ACK << 48 | 0xB688 << 32, 0x3F, 1)            # bytes 12, 13 = 88 B6; 14 = ACK
    assert m.out == []
    assert m.frame(ctl_frame(Ctl.ACK, size=14)) is not None  # padding: byte 14 is kind 0
    assert m.counters == counts(frames=1, ctl_dropped=1)


def test_oversize_frame_not_ctl_dropped():
    m = model(64, SMALL_MAX, ctl_threshold=MAX, ctl_kinds=1 << Ctl.ACK)
    assert m.frame(ctl_frame(Ctl.ACK, size=65)) is None
    assert m.counters == counts(oversize=1)


# --- Counters, reseed and reset -------------------------------------------------------------

def test_counters_wrap():
    m = model()
    m.counters["frames"] = MAX
    m.frame(b"x")
    assert m.counters["frames"] == 0


def test_seed_zero_is_zero_seed():
    a, b = model(seed=0, ber_threshold=MAX), model(seed=ZERO_SEED, ber_threshold=MAX)
    frames = [bytes(n) for n in (5, 30, 64)]
    assert [a.frame(f) for f in frames] == [b.frame(f) for f in frames]


def test_reseed_and_reset():
    rng = random.Random(seed_of("reseed"))
    frames = [rng.randbytes(rng.randint(1, 200)) for _ in range(20)]
    noisy = dict(ber_threshold=1 << 31, burst_threshold=1 << 29, burst_length=3,
                 drop_threshold=1 << 30)
    m = model(32, seed=11, **noisy)
    first = [m.frame(f) for f in frames]
    running = m.burst_left
    m.reseed(22)
    second = [m.frame(f) for f in frames]
    # A reseed loads the generator only: a burst running on from the first frames goes on.
    fresh = model(32, seed=22, **noisy)
    fresh.burst_left = running
    assert second == [fresh.frame(f) for f in frames]
    from_22 = model(32, seed=22, **noisy)
    m.beat(0x1234, 0xF, 0)                                   # a frame partly taken ...
    m.reset()                                                # ... is forgotten
    assert m.counters == counts()
    assert [m.frame(f) for f in frames] == [from_22.frame(f) for f in frames]   # the last seed
    m.reseed(11)
    m.reset()
    assert [m.frame(f) for f in frames] == first


def test_reseed_keeps_frame_state():
    """The beat in the strobe's clock takes the old draws; the frame goes on [channel]."""
    m = model(8, ber_threshold=BIT0 + 1)
    m.beat(0, 1, 0)                                          # seed 1's beat 0: bit 0 flips
    m.reseed(SEED)
    m.beat(0, 1, 1)                                          # beat 0's draws again
    assert m.out[-1].data == b"\x01\x01"
    assert m.counters == counts(frames=1, error_beats=2)


def test_frame_mid_frame_rejected():
    m = model()
    m.beat(0, 0xFF, 0)
    with pytest.raises(ValueError):
        m.frame(b"x")


# --- Rates ------------------------------------------------------------------------------------

TRIALS = 4000


def test_drop_rate():
    rng = random.Random(seed_of("drop rate"))
    p = rng.uniform(0.05, 0.5)
    m = model(64, seed=rng.getrandbits(64), drop_threshold=frame_threshold(p))
    for _ in range(TRIALS):
        m.frame(bytes(rng.randint(1, 24)))
    assert m.counters["dropped"] + m.counters["frames"] == TRIALS
    assert plausible(m.counters["dropped"], TRIALS, p)


@pytest.mark.parametrize("width", WIDTHS)
def test_bit_error_rate(width):
    rng = random.Random(seed_of(f"ber {width}"))
    ber = rng.uniform(1e-4, 2e-3)
    m = model(width, seed=rng.getrandbits(64), ber_threshold=ber_threshold(ber, width))
    flipped = 0
    width_bytes = width // 8
    for _ in range(TRIALS // 4):
        payload = rng.randbytes(4 * width_bytes)
        out = m.frame(payload)
        flipped += sum(bin(a ^ b).count("1") for a, b in zip(payload, out))
    beats = TRIALS
    p_beat = 1 - (1 - ber) ** width
    assert plausible(m.counters["error_beats"], beats, p_beat)
    assert flipped == m.counters["error_beats"]              # one bit per errored beat


def test_burst_and_ctl_rates():
    rng = random.Random(seed_of("burst and ctl rates"))
    p_burst, p_ctl = rng.uniform(0.05, 0.5), rng.uniform(0.05, 0.5)
    m = model(64, seed=rng.getrandbits(64), burst_threshold=frame_threshold(p_burst),
              burst_length=1, ctl_threshold=frame_threshold(p_ctl), ctl_kinds=1 << Ctl.ACK)
    frame = ctl_frame(Ctl.ACK, size=16)
    for _ in range(TRIALS // 2):
        m.frame(frame)
    assert plausible(m.counters["bursts"], TRIALS, p_burst)
    assert m.counters["burst_beats"] == m.counters["bursts"]
    assert plausible(m.counters["ctl_dropped"], TRIALS // 2, p_ctl)
