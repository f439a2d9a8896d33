# SPDX-License-Identifier: BSD-2-Clause
"""The CRC-32 engine with its traffic made and checked in hardware (:class:`CrcTraffic`), for
the ``crc`` scenario of ``make sim`` (:mod:`sim.crc.system`), which handles no beat in Python.

The sequence (the golden model :mod:`scaleup_ip.model.crc.traffic` follows this text). Words come
from xorshift64 lanes (:mod:`scaleup_ip.tl.traffic`'s: lane ``k`` of stream ``s`` starts at ``seed ^
splitmix64(16 s + k)``, the current word is the draw, then the lane steps): stream 0 (one lane)
draws the items, stream 1 (``W / 64`` lanes, ``W`` the beat's bits) fills the blocks, stream 2 (as
many lanes) the frames' bodies. A beat's bytes are its lanes' words little-endian, lane 0 first, and
the lanes step once a beat.

Item ``i`` of ``items`` draws ``x`` from stream 0:

- ``x[0:8] < 102``: a *block*, 640 bytes from stream 1 (a DL flit's size, bare);
- otherwise a *frame* ``j`` (counting frames from 0): a body of ``60 + (x[8:24] * 1455 >> 16)``
  bytes (60 to 1514) from stream 2, sent bare first (packet *A*: the engine's ``crc`` of it is
  the body's FCS); ``x[24:32] < 5`` marks it corrupt, and ``x[32:48] * 8 (n + 4) >> 16`` (``n``
  the body's bytes) is the bit to flip. After frame ``j``'s A, for ``j >= LAG``, packet *B*
  of frame ``j - LAG`` goes: its body again with the FCS the engine gave for its A appended
  (least significant byte first), the bit flipped if corrupt. After the last item the Bs
  left go, in order.

A B waits (a bubble) while its A's result is not back. Every result of the engine enters
``digest``: ``digest = rotl(digest, 1) ^ (crc | ok << 32 | malformed << 33)``, 64 bits,
from 0; ``oks``, ``malformed`` and ``results`` count them.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.crc import Crc32, CrcConfig
from scaleup_ip.dl import DL_FLIT_BYTES
from scaleup_ip.tl.traffic import Lanes

from sim.boundary import register_boundary

__all__ = ["CrcTraffic", "LAG", "BLOCK_BYTES"]

#: Frames between a frame's A and its B.
LAG = 2
#: Bytes of a block: a UALink DL flit.
BLOCK_BYTES = DL_FLIT_BYTES
#: Item draws: blocks below this of 256; frame bodies from MIN_BODY, SPAN lengths; corrupt
#: below this of 256. Bodies are Ethernet frames without FCS. [IEEE 802.3 §3.2.7, §4.4.2]
BLOCK_BELOW, MIN_BODY, SPAN, CORRUPT_BELOW = 102, 60, 1455, 5
_COUNT_BITS = 32

#: What a frame's A leaves for its B.
_frame_layout = data.StructLayout({"length": 11, "corrupt": 1, "flip": 14})


def _members():
    return {"seed": In(64), "load": In(1), "items": In(_COUNT_BITS), "enable": In(1),
            "done": Out(1), "digest": Out(64),
            **{name: Out(_COUNT_BITS) for name in ("packets", "results", "oks", "malformed",
                                                   "beats", "waits", "busy")}}


class CrcTraffic(ConfiguredComponent):
    """A :class:`~scaleup_ip.crc.Crc32` of ``config`` (64 to 512 bits) fed by the generator of the
    module's sequence, its results folded into a digest; behind a registered boundary
    (:func:`sim.boundary.register_boundary`: inputs act a clock later), its model at ``-O2``.

    Set ``seed`` and ``items``, pulse ``load`` (after a reset), raise ``enable``: packets go
    one beat a clock but for the bubbles before a B; ``done`` once every packet has gone and
    every result is back. Counters (32 bits): ``packets`` sent, ``results``, ``oks``,
    ``malformed``, ``beats`` sent, ``waits`` (clocks a B waited for its FCS), ``busy``
    (clocks from ``enable`` to the last beat); ``digest`` (64).
    """

    config_class = CrcConfig
    OPT_FAST = "-O2"

    def __init__(self, config):
        if config.data_width < 64:
            raise ValueError("CrcTraffic: the engine must be 64 bits wide or more")
        super().__init__(config, _members())

    def elaborate(self, platform):
        m = Module()
        register_boundary(m, self, _Core(self.config), "traffic")
        return m


class _Core(ConfiguredComponent):
    """:class:`CrcTraffic` inside its boundary."""

    config_class = CrcConfig

    def __init__(self, config):
        super().__init__(config, _members())

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = Crc32(self.config)
        m.submodules.frames = frames = SyncFIFOBuffered(width=_frame_layout.size, depth=LAG + 2)
        m.submodules.fcs = fcs = SyncFIFOBuffered(width=32, depth=LAG + 2)
        m.submodules.kinds = kinds = SyncFIFOBuffered(width=1, depth=64)
        self._results(m, crc, kinds, fcs)
        self._generate(m, crc, frames, fcs, kinds)
        return m

    def _results(self, m, crc, kinds, fcs):
        """Each result: into the digest and the counts; an A's crc into ``fcs``."""
        result = crc.o.payload
        m.d.comb += [crc.o.ready.eq(1), kinds.r_en.eq(crc.o.valid),
                     fcs.w_data.eq(result.crc), fcs.w_en.eq(crc.o.valid & kinds.r_data)]
        with m.If(crc.o.valid):
            word = Cat(result.crc, result.ok, result.malformed)
            m.d.sync += [self.digest.eq(Cat(self.digest[63], self.digest[:63]) ^ word),
                         self.results.eq(self.results + 1), self.oks.eq(self.oks + result.ok),
                         self.malformed.eq(self.malformed + result.malformed)]

    def _generate(self, m, crc, frames, fcs, kinds):
        cfg = self.config
        width, lanes = cfg.bytes_per_beat, cfg.data_width // 64
        step = {name: Signal(name=f"{name}_step") for name in ("ctl", "blk", "lead", "lag")}
        ctl = Lanes(m, "ctl", 0, 1, self.seed, self.load, step["ctl"])
        blk = Lanes(m, "blk", 1, lanes, self.seed, self.load, step["blk"])
        lead = Lanes(m, "lead", 2, lanes, self.seed, self.load, step["lead"])
        lag = Lanes(m, "lag", 2, lanes, self.seed, self.load, step["lag"])
        x = ctl[0]
        is_block = x[0:8] < BLOCK_BELOW
        body, flip = Signal(11), Signal(14)
        m.d.comb += [body.eq(MIN_BODY + ((x[8:24] * SPAN) >> 16)),
                     flip.eq((x[32:48] * (8 * (body + 4))) >> 16)]
        item = Signal(_COUNT_BITS)
        framed = Signal(_COUNT_BITS)            # frames whose A has gone
        owed = Signal(range(LAG + 2))           # frames whose A has gone and B not
        beat = Signal(range(-(-(MIN_BODY + SPAN + 4) // width) + 1))
        lag_turn = Signal()                     # the next packet is a B
        running = Signal()
        with m.If(self.load):
            m.d.sync += running.eq(0)
        with m.Elif(self.enable):
            m.d.sync += running.eq(1)
        head = _frame_layout(frames.r_data)
        sending_b = lag_turn | (item == self.items)
        length = Mux(sending_b, head.length + 4, Mux(is_block, BLOCK_BYTES, body))
        left = Signal(12)
        m.d.comb += left.eq(length - beat * width)
        last = left <= width
        keep = Mux(last, (Const(1, width + 1) << left[:width.bit_length()]) - 1,
                   (1 << width) - 1)
        b_ready = frames.r_rdy & fcs.r_rdy
        payload = crc.i.payload
        m.d.comb += [
            crc.i.valid.eq(running & Mux(sending_b, (owed != 0) & b_ready, item != self.items)),
            payload.last.eq(last), payload.keep.eq(keep[:width]),
            payload.data.eq(Mux(sending_b, self._b_data(m, lag, head, fcs.r_data, beat),
                                Mux(is_block, Cat(*blk.words), Cat(*lead.words)))),
        ]
        with m.If(running & sending_b & (owed != 0) & ~b_ready):
            m.d.sync += self.waits.eq(self.waits + 1)
        with m.If(running & ((item != self.items) | (owed != 0))):
            m.d.sync += self.busy.eq(self.busy + 1)
        take = crc.i.valid & crc.i.ready
        with m.If(take):
            m.d.sync += [beat.eq(beat + 1), self.beats.eq(self.beats + 1)]
            with m.If(sending_b):
                m.d.comb += step["lag"].eq(beat * width < head.length)
            with m.Elif(is_block):
                m.d.comb += step["blk"].eq(1)
            with m.Else():
                m.d.comb += step["lead"].eq(1)
        m.d.comb += [frames.w_data.eq(Cat(body, x[24:32] < CORRUPT_BELOW, flip)),
                     kinds.w_data.eq(~sending_b & ~is_block)]
        with m.If(take & last):
            m.d.sync += [beat.eq(0), self.packets.eq(self.packets + 1)]
            m.d.comb += kinds.w_en.eq(1)
            with m.If(sending_b):
                m.d.comb += [frames.r_en.eq(1), fcs.r_en.eq(1)]
                m.d.sync += [owed.eq(owed - 1), lag_turn.eq(0)]
            with m.Else():
                m.d.comb += step["ctl"].eq(1)
                m.d.sync += item.eq(item + 1)
                with m.If(~is_block):
                    m.d.comb += frames.w_en.eq(1)
                    m.d.sync += [owed.eq(owed + 1), framed.eq(framed + 1),
                                 lag_turn.eq(framed >= LAG)]
        m.d.comb += self.done.eq(running & (item == self.items) & (owed == 0)
                                 & (self.results == self.packets))

    def _b_data(self, m, lag, head, fcs, beat):
        """Beat ``beat`` of the B of the frame ``head``: its body's bytes from the lag lanes,
        the FCS ``fcs`` over bytes ``length`` to ``length + 3``, the bit flipped if corrupt."""
        width = self.config.bytes_per_beat
        words = Cat(*lag.words)
        first = Signal(12)
        m.d.comb += first.eq(beat * width)
        out = []
        for b in range(width):
            at = first + b
            in_fcs = (at >= head.length) & (at < head.length + 4)
            out.append(Mux(in_fcs, fcs.word_select((at - head.length)[:2], 8),
                           words[8 * b:8 * b + 8]))
        bits = (8 * width - 1).bit_length()
        here = head.corrupt & (head.flip[3:] >= first) & (head.flip[3:] < first + width)
        mask = Mux(here, Const(1, 8 * width) << (head.flip - 8 * first)[:bits], 0)
        return Cat(*out) ^ mask
