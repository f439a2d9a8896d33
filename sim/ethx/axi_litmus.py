# SPDX-License-Identifier: BSD-2-Clause
"""The message-passing litmus with release and acquire made and checked in hardware at a
bridge's GPU port (:class:`AxiLitmus`), for the ETH-X scenarios whose traffic lives in
hardware (:mod:`sim.ethx.run`); :func:`select_manager`, which lends a GPU port to it or to the
burst generator.

The same test as :func:`sim.ethx.litmus.message_passing`, which drives it from cocotb:

- a producer writes, each round ``r`` = 1, 2, ..., :data:`MP_WORDS` 8-byte words to the data
  (word ``k`` is :func:`mp_word` ``(r, k)``) in 64-byte INCR bursts on AXI IDs 0-2, queued
  behind one another, then ``r`` to the flag's low four bytes (AWID 3, the release bit set);
  once all five Bs are back it waits 0 to 199 clocks (an xorshift32 draw) and starts the next
  round;
- a consumer on the same port, until the producer's last round is done, reads the flag with
  acquire (ARID 4) and, without waiting for it, the data (ARID 5), then again. A read pair is
  *stale* when a data word is older than the flag's round (release and acquire both failed
  to order something), its words are out of place (*bad index*), or the data read's AR reached
  the far memory (``far_ar``, which the top computes at the far memory's port) before the
  acquire's R was back here (*bad acquire*).
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.ethx import EthxConfig, axi4_signature, user_layout
from scaleup_ip.model.ethx.bridge import Burst

__all__ = ["AxiLitmus", "DATA_OFFSET", "MP_WORDS", "mp_word", "select_manager"]

#: Bytes from the flag to the data in the far memory: another 4 KB page.
DATA_OFFSET = 0x1000
#: 8-byte words of the data, and bytes of each data burst.
MP_WORDS, BURST_BYTES = 32, 64
#: The producer's AWIDs (data bursts round-robin over the first three, the flag the last) and
#: the consumer's ARIDs (acquire, data).
DATA_IDS, FLAG_ID, ACQUIRE_ID, READ_ID = 3, 3, 4, 5
#: Delays between a round's last B and the next round's first AW: 0 to this minus one.
MAX_PAUSE = 200
_COUNT_BITS = 32
_BURSTS = MP_WORDS * 8 // BURST_BYTES


def mp_word(rnd, k):
    """Word ``k`` of round ``rnd``'s data: the round in the low four bytes, ``k`` above."""
    return (k % (1 << 32)) << 32 | rnd % (1 << 32)


