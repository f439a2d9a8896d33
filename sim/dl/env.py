# SPDX-License-Identifier: BSD-2-Clause
"""cocotb helpers for one :class:`~scaleup_ip.dl.dl.UalinkDl` end: start it, pass TL flits through its
stream ports, and play its PHY side (whole DL flits out of ``phy_out``, into ``phy_in``, with
a delay and errors)."""

import collections

from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from scaleup_ip.dl import (
    BEATS_PER_FLIT,
    BEAT_BITS,
    BEAT_BYTES,
    RxCount,
    TxCount,
    rx_counts,
    tx_counts,
)
from scaleup_ip.model.dl.flit import TlFlit
from scaleup_ip.tl import HALF_BITS

from sim.streams import reset

__all__ = ["PhySide", "end_counts", "lossy", "random_tl_flits", "start_end", "tl_fields",
           "tl_value"]


async def start_end(dut, *, ack_timeout, replay_limit):
    """Clock, link control enabled, the replay registers, reset."""
    Clock(dut.clk, 10, unit="ns").start()
    dut.fault.value = 0
    dut.enable.value = 1
    dut.retrain.value = 0
    dut.ack_timeout.value = ack_timeout
    dut.replay_limit.value = replay_limit
    await reset(dut)


def tl_fields(value, msg):
    """The :data:`~scaleup_ip.tl.layout.flit_layout` fields of a 512-bit TL flit ``value``."""
    return {"data": [value & ((1 << HALF_BITS) - 1), value >> HALF_BITS], "msg": msg}


def random_tl_flits(rng, n):
    """``n`` random TL flits, as the golden model's :class:`~scaleup_ip.model.dl.flit.TlFlit`."""
    return [TlFlit.from_int(rng.getrandbits(2 * HALF_BITS), rng.getrandbits(1),
                            rng.getrandbits(1)) for _ in range(n)]


def tl_value(got):
    """The 512 bits of a received :data:`~scaleup_ip.tl.layout.flit_layout` view."""
    return int(got.data[0]) | int(got.data[1]) << HALF_BITS


def end_counts(dut):
    """``(tx, rx)``: the end's replay counters, as dicts by name."""
    tx = tx_counts.from_bits(int(dut.tx_counts.value))
    rx = rx_counts.from_bits(int(dut.rx_counts.value))
    return {k.name: int(tx[k]) for k in TxCount}, {k.name: int(rx[k]) for k in RxCount}


def lossy(rng, errors, stats, flit):
    """``flit`` (bytes) after a channel that drops it with probability ``errors["drop"]`` and
    flips one random bit with ``errors["corrupt"]``; ``None`` if dropped. ``stats`` counts."""
    if rng.random() < errors["drop"]:
        stats["dropped"] += 1
        return None
    if rng.random() < errors["corrupt"]:
        stats["corrupted"] += 1
        bit = rng.randrange(8 * len(flit))
        flit = bytearray(flit)
        flit[bit // 8] ^= 1 << bit % 8
        return bytes(flit)
    return flit


class PhySide:
    """The PHY side of ``dut``: every DL flit leaving ``phy_out`` (always ready) goes to
    ``on_flit(flit, clock)``; flits given to :meth:`send` enter ``phy_in`` beat by beat from
    their due clock, in order. ``on_clock(clock)``, if given, runs once per clock. A reset
    empties both directions. ``lag``: the most clocks a beat waited past its due clock for
    ``phy_in`` to take it (the DL's receive side backs up when its TL output stalls)."""

    def __init__(self, dut, on_flit, on_clock=None):
        self._dut, self._on_flit, self._on_clock = dut, on_flit, on_clock
        self._queue = collections.deque()           # (due clock, beat payload)
        self.now = 0
        self.lag = 0

    def send(self, flit, due):
        for b in range(BEATS_PER_FLIT):
            beat = int.from_bytes(flit[b * BEAT_BYTES:(b + 1) * BEAT_BYTES], "little")
            self._queue.append((due, beat | (b == BEATS_PER_FLIT - 1) << BEAT_BITS))

    async def run(self):
        dut = self._dut
        beats, offered = [], False
        dut.phy_out__ready.value = 1
        dut.phy_in__valid.value = 0
        while True:
            await RisingEdge(dut.clk)                 # values read now are those of the edge
            self.now += 1
            if int(dut.rst.value):
                self._queue.clear()
                beats, offered = [], False
            if offered and int(dut.phy_in__ready.value):
                self.lag = max(self.lag, self.now - self._queue.popleft()[0])
            if int(dut.phy_out__valid.value):
                payload = int(dut.phy_out__payload.value)
                beats.append((payload & ((1 << BEAT_BITS) - 1)).to_bytes(BEAT_BYTES, "little"))
                if payload >> BEAT_BITS & 1:
                    self._on_flit(b"".join(beats), self.now)
                    beats = []
            if self._on_clock is not None:
                self._on_clock(self.now)
            offered = bool(self._queue) and self._queue[0][0] <= self.now
            dut.phy_in__valid.value = int(offered)
            if offered:
                dut.phy_in__payload.value = self._queue[0][1]
