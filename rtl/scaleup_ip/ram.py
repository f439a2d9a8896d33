# SPDX-License-Identifier: BSD-2-Clause
"""A simple dual-port RAM whose read goes through two registers, each with its own enable: on
ECP5 the block RAM's own address and output registers."""

from amaranth import ClockSignal, Module, Shape
from amaranth.hdl import Instance
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .config import check_int

__all__ = ["PipelinedRam"]

#: The shapes of one ECP5 block RAM (DP16KD), ``(depth, width)``: 36 bits wide in its pseudo
#: dual-port mode, the others in its true dual-port mode [Lattice TN1264, "Dual Port RAM",
#: "Pseudo Dual Port RAM"]. In each, the word address is in address bits 13 down to
#: ``14 - log2(depth)``.
ECP5_SHAPES = ((512, 36), (1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1))
#: Address bits of a DP16KD.
ECP5_ADDR_BITS = 14
#: Port A's low address bits that are its byte enables, by width (36: ADA0-3, 18: ADA0-1)
#: [TN1264]; set, so that every byte is written.
ECP5_BYTE_ENABLES = {36: 4, 18: 2}
#: Largest entry and depth taken [ours].
MAX_WIDTH, MAX_DEPTH = 4096, 65536


class PipelinedRam(wiring.Component):
    """``depth`` entries of ``width`` bits with one write port and one read port, whose read
    is registered twice.

    In the read port, ``r_en`` lets the first register take the entry at ``r_addr``, and
    ``r_out_en`` lets the second take what the first holds; ``r_data`` is the second. So an
    entry addressed with ``r_en`` in clock ``t`` is on ``r_data`` from ``t + 2`` when
    ``r_out_en`` was set at ``t + 1``, and each register keeps its entry while its enable is
    low. On an ECP5 (a platform of family ``ecp5``, ``depth`` ≤ 16384) the entries are DP16KD
    block RAMs in the widest shape that holds ``depth`` entries (:data:`ECP5_SHAPES`: 36 bits
    by 512 in the pseudo dual-port mode, 18 by 1024, 9 by 2048, 4 by 4096 and so on, written
    on port A and read on port B), as many side by side as ``width`` needs, and the two
    registers are theirs (``REGMODE`` ``OUTREG``): ``r_data`` leaves the RAM about 1 ns after
    the clock, against about 5.8 ns from the RAM without its output register. Elsewhere
    (simulation, formal proofs, Verilog for other FPGAs, and on an ECP5 deeper than 16384) it
    is :attr:`memory`, an Amaranth :class:`~amaranth.lib.memory.Memory` with a synchronous
    read port, and a register after it. A ``PipelinedRam`` is elaborated once (its
    :attr:`memory` is its own): make one in the ``elaborate`` of the design that uses it.

    Parameters
    ----------
    width : int
        Bits of an entry.
    depth : int
        Entries.

    Members
    -------
    w_addr : In(range(depth)), w_data : In(width), w_en : In(1)
        Write ``w_data`` at ``w_addr`` at the end of the clock.
    r_addr : In(range(depth)), r_en : In(1)
        The first read register takes the entry at ``r_addr``. Reading the entry written in
        the same clock is not defined (the caller never does).
    r_out_en : In(1)
        The second read register takes the first.
    r_data : Out(width)
        The second read register.

    Latency: 2 clocks from ``r_addr`` to ``r_data``. Throughput: one write and one read per
    clock.

    Attributes
    ----------
    memory : Memory
        The entries where they are not DP16KDs (a formal proof may read it); unused where they
        are.
    """

    def __init__(self, width, depth):
        try:
            check_int("PipelinedRam", "width", width, range(1, MAX_WIDTH + 1))
            check_int("PipelinedRam", "depth", depth, range(1, MAX_DEPTH + 1))
        except (TypeError, ValueError):
            self._MustUse__silence = True       # never built: nothing to warn about
            raise
        self._width, self._depth = width, depth
        self.memory = Memory(shape=width, depth=depth, init=[])
        self.memory._MustUse__silence = True    # not used on an ECP5
        super().__init__({
            "w_addr": In(range(depth)),
            "w_data": In(width),
            "w_en": In(1),
            "r_addr": In(range(depth)),
            "r_en": In(1),
            "r_out_en": In(1),
            "r_data": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        shape = self._ecp5_shape(platform)
        if shape is None:
            self._generic(m)
            return m
        depth, width = shape
        for col in range(-(-self._width // width)):
            lo = col * width
            m.submodules[f"col{col}"] = self._dp16kd(depth, width, lo,
                                                     min(lo + width, self._width))
        return m

    def _ecp5_shape(self, platform):
        """The DP16KD shape ``(depth, width)`` the entries take, or None: not an ECP5, or
        deeper than one DP16KD."""
        if getattr(platform, "family", None) != "ecp5":
            return None
        return next(((d, w) for d, w in ECP5_SHAPES if self._depth <= d), None)

    def _generic(self, m):
        m.submodules.mem = mem = self.memory
        wport = mem.write_port()
        rport = mem.read_port()
        m.d.comb += [
            wport.addr.eq(self.w_addr), wport.data.eq(self.w_data), wport.en.eq(self.w_en),
            rport.addr.eq(self.r_addr), rport.en.eq(self.r_en),
        ]
        with m.If(self.r_out_en):
            m.d.sync += self.r_data.eq(rport.data)

    def _dp16kd(self, depth, width, lo, hi):
        """Bits ``lo`` to ``hi`` in one DP16KD of ``depth`` x ``width``, written on port A and
        read on B, with both output registers on: the pin use of Yosys's own ECP5 memory
        mapping (``brams_map_16kd.v``; in the 36-bit mode ``PDPW16KD``, whose data spans both
        ports' pins)."""
        n = hi - lo
        abits = Shape.cast(range(self._depth)).width
        low = ECP5_ADDR_BITS - (depth - 1).bit_length()     # the word address's lowest bit
        wide = width == 36
        ports = {
            "i_CLKA": ClockSignal("sync"), "i_CLKB": ClockSignal("sync"),
            # Port A's output register holds read data only in the 36-bit mode.
            "i_CEA": self.w_en, "i_WEA": 1, "i_OCEA": self.r_out_en if wide else 0, "i_RSTA": 0,
            "i_CEB": self.r_en, "i_WEB": 0, "i_OCEB": self.r_out_en, "i_RSTB": 0,
        }
        for i in range(3):
            ports[f"i_CSA{i}"] = ports[f"i_CSB{i}"] = 0
        enables = ECP5_BYTE_ENABLES.get(width, 0)
        for i in range(ECP5_ADDR_BITS):
            bit = i - low
            ports[f"i_ADA{i}"] = self.w_addr[bit] if 0 <= bit < abits else int(i < enables)
            ports[f"i_ADB{i}"] = self.r_addr[bit] if 0 <= bit < abits else 0
        for i in range(width):
            if wide:                        # bits 0-17 on port A's pins, 18-35 on port B's
                din = dout = f"A{i}" if i < 18 else f"B{i - 18}"
            else:
                din, dout = f"A{i}", f"B{i}"
            ports[f"i_DI{din}"] = self.w_data[lo + i] if i < n else 0
            if i < n:
                ports[f"o_DO{dout}"] = self.r_data[lo + i]
        regmode_a = "OUTREG" if wide else "NOREG"
        return Instance(
            "DP16KD",
            p_DATA_WIDTH_A=width, p_DATA_WIDTH_B=width,
            p_REGMODE_A=regmode_a, p_REGMODE_B="OUTREG",
            p_RESETMODE="SYNC", p_ASYNC_RESET_RELEASE="SYNC",
            p_CSDECODE_A="0b000", p_CSDECODE_B="0b000",
            p_CLKAMUX="CLKA", p_CLKBMUX="CLKB", p_GSR="AUTO", **ports)
