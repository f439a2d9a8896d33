# SPDX-License-Identifier: BSD-2-Clause
"""The replay ring: eligible frames kept, with their link word and FCS, until acknowledged."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ....crc import Crc32, CrcConfig
from ....model.ethx.bridge import HEADER_BYTES
from ..config import FCS_BYTES, LINK_WORD_BYTES, LinkConfig
from ..layout import POISON, eth_stream, link_word_layout, tag_word

__all__ = ["ReplayRing"]


def _descriptor(config, rows):
    """A kept frame: its first row, its bytes with the link word (a whole number of beats:
    frames are multiples of 8 bytes) and its FCS, sent after them."""
    return data.StructLayout({"start": range(2 * rows), "bytes": range(config.max_wire_bytes + 1),
                              "fcs": 32})


class ReplayRing(ConfiguredComponent):
    """Frames in (``i``) take the sequence number ``seq`` (the LLR transmitter's ``next``) plus
    one if the frame before is still waiting for its FCS: their link word goes in after byte
    16 (with ``vlan``, the tag of TCI ``tci`` at byte 12 and four zero bytes after byte 16,
    README §1), their bytes into a ring of ``replay_bytes`` and their FCS into their
    descriptor, and ``pushed`` pulses once the FCS is there (the frame is then at ``seq``).
    The next frame enters meanwhile; its last beat waits until the frame before is pushed. The
    frame at ``sent`` leaves on ``o`` when ``go`` allows: ``started`` pulses in the clock it begins (its
    first row read), and its beats and FCS follow one per clock without a gap; ``go`` in the
    clock the last beat of the frame before leaves starts the next with no gap either. Frames
    ``acked`` .. ``next − 1`` stay kept.

    ``i`` takes a frame's first beat only while the ring has room for it and for a longest
    wire frame and fewer than ``limit`` frames are kept (``room``, a clock old), and after a
    clock in which no row was written: a frame never waits half-written, and one clock passes
    between frames in.

    Latency: ``8 / eth_bytes`` clocks for the link word (16 with the tag) and the CRC engine's
    latency, from a frame's last beat in to ``pushed``; one clock from ``started`` to the first
    beat out, and two clocks from ``pushed`` or a move of ``sent`` to the next ``started``.
    Throughput: one beat per clock in (the link word's beats and a clock between frames
    added) and out.

    Members
    -------
    i : ``In(eth_stream(eth_width))``
        Bridge frames (no FCS, multiples of 8 bytes), or CC_UPDATEs built without their link
        word.
    tci : ``In(16)``
        With ``vlan``: the TCI of the frame coming in, steady while it does.
    seq : ``In(seq_bits)``; pushed : ``Out(1)``; room : ``Out(1)``
    poisoned : ``Out(1)``
        With ``pushed``: the frame was poisoned (``user`` on its last beat in): its FCS is kept
        poisoned (README §1).
    limit : ``In(range(replay_frames))``
        Frames kept at most (UEC's maximum outstanding frames); 0: ``replay_frames − 1``.
    acked, sent, next : ``In(seq_bits)``
    go : ``In(1)``; started : ``Out(1)``
    o : ``Out(eth_stream(eth_width))``
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)), "seq": In(c.seq_bits), "tci": In(16),
            "pushed": Out(1), "room": Out(1), "limit": In(range(c.replay_frames)),
            "poisoned": Out(1),
            "acked": In(c.seq_bits), "sent": In(c.seq_bits), "next": In(c.seq_bits),
            "go": In(1), "started": Out(1),
            "o": Out(eth_stream(c.eth_width)),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        rows = cfg.replay_bytes // cfg.eth_bytes
        m.submodules.mem = mem = Memory(shape=cfg.eth_width, depth=rows, init=[])
        desc = _descriptor(cfg, rows)
        m.submodules.descs = descs = Memory(shape=desc, depth=cfg.replay_frames, init=[])
        dw = descs.write_port()
        at = Signal(range(2 * rows))            # the next row to write
        pending = Signal()                      # a whole frame waits for its FCS
        p_start = Signal.like(at)               # ... its first row
        self._room(m, descs, dw, at, pending, p_start, rows)
        self._write(m, mem, dw, at, pending, p_start)
        self._send(m, mem, descs, dw, rows)
        return m

    def _room(self, m, descs, dw, at, pending, p_start, rows):
        """``room``, registered [Fmax]: frames kept and pending below ``replay_frames − 1``
        and ``limit``, and rows for a longest frame after those of the oldest frame kept (its
        descriptor read at ``acked`` two clocks ago: no room until that read is current). A
        frame's first beat also waits for a clock without a write: then nothing entered since
        ``room`` was computed."""
        cfg = self.config
        oldest = descs.read_port()
        base = Signal.like(at)
        acked_1, acked_2 = Signal.like(self.acked), Signal.like(self.acked)
        wrote_1, wrote_2 = Signal(), Signal()
        m.d.comb += oldest.addr.eq(self.acked[:len(oldest.addr)])
        m.d.sync += [base.eq(oldest.data.start), acked_1.eq(self.acked), acked_2.eq(acked_1),
                     wrote_1.eq(dw.en), wrote_2.eq(wrote_1)]
        empty = self.acked == self.next
        current = empty | ((self.acked == acked_1) & (acked_1 == acked_2) & ~wrote_1 & ~wrote_2)
        first = Mux(empty, Mux(pending, p_start, at), base)
        used = (at - first)[:len(at)]
        kept = (self.next - self.acked)[:cfg.seq_bits] + pending
        most = Mux(self.limit == 0, cfg.replay_frames - 1, self.limit)
        m.d.sync += self.room.eq(current & (kept < most)
                                 & (used <= rows - cfg.rows(cfg.max_wire_bytes)))

    def _steps(self, word, data):
        """The beats written at an input position besides the input's: ``{pos: [(value,
        needs, takes)]}``, in order, before the input beat at ``pos`` is written as it is.
        ``needs``: the value is made of the input beat, which must be valid; ``takes``: writing
        it takes the input beat."""
        cfg = self.config
        w = cfg.eth_width
        beats = lambda value: [(value.word_select(k, w), False, False)
                               for k in range(len(value) // w)]
        word_beats = beats(word.as_value())
        if not cfg.vlan:
            return {HEADER_BYTES: word_beats}
        tag = tag_word(self.tci)
        if w == 64:                 # byte 12 inside a beat: it is split in two
            return {8: [(Cat(data[:32], tag), True, False), (Cat(data[32:], Const(0, 32)),
                                                             True, True)],
                    HEADER_BYTES: word_beats}
        return {12: beats(tag), HEADER_BYTES: beats(Const(0, 32)) + word_beats}

    def _write(self, m, mem, dw, at, pending, p_start):
        cfg, i = self.config, self.i
        wr = mem.write_port()
        pos = Signal(range(cfg.max_wire_bytes + 1))     # bytes of this frame in (its own)
        start = Signal.like(at)
        inside = Signal()                               # a frame is being written
        word = Signal(link_word_layout)
        steps = self._steps(word, i.p.data)
        step_k = Signal(range(max(map(len, steps.values())) + 1))   # steps written at ``pos``
        p_bytes = Signal.like(pos)
        p_poison = Signal()                             # the pending frame is poisoned
        m.submodules.crc = crc = Crc32(CrcConfig(data_width=cfg.eth_width, pipeline=1))
        push = crc.o.valid & pending                    # the pending frame's FCS

        m.d.comb += [word.seq.eq(self.seq + pending), word.zero.eq(0)]
        stepping, value, needs, takes = Signal(), Signal(cfg.eth_width), Signal(), Signal()
        for at_pos, beats in steps.items():
            for k, (v, n, t) in enumerate(beats):
                with m.If(inside & (pos == at_pos) & (step_k == k)):
                    m.d.comb += [stepping.eq(1), value.eq(v), needs.eq(n), takes.eq(t)]
        added = stepping & ~takes                       # a beat written, the input's kept
        quiet = Signal()                                # no row written in the clock before
        m.d.comb += i.ready.eq(~added & (inside | (self.room & quiet))
                               & (~i.p.last | ~pending | push))
        take = i.valid & i.ready
        beat = Mux(stepping, value, i.p.data)
        write = take | (added & (~needs | i.valid))
        m.d.comb += [
            wr.addr.eq(at[:len(wr.addr)]), wr.data.eq(beat), wr.en.eq(write),
            crc.i.valid.eq(write),
            crc.i.payload.data.eq(beat),
            crc.i.payload.keep.eq(Mux(stepping, (1 << cfg.eth_bytes) - 1, i.p.keep)),
            crc.i.payload.last.eq(take & i.p.last),
            crc.o.ready.eq(1),
        ]
        nbytes = sum(i.p.keep[k] for k in range(cfg.eth_bytes))
        m.d.sync += quiet.eq(~wr.en)
        with m.If(wr.en):
            m.d.sync += [at.eq(at + 1), step_k.eq(step_k + 1)]
        with m.If(take):
            m.d.sync += [pos.eq(pos + nbytes), inside.eq(~i.p.last), step_k.eq(0)]
            with m.If(~inside):
                m.d.sync += start.eq(at)
            with m.If(i.p.last):
                m.d.sync += [p_start.eq(start),
                             p_bytes.eq(pos + nbytes + LINK_WORD_BYTES + cfg.tag_bytes),
                             p_poison.eq(i.p.user), pos.eq(0)]
        with m.If(push):
            m.d.sync += pending.eq(0)
        with m.If(take & i.p.last):
            m.d.sync += pending.eq(1)
        m.d.comb += [dw.addr.eq(self.seq[:len(dw.addr)]), dw.en.eq(push),
                     dw.data.start.eq(p_start[:len(dw.data.start)]), dw.data.bytes.eq(p_bytes),
                     dw.data.fcs.eq(crc.o.payload.crc ^ Mux(p_poison, POISON, 0)),
                     self.pushed.eq(push), self.poisoned.eq(push & p_poison)]

    def _send(self, m, mem, descs, dw, rows):
        """The frame at ``sent``: its rows, then its FCS. Its descriptor is read at ``sent``
        every clock; ``armed`` once that read is current."""
        cfg, o = self.config, self.o
        rd, dr = mem.read_port(), descs.read_port()
        fcs_beats = -(-FCS_BYTES // cfg.eth_bytes)
        sent_1, wrote = Signal.like(self.sent), Signal()
        m.d.comb += dr.addr.eq(self.sent[:len(dr.addr)])
        m.d.sync += [sent_1.eq(self.sent), wrote.eq(dw.en & (dw.addr == dr.addr))]
        armed = (self.sent == sent_1) & ~wrote

        reading = Signal(range(rows))
        left = Signal(range(cfg.rows(cfg.max_wire_bytes) + 1))  # rows still to read
        fcs = Signal(32)
        fcs_left = Signal(range(fcs_beats + 1))                 # FCS beats still to send
        from_fcs = Signal()                                     # ``o`` carries an FCS beat
        fcs_beat = Signal(cfg.eth_width)
        advance = ~o.valid | o.ready
        begin = advance & self.go & armed & (left == 0) & (fcs_left == 0)
        row = advance & (begin | (left != 0))
        tail = advance & (left == 0) & (fcs_left != 0)
        m.d.comb += [self.started.eq(begin),
                     rd.en.eq(advance), o.p.user.eq(0),
                     rd.addr.eq(Mux(begin, dr.data.start[:len(rd.addr)], reading)),
                     o.p.data.eq(Mux(from_fcs, fcs_beat, rd.data))]
        with m.If(begin):
            m.d.sync += [reading.eq(dr.data.start[:len(reading)] + 1),
                         left.eq((dr.data.bytes >> (cfg.eth_bytes.bit_length() - 1)) - 1),
                         fcs.eq(dr.data.fcs), fcs_left.eq(fcs_beats)]
        with m.Elif(row):
            m.d.sync += [reading.eq(reading + 1), left.eq(left - 1)]
        with m.Elif(tail):
            m.d.sync += [fcs.eq(fcs >> cfg.eth_width if cfg.eth_width < 32 else 0),
                         fcs_left.eq(fcs_left - 1)]
        ones = (1 << cfg.eth_bytes) - 1
        with m.If(advance):
            m.d.sync += [o.valid.eq(row | tail), from_fcs.eq(tail),
                         fcs_beat.eq(fcs[:min(32, cfg.eth_width)]),
                         o.p.last.eq(tail & (fcs_left == 1)),
                         o.p.keep.eq(Mux(tail, ones >> max(0, cfg.eth_bytes - FCS_BYTES), ones))]
