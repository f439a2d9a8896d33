# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb environment of the TL unpacker (``tl_rx``): flit driver, UPLI sinks, credit pins.

Flits come from the golden-model :class:`~scaleup_ip.model.tl.flit.Packer`; what the RTL delivers is
rebuilt into golden-model items. One clock loop samples ``give``/``grant`` and drives the next
flit, so credits returned by the RTL reach the model before it packs the next flit.
"""

import random

import cocotb
from amaranth import Shape
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from scaleup_ip.model.tl.flit import (
    CLASSES,
    SLOTS,
    ReadResponse,
    Request,
    WriteResponse,
    credit_table,
)
from scaleup_ip.tl import (
    TlConfig,
    credit_update_layout,
    flit_layout,
    orig_data_layout,
    rd_rsp_layout,
    request_layout,
    rx_error_counts,
    wr_rsp_layout,
)
from sim.streams import LayoutSink, random_pauses, reset
from sim.tl.env import PERIOD_NS, config_credits

__all__ = ["TlRxEnv", "UpliItemSink", "credit_update_table", "rebuild_items"]


def _fields():
    """``(class, slot, offset, mask)`` of every count of :data:`credit_update_layout`."""
    fields = []
    for cls in CLASSES:
        field = credit_update_layout[cls]
        width = Shape.cast(field.shape.elem_shape).width
        fields += [(cls, slot, field.offset + s * width, (1 << width) - 1)
                   for s, slot in enumerate(SLOTS)]
    return fields


_FIELDS = _fields()


def credit_update_table(bits):
    """``{class: {slot: n}}`` from the bits of a :data:`credit_update_layout` port (``give``,
    ``grant``), by the layout's offsets found once: read through a layout view at every clock,
    the two ports took most of a simulation's time."""
    value = int(bits)
    table = {cls: dict.fromkeys(SLOTS, 0) for cls in CLASSES}
    if value:
        for cls, slot, offset, mask in _FIELDS:
            table[cls][slot] = value >> offset & mask
    return table


def _add(total, table):
    for cls in CLASSES:
        for slot in SLOTS:
            total[cls][slot] += table[cls][slot]


class TlRxEnv:
    """Clock, flit pins, UPLI sinks and credit monitors of a ``tl_rx`` top."""

    def __init__(self, dut):
        self.dut = dut
        self.config = TlConfig.from_env()
        self.rng = random.Random(cocotb.RANDOM_SEED)
        Clock(dut.clk, PERIOD_NS, unit="ns").start()
        self.items = UpliItemSink(dut, "", self.rng)
        self.got = self.items.got
        cocotb.start_soon(self._beat0())
        dut.flit__valid.value = 0
        dut.flit__payload.value = 0
        self.clear()

    def clear(self):
        """Forget what was collected and counted."""
        self.items.clear()
        self.given = credit_table()         # returned on ``give`` after ``give_init``
        self.initial = credit_table()       # released before ``give_init``
        self.granted = credit_table()       # seen on ``grant``

    async def _beat0(self):
        """UPLI: a data command's beat 0 is offered (valid, offset 0) in the clock its request
        is first offered. (With independent ready signals the request may then wait alone.)"""
        dut = self.dut
        first = True
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            if dut.rst.value:
                first = True
                continue
            valid = bool(dut.req__valid.value)
            if valid and first:
                hdr = request_layout.from_bits(int(dut.req__payload.value))
                beat = orig_data_layout.from_bits(int(dut.orig__payload.value))
                assert not int(hdr.cmd) & 0x20 or (
                    dut.orig__valid.value and int(beat.offset) == 0), (
                    f"request {int(hdr.cmd):#x} offered without its beat 0")
            first = not valid or bool(dut.req__ready.value)

    def set_backpressure(self, probability):
        self.items.set_backpressure(probability)

    async def reset(self):
        """Reset, then wait for the initial credit release; returns it."""
        self.dut.flit__valid.value = 0
        await reset(self.dut)
        self.clear()
        for _ in range(200):
            await self.edge()
            if self.dut.give_init.value:
                break
        assert self.dut.give_init.value, "give_init never rose"
        assert self.initial == credit_table(config_credits(self.config)), self.initial
        return self.initial

    async def edge(self):
        """One clock: the ``give``/``grant`` values of the clock that ended, as tables."""
        await RisingEdge(self.dut.clk)
        dut = self.dut
        give = credit_update_table(dut.give.value)
        grant = credit_update_table(dut.grant.value)
        _add(self.given if self.dut.give_init.value else self.initial, give)
        _add(self.granted, grant)
        return give

    def drive(self, flit):
        """Present ``flit`` (or nothing, when None) for the next clock."""
        if flit is None:
            self.dut.flit__valid.value = 0
            return
        self.dut.flit__valid.value = 1
        self.dut.flit__payload.value = flit_layout.const(
            {"data": [flit.lower, flit.upper], "msg": int(flit.m0) | int(flit.m1) << 1}
        ).as_bits()

    def error_counts(self):
        view = rx_error_counts.from_bits(int(self.dut.error_counts.value))
        return [int(view[k]) for k in range(len(view))]

    def delivered(self):
        """``(requests, read responses, write responses)`` rebuilt from the UPLI outputs."""
        return self.items.delivered()

    def count(self):
        return self.items.count()


