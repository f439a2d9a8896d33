# SPDX-License-Identifier: BSD-2-Clause
"""The lossless link's retry and credits [rtl/scaleup_ip/ethx/link/README.md §2-§4]: three proofs, for every
input sequence of any length, by k-induction with SymbiYosys (:func:`sim.prove.prove_sby`), each
with one clock of induction hypothesis.

All three use the smallest link the configuration allows: 4-bit sequence numbers (16 of them),
two VCs, 2048-byte ring, queues and receive buffer. Resets are free in every clock and reset the
environment with the circuit. Internal registers named below are reached through the elaborated
module (:func:`_internal`). The whole file takes about 40 s on one core, 25 s on two.

**1. In-order, duplicate-free delivery** (:class:`scaleup_ip.ethx.link.rx.llr.LlrRx`; about 2 s).
Every frame LlrRx accepts (``accept``, DATA or CC) is the transmitter's next frame after the last
one accepted, its true index tracked by the harness: no duplicate, no gap. The one gap allowed is
the README's (§3.2): a FLUSH drops every frame kept, and the frame wanted next is then the first
after them. And while the transmitter is synchronized, every ACK or NACK LlrRx sends (``sent``)
carries the last frame accepted (``last_good + 1`` is the frame wanted): it never acknowledges a
frame LlrRx has not accepted.

The environment is an abstract go-back-N transmitter keeping up to ``window`` frames (8 =
``2**(seq_bits-1)``, the largest ``replay_frames`` allowed), whose frames reach LlrRx at once
through a channel that may lose any of them or make any of them BAD (then with any number). The
transmitter is kept relative to its oldest frame kept, A (sequence number ``tx_a``): the next
frame to send A + s, one past the highest sent A + h, the next to enter A + n (0 <= s <= h <= n
<= window), and the frame LlrRx must accept next, A + w. Every clock, freely: a frame enters
(while n < window); the frame A + s is sent (when synchronized and s < n); a frame already
acknowledged, A − 1 down to A − (window − 1), is sent again (LlrTx did so before the fix of
proof 2; kept as a superset); and
one of: an ACK moves A forward by at most w (the receiver's ACKs carry no more, as the second
property shows), the transmitter goes back to any frame A .. A + h (a NACK, its timer, ``up``
rising: a superset of go-back-N), a FLUSH (A := A + n, not synchronized), an INIT_ECHO
(synchronized, once LlrRx has taken an INIT of this epoch). While not synchronized it sends
INIT(A), which the channel may lose or make BAD, and no eligible frame. Any other frame is BAD,
FOREIGN or a control frame other than INIT, every field free; ``room``, ``sent``, ``ack_bytes``
and ``ack_delay`` are free.

Why the channel may deliver at once: the wire is in order and LlrRx's ``accept`` depends only
on the order of the frames it judges, so each frame can be moved to the clock it was sent
(every frame sent before a FLUSH then arrives before it, every INIT before the first frame of
its epoch), and an ACK the transmitter takes was sent earlier, so it carries at most the frame
now wanted. One assumption: the INIT_ECHO that synchronizes the transmitter answers an INIT of
its epoch (a late echo of the epoch before carries that epoch's A, at most ``replay_frames −
1`` frames from this one: the peer's control sender sends an echo asked for before any later
ACK, so the transmitter cannot have advanced further; the two numbers never alias).
Invariants, inductive in one step with the properties: the pointers are in order; nothing is
sent or wanted before synchronization, which follows an INIT taken; once LlrRx has taken the
INIT, it is not OFF and expects A + w.

Mutants (made by hand on in-memory copies of the RTL, never on the files), each failing the
proof and a bounded check from reset within 8 clocks: LlrRx accepting a frame one behind
(``d == 15``), advancing ``expected`` for an expected DATA frame without room, an INIT setting
``expected`` to its number + 1. Equivalent here, passing: accepting while OFF (no eligible
frame reaches LlrRx before its first INIT). The window is tight: with ``window`` 9 the order
fails (a frame resent 7 behind A has the number of A + 9, the frame wanted); without the resends
of acknowledged frames, ``window`` 15 passes (LlrRx only accepts ``d == 0``) and 16 fails.
:func:`test_in_order_proof_can_fail`: a channel that may bring a stale INIT to a synchronized
receiver (an INIT from before the last FLUSH) makes a bounded check of the order alone fail
within 6 clocks: LlrRx takes a frame twice.

**2. Frames kept** (:class:`scaleup_ip.ethx.link.tx.llr.LlrTx`, which owns the sequence numbers,
with the :class:`scaleup_ip.ethx.link.tx.ring.ReplayRing` whose ``room`` lets frames in, wired as in
:class:`scaleup_ip.ethx.link.tx.sender.LinkTx`; ``replay_frames`` 2, 4 and 8; about 2 s each).
Whatever the frames offered on the ring's ``i``, ``up``, the settings, the control messages on
``ctl`` (ACK, NACK, INIT_ECHO or any other kind, any 20-bit number, at any time), the ring's ``go``
(in any clock LlrTx's ``may_send`` allows) and ``o.ready``: ``kept`` (``next − acked``, LinkTx's
port) equals the frames that entered the ring (``pushed``) and were neither acknowledged nor
flushed, as the harness counts them, and is at most ``replay_frames − 1`` (< 8, half the sequence
space). The harness keeps its own oldest frame kept and one past the highest frame sent (a frame
started on the ring, ``started``, with ``sent`` equal to it is new); an ACK or NACK(s) frees ``d =
(s + 1 − acked) mod 16`` frames if ``d`` is at most the frames sent and kept (README §3.2; while not
synchronized none has been sent, so no ACK frees any); ``flushed`` frees them all, with a frame
entering in the same clock. Invariants: the harness's pointers are LlrTx's (``acked``, ``top``);
only frames kept were sent, and none while not synchronized; ``sent`` lies from ``acked`` to
``top``; a frame being written into the ring (``inside``) or waiting for its FCS (``pending``) had
room; the ring's ``room``, a clock old, holds after a clock in which nothing entered (``quiet``).

Found, and fixed in LlrTx: ``sent`` could fall behind ``acked``. When ``up`` rises in OFF in the
same clock as a valid ACK or NACK arrives, LlrTx's state machine (``_states``: REPLAY from the
oldest frame kept, ``sent := acked``) sets ``sent`` to the old ``acked`` and overrides the ACK's own
update of ``sent``, while ``acked`` moves past it. A run from reset (``replay_frames`` 4): ``up``
1 and a frame enters; INIT_ECHO(0): ADVANCE; frame 0 starts (sent 1); ``up`` 0: OFF; ``up`` 1
in the clock NACK(0) arrives: acked 1, sent 0. LlrTx then starts frame 0 again although it is
acknowledged and freed: the ring reads a descriptor and rows that may be rewritten meanwhile, so
the wire gets a duplicate (dropped by the peer) or a garbled frame (a bad FCS: a NACK and a
replay), and ``outstanding`` (``sent − acked``) wrapped, so the catch-up of ``sent`` by a later
ACK (``freed > outstanding``) was off until ``sent`` passed ``acked`` or the timer expired.
LlrTx now replays from the oldest frame kept after that clock's ACK or NACK, and the invariant
"``sent`` lies from ``acked`` to ``top``" holds (it failed before the fix).

Mutants that fail the proof: the ring keeping ``replay_frames`` frames (no free slot: a bounded
check of 22 clocks finds ``kept`` 2 with ``replay_frames`` 2, 250 s, too slow to keep here), ACKs
valid up to ``next`` instead of the highest sent, a FLUSH forgetting the frame entering in its
clock, an ACK freeing one frame too many (these three each also fail a bounded check of 13
clocks). :func:`test_occupancy_proof_can_fail`: a harness deaf to ACKs makes a bounded check of
the property alone fail (a frame enters, is sent and acknowledged: 13 clocks, about 12 s).

**3. Credits** (:class:`scaleup_ip.ethx.link.tx.credit.CreditTx` and
:class:`scaleup_ip.ethx.link.rx.credit.CreditRx`, which own ``S_CC``, ``S_CF``, ``R_CC`` and
``R_CF``; ``credit_size`` 512, so the 2048-byte buffer holds 4 credits and a frame takes 1 to 3;
about 20 s). The harness counts each VC's credits by where their frame or message is: ``live``,
frames CreditTx started (``start`` without ``cc``) that may still be accepted; ``lost``, frames a
FLUSH dropped whose credits no CC_UPDATE has brought back yet; ``buf``, frames accepted and not yet
freed (the receive buffer); ``fr``, credits freed that no CF_UPDATE taken by the sender has reported
yet. Proved, per VC, in the 20-bit cyclic arithmetic of the counters: ``S_CC − R_CC = live + lost``,
``R_CC − R_CF = buf``, ``R_CF − S_CF = fr``, so ``S_CU = S_CC − S_CF = live + lost + buf + fr``
(conservation: the credits the sender counts in use are exactly those in flight, lost, buffered or
freed and unreported; ``port_limit`` minus their sum is free at the sender); ``S_CU`` within the
VC's limit, the VCs' sum within ``port_limit``, hence the buffer's credits, ``sum(buf)``, within
``port_limit`` <= ``rx_credits`` (asserted too): as a frame takes at least its bytes in credits, the
buffer never holds more than ``credit_size × port_limit <= rx_bytes`` bytes; and every CF_UPDATE the
sender gets passes its check (no ``CREDIT_ERROR``).

The environment abstracts everything between the counters. The VC queues: a head is a frame of
64 .. 1514 bytes that stays until CreditTx starts it (as TxQueues' heads do); ``idle`` (the
ring's feeder), ``room`` (the ring's), ``cc_period``, ``node``, ``cf_bytes``, ``cf_period`` and
CreditRx's ``sent`` are free; the limits are constant, any 20-bit values, with ``port_limit <=
rx_credits`` (README §4). The link (the ring and LLR, proof 1): frames reach CreditRx in order,
each at most once, so an accepted DATA frame is one of ``live`` (any size whose credits ``live``
holds: a superset); a FLUSH moves any part of ``live`` to ``lost`` and may drop the CC_UPDATEs
in flight; a CC_UPDATE started and not dropped may be accepted at any time, carrying ``S_CC``
as it was at its start, ``S_CC − live`` (every frame started before it was accepted or flushed,
and the flushed ones came before it: a FLUSH drops the whole ring). Any other frame CreditRx is
told of is not an accepted DATA or CC. The buffer frees any frame of ``buf`` (any size: a
superset) at any time. The control channel is in order and may drop any CF_UPDATE: one that
arrives carries ``R_CF`` as it was when sent, any value from the last one the sender took up to
``R_CF`` now: ``R_CF − lag``, ``lag <= fr``. Written so, Z3 takes minutes; the harness writes
the CC_UPDATE's counts as ``R_CC + lost`` and the CF_UPDATE's as ``S_CF + fr − lag``, equal to
the above in every state the first and third properties hold in, which the proof covers.
Invariant, besides the properties: a VC's registered ``fits`` (a clock old) still fits while
CreditTx may start (``rested``).

Mutants that fail the proof and a bounded check from reset within 7 clocks: CreditTx admitting
one credit over a VC's limit, its round-robin ignoring ``fits``, starting in the clock after a
start (``fits`` then stale), CreditRx's CC_UPDATE adding ``R_CC − S_CC``, CreditRx freeing
credits on every VC. Equivalent here, passing: CreditTx taking every CF_UPDATE without its
check (in order, the check never refuses one). :func:`test_credit_proof_can_fail`: a link that
may deliver a CC_UPDATE older than a frame accepted since (out of order: what sequencing
CC_UPDATEs with the data prevents) makes a bounded check fail within 6 clocks: R_CC goes back
and the frame's credits leak.
"""