class AxiLitmus(ConfiguredComponent):
    """Message passing with release and acquire to node ``dst`` on VC ``vc``, the flag at byte
    ``flag_at`` (4 KB aligned) and the data :data:`DATA_OFFSET` above: rounds 1 to ``rounds``
    from the moment ``enable`` rises (``rounds`` sampled then), until ``done``.

    Counters (32 bits): ``rounds_done`` rounds whose five Bs are back; ``reads`` read pairs
    back; ``flags_seen`` read pairs whose flag differs from the previous pair's; ``stale``
    read pairs with a data word older than their flag; ``bad_index`` data words out of
    place; ``bad_acquire`` data ARs at the far memory (``far_ar`` high one clock each) before
    the acquire's R of their pair was back; ``bad_resp`` Bs and Rs not OKAY, of an ID not
    ours, or with a wrong RLAST. ``done``: the last round written and the last read pair
    back. The far memory must hold round 0's data (:func:`mp_word` ``(0, k)``) at the start.
    ``relaxed`` high sends the flag's write and read without the release and acquire bits:
    the checks then fail, as they should.
    """

    config_class = EthxConfig

    def __init__(self, config, dst, vc, flag_at):
        if config.data_width > 8 * BURST_BYTES:
            raise ValueError(f"AxiLitmus: the bus must be at most {8 * BURST_BYTES} bits wide")
        if config.id_width < READ_ID.bit_length():
            raise ValueError(f"AxiLitmus: AXI IDs of {READ_ID.bit_length()} bits or more needed")
        if flag_at % 4096 or flag_at + DATA_OFFSET + 8 * MP_WORDS > 1 << config.addr_width:
            raise ValueError(f"AxiLitmus: flag_at must be 4 KB aligned, not {flag_at:#x}")
        self.dst, self.vc, self.flag_at = dst, vc, flag_at
        super().__init__(config, lambda c: {
            "axi": Out(axi4_signature(c.addr_width, c.data_width, c.id_width,
                                      user_layout(c).size)),
            "enable": In(1), "rounds": In(_COUNT_BITS), "relaxed": In(1), "far_ar": In(1),
            "done": Out(1),
            **{name: Out(_COUNT_BITS) for name in (
                "rounds_done", "reads", "flags_seen", "stale", "bad_index", "bad_acquire",
                "bad_resp")},
        })

    def _user(self, order):
        """AxUSER to ``dst`` on ``vc``, with the order bit if ``order`` and not ``relaxed``."""
        layout = user_layout(self.config)
        plain = layout.const({"node": self.dst, "vc": self.vc, "order": 0}).as_bits()
        ordered = layout.const({"node": self.dst, "vc": self.vc, "order": 1}).as_bits()
        return Mux(self.relaxed, plain, ordered) if order else plain

    @property
    def data_at(self):
        """Byte address of the data."""
        return self.flag_at + DATA_OFFSET

    @property
    def _burst_beats(self):
        return BURST_BYTES // (self.config.data_width // 8)

    def elaborate(self, platform):
        m = Module()
        axi = self.axi
        for ch in ("aw", "ar"):
            m.d.comb += [getattr(axi, f"{ch}size").eq(self.config.bus_size),
                         getattr(axi, f"{ch}burst").eq(Burst.INCR)]
        m.d.comb += [axi.bready.eq(1), axi.rready.eq(1)]
        running, last_round = Signal(), Signal(_COUNT_BITS)
        with m.If(self.enable & ~running & ~self.done):
            m.d.sync += [running.eq(1), last_round.eq(self.rounds)]
        writing, bad_b = self._producer(m, running, last_round)
        reading = self._consumer(m, writing, bad_b)
        with m.If(running & ~writing & ~reading):
            m.d.sync += [running.eq(0), self.done.eq(1)]
        return m

    def _producer(self, m, running, last_round):
        """Rounds of four data bursts and the flag; returns ('rounds left to write', 'a bad
        B this clock')."""
        axi, beats = self.axi, self._burst_beats
        rnd = Signal(_COUNT_BITS, init=1)
        aws, ws, bs = Signal(3), Signal(3), Signal(3)       # of this round's five bursts
        beat = Signal(range(beats))
        pause = Signal(8)
        rng = Signal(32, init=0x2545F491)
        writing = running & (rnd <= last_round)
        sending = writing & (pause == 0)
        flag = aws == _BURSTS
        m.d.comb += [
            axi.awvalid.eq(sending & (aws <= _BURSTS)),
            axi.awaddr.eq(Mux(flag, self.flag_at, self.data_at + BURST_BYTES * aws)),
            axi.awid.eq(Mux(flag, FLAG_ID, aws % DATA_IDS)),
            axi.awlen.eq(Mux(flag, 0, beats - 1)),
            axi.awuser.eq(Mux(flag, self._user(1), self._user(0))),
        ]
        with m.If(axi.awvalid & axi.awready):
            m.d.sync += aws.eq(aws + 1)
        # W: the bursts whose AW has gone, in order.
        w_flag = ws == _BURSTS
        lanes = self.config.bus_words
        burst = ws[:(_BURSTS - 1).bit_length()]
        first = Cat(Const(0, (lanes - 1).bit_length()), beat, burst) if beats > 1 else \
            Cat(Const(0, (lanes - 1).bit_length()), burst)
        m.d.comb += [
            axi.wvalid.eq(sending & (ws < aws)),
            axi.wdata.eq(Mux(w_flag, rnd, Cat(*(Cat(rnd, (first + lane)[:32])
                                                 for lane in range(lanes))))),
            axi.wstrb.eq(Mux(w_flag, 0xF, (1 << self.config.data_width // 8) - 1)),
            axi.wlast.eq(w_flag | (beat == beats - 1)),
        ]
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += beat.eq(beat + 1)
            with m.If(axi.wlast):
                m.d.sync += [beat.eq(0), ws.eq(ws + 1)]
        bad = Signal()
        with m.If(axi.bvalid):
            m.d.comb += bad.eq((axi.bresp != 0) | (axi.bid > FLAG_ID) | ~writing)
            m.d.sync += bs.eq(bs + 1)
            with m.If(bs == _BURSTS):
                m.d.sync += [aws.eq(0), ws.eq(0), bs.eq(0), rnd.eq(rnd + 1),
                             self.rounds_done.eq(self.rounds_done + 1),
                             pause.eq((rng[:8] * MAX_PAUSE) >> 8),
                             rng.eq(_xorshift32(rng))]
        with m.If(pause != 0):
            m.d.sync += pause.eq(pause - 1)
        return writing, bad

    def _consumer(self, m, writing, bad_b):
        """Read pairs while rounds are left to write; returns 'a read pair outstanding'."""
        axi, lanes = self.axi, self.config.bus_words
        data_beats = MP_WORDS // lanes
        asked = Signal(2)                   # ARs of this pair sent: flag, then data
        flag_back, data_back = Signal(), Signal()
        flag, last_flag = Signal(32), Signal(32)
        oldest = Signal(32, init=-1)        # the oldest round among this pair's data words
        beat = Signal(range(data_beats))
        acquired, far = Signal(_COUNT_BITS), Signal(_COUNT_BITS)
        offered = Signal()                  # the flag's AR shown and not yet taken
        reading = (asked != 0) | offered
        with m.If(axi.arvalid):
            m.d.sync += offered.eq(~axi.arready & (asked == 0))
        m.d.comb += [
            axi.arvalid.eq((reading | writing) & (asked < 2)),
            axi.araddr.eq(Mux(asked == 0, self.flag_at, self.data_at)),
            axi.arid.eq(Mux(asked == 0, ACQUIRE_ID, READ_ID)),
            axi.arlen.eq(Mux(asked == 0, 0, data_beats - 1)),
            axi.aruser.eq(Mux(asked == 0, self._user(1), self._user(0))),
        ]
        with m.If(axi.arvalid & axi.arready):
            m.d.sync += asked.eq(asked + 1)
        bad_r, bad_words = Signal(), Signal(range(lanes + 1))
        words = [axi.rdata.word_select(lane, 64) for lane in range(lanes)]
        with m.If(axi.rvalid):
            m.d.comb += bad_r.eq(axi.rresp != 0)
            with m.If(axi.rid == ACQUIRE_ID):
                m.d.sync += [flag.eq(axi.rdata[:32]), flag_back.eq(1),
                             acquired.eq(acquired + 1)]
                with m.If(~axi.rlast | flag_back):
                    m.d.comb += bad_r.eq(1)
            with m.Elif(axi.rid == READ_ID):
                index = Cat(Const(0, (lanes - 1).bit_length()), beat) if data_beats > 1 else 0
                m.d.comb += bad_words.eq(sum(w[32:] != index + lane
                                             for lane, w in enumerate(words)))
                low = oldest
                for w in words:
                    low = Mux(w[:32] < low, w[:32], low)
                m.d.sync += [oldest.eq(low), beat.eq(beat + 1)]
                with m.If(axi.rlast != (beat == data_beats - 1)):
                    m.d.comb += bad_r.eq(1)
                with m.If(axi.rlast):
                    m.d.sync += [data_back.eq(1), beat.eq(0)]
            with m.Else():
                m.d.comb += bad_r.eq(1)
        with m.If((asked == 2) & flag_back & data_back):
            m.d.sync += [asked.eq(0), flag_back.eq(0), data_back.eq(0), oldest.eq(-1),
                         last_flag.eq(flag), self.reads.eq(self.reads + 1),
                         self.flags_seen.eq(self.flags_seen + (flag != last_flag)),
                         self.stale.eq(self.stale + (oldest < flag))]
        with m.If(self.far_ar):
            m.d.sync += [far.eq(far + 1),
                         self.bad_acquire.eq(self.bad_acquire + (far >= acquired))]
        m.d.sync += [self.bad_index.eq(self.bad_index + bad_words),
                     self.bad_resp.eq(self.bad_resp + bad_r + bad_b)]
        return reading


def _xorshift32(x):
    """One xorshift32 step (13, 17, 5) of the 32-bit ``x``."""
    x = x ^ (x << 13)[:32]
    x = x ^ (x >> 17)
    return x ^ (x << 5)[:32]


def select_manager(m, select, first, second, port):
    """Join the AXI manager ``first`` (``select`` low) or ``second`` (high) to ``port`` (the
    subordinate's side): the other's handshakes held low. Change ``select`` only while neither
    has a transaction outstanding."""
    for name, member in first.signature.members.items():
        if member.flow == Out:          # driven by the manager
            m.d.comb += getattr(port, name).eq(
                Mux(select, getattr(second, name), getattr(first, name)))
        else:
            value = getattr(port, name)
            handshake = name.endswith(("valid", "ready"))
            m.d.comb += [getattr(first, name).eq(value & ~select if handshake else value),
                         getattr(second, name).eq(value & select if handshake else value)]
