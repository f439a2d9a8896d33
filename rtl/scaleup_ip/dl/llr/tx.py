# SPDX-License-Identifier: BSD-2-Clause
"""The DL transmitter's link-level replay: sequence numbers, the TxReplay buffer, Acks and Replay
Requests received, flit headers [UALink 1.0 §6.6]."""

from types import SimpleNamespace

from amaranth import C, Module, Mux, Signal
from amaranth.lib import data, enum
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ...counters import count_events
from ...ram import PipelinedRam
from ..layout import (
    ACK_TIMEOUT_BITS,
    ACK_TIMEOUT_DEFAULT,
    BEAT_BITS,
    BEATS_PER_FLIT,
    EXPLICIT_EVERY,
    FH_BYTES,
    MAX_UNACKED,
    REPLAY_IGNORE,
    REPLAY_REQUEST_COPIES,
    SEQ_BITS,
    SEQ_MODULUS,
    DlConfig,
    FlitOp,
    LinkMode,
    TxCount,
    body_stream,
    command_header,
    explicit_header,
    ingress_layout,
    last_beat_layout,
    phy_stream,
    tx_counts,
)
from ..logic import beat_count, seq_diff, seq_next

__all__ = ["LlrTx", "ReplaySource"]

#: Where the flit header sits in the last beat, in bits [ours: the logical layout].
_FH_LSB = last_beat_layout["header"].offset
#: What travels beside a beat read from TxReplay (:meth:`LlrTx._output`): whether it is one,
#: whether its flit is a NOP (zeroed), its ``last``, and the flit header of a last beat.
_stage = data.StructLayout({"valid": 1, "zero": 1, "last": 1, "fh": FH_BYTES * 8})
#: [§6.6.6.3] The validity windows of Acks and Replay Requests.
_WINDOW = 256


class ReplaySource(enum.Enum, shape=2):
    """Where the flit being sent comes from [§6.6.6.6]."""
    NOP = 0
    NEW = 1                 # the packer (a payload flit, or a NOP if it packed nothing)
    REPLAY = 2              # TxReplay