from types import SimpleNamespace

import pytest
from amaranth import Cat, Elaboratable, Module, Mux, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.lib import data
from amaranth.lib.wiring import In

from scaleup_ip.ethx.link import (
    COUNT_BITS,
    Class,
    Ctl,
    LinkConfig,
    MIN_FRAME_BYTES,
    RxState,
    head_layout,
    verdict_layout,
)
from scaleup_ip.ethx.link.rx import CreditRx, LlrRx
from scaleup_ip.ethx.link.tx import CreditTx, LlrTx, ReplayRing
from sim.prove import prove_sby


def _config(**changes):
    """The smallest link the configuration allows, with ``changes``."""
    return LinkConfig(**{"eth_width": 64, "seq_bits": 4, "replay_frames": 4, "vcs": 2,
                         "replay_bytes": 2048, "queue_bytes": 2048, "rx_bytes": 2048,
                         **changes})


#: Proof 1: the largest replay window 4-bit sequence numbers allow.
RX_CONFIG = _config(replay_frames=8)
#: Proof 2: ``replay_frames`` proved: the smallest, a middle one, half the sequence space.
TX_REPLAY_FRAMES = (2, 4, 8)
#: Proof 3: 4 credits in the receive buffer, 1 to 3 per frame.
CREDIT_CONFIG = _config(credit_size=512)
#: Clocks of the base case and of the induction hypothesis.
RX_DEPTH = TX_DEPTH = CREDIT_DEPTH = 1


