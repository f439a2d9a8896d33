# SPDX-License-Identifier: BSD-2-Clause
"""A first-word-fall-through queue in distributed or block RAM whose writes may be made ahead of
the decision to keep them: the TL receiver's buffers, the DL's CRC beat queues."""

from amaranth import Module, Mux, Shape, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .ram import PipelinedRam

__all__ = ["RamFifo"]


class RamFifo(wiring.Component):
    """A queue of ``depth`` entries of ``shape``.

    In distributed RAM (the default), a write is registered first and reaches the RAM a clock
    later; a read of the entry still in that register takes it from there. So the RAM's write
    port is fed by registers only, however far the RAM is spread, and the oldest entry is read
    without a clock: an entry kept at clock ``t`` is readable from ``t + 1``.

    In block RAM (``block_ram``), the write goes to the RAM at once and the read goes through
    the RAM's two registers (:class:`~scaleup_ip.ram.PipelinedRam`): the first holds the entry
    after the oldest, the second the oldest, which is ``r.payload``; each moves on when the
    one after it is free or leaves, so that one entry leaves per clock. No entry is read in
    the clock it is written, and nothing is multiplexed after the RAM: on ECP5 ``r.payload``
    leaves the block RAM's own output register. An entry kept at ``t`` is readable from
    ``t + 3`` [ours: two clocks more than in distributed RAM, for the clock rate]; ``level``
    and ``kept`` count it when it is readable. A 513-bit queue of 32 entries is 15 DP16KD and
    a few dozen LUT4 on ECP5, against about 1,850 LUT4 places in distributed RAM (258 DPR16X4
    and the bank and bypass multiplexers).

    Parameters
    ----------
    shape : ShapeCastable
        Entry shape.
    depth : int
        Entries held.
    block_ram : bool
        Keep the entries in block RAM.

    Members
    -------
    w_data : In(shape), w_en : In(1)
        Write ``w_data`` into the next free slot (ignored when full). This only stores it.
    w_commit : In(1)
        Keep what ``w_en`` writes in the same clock: the entry joins the queue.
    w_rdy : Out(1)
        Not full: fewer than ``depth`` entries kept and not read (a register).
    kept : Out(1)
        An entry becomes readable: it is counted in ``level`` from the next clock. In
        distributed RAM it is the one kept in this clock (``w_en``, ``w_commit`` and
        ``w_rdy``), in block RAM the one kept two clocks earlier.
    r : Out(stream.Signature(shape))
        The oldest readable entry; ``r.valid`` is a register.
    level : Out(range(depth + 1))
        Readable entries (a register): as many can be read one per clock from now.

    Latency: an entry kept at clock ``t`` is on ``r`` and counted in ``level`` from ``t + 1``
    (distributed RAM) or ``t + 3`` (block RAM). Throughput: one entry in and one out per
    clock. Overflow: a write while full is ignored; every user writes only while ``w_rdy``
    (the DL's CRC stages take their input only then; the TL receiver's credit check keeps
    every kept entry within ``depth``).
    """

    def __init__(self, shape, depth, *, block_ram=False):
        self._shape, self._depth, self._block_ram = shape, depth, block_ram
        super().__init__({
            "w_data": In(shape),
            "w_en": In(1),
            "w_commit": In(1),
            "w_rdy": Out(1),
            "kept": Out(1),
            "r": Out(stream.Signature(shape)),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        w, r = Signal(), Signal()
        wp = Signal(range(self._depth))
        m.d.comb += [
            w.eq(self.w_en & self.w_commit & self.w_rdy),
            r.eq(self.r.valid & self.r.ready),
        ]
        with m.If(w):
            m.d.sync += wp.eq(_next(wp, self._depth))
        valid, rdy = Signal(), Signal(init=1)
        m.d.comb += [self.r.valid.eq(valid), self.w_rdy.eq(rdy)]
        if self._block_ram:
            self._block(m, wp, w, r, valid, rdy)
        else:
            m.d.comb += self.kept.eq(w)
            count_level(m, w, r, self.level, self._depth, nonzero=valid, notfull=rdy)
            self._lut(m, wp, r)
        return m

    def _block(self, m, wp, w, r, valid, rdy):
        """Block RAM: written at once, read through the RAM's two registers."""
        depth = self._depth
        m.submodules.ram = ram = PipelinedRam(Shape.cast(self._shape).width, depth)
        fp = Signal(range(depth))                # the next entry to fetch into the first
        unfetched = Signal(range(depth + 1))     # kept, not yet in the first register
        avail = Signal()                         # unfetched != 0 (a register)
        stored = Signal(range(depth + 1))        # kept, not yet read
        first, second = Signal(), Signal()       # the read registers hold an entry
        take, move, fetch = Signal(), Signal(), Signal()
        m.d.comb += [
            move.eq(~second | r),                # the second register takes the first
            take.eq(~first | move),              # the first takes the entry at fp
            fetch.eq(take & avail),
            ram.w_addr.eq(wp), ram.w_data.eq(self.w_data), ram.w_en.eq(self.w_en & self.w_rdy),
            ram.r_addr.eq(fp), ram.r_en.eq(take), ram.r_out_en.eq(move),
            self.r.payload.eq(ram.r_data),
        ]
        with m.If(take):
            m.d.sync += first.eq(avail)
        with m.If(move):
            m.d.sync += second.eq(first)
        with m.If(fetch):
            m.d.sync += fp.eq(_next(fp, depth))
        count_level(m, w, fetch, unfetched, depth, nonzero=avail)
        count_level(m, w, r, stored, depth, notfull=rdy)
        # Counted as readable from three clocks after it is kept (``kept`` two clocks after):
        # then it is in the second register, or will be when those before it have left, one
        # clock each (the first register fills ahead whenever it is free).
        late = Signal()
        m.d.sync += [late.eq(w), self.kept.eq(late)]
        count_level(m, self.kept, r, self.level, depth, nonzero=valid)

    def _lut(self, m, wp, r):
        """Distributed RAM: written from a register a clock later, read without a clock."""
        depth = self._depth
        m.submodules.mem = mem = Memory(shape=self._shape, depth=depth, init=[])
        rp = Signal(range(depth))
        rp_next = Signal.like(rp)
        m.d.comb += rp_next.eq(_next(rp, depth))
        with m.If(r):
            m.d.sync += rp.eq(rp_next)
        wport = mem.write_port()
        rport = mem.read_port(domain="comb")
        # The write register: what the RAM takes at the end of this clock.
        pend = Signal.like(self.w_data, name="pend")
        pend_addr = Signal.like(wp)
        pend_en = Signal()
        bypass = Signal()           # the oldest entry is the one in the write register
        m.d.sync += [
            pend.eq(self.w_data), pend_addr.eq(wp), pend_en.eq(self.w_en & self.w_rdy),
            bypass.eq(self.w_en & self.w_rdy & Mux(r, rp_next == wp, rp == wp)),
        ]
        m.d.comb += [
            wport.addr.eq(pend_addr), wport.data.eq(pend), wport.en.eq(pend_en),
            rport.addr.eq(rp),
            self.r.payload.eq(Mux(bypass, pend, rport.data)),
        ]


def count_level(m, up, down, count, depth, *, nonzero=None, notfull=None):
    """``count`` (of at most ``depth``) grows by ``up`` and drops by ``down`` each clock, with
    the flags ``count != 0`` (``nonzero``) and ``count != depth`` (``notfull``) kept beside
    it as registers. ``up`` is never set when ``count`` is ``depth``."""
    with m.If(up & ~down):
        m.d.sync += count.eq(count + 1)
        if nonzero is not None:
            m.d.sync += nonzero.eq(1)
        if notfull is not None:
            m.d.sync += notfull.eq(count != depth - 1)
    with m.Elif(down & ~up):
        m.d.sync += count.eq(count - 1)
        if nonzero is not None:
            m.d.sync += nonzero.eq(count != 1)
        if notfull is not None:
            m.d.sync += notfull.eq(1)


def _next(ptr, depth):
    """The position after ``ptr`` in a ring of ``depth``."""
    if depth & (depth - 1) == 0:
        return ptr + 1
    return Mux(ptr == depth - 1, 0, ptr + 1)
