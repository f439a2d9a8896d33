# SPDX-License-Identifier: BSD-2-Clause
"""cocotb drivers for Amaranth valid/ready streams whose payload is a layout.

The bus is found by its Amaranth port prefix (``i`` → ``i__payload``, ``i__valid``,
``i__ready``). Payloads are packed and unpacked only through the RTL's own layouts, so the
testbench never repeats an offset or a width.
"""

import itertools
from collections.abc import Mapping, Sequence

from amaranth import hdl
from amaranth.lib import data
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotbext.axi.stream import define_stream

__all__ = ["LayoutSource", "LayoutSink", "LayoutMonitor", "random_pauses", "bytes_to_beats",
           "reset", "pack", "FieldReader"]

_Bus, _Transaction, _Source, _Sink, _Monitor = define_stream(
    "Layout", signals=["payload", "valid", "ready"])


def _plan(layout):
    """``{key: (offset, mask, shape, nested plan or None)}`` of ``layout``'s fields, looked up
    once: ``layout.const`` finds every field and its width again at every call, which made
    packing a beat cost more than simulating a clock of the design."""
    plan = {}
    for key, field in layout:
        shape = field.shape
        nested = _plan(shape) if isinstance(shape, data.Layout) else None
        plan[key] = (field.offset, (1 << hdl.Shape.cast(shape).width) - 1, shape, nested)
    return plan


def _pack(layout, plan, init):
    """``layout.const(init).as_bits()``, by ``plan``: a field of a plain shape given an ``int``
    (a ``bool`` too) is shifted in directly, a field of a layout given a mapping or a sequence
    is packed the same way, or given a constant of that very layout, its bits; every other
    field value as ``layout.const`` converts it. Anything else (no mapping or sequence, a key
    not in the layout) is left to ``layout.const``."""
    if isinstance(init, Mapping):
        items = init.items()
    elif isinstance(init, Sequence) and not isinstance(init, (str, bytes)):
        items = enumerate(init)
    else:
        return layout.const(init).as_bits()
    value = 0
    for key, field_value in items:
        entry = plan.get(key)
        if entry is None:
            return layout.const(init).as_bits()     # raises as it would
        offset, mask, shape, nested = entry
        if isinstance(field_value, int) and not isinstance(shape, hdl.ShapeCastable):
            bits = field_value
        elif (nested is not None and isinstance(field_value, (Mapping, Sequence))
              and not isinstance(field_value, (str, bytes))):
            bits = _pack(shape, nested, field_value)
        elif isinstance(field_value, data.Const) and field_value.shape() is shape:
            bits = field_value.as_bits()
        elif isinstance(shape, hdl.ShapeCastable):  # as Layout.const converts a field value
            bits = hdl.Const.cast(hdl.Const(field_value, shape)).value
        elif isinstance(field_value, hdl.Const):
            bits = field_value.value
        else:
            bits = hdl.Const(field_value, hdl.Shape.cast(shape)).value
        value = value & ~(mask << offset) | (bits << offset) & (mask << offset)
    return value


def pack(layout, init):
    """The bits of ``layout.const(init)``, the same for every ``init``, as
    :class:`LayoutSource` packs them (its plan of the layout kept)."""
    return _pack(layout, _plan(layout), init)


def random_pauses(rng, probability):
    """An endless pause pattern: each cycle paused with ``probability`` (``None`` if 0)."""
    if not probability:
        return None
    return (rng.random() < probability for _ in itertools.count())


class LayoutSource:
    """Drive a stream: :meth:`send` takes the layout's fields as keyword arguments."""

    def __init__(self, dut, prefix, layout, clock, reset=None):
        self.layout = layout
        self._plan = _plan(layout)
        self._source = _Source(_Bus.from_prefix(dut, prefix, bus_separator="__"), clock, reset)

    def send_nowait(self, **fields):
        self._source.send_nowait(_Transaction(payload=_pack(self.layout, self._plan, fields)))

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


class FieldReader:
    """A field of a layout, read from a payload's bits as a ``data.Const`` view reads it."""

    def __init__(self, layout, name):
        field = layout[name]
        shape = hdl.Shape.cast(field.shape)
        self.layout, self.name = layout, name
        self.offset, self.mask = field.offset, (1 << shape.width) - 1
        self.plain = not isinstance(field.shape, hdl.ShapeCastable) and not shape.signed

    def get(self, bits):
        if self.plain:
            return bits >> self.offset & self.mask
        return self.layout.from_bits(bits)[self.name]


class LayoutSink:
    """Accept a stream: :meth:`recv` returns a ``data.Const`` view of the layout."""

    def __init__(self, dut, prefix, layout, clock, reset=None):
        self.layout = layout
        self._fields = {}
        self._sink = _Sink(_Bus.from_prefix(dut, prefix, bus_separator="__"), clock, reset)

    def set_backpressure(self, generator):
        """Hold ``ready`` low where ``generator`` yields true (``None``: never)."""
        self._sink.set_pause_generator(generator)
        if generator is None:
            self._sink.pause = False        # clearing a generator leaves its last value

    async def recv(self):
        return self.layout.from_bits((await self._sink.recv()).payload.to_unsigned())

    async def recv_fields(self, *names):
        """The fields ``names`` of the next payload, as ``recv``'s view gives them (a field of
        a plain shape as an ``int``), without making the view: for the beats of long frames."""
        bits = (await self._sink.recv()).payload.to_unsigned()
        values = []
        for name in names:
            field = self._fields.get(name)
            if field is None:
                field = self._fields[name] = FieldReader(self.layout, name)
            values.append(field.get(bits))
        return values

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