def _inputs(component, driven=()):
    """The input ports of ``component`` that the harness leaves free."""
    driven = {id(Value.cast(x)) for x in driven}
    return [Value.cast(value) for _, member, value in component.signature.flatten(component)
            if member.flow == In and id(Value.cast(value)) not in driven]


def _internal(module, name):
    """The signal ``name`` that the elaborated ``module`` (not its submodules) drives."""
    found = [s for s in module._driving.keys() if s.name == name]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def _elaborate(m, name, component, platform):
    """``component`` elaborated here (for its internal signals) as submodule ``name``."""
    m.submodules[name] = inner = component.elaborate(platform)
    component._MustUse__used = True                 # (which Amaranth cannot see)
    return inner


class _InOrder(Elaboratable):
    """LlrRx fed by an abstract go-back-N transmitter of ``window`` frames through a channel
    that may lose or corrupt any frame; ``stale_init``: the channel may also deliver an INIT
    while the transmitter is synchronized (the broken twin)."""

    def __init__(self, window=None, invariants=True, stale_init=False):
        self.config = cfg = RX_CONFIG
        self.window = window or 1 << (cfg.seq_bits - 1)
        self.invariants, self.stale_init = invariants, stale_init
        self.rx = LlrRx(cfg)
        w = self.window.bit_length()
        free = {"push": 1, "send": 1, "again": 1, "behind": w, "lose": 1, "bad": 1, "cc": 1,
                "init": 1, "judge": 1, "event": 3, "ack": w, "back": w}
        self.free = SimpleNamespace(**{k: Signal(n, name=f"f_{k}") for k, n in free.items()})
        self.junk = Signal(verdict_layout(cfg), name="f_junk")    # any other frame

    def inputs(self):
        """The harness's free inputs and LlrRx's that it leaves free."""
        rx = self.rx
        return [*vars(self.free).values(), self.junk.as_value(),
                *_inputs(rx, driven=(rx.judge, rx.verdict))]

    def elaborate(self, platform):
        m = Module()
        cfg, rx, f, window = self.config, self.rx, self.free, self.window
        bits = cfg.seq_bits
        m.submodules.rx = rx
        # The transmitter, relative to its oldest frame kept A (sequence number ``a``).
        a = Signal(bits, name="tx_a")
        s, h, n, w = (Signal(range(window + 1), name=f"tx_{x}") for x in "shnw")
        synced = Signal(name="tx_synced")       # an INIT_ECHO came back: eligible frames go
        heard = Signal(name="tx_heard")         # LlrRx took an INIT(A) of this epoch

        # The frame judged this clock.
        sending = f.send & synced & (s < n)                     # the frame A + s
        again = f.again & synced & (f.behind != 0) & (f.behind < window)   # A − behind
        init = f.init & (~synced | self.stale_init)             # INIT(A)
        seq = Mux(sending, a + s, Mux(again, a - f.behind, a))[:bits]
        v = Signal.like(self.junk)
        m.d.comb += v.eq(self.junk)
        with m.If(sending | again):
            m.d.comb += [v.cls.eq(Mux(f.bad, Class.BAD, Mux(f.cc, Class.CC, Class.DATA))),
                         v.seq.eq(Cat(seq, self.junk.seq[bits:]))]
        with m.Elif(init):
            m.d.comb += [v.cls.eq(Mux(f.bad, Class.BAD, Class.CONTROL)), v.kind.eq(Ctl.INIT),
                         v.seq.eq(Cat(seq, self.junk.seq[bits:]))]
        with m.Else():
            junk = self.junk
            m.d.comb += Assume(junk.cls.as_value().matches(Class.BAD, Class.FOREIGN, Class.CONTROL)
                               & ~((junk.cls == Class.CONTROL) & (junk.kind == Ctl.INIT)),
                               "any other frame is bad, foreign or control but INIT")
        ours = sending | again | init
        judge = Mux(ours, ~f.lose, f.judge)
        m.d.comb += [rx.judge.eq(judge), rx.verdict.eq(v)]

        took = rx.accept
        m.d.comb += Assert(~took | (sending & ~f.lose & ~f.bad & (s == w)),
                           "in order: each frame accepted is the next one sent")
        if not self.stale_init:                 # (the twin breaks this too; checked alone)
            m.d.comb += Assert(~synced | ~(rx.sent.ack | rx.sent.nack)
                               | ((rx.last_good + 1)[:bits] == (a + w)[:bits]),
                               "an ACK or NACK carries the last frame accepted")

        # The transmitter's next state: the frame sent, then one event.
        s1, w1 = Signal.like(s), Signal.like(w)
        m.d.comb += [s1.eq(s + sending), w1.eq(w + took)]
        h1 = Mux(s1 > h, s1, h)
        push = f.push & (n < window)
        k = f.ack
        with m.If((f.event == 1) & synced):             # ACK(A + k − 1)
            m.d.comb += Assume(k <= w, "an ACK carries a frame accepted")
            m.d.sync += [a.eq(a + k), s.eq(Mux(s1 > k, s1 - k, 0)), h.eq(h1 - k),
                         n.eq(n - k + push), w.eq(w1 - k)]
        with m.Elif(f.event == 2):                      # go back to A + back
            m.d.comb += Assume(f.back <= h1, "a replay starts at a frame sent and kept")
            m.d.sync += [s.eq(f.back), h.eq(h1), n.eq(n + push), w.eq(w1)]
        with m.Elif(f.event == 3):                      # FLUSH
            m.d.sync += [a.eq(a + n + push), s.eq(0), h.eq(0), n.eq(0), w.eq(0),
                         synced.eq(0), heard.eq(0)]
        with m.Else():
            m.d.sync += [s.eq(s1), h.eq(h1), n.eq(n + push), w.eq(w1)]
            with m.If((f.event == 4) & heard):          # INIT_ECHO
                m.d.sync += synced.eq(1)
        with m.If(init & judge & ~f.bad & (f.event != 3)):
            m.d.sync += heard.eq(1)

        if self.invariants:
            m.d.comb += [
                Assert((s <= h) & (h <= n) & (n <= window) & (w <= h), "i: pointers in order"),
                Assert(synced | ((h == 0) & (w == 0)), "i: nothing sent unsynchronized"),
                Assert(~synced | heard, "i: synchronized after an INIT"),
                Assert(~heard | ((rx.state != RxState.OFF) & (rx.expected == (a + w)[:bits])),
                       "i: LlrRx expects the frame wanted"),
            ]
        return m


