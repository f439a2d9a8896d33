# SPDX-License-Identifier: BSD-2-Clause
"""A small AXI4 memory in hardware behind a bridge's memory port, for runs too long for a
testbench that answers every beat (the ETH-X scenarios of ``make sim``, :mod:`sim.ethx.run`).
"""

from amaranth import Module, Signal
from amaranth.lib import memory
from amaranth.lib.wiring import In, Out

from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.ethx import EthxConfig, axi4_signature
from scaleup_ip.model.ethx.bridge import Burst

__all__ = ["AxiRam"]

_COUNT_BITS = 32


class AxiRam(ConfiguredComponent):
    """``2 ** words_log2`` words of the bus's width, zero at reset; bytes above wrap.

    One write and one read burst at a time: a write takes its AW, then one W beat a clock
    (strobes honoured), then answers B OKAY; a read takes its AR and sends one R beat a clock
    after one clock of latency, OKAY. Bursts are done as INCR of the bus's width whatever they
    say; ``bad`` counts the AWs and ARs that say otherwise and the write bursts whose WLAST is
    not on their AWLEN-th beat. ``writes`` counts the Bs sent, ``reads`` the ARs taken.

    ``peek_addr`` → ``peek_data`` (one clock later) and ``poke`` (``poke_addr``,
    ``poke_data``: all bytes, W waits that clock) are the testbench's own port to the words.
    """

    config_class = EthxConfig

    def __init__(self, config, words_log2):
        if words_log2 not in range(1, 21):
            raise ValueError(f"AxiRam: words_log2 must be 1 to 20, not {words_log2!r}")
        self.words_log2 = words_log2
        super().__init__(config, lambda c: {
            "axi": In(axi4_signature(c.addr_width, c.data_width, 1)),
            "peek_addr": In(words_log2), "peek_data": Out(c.data_width),
            "poke": In(1), "poke_addr": In(words_log2), "poke_data": In(c.data_width),
            "writes": Out(_COUNT_BITS), "reads": Out(_COUNT_BITS), "bad": Out(_COUNT_BITS),
        })

    def _word(self, addr):
        size = self.config.bus_size
        return addr[size:size + self.words_log2]

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = memory.Memory(shape=self.config.data_width,
                                               depth=1 << self.words_log2, init=[])
        self._write(m, mem.write_port(granularity=8))
        self._read(m, mem.read_port())
        peek = mem.read_port()
        m.d.comb += [peek.addr.eq(self.peek_addr), self.peek_data.eq(peek.data)]
        return m

    def _write(self, m, port):
        axi = self.axi
        addr = Signal(self.words_log2)
        beats = Signal(8)
        length = Signal(8)
        with m.FSM(name="write"):
            with m.State("ADDRESS"):
                m.d.comb += axi.awready.eq(1)
                with m.If(axi.awvalid):
                    m.d.sync += [addr.eq(self._word(axi.awaddr)), beats.eq(0),
                                 length.eq(axi.awlen)]
                    with m.If((axi.awburst != Burst.INCR) | (axi.awsize != self.config.bus_size)):
                        m.d.sync += self.bad.eq(self.bad + 1)
                    m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += axi.wready.eq(~self.poke)
                with m.If(axi.wvalid & ~self.poke):
                    m.d.comb += [port.addr.eq(addr), port.data.eq(axi.wdata),
                                 port.en.eq(axi.wstrb)]
                    m.d.sync += [addr.eq(addr + 1), beats.eq(beats + 1)]
                    with m.If(axi.wlast):
                        with m.If(beats != length):
                            m.d.sync += self.bad.eq(self.bad + 1)
                        m.next = "RESPONSE"
            with m.State("RESPONSE"):
                m.d.comb += axi.bvalid.eq(1)          # BID 0, BRESP OKAY
                with m.If(axi.bready):
                    m.d.sync += self.writes.eq(self.writes + 1)
                    m.next = "ADDRESS"
        with m.If(self.poke):
            m.d.comb += [port.addr.eq(self.poke_addr), port.data.eq(self.poke_data),
                         port.en.eq(-1)]

    def _read(self, m, port):
        axi = self.axi
        addr = Signal(self.words_log2)
        left = Signal(8)
        m.d.comb += [port.addr.eq(addr), axi.rdata.eq(port.data), axi.rlast.eq(left == 0)]
        with m.FSM(name="read"):
            with m.State("ADDRESS"):
                m.d.comb += axi.arready.eq(1)
                with m.If(axi.arvalid):
                    m.d.sync += [addr.eq(self._word(axi.araddr)), left.eq(axi.arlen),
                                 self.reads.eq(self.reads + 1)]
                    with m.If((axi.arburst != Burst.INCR) | (axi.arsize != self.config.bus_size)):
                        m.d.sync += self.bad.eq(self.bad + 1)
                    m.next = "FETCH"
            with m.State("FETCH"):                  # the first word's clock of latency
                m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += [axi.rvalid.eq(1), port.en.eq(axi.rready)]
                with m.If(axi.rready):
                    m.d.comb += port.addr.eq(addr + 1)
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                    with m.If(left == 0):
                        m.next = "ADDRESS"
