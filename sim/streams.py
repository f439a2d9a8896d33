# SPDX-License-Identifier: BSD-2-Clause
"""cocotb drivers for Amaranth valid/ready streams whose payload is a layout.

The bus is found by its Amaranth port prefix (``i`` → ``i__payload``, ``i__valid``,
``i__ready``). Payloads are packed and unpacked only through the RTL's own layouts, so the
testbench never repeats an offset or a width.
"""

import itertools

from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotbext.axi.stream import define_stream

__all__ = ["LayoutSource", "LayoutSink", "LayoutMonitor", "random_pauses", "bytes_to_beats",
           "reset"]

_Bus, _Transaction, _Source, _Sink, _Monitor = define_stream(
    "Layout", signals=["payload", "valid", "ready"])


def random_pauses(rng, probability):
    """An endless pause pattern: each cycle paused with ``probability`` (``None`` if 0)."""
    if not probability:
        return None
    return (rng.random() < probability for _ in itertools.count())


class LayoutSource:
    """Drive a stream: :meth:`send` takes the layout's fields as keyword arguments."""

    def __init__(self, dut, prefix, layout, clock, reset=None):
        self.layout = layout
        self._source = _Source(_Bus.from_prefix(dut, prefix, bus_separator="__"), clock, reset)

    def send_nowait(self, **fields):
        self._source.send_nowait(_Transaction(payload=self.layout.const(fields).as_bits()))

    def set_idle(self, generator):
        """Insert idle cycles where ``generator`` yields true (``None``: never)."""
        self._source.set_pause_generator(generator)
        if generator is None:
            self._source.pause = False      # clearing a generator leaves its last value

    def empty(self):
        """Whether every queued beat has been handed to the DUT."""
        return self._source.empty()

    def count(self):
        """Beats queued, not yet handed to the DUT."""
        return self._source.count()

    async def wait(self):
        await self._source.wait()


class LayoutSink:
    """Accept a stream: :meth:`recv` returns a ``data.Const`` view of the layout."""

    def __init__(self, dut, prefix, layout, clock, reset=None):
        self.layout = layout
        self._sink = _Sink(_Bus.from_prefix(dut, prefix, bus_separator="__"), clock, reset)

    def set_backpressure(self, generator):
        """Hold ``ready`` low where ``generator`` yields true (``None``: never)."""
        self._sink.set_pause_generator(generator)
        if generator is None:
            self._sink.pause = False        # clearing a generator leaves its last value

    async def recv(self):
        return self.layout.from_bits((await self._sink.recv()).payload.to_unsigned())

    def empty(self):
        """Whether every received result has been taken with :meth:`recv`."""
        return self._sink.empty()


class LayoutMonitor:
    """Watch a stream without driving it: every handshake is recorded, in order."""

    def __init__(self, dut, prefix, layout, clock, reset=None):
        self.layout = layout
        self._monitor = _Monitor(_Bus.from_prefix(dut, prefix, bus_separator="__"), clock, reset)

    def take_all(self):
        """Return (and forget) every payload seen so far, as ``data.Const`` views."""
        seen = []
        while not self._monitor.empty():
            seen.append(self.layout.from_bits(
                self._monitor.recv_nowait().payload.to_unsigned()))
        return seen


def bytes_to_beats(packet, bytes_per_beat):
    """Split ``packet`` into beat field dicts for :func:`scaleup_ip.types.byte_beat_layout`.

    A zero-length packet is one beat with ``keep`` = 0.
    """
    beats = []
    for offset in range(0, max(len(packet), 1), bytes_per_beat):
        chunk = packet[offset:offset + bytes_per_beat]
        beats.append({
            "data": int.from_bytes(chunk, "little"),
            "keep": (1 << len(chunk)) - 1,
            "last": int(offset + bytes_per_beat >= len(packet)),
        })
    return beats


async def reset(dut, cycles=3):
    """Hold the synchronous ``dut.rst`` for ``cycles`` clock edges, then release it and wait
    for one more edge. Stream drivers bound to ``dut.rst`` drop what they hold."""
    dut.rst.value = 1
    await ClockCycles(dut.clk, cycles)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


async def clocks(clk, n, period_ns):
    """``n`` rising edges of ``clk`` (period ``period_ns``) from just after one: like
    ``ClockCycles(clk, n)``, but one Python wake-up instead of one per edge (what makes a
    simulation whose traffic lives in hardware fast)."""
    if n > 1:
        await Timer(round((n - 1.5) * period_ns * 1000), "ps")
    await RisingEdge(clk)