def test_in_order_proof(tmp_path):
    """For every input sequence: LlrRx accepts the frames in the order sent, each once, and
    its ACKs and NACKs acknowledge only frames accepted."""
    proof = _InOrder()
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, RX_DEPTH)
    assert proved, log[-3000:]


def test_in_order_proof_can_fail(tmp_path):
    """With a channel that may deliver a stale INIT to a synchronized receiver, a bounded check
    of the property alone finds a run from reset in which LlrRx takes a frame twice."""
    proof = _InOrder(invariants=False, stale_init=True)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, 6, mode="bmc")
    assert not proved
    assert "in order: each frame accepted is the next one sent" in log


class _Occupancy(Elaboratable):
    """LlrTx keeping the pointers of a ReplayRing, with free inputs; the harness counts the
    frames kept. ``deaf``: the count ignores ACKs and NACKs (the broken twin)."""

    def __init__(self, replay_frames, invariants=True, deaf=False):
        self.config = _config(replay_frames=replay_frames)
        self.invariants, self.deaf = invariants, deaf
        self.llr, self.ring = LlrTx(self.config), ReplayRing(self.config)
        self.go = Signal(name="f_go")

    def inputs(self):
        """Every input port of LlrTx and the ring but those wired between them."""
        llr, ring = self.llr, self.ring
        return [*_inputs(llr, driven=(llr.pushed, llr.started)),
                *_inputs(ring, driven=(ring.seq, ring.acked, ring.sent, ring.next, ring.go)),
                self.go]

    def elaborate(self, platform):
        m = Module()
        cfg, llr, ring = self.config, self.llr, self.ring
        bits, frames = cfg.seq_bits, cfg.replay_frames
        llr_m = _elaborate(m, "llr", llr, platform)
        ring_m = _elaborate(m, "ring", ring, platform)
        m.d.comb += [ring.seq.eq(llr.next), ring.acked.eq(llr.acked), ring.sent.eq(llr.sent),
                     ring.next.eq(llr.next), llr.pushed.eq(ring.pushed),
                     llr.started.eq(ring.started), ring.go.eq(self.go & llr.may_send)]
        # The harness: the oldest frame kept, one past the highest sent (from it), the count.
        acked = Signal(bits, name="h_acked")
        top = Signal(range(frames), name="h_top")
        count = Signal(bits, name="h_count")
        ctl = llr.ctl
        d = Signal(bits)
        m.d.comb += d.eq(ctl.seq[:bits] + 1 - acked)
        acks = ctl.valid & ctl.kind.as_value().matches(Ctl.ACK, Ctl.NACK) & (d <= top)
        freed = Mux(acks & ~self.deaf, d, 0)
        new = ring.started & (llr.sent == (acked + top)[:bits])
        with m.If(llr.flushed):
            m.d.sync += [acked.eq(acked + count + ring.pushed), top.eq(0), count.eq(0)]
        with m.Else():
            m.d.sync += [acked.eq(acked + freed), top.eq(top + new - freed),
                         count.eq(count + ring.pushed - freed)]
        kept = (llr.next - llr.acked)[:bits]
        m.d.comb += [
            Assert(kept == count, "kept: the frames entered, not acknowledged, not flushed"),
            Assert(count <= frames - 1, "kept: at most replay_frames - 1"),
        ]
        if self.invariants:
            l_top = _internal(llr_m, "top")
            inside, pending = _internal(ring_m, "inside"), _internal(ring_m, "pending")
            quiet = _internal(ring_m, "quiet")
            m.d.comb += [
                Assert(llr.acked == acked, "i: acked"),
                Assert((l_top - llr.acked)[:bits] == top, "i: highest sent"),
                Assert(top <= count, "i: only frames kept were sent"),
                Assert(_internal(llr_m, "synced") | (top == 0), "i: none sent unsynchronized"),
                Assert((llr.sent - llr.acked)[:bits] <= top, "i: sent from acked to top"),
                Assert(~pending | (count < frames - 1), "i: a frame waiting for its FCS had room"),
                Assert(~inside | (count + pending < frames - 1), "i: a frame entering had room"),
                Assert(~(ring.room & quiet) | (count + pending < frames - 1),
                       "i: room (a clock old) holds while nothing entered"),
            ]
        return m


