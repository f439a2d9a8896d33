# SPDX-License-Identifier: BSD-2-Clause
"""AXI4 traffic made and checked in hardware at a bridge's GPU port, for runs too long for a
testbench that handles every beat (the ETH-X scenarios of ``make sim``, :mod:`sim.ethx.run`).

Burst ``n`` (counting from 0) goes to slot ``n mod slots`` of the destination's memory, in
round ``n // slots``. Slot ``s`` is 16 bus words at byte ``16 * bus bytes * s`` (never across
4 KB); its bursts are INCR of the bus's width, :func:`burst_beats` long. Each burst is
written, and once its B is back, read and checked: every 8-byte word of it is
:func:`word` of its index in the memory and the burst's round. A slot is written again only
once its last read is back, so at the end each slot holds its last round's words.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib.wiring import In, Out

from scaleup_ip.config import ConfiguredComponent
from scaleup_ip.ethx import EthxConfig, axi4_signature, user_layout
from scaleup_ip.model.ethx.bridge import Burst

__all__ = ["AxiTraffic", "burst_beats", "word"]

#: Beats of a slot: the longest burst.
SLOT_BEATS = 16
_COUNT_BITS = 32
#: Low byte of every word, so that a zero word is never right.
_MARK = 0x5A


def burst_beats(slot):
    """Beats of the bursts to ``slot``: 1 to 16, every length among 16 slots in a row."""
    return (slot * 7) % SLOT_BEATS + 1


def word(index, rnd):
    """The 8-byte word at word ``index`` of the memory written in round ``rnd``."""
    return (rnd % (1 << 32)) << 32 | (index % (1 << 24)) << 8 | _MARK


def _word(index, rnd):
    """:func:`word` in hardware (``index`` narrower than 24 bits): 64 bits."""
    rnd = rnd[:32]
    return Cat(Const(_MARK, 8), index, Const(0, 24 - len(index)), rnd, Const(0, 32 - len(rnd)))


class AxiTraffic(ConfiguredComponent):
    """Bursts on AXI ID 0 to node ``dst`` on VC ``vc`` over ``2 ** slots_log2`` slots, while
    ``enable`` is high (new writes; reads go on until every write is read back).

    Counters (32 bits): ``writes`` AWs sent, ``acked`` Bs back, ``reads`` ARs sent, ``checked``
    read bursts back; ``bad_data`` R beats with a wrong word; ``bad_resp`` Bs and R beats not
    OKAY, R beats with a wrong RLAST, responses with an ID not 0. ``idle``: every burst
    written and read back.
    """

    config_class = EthxConfig

    def __init__(self, config, dst, vc, slots_log2):
        if slots_log2 not in range(1, 13):
            raise ValueError(f"AxiTraffic: slots_log2 must be 1 to 12, not {slots_log2!r}")
        self.dst, self.vc, self.slots_log2 = dst, vc, slots_log2
        self._user = user_layout(config).const({"node": dst, "vc": vc, "order": 0}).as_bits()
        super().__init__(config, lambda c: {
            "axi": Out(axi4_signature(c.addr_width, c.data_width, c.id_width,
                                      user_layout(c).size)),
            "enable": In(1), "idle": Out(1),
            **{name: Out(_COUNT_BITS) for name in ("writes", "acked", "reads", "checked",
                                                    "bad_data", "bad_resp")},
        })

    def _slot(self, n):
        return n[:self.slots_log2]

    def _round(self, n):
        return n[self.slots_log2:]

    def _beats(self, n):
        """Beats of burst ``n`` minus one: AxLEN."""
        return (self._slot(n) * 7)[:4]

    def _addr(self, n):
        return Cat(Const(0, self.config.bus_size + 4), self._slot(n))

    def _words(self, n, beat):
        """The bus word of beat ``beat`` of burst ``n``."""
        lanes = self.config.bus_words
        first = Cat(Const(0, (lanes - 1).bit_length()), beat[:4], self._slot(n))
        return Cat(*(_word(first + lane, self._round(n)) for lane in range(lanes)))

    def elaborate(self, platform):
        m = Module()
        axi = self.axi
        slots = 1 << self.slots_log2
        m.d.comb += self.idle.eq((self.writes == self.checked) & ~axi.awvalid)
        for ch in ("aw", "ar"):
            m.d.comb += [getattr(axi, f"{ch}size").eq(self.config.bus_size),
                         getattr(axi, f"{ch}burst").eq(Burst.INCR),
                         getattr(axi, f"{ch}user").eq(self._user)]
        m.d.comb += [axi.bready.eq(1), axi.rready.eq(1),
                     axi.wstrb.eq((1 << self.config.data_width // 8) - 1)]
        # AW: a slot again only once its last read is back.
        sent = axi.awvalid & axi.awready
        ahead = Signal(_COUNT_BITS)             # bursts written whose reads are not back
        nxt = Signal(_COUNT_BITS)               # the next AW's burst
        m.d.comb += [nxt.eq(self.writes + sent), ahead.eq(nxt - self.checked)]
        with m.If(~axi.awvalid | axi.awready):  # registered fields, as a manager's should be
            m.d.sync += [axi.awvalid.eq(self.enable & (ahead < slots)),
                         axi.awaddr.eq(self._addr(nxt)), axi.awlen.eq(self._beats(nxt))]
        with m.If(sent):
            m.d.sync += self.writes.eq(self.writes + 1)
        self._data(m)
        self._responses(m)
        return m

    def _data(self, m):
        """W beats of the bursts whose AW has gone."""
        axi = self.axi
        burst = Signal(_COUNT_BITS)
        beat = Signal(4)
        m.d.comb += [axi.wvalid.eq(burst != self.writes),
                     axi.wdata.eq(self._words(burst, beat)),
                     axi.wlast.eq(beat == self._beats(burst))]
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += beat.eq(beat + 1)
            with m.If(axi.wlast):
                m.d.sync += [beat.eq(0), burst.eq(burst + 1)]

    def _responses(self, m):
        """B counted; AR once a burst's B is back; R checked in order."""
        axi = self.axi
        bad_b, bad_r, bad_data = Signal(), Signal(), Signal()
        with m.If(axi.bvalid):
            m.d.sync += self.acked.eq(self.acked + 1)
            m.d.comb += bad_b.eq((axi.bresp != 0) | (axi.bid != 0))
        asked = Signal(_COUNT_BITS)             # the next AR's burst
        m.d.comb += asked.eq(self.reads + (axi.arvalid & axi.arready))
        with m.If(~axi.arvalid | axi.arready):
            m.d.sync += [axi.arvalid.eq(asked != self.acked),
                         axi.araddr.eq(self._addr(asked)), axi.arlen.eq(self._beats(asked))]
        with m.If(axi.arvalid & axi.arready):
            m.d.sync += self.reads.eq(self.reads + 1)
        beat = Signal(4)
        last = beat == self._beats(self.checked)
        with m.If(axi.rvalid):
            m.d.sync += beat.eq(beat + 1)
            m.d.comb += [bad_data.eq(axi.rdata != self._words(self.checked, beat)),
                         bad_r.eq((axi.rresp != 0) | (axi.rid != 0) | (axi.rlast != last))]
            with m.If(axi.rlast | last):
                m.d.sync += [beat.eq(0), self.checked.eq(self.checked + 1)]
        m.d.sync += [self.bad_resp.eq(self.bad_resp + bad_b + bad_r),
                     self.bad_data.eq(self.bad_data + bad_data)]
