"""The replay ring: eligible frames kept, with their link word and FCS, until acknowledged."""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ...crc import Crc32, CrcConfig
from ...model.ethx import HEADER_BYTES
from .config import FCS_BYTES, LINK_WORD_BYTES, LinkConfig
from .layout import eth_stream, link_word_layout

__all__ = ["ReplayRing"]


class ReplayRing(ConfiguredComponent):
    """Frames in (``i``) take the sequence number ``seq`` (the LLR transmitter's ``next``):
    their link word goes in after byte 16 and their FCS after their last byte, all written
    into a ring of ``replay_bytes``, and ``pushed`` pulses once the frame is whole. The frame
    at ``sent`` leaves on ``o`` when ``go`` allows: ``started`` pulses as it begins, and its
    beats follow one per clock without a gap. Frames ``acked`` .. ``next − 1`` stay kept.

    ``i`` takes a frame's first beat only while the ring has room for one more frame and for
    a longest wire frame (``room``): a frame never waits half-written.

    Latency: ``8 / eth_bytes`` clocks for the link word, and the CRC engine's latency, from
    a frame's last beat in to ``pushed``; two clocks from ``go`` to the first beat out.
    Throughput: one beat per clock in and out.

    Members
    -------
    i : ``In(eth_stream(eth_width))``
        Bridge frames (no FCS), or CC_UPDATEs built without their link word.
    seq : ``In(seq_bits)``; pushed : ``Out(1)``; room : ``Out(1)``
    acked, sent, next : ``In(seq_bits)``
    go : ``In(1)``; started : ``Out(1)``
    o : ``Out(eth_stream(eth_width))``
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)), "seq": In(c.seq_bits),
            "pushed": Out(1), "room": Out(1),
            "acked": In(c.seq_bits), "sent": In(c.seq_bits), "next": In(c.seq_bits),
            "go": In(1), "started": Out(1),
            "o": Out(eth_stream(c.eth_width)),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        rows = cfg.replay_bytes // cfg.eth_bytes
        m.submodules.mem = mem = Memory(shape=cfg.eth_width, depth=rows, init=[])
        desc = data.StructLayout({"start": range(2 * rows),
                                               "bytes": range(cfg.max_wire_bytes + 1)})
        m.submodules.descs = descs = Memory(shape=desc, depth=cfg.replay_frames, init=[])
        at = Signal(range(2 * rows))            # the next row to write
        base = Signal(range(2 * rows))          # the first row of the oldest kept frame
        self._write(m, mem, descs, at, base, rows)
        self._send(m, mem, descs, rows)
        return m

    def _write(self, m, mem, descs, at, base, rows):
        cfg, i = self.config, self.i
        wr, dw = mem.write_port(), descs.write_port()
        oldest = descs.read_port()
        lw_beats = LINK_WORD_BYTES // cfg.eth_bytes
        fcs_beats = -(-FCS_BYTES // cfg.eth_bytes)
        pos = Signal(range(cfg.max_wire_bytes + 1))     # bytes of this frame in (no link word)
        start = Signal.like(at)
        inside = Signal()                               # a frame is being written
        word_k = Signal(range(lw_beats + 1))            # link-word beats written
        fcs_k = Signal(range(fcs_beats + 1))            # FCS beats written
        ending = Signal()                               # its last byte is in: the FCS next
        fcs = Signal(32)
        fcs_ok = Signal()
        m.submodules.crc = crc = Crc32(CrcConfig(data_width=cfg.eth_width, pipeline=1))

        # Room: frames kept below the limit, and rows for a longest frame.
        m.d.comb += oldest.addr.eq(self.acked[:len(oldest.addr)])
        used = Mux(self.acked == self.next, 0, (at - base)[:len(at)])
        m.d.sync += base.eq(oldest.data.start)
        m.d.comb += self.room.eq(((self.next - self.acked)[:cfg.seq_bits] < cfg.replay_frames - 1)
                                 & (used <= rows - cfg.rows(cfg.max_wire_bytes)))

        word = Signal(link_word_layout)
        m.d.comb += [word.seq.eq(self.seq), word.zero.eq(0)]
        in_word = inside & ~ending & (pos == HEADER_BYTES) & (word_k < lw_beats)
        m.d.comb += i.ready.eq(~ending & ~in_word & (inside | self.room))
        take = i.valid & i.ready
        beat = Mux(in_word, word.as_value().word_select(word_k, cfg.eth_width), i.p.data)
        write_fcs = ending & fcs_ok & (fcs_k < fcs_beats)
        fcs_data = fcs.word_select(fcs_k, cfg.eth_width) if fcs_beats > 1 else fcs
        m.d.comb += [
            wr.addr.eq(at[:len(wr.addr)]),
            wr.data.eq(Mux(write_fcs, fcs_data, beat)),
            wr.en.eq(take | in_word | write_fcs),
            crc.i.valid.eq(take | in_word),
            crc.i.payload.data.eq(beat),
            crc.i.payload.keep.eq(Mux(in_word, (1 << cfg.eth_bytes) - 1, i.p.keep)),
            crc.i.payload.last.eq(take & i.p.last),
            crc.o.ready.eq(1),
        ]
        nbytes = sum(i.p.keep[k] for k in range(cfg.eth_bytes))
        with m.If(wr.en):
            m.d.sync += at.eq(at + 1)
        with m.If(in_word):                 # ``pos`` counts the frame's own bytes
            m.d.sync += word_k.eq(word_k + 1)
        with m.If(take):
            m.d.sync += [pos.eq(pos + nbytes), inside.eq(1)]
            with m.If(~inside):
                m.d.sync += start.eq(at)
            with m.If(i.p.last):
                m.d.sync += ending.eq(1)
        with m.If(crc.o.valid):
            m.d.sync += [fcs.eq(crc.o.payload.crc), fcs_ok.eq(1)]
        with m.If(write_fcs):
            m.d.sync += fcs_k.eq(fcs_k + 1)
        done = ending & fcs_ok & (fcs_k == fcs_beats)
        m.d.comb += [dw.addr.eq(self.seq[:len(dw.addr)]), dw.en.eq(done),
                     dw.data.start.eq(start[:len(dw.data.start)]),
                     dw.data.bytes.eq(pos + LINK_WORD_BYTES + FCS_BYTES), self.pushed.eq(done)]
        with m.If(done):
            m.d.sync += [inside.eq(0), ending.eq(0), fcs_ok.eq(0), fcs_k.eq(0), word_k.eq(0),
                         pos.eq(0)]

    def _send(self, m, mem, descs, rows):
        cfg, o = self.config, self.o
        rd, dr = mem.read_port(), descs.read_port()
        busy = Signal()                 # a frame is being read
        fetched = Signal()              # its descriptor is on ``dr.data``
        reading = Signal(range(rows))
        left = Signal(range(cfg.max_wire_bytes + 1))      # bytes still to read
        m.d.comb += dr.addr.eq(self.sent[:len(dr.addr)])
        begin = ~busy & ~fetched & self.go
        m.d.comb += self.started.eq(begin)
        m.d.sync += fetched.eq(begin)
        with m.If(fetched):
            m.d.sync += [busy.eq(1), reading.eq(dr.data.start[:len(reading)]), left.eq(dr.data.bytes)]
        advance = ~o.valid | o.ready
        issue = advance & busy
        ones = (1 << cfg.eth_bytes) - 1
        last = left <= cfg.eth_bytes
        m.d.comb += [rd.en.eq(advance), rd.addr.eq(reading), o.p.data.eq(rd.data),
                     o.p.user.eq(0)]
        with m.If(advance):
            m.d.sync += o.valid.eq(issue)
        with m.If(issue):
            m.d.sync += [reading.eq(reading + 1), left.eq(left - cfg.eth_bytes),
                         o.p.last.eq(last),
                         o.p.keep.eq(Mux(last, Const(ones, cfg.eth_bytes) >> (cfg.eth_bytes - left)[:cfg.eth_bytes.bit_length()].as_unsigned(),
                                         ones)),
                         busy.eq(~last)]