@pytest.mark.parametrize("replay_frames", TX_REPLAY_FRAMES)
def test_occupancy_proof(tmp_path, replay_frames):
    """For every input sequence: the ring keeps exactly the frames entered and neither
    acknowledged nor flushed, at most ``replay_frames - 1``."""
    assert replay_frames - 1 < 1 << (_config().seq_bits - 1)
    proof = _Occupancy(replay_frames)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, TX_DEPTH)
    assert proved, log[-3000:]


def test_occupancy_proof_can_fail(tmp_path):
    """With a count deaf to ACKs, a bounded check of the property alone finds a run from reset
    that breaks it: a frame enters, is sent and acknowledged."""
    proof = _Occupancy(2, invariants=False, deaf=True)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, 13, mode="bmc")
    assert not proved
    assert "kept: the frames entered, not acknowledged, not flushed" in log


def _credits(cfg, nbytes):
    """``pkt_credits`` of a frame of ``nbytes`` bytes [README §4]."""
    return (nbytes + cfg.pkt_overhead + cfg.credit_size - 1) >> (cfg.credit_size.bit_length() - 1)


class _Credits(Elaboratable):
    """CreditTx and CreditRx, joined by an abstract link, receive buffer and control channel;
    the harness's counts of the credits by where they are. ``stale_cc``: the link may deliver
    a CC_UPDATE whose counts are older than frames accepted since (the broken twin)."""

    def __init__(self, invariants=True, stale_cc=False):
        self.config = cfg = CREDIT_CONFIG
        self.invariants, self.stale_cc = invariants, stale_cc
        self.tx, self.rx = CreditTx(cfg), CreditRx(cfg)
        vcs, nbytes = cfg.vcs, range(cfg.max_frame_bytes + 1)
        counts = data.ArrayLayout(COUNT_BITS, vcs)
        small = data.ArrayLayout(4, vcs)
        heads = data.ArrayLayout(head_layout(cfg), vcs)
        free = {"heads": heads, "limits": counts, "port_limit": COUNT_BITS,
                "rx": 2, "vc": range(vcs), "nbytes": nbytes,           # what CreditRx judges
                "judge": 1, "accept": 1, "cls": Class, "junk": counts,
                "flush": 1, "keep_cc": 1, "lose": small,                 # a FLUSH
                "free": 1, "free_vc": range(vcs), "free_bytes": nbytes,  # the buffer
                "cf": 1, "other": 1, "kind": Ctl, "lag": small}          # control messages
        self.free = SimpleNamespace(**{k: Signal(n, name=f"f_{k}") for k, n in free.items()})

    def inputs(self):
        """The harness's free inputs and those of CreditTx and CreditRx it leaves free."""
        tx, rx = self.tx, self.rx
        return [*_inputs(tx, driven=(tx.heads, tx.cf, tx.limits, tx.port_limit)),
                *_inputs(rx, driven=(rx.judge, rx.accept, rx.cls, rx.vc, rx.nbytes, rx.counts,
                                     rx.freed)),
                *(Value.cast(x) for x in vars(self.free).values())]

    def elaborate(self, platform):
        m = Module()
        cfg, tx, rx, f = self.config, self.tx, self.rx, self.free
        vcs = range(cfg.vcs)
        tx_m = _elaborate(m, "tx", tx, platform)
        _elaborate(m, "rx", rx, platform)
        self._settings(m)
        self._heads(m)
        live, lost, buf, fr = ([Signal(4, name=f"h_{what}{v}") for v in vcs]
                               for what in ("live", "lost", "buf", "fr"))
        cc_live = Signal(name="h_cc_live")          # a CC_UPDATE started since the last FLUSH

        def frame(nbytes):
            return (nbytes >= MIN_FRAME_BYTES) & (nbytes <= cfg.max_frame_bytes)

        # The link: what CreditRx judges (a poisoned frame: a frame sent, taken and freed).
        data_in = f.rx == 1
        cc_in = (f.rx == 2) & cc_live
        poison_in = f.rx == 3
        c_in = _credits(cfg, f.nbytes)
        m.d.comb += [rx.vc.eq(f.vc), rx.nbytes.eq(f.nbytes),
                     Assume(~(data_in | poison_in) | frame(f.nbytes), "a frame's length")]
        for v in vcs:
            m.d.comb += Assume(~(data_in | poison_in) | (f.vc != v) | (c_in <= live[v]),
                               "a frame sent")
        with m.If(data_in | cc_in | poison_in):
            m.d.comb += [rx.judge.eq(1), rx.accept.eq(1),
                         rx.cls.eq(Mux(data_in, Class.DATA,
                                       Mux(poison_in, Class.POISONED, Class.CC)))]
        with m.Else():
            m.d.comb += [rx.judge.eq(f.judge), rx.accept.eq(f.accept), rx.cls.eq(f.cls),
                         Assume(~(f.judge & f.accept)
                                | ~f.cls.as_value().matches(Class.DATA, Class.CC,
                                                            Class.POISONED),
                                "no other DATA, CC or POISONED accepted")]
        for v in vcs:
            # S_CC at the CC_UPDATE's start: S_CC - live, which is R_CC + lost.
            stale = 0
            if self.stale_cc:                   # from before frames still in the buffer
                stale = f.lag[v]
                m.d.comb += Assume(~cc_in | (f.lag[v] <= buf[v]), "stale by frames accepted")
            m.d.comb += rx.counts[v].eq(Mux(cc_in, rx.r_cc[v] + lost[v] - stale, f.junk[v]))
        # The buffer frees frames.
        c_out = _credits(cfg, f.free_bytes)
        m.d.comb += [rx.freed.valid.eq(f.free), rx.freed.frame.vc.eq(f.free_vc),
                     rx.freed.frame.bytes.eq(f.free_bytes),
                     Assume(~f.free | frame(f.free_bytes), "a frame's length")]
        for v in vcs:
            m.d.comb += Assume(~f.free | (f.free_vc != v) | (c_out <= buf[v]), "a frame kept")
        # The control channel: CF_UPDATEs in order, any of them lost.
        cf = tx.cf
        m.d.comb += [cf.valid.eq(f.cf | f.other), cf.kind.eq(Mux(f.cf, Ctl.CF_UPDATE, f.kind)),
                     Assume(f.kind != Ctl.CF_UPDATE, "other control messages")]
        for v in vcs:
            # R_CF when it was sent: S_CF + fr - lag, which is R_CF - lag.
            m.d.comb += [cf.counts[v].eq(Mux(f.cf, tx.s_cf[v] + fr[v] - f.lag[v], f.junk[v])),
                         Assume(~f.cf | (f.lag[v] <= fr[v]), "a value R_CF had")]

        # Where the credits go.
        for v in vcs:
            sent = Mux(tx.start & ~tx.cc & (tx.pick == v), _credits(cfg, tx.heads[v].bytes), 0)
            got = Mux(data_in & (f.vc == v), c_in, 0)
            poisoned = Mux(poison_in & (f.vc == v), c_in, 0)
            out = Mux(f.free & (f.free_vc == v), c_out, 0)
            gone = Mux(f.flush, f.lose[v], 0)
            m.d.comb += Assume(~f.flush | (f.lose[v] + got + poisoned <= live[v]),
                               "a FLUSH drops frames sent")
            m.d.sync += [
                live[v].eq(live[v] - got - poisoned - gone + sent),
                lost[v].eq(Mux(cc_in, 0, lost[v]) + gone),
                buf[v].eq(buf[v] + got - out),
                fr[v].eq(Mux(f.cf, f.lag[v], fr[v]) + Mux(cc_in, lost[v], 0) + out + poisoned),
            ]
        with m.If(tx.start & tx.cc):
            m.d.sync += cc_live.eq(1)
        with m.Elif(f.flush & ~f.keep_cc):
            m.d.sync += cc_live.eq(0)

        # The properties.
        held = [live[v] + lost[v] + buf[v] + fr[v] for v in vcs]
        for v in vcs:
            m.d.comb += [
                Assert(tx.s_cc[v] == (rx.r_cc[v] + live[v] + lost[v])[:COUNT_BITS],
                       "S_CC - R_CC: credits in flight or lost"),
                Assert(rx.r_cc[v] == (rx.r_cf[v] + buf[v])[:COUNT_BITS],
                       "R_CC - R_CF: credits in the buffer"),
                Assert(rx.r_cf[v] == (tx.s_cf[v] + fr[v])[:COUNT_BITS],
                       "R_CF - S_CF: credits freed, not reported"),
                Assert(tx.s_cc[v] == (tx.s_cf[v] + held[v])[:COUNT_BITS],
                       "conservation: S_CU is the credits in flight, lost, buffered, freed"),
                Assert(held[v] <= f.limits[v], "S_CU within the VC's limit"),
            ]
        m.d.comb += [
            Assert(sum(held) <= f.port_limit, "S_CU within the port limit"),
            Assert(sum(buf) <= f.port_limit, "the buffer's credits within the port limit"),
            Assert(~f.cf | (tx.credit_errors == 0), "every CF_UPDATE taken"),
        ]
        if self.invariants:
            fits, rested = _internal(tx_m, "fits"), _internal(tx_m, "rested")
            for v in vcs:
                c = _credits(cfg, f.heads[v].bytes)
                m.d.comb += Assert(~rested | ~fits[v]
                                   | (f.heads[v].valid & (held[v] + c <= f.limits[v])
                                      & (sum(held) + c <= f.port_limit)),
                                   "i: a head that fitted still fits")
        return m

    def _settings(self, m):
        """Limits: constant, the port's within the receive buffer."""
        cfg, tx, f = self.config, self.tx, self.free
        was_limits = Signal.like(f.limits, reset_less=True)
        was_port = Signal.like(f.port_limit, reset_less=True)
        held = Signal(reset_less=True)
        m.d.sync += [was_limits.eq(f.limits), was_port.eq(f.port_limit), held.eq(1)]
        m.d.comb += [
            Assume(~held | ((f.limits.as_value() == was_limits.as_value())
                            & (f.port_limit == was_port)), "limits constant"),
            Assume(f.port_limit <= cfg.rx_credits, "the port limit within the receive buffer"),
            tx.limits.eq(f.limits), tx.port_limit.eq(f.port_limit),
        ]

    def _heads(self, m):
        """The VC queues' heads: a whole frame, waiting until CreditTx starts it."""
        cfg, tx, f = self.config, self.tx, self.free
        taken = tx.start & ~tx.cc
        was, was_pick, was_taken = Signal.like(f.heads), Signal.like(tx.pick), Signal()
        m.d.sync += [was.eq(f.heads), was_pick.eq(tx.pick), was_taken.eq(taken)]
        for v in range(cfg.vcs):
            head, before = f.heads[v], was[v]
            m.d.comb += [
                Assume(~head.valid | ((head.bytes >= MIN_FRAME_BYTES)
                                      & (head.bytes <= cfg.max_frame_bytes)), "a frame's length"),
                Assume(~before.valid | (was_taken & (was_pick == v))
                       | (head.as_value() == before.as_value()), "a head waits until taken"),
            ]
        m.d.comb += tx.heads.eq(f.heads)


def test_credit_proof(tmp_path):
    """For every input sequence: the credit counters split exactly into credits in flight,
    lost, in the buffer and freed, the buffer never holds more than the port limit, and every
    CF_UPDATE is taken."""
    proof = _Credits()
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, CREDIT_DEPTH)
    assert proved, log[-3000:]


def test_credit_proof_can_fail(tmp_path):
    """With a link that may deliver a stale CC_UPDATE, a bounded check finds a run from reset
    that breaks the counters: R_CC goes back."""
    proof = _Credits(invariants=False, stale_cc=True)
    proved, log = prove_sby(proof, proof.inputs(), tmp_path, 6, mode="bmc")
    assert not proved
    assert "S_CC - R_CC: credits in flight or lost" in log
