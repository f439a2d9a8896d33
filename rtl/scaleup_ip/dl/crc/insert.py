# SPDX-License-Identifier: BSD-2-Clause
"""The DL transmitter's CRC stage: the CRC of each 640-byte DL flit into its last 4 bytes
[UALink 1.0 §6.3.7]."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import Component, In, Out, connect

from ...crc import Crc32, CrcConfig
from ...fifo import RamFifo
from ...skid import SkidBuffer
from ...types import crc_result_layout
from ..layout import BEAT_BITS, CRC_BYTES, last_beat_layout, phy_stream

__all__ = ["BEAT_QUEUE_DEPTH", "DL_CRC_CONFIG", "DlCrcInsert", "beat_queue", "crc_engine",
           "dl_crc", "feed_crc", "release"]

#: The CRC engine of the DL: a beat per clock at 512 bits; latency 11 clocks.
DL_CRC_CONFIG = CrcConfig(data_width=BEAT_BITS, pipeline=2)
#: Beats waiting for their flit's CRC (here) or its check (:class:`~.check.DlCrcCheck`): the
#: engine's latency, a flit and slack need 32; the block RAM (15 EBR) holds 512.
BEAT_QUEUE_DEPTH = 64


def crc_engine(m):
    """The DL's CRC engine, and its results through a :class:`~scaleup_ip.skid.SkidBuffer`:
    returns ``(engine, results)``. Whether a result is there then comes from a flop, not from
    the engine's result queue's count; it steers the read of a beat queue's 15 block RAMs
    (one clock more of latency)."""
    m.submodules.crc = crc = Crc32(DL_CRC_CONFIG)
    m.submodules.result = result = SkidBuffer(crc_result_layout)
    connect(m, crc.o, result.i)
    return crc, result


def beat_queue(m, w_en, beat, flags):
    """The beats waiting for their flit's CRC, each with ``flags`` (its ``last`` first, ...),
    in block RAM read through the RAM's own address and output registers
    (:class:`~scaleup_ip.fifo.RamFifo`: nothing after the block RAM, and its read enables
    from registers; a beat is readable 3 clocks after it is written, long before its flit's
    CRC), written with ``w_en``. Returns the queue; its payload is ``{"data", "flags"}``. The
    caller's ready must include its ``w_rdy``."""
    entry = data.StructLayout({"data": BEAT_BITS, "flags": len(flags)})
    m.submodules.beats = queue = RamFifo(entry, BEAT_QUEUE_DEPTH, block_ram=True)
    m.d.comb += [queue.w_en.eq(w_en), queue.w_commit.eq(1),
                 queue.w_data.data.eq(beat), queue.w_data.flags.eq(flags)]
    return queue


def release(m, queue, result, o, when):
    """Let the beats of ``queue`` (:func:`beat_queue`) out to stream ``o`` once their flit's CRC
    ``result`` is there and ``when``: the result is taken with the flit's last beat, and
    ``o.valid`` and ``o.p.last`` are set. Returns ``(go, ready_out, last)``: whether a beat
    leaves, whether ``o``'s registers load (the caller loads its payload then: whenever
    ``o`` is free or moves, so that ``go`` reaches no wide enable; ``o.valid`` says whether
    what they hold is a beat), and the head beat's ``last``."""
    last = queue.r.payload.flags[0]
    ready_out = ~o.valid | o.ready
    go = Signal()
    m.d.comb += [go.eq(queue.r.valid & result.o.valid & when & ready_out),
                 queue.r.ready.eq(go), result.o.ready.eq(go & last)]
    with m.If(ready_out):
        m.d.sync += [o.valid.eq(go), o.p.last.eq(last)]
    return go, ready_out, last


def dl_crc(fcs):
    """The DL's CRC field from the engine's 802.3 CRC (``fcs``: bit ``i`` is the coefficient of
    x^(31-i), as in an 802.3 FCS sent least significant byte first): bit ``i`` of the field is
    the coefficient of x^i, so that CRC0 holds x0..x7 [§6.3.7: sent x0 first, the reverse of
    the 802.3 FCS]."""
    return fcs[::-1]


def feed_crc(m, crc, beat, take):
    """Drive the CRC engine ``crc`` with ``beat`` (a
    :data:`~scaleup_ip.dl.layout.phy_beat_layout` view) when ``take``, the CRC bytes of a last
    beat taken as zero [§6.3.7]; returns the beat's data so zeroed."""
    closing = Signal(last_beat_layout)
    zeroed = Signal(BEAT_BITS)
    m.d.comb += [
        closing.eq(beat.data), closing.crc.eq(0),
        zeroed.eq(Mux(beat.last, closing, beat.data)),
        crc.i.valid.eq(take),
        crc.i.p.data.eq(zeroed),
        crc.i.p.keep.eq(-1),
        crc.i.p.last.eq(beat.last),
    ]
    return zeroed


class DlCrcInsert(Component):
    """Fills in the CRC of each DL flit: CRC-32 of 802.3 over all 640 bytes with the CRC bytes
    zero, placed in the last 4 bytes with x0 first (:func:`dl_crc`) [§6.3.7].

    A flit's beats are held until its CRC is known; then they leave on consecutive clocks
    while ``o`` is ready, and flits that arrive back to back leave back to back. The CRC bytes of
    a flit on ``i`` are ignored (taken as zero). ``kill`` (sampled with a flit's last beat on
    ``i``) inverts that flit's CRC, so that the link partner discards it [§6.7.4.2].

    Latency: 24 clocks from a flit's first beat on ``i`` to it on ``o`` (the flit's 10 beats,
    the engine's 11, its result's register, the queue and the output register; measured in
    ``tb/dl/test_crc.py``).
    Throughput: one beat per clock. ``i.ready`` (a register) falls when the beat queue is
    full or the engine is full (only if ``o`` stalls); nothing is lost.

    Members
    -------
    i : In(phy_stream())
        DL flits, their CRC bytes don't care.
    o : Out(phy_stream())
        The same flits with their CRC.
    kill : In(1)
        Invert the CRC of the flit whose last beat is taken with it.
    """

    def __init__(self):
        super().__init__({"i": In(phy_stream()), "o": Out(phy_stream()), "kill": In(1)})

    def elaborate(self, platform):
        m = Module()
        crc, result = crc_engine(m)
        take = self.i.valid & self.i.ready
        zeroed = feed_crc(m, crc, self.i.p, take)
        # A beat, and its flags: whether it is its flit's last, and then whether to kill it.
        beats = beat_queue(m, take, zeroed, Cat(self.i.p.last, self.kill & self.i.p.last))
        m.d.comb += self.i.ready.eq(crc.i.ready & beats.w_rdy)
        # A flit's beats leave once its CRC is out of the engine (the result is taken with the
        # last beat), so that each flit leaves in 10 consecutive clocks while ``o`` is ready.
        head = beats.r.payload
        _, ready_out, last = release(m, beats, result, self.o, 1)
        kill = head.flags[1]
        closing = Signal(last_beat_layout)         # the last beat with its CRC (its CRC
        m.d.comb += [closing.eq(head.data),        # bytes are zero in the queue)
                     closing.crc.eq(dl_crc(result.o.p.crc) ^ kill.replicate(CRC_BYTES * 8))]
        with m.If(ready_out):
            m.d.sync += self.o.p.data.eq(Mux(last, closing, head.data))
        return m