class LlrTx(ConfiguredComponent):
    """The transmit half of link-level replay [§6.6]: one DL flit every 10 clocks, each from
    TxReplay during a Standard Replay, else from the packer when TxReplay may take a flit,
    else a NOP flit; every flit with its header.

    **Sequence numbers** [§6.6.6.1]: a payload flit from the packer takes Tx_last_seq + 1 (511
    wraps to 1) and is kept in TxReplay (block RAM of ``replay_depth`` flits); a NOP flit
    (nothing packed, or no packer flit taken) uses Tx_last_seq and is not kept. A packer flit
    is taken only when not replaying, TxReplay has room and fewer than 255 flits are
    unacknowledged [§6.6.6.5]; otherwise NOP flits go, so the packer (and the TL) wait.

    **Headers** [§6.6.6.7]: the first flit of a replay is Explicit (op Replay); otherwise an
    Explicit flit every 7 flits (Replay or Original); otherwise, while Replay Requests are
    due, a Replay Request command for Rx_last_seq_calc + 1 (3 copies, one per flit [ours:
    each DL flit is its own FEC-interleave group]); otherwise an Ack command for
    Rx_last_seq_calc (``rx_seq``).

    **Received commands** (``ingress``, from the local receiver) [§6.6.6.3]: an Ack inside
    the validity window frees TxReplay up to its ackReqSeq and rearms the ack timer; a Replay
    Request inside its window, when the 12-flit ignore window is over, starts a replay from
    its ackReqSeq at the next flit (a replay in progress starts over). Commands outside the
    windows are ignored and counted. During a replay, flits acknowledged meanwhile are
    skipped [ours]: the replay goes on from the oldest unacknowledged flit.

    **The choice a clock ahead**: which flit goes next (replay, packer or NOP; the TxReplay
    address) is made in the clock before its first beat, from the state that clock leaves
    but for the command taken in it: that command counts for this flit as taken at its first
    beat [ours: one clock of Ack latency more; a Replay Request then restarts the flit, as
    one taken while it is under way].

    **Ack timeout** [§6.6.6.8]: counted in flit times while flits are unacknowledged and the
    link is Up; ``timeout`` pulses when it runs out (the link then leaves Up).

    Latency: a packer beat taken in clock ``t`` is on ``o`` at ``t + 3`` (it is read back
    from TxReplay, :meth:`_output`); an Ack on
    ``ingress`` in clock ``t`` acts on the flits that start from ``t + 2``, a Replay Request
    (checked in clock ``t``, taken in ``t + 1``) from ``t + 3``. Throughput: one
    beat per clock while ``o`` is ready (and ``mode`` is not IDLE). ``body`` is taken only
    within flits this block chose to take from it, a flit's 10 beats in a row.

    Parameters
    ----------
    config : DlConfig

    Members
    -------
    body : In(body_stream())
        DL flit bodies from the packer.
    o : Out(phy_stream())
        DL flits with their header; CRC bytes zero (:class:`~scaleup_ip.dl.crc.insert.DlCrcInsert`
        fills them in).
    ingress : In(ingress_layout)
        One clock per flit received by the local receiver.
    rx_seq : In(SEQ_BITS)
        Rx_last_seq_calc of the local receiver.
    request : In(1)
        The local receiver wants a replay: send 3 Replay Requests.
    mode : In(LinkMode)
        What may be sent; sampled at each flit's first beat.
    ack_timeout : In(ACK_TIMEOUT_BITS)
        Tx_ack_time_out in flit times (:data:`~scaleup_ip.dl.layout.ACK_TIMEOUT_DEFAULT`: 1 ms);
        taken when the timer is rearmed; 0 counts as 1.
    timeout : Out(1)
        A pulse when the ack timer runs out.
    nop : Out(1)
        A pulse per NOP flit sent (for the NOP state's count).
    unacked : Out(range(MAX_UNACKED + 1))
        Flits in TxReplay.
    counts : Out(tx_counts)
        Counters by :class:`~scaleup_ip.dl.layout.TxCount`, a clock after their events.
    """

    config_class = DlConfig

    def __init__(self, config):
        super().__init__(config, {
            "body": In(body_stream()),
            "o": Out(phy_stream()),
            "ingress": In(ingress_layout),
            "rx_seq": In(SEQ_BITS),
            "request": In(1),
            "mode": In(LinkMode),
            "ack_timeout": In(ACK_TIMEOUT_BITS),
            "timeout": Out(1),
            "nop": Out(1),
            "unacked": Out(range(MAX_UNACKED + 1)),
            "counts": Out(tx_counts),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        m.submodules.replay = ram = PipelinedRam(BEAT_BITS, cfg.replay_depth * BEATS_PER_FLIT)
        st = _State(cfg)
        m.d.comb += self.unacked.eq(st.unacked)
        # ``o`` free or moving, twice: ``advance`` for the output stages and TxReplay's read
        # registers (a net with over a hundred loads), ``moving`` for the handshake with the
        # packer, from ``empty``, a flop of its own (the complement of ``o.valid``, so that
        # the two are not merged), and so off that net.
        empty = Signal(init=1)
        advance = ~self.o.valid | self.o.ready
        moving = empty | self.o.ready
        step = Signal()                             # a beat goes (below)
        beat, first, last = beat_count(m, step)
        src = Signal(ReplaySource)                       # of the flit being sent (beats 1 .. 9)
        now = Signal(ReplaySource)                       # of this beat's flit
        seq = Signal(SEQ_BITS)                      # a replayed flit's sequence number
        addr = Signal(range(cfg.replay_depth * BEATS_PER_FLIT))     # the next beat's address
        start = Signal()
        m.d.comb += start.eq(moving & first & (self.mode != LinkMode.IDLE))
        ready = _Ready(cfg)                         # the next flit's choice, made a clock ahead
        up = self.mode == LinkMode.UP
        choice = Signal(ReplaySource)
        m.d.comb += [
            choice.eq(Mux(up & ready.more, ReplaySource.REPLAY,
                          Mux(up & ready.room & ~ready.replay & self.body.valid, ReplaySource.NEW,
                              ReplaySource.NOP))),
            now.eq(Mux(first, Mux(self.mode == LinkMode.IDLE, ReplaySource.NOP, choice), src)),
        ]
        # A packer flit waits for each of its beats; the others go at once. (At the first
        # beat the packer is chosen only when its beat is there, so ``choice`` is not on
        # the way.)
        m.d.comb += [
            step.eq(moving & Mux(first, self.mode != LinkMode.IDLE,
                                  (src != ReplaySource.NEW) | self.body.valid)),
            self.body.ready.eq(step & (now == ReplaySource.NEW)),
        ]
        address = Mux(first, Mux(choice == ReplaySource.REPLAY, ready.replay_base, ready.new_base),
                      addr)
        m.d.comb += [
            ram.w_addr.eq(address), ram.w_data.eq(self.body.p.data),
            ram.w_en.eq(step & (now == ReplaySource.NEW)),
        ]
        # The last beat (``step & last``; its source is ``src``, the first beat's choice is
        # not on the way).
        done = moving & last & ((src != ReplaySource.NEW) | self.body.valid)
        header = self._schedule(m, st, done, src, seq, self.body.p.payload)
        # The flit after a replayed one: its sequence number and slot.
        after = SimpleNamespace(seq=Signal(SEQ_BITS, init=1), q=Signal(SEQ_BITS, init=1),
                                slot=Signal(range(cfg.replay_depth)))
        with m.If(step):
            m.d.sync += addr.eq(address + 1)
            with m.If(first):
                m.d.sync += [src.eq(choice), seq.eq(ready.seq),
                             after.seq.eq(seq_next(ready.seq)), after.q.eq(_fwd(ready.q)),
                             after.slot.eq(_wrap(ready.slot + 1, cfg.replay_depth))]
        self._output(m, ram, step, advance, empty, address, now, last, header)
        # A read-only view of the state, for the proof (tb/dl/test_replay_proof.py).
        self.state = SimpleNamespace(st=st, beat=beat, src=src, first=first, last=last,
                                     seq=seq, after=after, ready=ready)
        self._choose(m, st, ready, done, ~first, src, after)
        self._ingress(m, st, start, ready)
        self._timer(m, st, done)
        self._count(m, st, done, src)
        return m

    def _choose(self, m, st, ready, done, under, src, after):
        """The next flit's choice, a clock ahead [§6.6.6.5, §6.6.6.6]: whether a replay has a
        flit left (``more``: its slot, TxReplay address and sequence number; ``done``: none
        left, the replay ends when the next flit starts) and whether TxReplay has room for a
        packer flit, made every clock from the state the next clock will have but for the
        commands taken in this one. It matters only in the clock before a first beat: after
        a flit's last beat, or while a first beat waits. So a flit ``under`` way counts as
        ending now: it moves Tx_last_seq (a packer's payload flit: ``unacked``, ``tail``) or
        the replay (a replayed flit not restarted: to the flit ``after`` it). A command taken
        in this clock counts for the next flit's choice as taken at its first beat: an Ack
        frees the flits for the flit after [ours: one clock of Ack latency more], a Replay
        Request restarts the flit started (``restarted``). Every candidate (moved or not, a
        flit added or not) is computed side by side and the last mux picks; the slots' ``×
        10`` is shifts and an add."""
        cfg = self._config
        body_src = src == ReplaySource.NEW
        st.new = done & body_src & self.body.p.payload
        new = under & body_src & self.body.p.payload
        moved = under & (src == ReplaySource.REPLAY) & ~st.restarted
        # The replay's place among the unacknowledged flits, oldest .. Tx_last_seq (one more
        # when a packer flit ends now): among them, a flit is left; just past them, the
        # replay is done; beyond, it was acknowledged meanwhile [ours] and goes on from the
        # oldest. Each place is a flit's distance back from Tx_last_seq + 2 (``q``, kept as a
        # register for both places the replay may be at): 0 and 1 are the two numbers after
        # Tx_last_seq, and the oldest is ``span`` (= unacked + 1) back, so each cyclic
        # interval from the oldest is one compare of two registers and a test of q's low
        # values [ours: no compare waits for another].
        st.places = []                                # (for the proof)
        def place(seq, q):
            inside = q <= st.span                     # oldest .. Tx_last_seq + 2
            after_last = inside & (q != 0)            # oldest .. Tx_last_seq + 1
            among = after_last & (q != 1)             # oldest .. Tx_last_seq
            st.places.append((seq, inside, after_last, among))
            acked = Mux(new, ~inside, ~after_last)
            left = Mux(new, acked | after_last,
                       Mux(acked, st.unacked != 0, (st.unacked != 0) & among))
            return acked, left
        acked_moved, left_moved = place(after.seq, after.q)
        acked_still, left_still = place(st.replay_seq, st.replay_q)
        acked = Mux(moved, acked_moved, acked_still)
        more = st.replay & Mux(moved, left_moved, left_still)
        # ready.seq's distance back, from Tx_last_seq + 2 as it will be in the next clock
        # (which a packer's flit ending now moves on; never while a replayed flit ends).
        q = Mux(acked, Mux(st.new, st.span + 1, st.span),
                Mux(moved, after.q, Mux(st.new, _back(st.replay_q), st.replay_q)))
        plus = st.span                                # unacked + 1
        room = Mux(new, (plus < cfg.replay_depth) & (plus < MAX_UNACKED),
                   (st.unacked < cfg.replay_depth) & (st.unacked < MAX_UNACKED))
        m.d.sync += [
            ready.more.eq(more),
            ready.done.eq(st.replay & ~more),
            ready.replay.eq(st.replay),
            ready.room.eq(room),
            ready.slot.eq(Mux(acked, st.head, Mux(moved, after.slot, st.replay_slot))),
            ready.seq.eq(Mux(acked, st.oldest, Mux(moved, after.seq, st.replay_seq))),
            ready.q.eq(q),
            ready.replay_base.eq(Mux(acked, _times_beats(st.head),
                                     Mux(moved, _times_beats(after.slot),
                                         _times_beats(st.replay_slot)))),
            ready.new_base.eq(Mux(new, _times_beats(st.tail_on), _times_beats(st.tail))),
        ]
        with m.If(st.new):
            m.d.sync += [st.tail.eq(st.tail_on),
                         st.tail_on.eq(_wrap(st.tail_on + 1, cfg.replay_depth))]
            m.d.sync += [st.replay_q.eq(_back(st.replay_q)), after.q.eq(_back(after.q))]
        with m.If(done & (src == ReplaySource.REPLAY) & ~st.restarted):     # as Tx_replay_seq
            m.d.sync += [st.replay_slot.eq(after.slot), st.replay_q.eq(after.q)]

    def _schedule(self, m, st, done, src, seq, packed):
        """The flit header, decided at its last beat (of a flit from ``src``) [§6.6.6.7]; the
        state it moves (at the end of the last beat, ``done``)."""
        payload = (src == ReplaySource.REPLAY) | ((src == ReplaySource.NEW) & packed)
        replayed = src == ReplaySource.REPLAY
        flit_seq = Mux(replayed, seq, Mux(payload, st.last_seq_1, st.last_seq))
        count = Mux(st.explicit == 0, 0, st.explicit - 1)
        explicit = Signal(explicit_header)
        command = Signal(command_header)
        header = Signal(FH_BYTES * 8)
        # A Replay Request taken while this flit was under way restarts the replay: this flit
        # neither is its first nor moves it on [ours].
        first_replay = st.first_replay & replayed & ~st.restarted
        due = first_replay | (count == 0)
        ask = ~due & (st.requests != 0)
        ask_seq = Mux(st.requests == REPLAY_REQUEST_COPIES, seq_next(self.rx_seq),
                      st.request_seq)
        m.d.comb += [
            explicit.op.eq(Mux(replayed, FlitOp.REPLAY, FlitOp.ORIGINAL)),
            explicit.payload.eq(payload),
            explicit.seq.eq(flit_seq),
            command.op.eq(Mux(ask, FlitOp.REPLAY_REQUEST, FlitOp.ACK)),
            command.payload.eq(payload),
            command.ack_req_seq.eq(Mux(ask, ask_seq, self.rx_seq)),
            command.seq_lo.eq(flit_seq[:3]),
            header.eq(Mux(due, explicit.as_value(), command.as_value())),
        ]
        st.asked = done & ask
        with m.If(done):
            m.d.sync += st.explicit.eq(Mux(due, EXPLICIT_EVERY, count))
            with m.If(first_replay):
                m.d.sync += st.first_replay.eq(0)
            with m.If(ask):
                m.d.sync += [st.requests.eq(st.requests - 1), st.request_seq.eq(ask_seq)]
            with m.If((src == ReplaySource.NEW) & packed):
                m.d.sync += [st.last_seq.eq(flit_seq), st.last_seq_1.eq(st.last_seq_2),
                             st.last_seq_2.eq(st.last_seq_3),
                             st.last_seq_3.eq(seq_next(st.last_seq_3))]
            with m.If(replayed & ~st.restarted):
                m.d.sync += st.replay_seq.eq(seq_next(seq))
        with m.If(self.request):                    # after the ask above: a new request wins
            m.d.sync += st.requests.eq(REPLAY_REQUEST_COPIES)
        return header

    def _output(self, m, ram, step, advance, empty, address, now, last, header):
        """``o``: every beat read back from TxReplay, a packer's beat too (written when taken),
        or zero for a NOP flit, with the header in the last beat. A beat goes through three
        registers: its address (``address``, read the clock after a packer's beat is written),
        then TxReplay's two read registers (on an ECP5 the block RAM's own), so ``o``'s data
        leaves a register [ours: two clocks more, for the block RAM's output register]. The
        three stages move together whenever ``o`` moves (``advance``); a clock with no beat
        (``step`` low) moves an empty one. ``empty`` is kept as ``~o.valid``."""
        addr = Signal.like(address)
        beat = [Signal(_stage, name=f"stage{k}") for k in range(3)]
        with m.If(advance):
            m.d.sync += [addr.eq(address), beat[0].valid.eq(step),
                         beat[0].zero.eq(now == ReplaySource.NOP), beat[0].last.eq(last),
                         beat[0].fh.eq(Mux(last, header, 0)),
                         *(stage.eq(before) for stage, before in zip(beat[1:], beat)),
                         empty.eq(~beat[1].valid)]
        o = beat[2]
        # The header's bytes are zero in every stored beat.
        m.d.comb += [
            ram.r_addr.eq(addr), ram.r_en.eq(advance), ram.r_out_en.eq(advance),
            self.o.valid.eq(o.valid),
            self.o.p.data.eq(Mux(o.zero, 0, ram.r_data) | (o.fh << _FH_LSB)),
            self.o.p.last.eq(o.last),
        ]

    def _ingress(self, m, st, started, ready):
        """Acks and Replay Requests from the local receiver [§6.6.6.3], the ignore window;
        ``started``: a flit starts now, as ``ready`` chose it a clock before."""
        cfg = self._config
        ingress = self.ingress
        seq = ingress.ack_req_seq
        # The receiver drops commands with ackReqSeq 0 [§6.6.6.3]; one that came here would be
        # an Ack outside every window. Beside the window compares, not in front of them.
        zero = seq == 0
        in_buffer = seq_diff(st.last_seq, seq) <= _WINDOW
        is_ack = ingress.command & (ingress.op == FlitOp.ACK)
        # A Replay Request is checked in the clock it comes and taken in the next
        # (``taken``, with the slot of its flit): one clock more for the window compares and
        # the slot's addition [ours]. One checked in the clock its predecessor is taken is in
        # the ignore window.
        taken = Signal(name="replay_request_taken")
        ask = (ingress.command & (ingress.op == FlitOp.REPLAY_REQUEST) & (st.ignore == 0)
               & ~taken)
        # [ours] An Ack is taken only up to Tx_last_seq (Figure 6-19). The spec's two tests,
        # each <= 256, say the same when 2 or more flits are unacknowledged; with 0 or 1 they
        # overlap and would take an Ack 255 or 256 ahead, leaving 256 flits "unacknowledged".
        # So an Ack is in the cyclic interval Rx_last_ack .. Tx_last_seq (compares, no
        # subtraction), and what it leaves is Tx_last_seq - seq.
        ack_ok = Signal()
        m.d.comb += ack_ok.eq(is_ack & ~zero & _within(seq, st.last_ack, st.last_seq))
        left = seq_diff(st.last_seq, seq)                   # unacknowledged after an Ack
        offset = seq_diff(seq, st.oldest)
        ask_ok = ask & (offset <= _WINDOW) & in_buffer
        taken_seq = Signal(SEQ_BITS, name="replay_request_seq")
        taken_slot = Signal(range(cfg.replay_depth), name="replay_request_slot")
        taken_q = Signal(SEQ_BITS, init=2, name="replay_request_q")   # back from Tx_last_seq + 2
        st.taken_seq, st.taken_q = taken_seq, taken_q
        # The slot of flit ``seq`` when it is in TxReplay (else the replay goes from the
        # oldest, :meth:`_choose`); an Ack taken meanwhile moves the head, not the flit.
        m.d.sync += [taken.eq(ask_ok), taken_seq.eq(seq),
                     taken_q.eq(Mux(st.new, seq_diff(st.last_seq_3, seq),
                                    seq_diff(st.last_seq_2, seq))),
                     taken_slot.eq(_wrap(st.head + offset[:len(st.head) + 1],
                                         cfg.replay_depth))]
        st.ack_error = is_ack & ~ack_ok
        st.ask_error = ask & ~ask_ok
        st.acked = ack_ok & (seq != st.last_ack)
        # Tx_last_seq moves on with a packer's flit ending now (``new``): what the Ack leaves is
        # then counted from Tx_last_seq + 1, a register, so the compares and subtractions all
        # start from registers and only the last two muxes wait for them [ours].
        left_on = seq_diff(st.last_seq_1, seq)
        m.d.sync += [
            st.unacked.eq(Mux(ack_ok, Mux(st.new, left_on, left),
                              Mux(st.new, st.span, st.unacked))),
            st.span.eq(Mux(ack_ok, Mux(st.new, seq_diff(st.last_seq_2, seq), left_on),
                           Mux(st.new, st.span + 1, st.span))),
        ]
        # A request taken in the clock before a flit starts came after its choice.
        asked_before = Signal()
        m.d.sync += asked_before.eq(taken)
        with m.If(ingress.flit & (st.ignore != 0)):
            m.d.sync += st.ignore.eq(st.ignore - 1)
        with m.If(ack_ok):
            # Flit seq + 1 is ``left`` slots before the slot of Tx_last_seq + 1 (``left`` is at
            # most the unacknowledged flits, which TxReplay holds).
            m.d.sync += [st.last_ack.eq(seq), st.oldest.eq(seq_next(seq)),
                         st.head.eq(_wrap(st.tail + cfg.replay_depth - left[:len(st.tail) + 1],
                                          cfg.replay_depth))]
        with m.If(started & ready.done & ~asked_before):
            m.d.sync += st.replay.eq(0)
        with m.If(started):
            m.d.sync += st.restarted.eq(asked_before)
        with m.If(taken):
            m.d.sync += [st.replay.eq(1), st.first_replay.eq(1), st.ignore.eq(REPLAY_IGNORE),
                         st.replay_seq.eq(taken_seq), st.restarted.eq(1),
                         st.replay_q.eq(Mux(st.new, _back(taken_q), taken_q)),
                         st.replay_slot.eq(taken_slot)]
        st.asked_replay = taken

    def _timer(self, m, st, flit_done):
        """Tx_ack_counter [§6.6.6.8]: counts down per flit time while flits are unacknowledged
        and the link is Up, rearmed by an Ack that frees flits (or when none is left)."""
        left = Signal(ACK_TIMEOUT_BITS, init=ACK_TIMEOUT_DEFAULT)
        waiting = (st.unacked != 0) & (self.mode == LinkMode.UP)
        m.d.comb += self.timeout.eq(flit_done & waiting & (left <= 1))
        with m.If(st.acked | (st.unacked == 0)):
            m.d.sync += left.eq(self.ack_timeout)
        with m.Elif(flit_done & waiting & (left != 0)):
            m.d.sync += left.eq(left - 1)
        with m.If(self.timeout):
            m.d.sync += left.eq(self.ack_timeout)

    def _count(self, m, st, flit_done, src):
        c = self.counts
        packed = (src == ReplaySource.NEW) & self.body.p.payload
        events = {
            TxCount.FLITS: flit_done,
            TxCount.PAYLOAD: flit_done & packed,
            TxCount.REPLAYED: flit_done & (src == ReplaySource.REPLAY),
            TxCount.REPLAYS: st.asked_replay,
            TxCount.REPLAY_REQUESTS: st.asked,
            TxCount.ACK_ERRORS: st.ack_error,
            TxCount.REQUEST_ERRORS: st.ask_error,
            TxCount.TIMEOUTS: self.timeout,
        }
        count_events(m, c, events, late=True)
        with m.If(st.unacked > c[TxCount.PEAK]):
            m.d.sync += c[TxCount.PEAK].eq(st.unacked)
        m.d.comb += self.nop.eq(flit_done & ~packed & (src != ReplaySource.REPLAY))


class _State:
    """The replay state [§6.6.4, §6.6.5] with its defaults."""

    def __init__(self, cfg):
        self.last_seq = Signal(SEQ_BITS, init=SEQ_MODULUS, name="tx_last_seq")
        self.last_seq_1 = Signal(SEQ_BITS, init=1, name="tx_last_seq_1")     # ... + 1
        self.last_seq_2 = Signal(SEQ_BITS, init=2, name="tx_last_seq_2")     # ... + 2
        self.last_seq_3 = Signal(SEQ_BITS, init=3, name="tx_last_seq_3")     # ... + 3
        self.last_ack = Signal(SEQ_BITS, init=SEQ_MODULUS, name="rx_last_ack")
        self.head = Signal(range(cfg.replay_depth), name="head")   # slot of last_ack + 1
        self.oldest = Signal(SEQ_BITS, init=1, name="oldest")      # last_ack + 1
        self.tail = Signal(range(cfg.replay_depth), name="tail")   # slot of last_seq + 1
        self.tail_on = Signal(range(cfg.replay_depth), init=1 % cfg.replay_depth,
                              name="tail_on")                       # ... and the one after
        # Tx_last_seq - Rx_last_ack, kept as a register.
        self.unacked = Signal(range(MAX_UNACKED + 1), name="unacked_flits")
        self.span = Signal(SEQ_BITS, init=1, name="span")          # ... + 1
        self.replay = Signal(name="tx_replay")
        self.first_replay = Signal(name="tx_first_replay")
        self.replay_seq = Signal(SEQ_BITS, init=1, name="replay_seq")   # the next to replay
        self.replay_slot = Signal(range(cfg.replay_depth), name="replay_slot")  # ... its slot
        # ... and its distance back from Tx_last_seq + 2 (LlrTx._choose)
        self.replay_q = Signal(SEQ_BITS, init=1, name="replay_q")
        self.restarted = Signal(name="replay_restarted")    # a request came during this flit
        self.explicit = Signal(range(EXPLICIT_EVERY + 1), init=EXPLICIT_EVERY,
                               name="tx_explicit_count")
        self.requests = Signal(range(REPLAY_REQUEST_COPIES + 1), name="tx_replay_req_count")
        self.request_seq = Signal(SEQ_BITS, name="tx_replay_req_seq_no")
        self.ignore = Signal(range(REPLAY_IGNORE + 1), name="rx_replay_ignore_count")


class _Ready:
    """The next flit's choice, registered a clock ahead (:meth:`LlrTx._choose`)."""

    def __init__(self, cfg):
        addresses = range(cfg.replay_depth * BEATS_PER_FLIT)
        self.more = Signal(name="ready_more")               # a replayed flit is due
        self.done = Signal(name="ready_done")               # the replay has none left
        self.replay = Signal(name="ready_replay")           # Tx_replay
        self.room = Signal(name="ready_room")               # TxReplay takes a packer flit
        self.slot = Signal(range(cfg.replay_depth), name="ready_slot")  # the replayed flit's
        self.seq = Signal(SEQ_BITS, init=1, name="ready_seq")   # ... and its sequence number
        self.q = Signal(SEQ_BITS, init=1, name="ready_q")       # ... back from Tx_last_seq + 2
        self.replay_base = Signal(addresses, name="ready_replay_base")  # its first address
        self.new_base = Signal(addresses, name="ready_new_base")        # a packer flit's


def _within(seq, first, last):
    """Whether sequence number ``seq`` is in the cyclic interval ``first`` .. ``last`` (fewer
    than 511 numbers, ``first`` included): compares, no subtraction."""
    return Mux(first <= last, (seq >= first) & (seq <= last), (seq >= first) | (seq <= last))


def _back(q):
    """A distance back ``q`` (:func:`seq_diff`) once the sequence numbers move on one."""
    return Mux(q == SEQ_MODULUS - 1, 0, q + 1)[:SEQ_BITS]


def _fwd(q):
    """The distance back of the sequence number after the one ``q`` back."""
    return Mux(q == 0, SEQ_MODULUS - 1, q - 1)[:SEQ_BITS]


def _times_beats(slot):
    """``slot * 10`` (:data:`BEATS_PER_FLIT`) as two shifts and an add."""
    assert BEATS_PER_FLIT == 10
    return (slot << 3) + (slot << 1)


def _wrap(value, depth):
    """``value % depth`` for ``value < 2 * depth`` (its low bits for a power of two)."""
    if depth == 1:
        return C(0, 1)
    width = (depth - 1).bit_length()
    if depth & (depth - 1) == 0:
        return value[:width]
    return Mux(value >= depth, value - depth, value)[:width]
