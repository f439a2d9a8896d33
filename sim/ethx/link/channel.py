# SPDX-License-Identifier: BSD-2-Clause
"""The Ethernet channel between two ETH-X bridges of :class:`sim.ethx.pair.EthxPair` in
cocotb: whole frames from one end's ``tx`` to the other end's ``rx``, each a fixed number of
clocks late, none lost or reordered, optionally at line rate (the preamble, the inter-frame gap
and an external MAC's FCS held as idle clocks after each frame), frames injected by a test
between the frames it carries, and frames a test's ``fate`` drops or corrupts."""

import math

import cocotb
from cocotb.queue import Queue
from cocotb.triggers import RisingEdge

from scaleup_ip.ethx import eth_beat_layout
from scaleup_ip.model.ethx.bridge import FCS_BYTES, WIRE_EXTRA

from sim.ethx.env import cycle
from sim.streams import LayoutSink, LayoutSource, bytes_to_beats

__all__ = ["EthxChannel"]


class _Gaps:
    """A sink pause pattern: paused while ``hold`` clocks remain."""

    def __init__(self):
        self.hold = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.hold:
            self.hold -= 1
            return True
        return False


class EthxChannel:
    """Frames from ``src``'s ``tx`` to ``dst``'s ``rx`` of the pair ``dut``.

    Parameters
    ----------
    delay : int
        Clocks from a frame's last beat leaving ``src`` to its first beat offered to ``dst``.
    line_rate : bool
        After each frame, hold ``src``'s ``tx`` for the clocks the preamble and SFD (8 bytes),
        the inter-frame gap (12) and, without ``config.fcs``, the MAC's FCS (4) take at the
        stream's width: the wire's rate.
    fate : callable or None
        ``fate(frame)`` for each frame taken: ``None`` delivers it, ``False`` drops it, bytes
        are delivered instead (a frame the test corrupted).

    Attributes
    ----------
    frames : list of (int, bytes)
        Every frame ``src`` sent (FCS included with ``config.fcs``), with the clock it ended.
    """

    def __init__(self, dut, config, src, dst, *, delay=20, line_rate=False, fate=None):
        self.dut, self.config, self.delay, self.fate = dut, config, delay, fate
        layout = eth_beat_layout(config.eth_width)
        self.sink = LayoutSink(dut, f"{src}_tx", layout, dut.clk, dut.rst)
        self.source = LayoutSource(dut, f"{dst}_rx", layout, dut.clk, dut.rst)
        self.frames = []
        self.injected = 0
        self._queue = Queue()
        self._partial = False          # a frame partly taken from ``src``
        self._held = False             # a frame taken from the queue, waiting out its delay
        self._gaps = _Gaps()
        extra = WIRE_EXTRA + (0 if getattr(config, "fcs", True) else FCS_BYTES)
        self._gap_clocks = math.ceil(extra / config.eth_bytes) if line_rate else 0
        if line_rate:
            self.sink.set_backpressure(self._gaps)
        cocotb.start_soon(self._take())
        cocotb.start_soon(self._deliver())

    def inject(self, frame, *, user=0):
        """Deliver ``frame`` (raw bytes, FCS included if any) to ``dst`` after the frames
        already on the way, ``user`` on its last beat."""
        self.injected += 1
        self._queue.put_nowait((cycle(), frame, user))

    def idle(self):
        """Nothing on the way to ``dst``: no frame partly sent by ``src``, queued, waiting out
        its delay or partly delivered."""
        return (not self._partial and not self._held and self._queue.empty()
                and self.source.empty())

    async def _take(self):
        width = self.config.eth_bytes
        while True:
            frame = b""
            while True:
                data, keep, last = await self.sink.recv_fields("data", "keep", "last")
                frame += data.to_bytes(width, "little")[:keep.bit_length()]
                self._partial = not last
                if last:
                    break
            self._gaps.hold = self._gap_clocks
            self.frames.append((cycle(), frame))
            fate = self.fate(frame) if self.fate else None
            if fate is not False:
                self._queue.put_nowait((cycle() + self.delay, fate or frame, 0))

    async def _deliver(self):
        while True:
            when, frame, user = await self._queue.get()
            self._held = True
            while cycle() < when:
                await RisingEdge(self.dut.clk)
            beats = bytes_to_beats(frame, self.config.eth_bytes)
            for k, beat in enumerate(beats):
                self.source.send_nowait(user=user if k == len(beats) - 1 else 0, **beat)
            self._held = False
