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

#: Bits of one ECP5 block RAM (DP16KD) in its 36-bit pseudo dual-port mode, and its entries
#: [Lattice TN1264, "Pseudo Dual Port RAM"].
ECP5_WIDTH, ECP5_DEPTH = 36, 512
#: Largest entry and depth taken [ours].
MAX_WIDTH, MAX_DEPTH = 4096, 65536


class PipelinedRam(wiring.Component):
    """``depth`` entries of ``width`` bits with one write port and one read port, whose read
    is registered twice.

    In the read port, ``r_en`` lets the first register take the entry at ``r_addr``, and
    ``r_out_en`` lets the second take what the first holds; ``r_data`` is the second. So an
    entry addressed with ``r_en`` in clock ``t`` is on ``r_data`` from ``t + 2`` when
    ``r_out_en`` was set at ``t + 1``, and each register keeps its entry while its enable is
    low. On an ECP5 (a platform of family ``ecp5``, ``depth`` ≤ 512) the entries are DP16KD
    block RAMs in their 36-bit pseudo dual-port mode, one per 36 bits, and the two registers
    are theirs (``REGMODE`` ``OUTREG``): ``r_data`` leaves the RAM about 1 ns after the clock,
    against about 5.8 ns from the RAM without its output register. Elsewhere (simulation,
    Verilog for other FPGAs) it is an Amaranth :class:`~amaranth.lib.memory.Memory` with a
    synchronous read port and a register after it.

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
    """

    def __init__(self, width, depth):
        try:
            check_int("PipelinedRam", "width", width, range(1, MAX_WIDTH + 1))
            check_int("PipelinedRam", "depth", depth, range(2, MAX_DEPTH + 1))
        except (TypeError, ValueError):
            self._MustUse__silence = True       # never built: nothing to warn about
            raise
        self._width, self._depth = width, depth
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
        if getattr(platform, "family", None) == "ecp5" and self._depth <= ECP5_DEPTH:
            for col in range(-(-self._width // ECP5_WIDTH)):
                lo = col * ECP5_WIDTH
                hi = min(lo + ECP5_WIDTH, self._width)
                m.submodules[f"col{col}"] = self._dp16kd(lo, hi)
        else:
            self._generic(m)
        return m

    def _generic(self, m):
        m.submodules.mem = mem = Memory(shape=self._width, depth=self._depth, init=[])
        wport = mem.write_port()
        rport = mem.read_port()
        m.d.comb += [
            wport.addr.eq(self.w_addr), wport.data.eq(self.w_data), wport.en.eq(self.w_en),
            rport.addr.eq(self.r_addr), rport.en.eq(self.r_en),
        ]
        with m.If(self.r_out_en):
            m.d.sync += self.r_data.eq(rport.data)

    def _dp16kd(self, lo, hi):
        """Bits ``lo`` to ``hi`` in one DP16KD, 512 x 36, written on port A and read on B:
        the pin use of Yosys's own ECP5 memory mapping (``brams_map_16kd.v``, ``PDPW16KD``),
        with both output registers on."""
        n = hi - lo
        abits = Shape.cast(range(self._depth)).width
        ports = {
            "i_CLKA": ClockSignal("sync"), "i_CLKB": ClockSignal("sync"),
            "i_CEA": self.w_en, "i_WEA": 1, "i_OCEA": self.r_out_en, "i_RSTA": 0,
            "i_CEB": self.r_en, "i_WEB": 0, "i_OCEB": self.r_out_en, "i_RSTB": 0,
        }
        for i in range(3):
            ports[f"i_CSA{i}"] = ports[f"i_CSB{i}"] = 0
        for i in range(14):
            # In the 36-bit mode the address is in bits 5-13; port A's bits 0-3 are its byte
            # enables (all on).
            bit = i - 5
            ports[f"i_ADA{i}"] = 1 if i < 4 else (self.w_addr[bit] if 0 <= bit < abits else 0)
            ports[f"i_ADB{i}"] = self.r_addr[bit] if 0 <= bit < abits else 0
        for i in range(ECP5_WIDTH):
            half, pin = ("A", i) if i < 18 else ("B", i - 18)
            ports[f"i_DI{half}{pin}"] = self.w_data[lo + i] if i < n else 0
            if i < n:
                ports[f"o_DO{half}{pin}"] = self.r_data[lo + i]
        return Instance(
            "DP16KD",
            p_DATA_WIDTH_A=ECP5_WIDTH, p_DATA_WIDTH_B=ECP5_WIDTH,
            p_REGMODE_A="OUTREG", p_REGMODE_B="OUTREG",
            p_RESETMODE="SYNC", p_ASYNC_RESET_RELEASE="SYNC",
            p_CSDECODE_A="0b000", p_CSDECODE_B="0b000",
            p_CLKAMUX="CLKA", p_CLKBMUX="CLKB", p_GSR="AUTO", **ports)
