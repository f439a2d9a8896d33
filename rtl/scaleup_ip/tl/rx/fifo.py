# SPDX-License-Identifier: BSD-2-Clause
"""Receive buffer of the TL receiver: a first-word-fall-through queue in distributed or block RAM
whose writes may be made ahead of the decision to keep them."""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["RxFifo"]


class RxFifo(wiring.Component):
    """A queue of ``depth`` entries of ``shape``.

    In distributed RAM (the default), a write is registered first and reaches the RAM a clock
    later; a read of the entry still in that register takes it from there. So the RAM's write
    port is fed by registers only, however far the RAM is spread, and the oldest entry is read
    without a clock. In block RAM (``block_ram``), the write goes to the RAM at once and the
    read port is registered: it reads, in each clock, the entry that will be the oldest in the
    next, and one written at that place in the same clock comes through (the read port is
    transparent; Yosys keeps the written entry in a register beside the RAM for that). The
    ports behave the same either way. Block RAM takes no LUTs for the entries: a 513-bit queue
    of 32 entries is 15 DP16KD and about 550 LUT4 on ECP5, against about 1,850 LUT4 places in
    distributed RAM (258 DPR16X4 and the bank and bypass multiplexers).

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
        Not full (a register).
    kept : Out(1)
        An entry joins the queue this clock (``w_en``, ``w_commit`` and ``w_rdy``): it is
        counted in ``level`` from the next clock.
    r : Out(stream.Signature(shape))
        The oldest entry (from the RAM or the write register, without an output register);
        ``r.valid`` is a register.
    level : Out(range(depth + 1))
        Entries held (a register).

    Latency: an entry kept at clock ``t`` is on ``r`` and counted in ``level`` from ``t + 1``.
    Throughput: one entry in and one out per clock. Overflow: a write while full is ignored
    (the receiver's credit check keeps every kept entry within ``depth``).
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
        depth = self._depth
        m.submodules.mem = mem = Memory(
            shape=self._shape, depth=depth, init=[],
            attrs={"ram_style": "block"} if self._block_ram else None)
        wp = Signal(range(depth))
        rp = Signal(range(depth))
        w = self.kept
        r = Signal()
        rp_next = Signal.like(rp)
        m.d.comb += [
            rp_next.eq(_next(rp, depth)),
            w.eq(self.w_en & self.w_commit & self.w_rdy),
            r.eq(self.r.valid & self.r.ready),
        ]
        with m.If(w):
            m.d.sync += wp.eq(_next(wp, depth))
        with m.If(r):
            m.d.sync += rp.eq(rp_next)
        self._level(m, w, r)
        ports = self._block_ports if self._block_ram else self._lut_ports
        ports(m, mem, wp, rp, rp_next, r)
        return m

    def _block_ports(self, m, mem, wp, rp, rp_next, r):
        """Block RAM: written at once, read a clock ahead through a transparent port."""
        wport = mem.write_port()
        rport = mem.read_port(transparent_for=(wport,))
        m.d.comb += [
            wport.addr.eq(wp), wport.data.eq(self.w_data),
            wport.en.eq(self.w_en & self.w_rdy),
            rport.addr.eq(Mux(r, rp_next, rp)), self.r.payload.eq(rport.data),
        ]

    def _lut_ports(self, m, mem, wp, rp, rp_next, r):
        """Distributed RAM: written from a register a clock later, read without a clock."""
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

    def _level(self, m, w, r):
        """``level`` and the flags kept beside it as registers: ``r.valid`` (not empty) and
        ``w_rdy`` (not full). When full nothing is written, so ``w`` implies not full."""
        depth = self._depth
        valid, rdy = Signal(), Signal(init=1)
        m.d.comb += [self.r.valid.eq(valid), self.w_rdy.eq(rdy)]
        with m.If(w & ~r):
            m.d.sync += [self.level.eq(self.level + 1), valid.eq(1),
                         rdy.eq(self.level != depth - 1)]
        with m.Elif(r & ~w):
            m.d.sync += [self.level.eq(self.level - 1), valid.eq(self.level != 1), rdy.eq(1)]


def _next(ptr, depth):
    """The position after ``ptr`` in a ring of ``depth``."""
    if depth & (depth - 1) == 0:
        return ptr + 1
    return Mux(ptr == depth - 1, 0, ptr + 1)