class UpliItemSink:
    """Sinks for the four UPLI outputs named ``<prefix>req``, ``<prefix>orig``,
    ``<prefix>rd_rsp`` and ``<prefix>wr_rsp``, and the golden-model items they carried."""

    def __init__(self, dut, prefix, rng):
        clk, rst = dut.clk, dut.rst
        self.rng = rng
        self.sinks = {
            "req": LayoutSink(dut, prefix + "req", request_layout, clk, rst),
            "orig": LayoutSink(dut, prefix + "orig", orig_data_layout, clk, rst),
            "rd_rsp": LayoutSink(dut, prefix + "rd_rsp", rd_rsp_layout, clk, rst),
            "wr_rsp": LayoutSink(dut, prefix + "wr_rsp", wr_rsp_layout, clk, rst),
        }
        self.got = {name: [] for name in self.sinks}
        for name in self.sinks:
            cocotb.start_soon(self._collect(name))

    async def _collect(self, name):
        while True:
            self.got[name].append(await self.sinks[name].recv())

    def clear(self):
        for seen in self.got.values():
            seen.clear()

    def set_backpressure(self, probability):
        for sink in self.sinks.values():
            sink.set_backpressure(random_pauses(self.rng, probability))

    def delivered(self):
        """``(requests, read responses, write responses)`` rebuilt from the UPLI outputs."""
        return rebuild_items(self.got)

    def count(self):
        """UPLI transfers collected."""
        return sum(len(v) for v in self.got.values())


def rebuild_items(got, pool=0):
    """``(requests, read responses, write responses)`` rebuilt from UPLI beats collected per
    channel (``got["req"]``, ``["orig"]``, ``["rd_rsp"]``, ``["wr_rsp"]``, layout views).
    Every beat must carry ``pool`` (``None``: any)."""
    beats = list(got["orig"])
    requests = []
    for hdr in got["req"]:
        assert pool is None or int(hdr.pool) == pool
        cmd, n = int(hdr.cmd), int(hdr.num_beats)
        data, be, err = [], [], []
        if cmd & 0x20:
            for k in range(n + 1):
                assert beats, "request without its data beats"
                b = beats.pop(0)
                assert (int(b.offset), bool(b.last)) == (k, k == n), (k, n)
                assert int(b.vc) == int(hdr.vc) and (pool is None or int(b.pool) == pool)
                data.append(int(b.data).to_bytes(64, "little"))
                be.append(int(b.byte_en))
                err.append(bool(b.error))
        requests.append(Request(
            cmd=cmd, vc=int(hdr.vc), asi=int(hdr.asi), tag=int(hdr.tag),
            attr=int(hdr.attr), length=int(hdr.len), metadata=int(hdr.metadata),
            addr=int(hdr.addr), src_acc=int(hdr.src_acc), dst_acc=int(hdr.dst_acc),
            num_beats=n, data=data, byte_en=be, error=err))
    assert not beats, f"{len(beats)} orig beats without a request"
    reads, run = [], []
    for b in got["rd_rsp"]:
        assert pool is None or int(b.pool) == pool
        run.append(b)
        n = int(b.num_beats)
        if n:
            assert (int(b.offset), bool(b.last)) == (len(run) - 1, len(run) == n + 1)
        if len(run) == n + 1:
            first = run[0]
            reads.append(ReadResponse(
                vc=int(first.vc), tag=int(first.tag), src_acc=int(first.src_acc),
                dst_acc=int(first.dst_acc), num_beats=n,
                offset=int(first.offset), last=bool(run[-1].last), status=int(first.status),
                data=[int(x.data).to_bytes(64, "little") for x in run],
                error=[bool(x.error) for x in run]))
            run = []
    assert not run, "read response beats left over"
    writes = [WriteResponse(vc=int(w.vc), tag=int(w.tag), src_acc=int(w.src_acc),
                            dst_acc=int(w.dst_acc), status=int(w.status))
              for w in got["wr_rsp"]]
    assert pool is None or all(int(w.pool) == pool for w in got["wr_rsp"])
    return requests, reads, writes

