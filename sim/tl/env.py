# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb environment of the TL packer (``tl_tx``): UPLI sources, flit sink, credit pins.

Items are golden-model objects (:mod:`scaleup_ip.model.tl.flit`); they are driven as UPLI beats
packed through the RTL's own layouts.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from scaleup_ip.model.tl import addrcache as model_cache
from scaleup_ip.model.tl.flit import (
    CLASSES,
    SLOTS,
    Flit,
    ReadResponse,
    Request,
    Unpacker,
    WriteResponse,
)
from scaleup_ip.tl import (
    CREDIT_BITS,
    CachePolicy,
    HALF_BITS,
    TlConfig,
    TxCacheCount,
    cache_entry_layout,
    credit_array,
    credit_update_layout,
    flit_layout,
    orig_data_layout,
    rd_rsp_layout,
    request_layout,
    tx_cache_counts,
    wr_rsp_layout,
)
from sim.streams import LayoutSink, LayoutSource, reset
from sim.tl.traffic import as_received

__all__ = [
    "PERIOD_NS",
    "TlTxEnv",
    "TxCacheControls",
    "UpliItemSource",
    "cache_receiver",
    "config_credits",
    "credit_table_of",
    "delivered_with_cache",
    "flit_of",
    "model_cache_config",
]

#: Clock period in ns; every figure is reported in cycles.
PERIOD_NS = 2
#: Most credits of one class and slot one clock of ``grant``/``give`` carries (5 bits).
_PER_CLOCK = (1 << 5) - 1


def flit_of(view):
    """A model :class:`Flit` from a received :data:`flit_layout` view."""
    return Flit(data=int(view.data[0]) | int(view.data[1]) << HALF_BITS,
                m0=bool(view.msg & 1), m1=bool(view.msg >> 1 & 1))


def config_credits(config):
    """``{class: {slot: n}}`` pool credits a TL built from ``config`` advertises."""
    return {cls: {"pool": n} for cls, n in zip(CLASSES, config.advertised)}


def credit_table_of(bits):
    """``{class: {slot: n}}`` from the bits of a ``credit_array(CREDIT_BITS)`` port."""
    view = credit_array(CREDIT_BITS).from_bits(int(bits))
    return {cls: {slot: int(view[c][s]) for s, slot in enumerate(SLOTS)}
            for c, cls in enumerate(CLASSES)}


def _beat(data):
    return int.from_bytes(data, "little")


class TlTxEnv:
    """Clock, UPLI sources, flit sink and credit pins of a ``tl_tx`` top built from the
    :class:`~scaleup_ip.tl.layout.TlConfig` the harness passed in."""

    def __init__(self, dut):
        self.dut = dut
        self.config = TlConfig.from_env()
        self.rng = random.Random(cocotb.RANDOM_SEED)
        Clock(dut.clk, PERIOD_NS, unit="ns").start()
        self.items = UpliItemSource(dut, "")
        self.req, self.orig = self.items.req, self.items.orig
        self.rd_rsp, self.wr_rsp = self.items.rd_rsp, self.items.wr_rsp
        self.flits = LayoutSink(dut, "flit", flit_layout, dut.clk, dut.rst)
        for pins in (dut.grant, dut.give):
            pins.value = 0
        dut.give_init.value = 0

    async def reset(self):
        """Reset the packer; the local receiver's initial release starts over too."""
        self.dut.give_init.value = 0
        await reset(self.dut)

    async def _pulse(self, pins, table):
        """Drive ``table`` ({class: {slot: n}}) onto ``pins`` over as many clocks as needed."""
        left = {cls: dict(table.get(cls, {})) for cls in CLASSES}
        while any(n for cls in CLASSES for n in left[cls].values()):
            value = {}
            for cls in CLASSES:
                row = []
                for slot in SLOTS:
                    n = min(left[cls].get(slot, 0), _PER_CLOCK)
                    left[cls][slot] = left[cls].get(slot, 0) - n
                    row.append(n)
                value[cls] = row
            pins.value = credit_update_layout.const(value).as_bits()
            await RisingEdge(self.dut.clk)
        pins.value = 0

    async def grant(self, table):
        """The peer grants ``table`` credits."""
        await self._pulse(self.dut.grant, table)

    async def release(self, table):
        """The local receiver releases its initial credits ``table``, then says it is done."""
        await self.release_more(table)
        await RisingEdge(self.dut.clk)
        self.dut.give_init.value = 1

    async def release_more(self, table):
        """The local receiver releases ``table`` more credits (entries it freed)."""
        await self._pulse(self.dut.give, table)

    def send(self, item):
        """Queue a model item as UPLI beats."""
        self.items.send(item)

    async def send_in_order(self, items):
        """Send ``items`` so the packer queues responses in exactly this order."""
        await self.items.send_in_order(items)

    async def settle(self, cycles=8):
        """Wait until every source is empty, then ``cycles`` more clocks."""
        await self.items.settle(cycles)

    async def recv_flit(self):
        return flit_of(await self.flits.recv())

    def credits(self):
        """Credits the packer holds, ``{class: {slot: n}}``."""
        return credit_table_of(self.dut.credits.value)

    def pending(self):
        """Credits the packer has still to return."""
        return credit_table_of(self.dut.pending.value)


class UpliItemSource:
    """Sources for the four UPLI inputs named ``<prefix>req``, ``<prefix>orig``,
    ``<prefix>rd_rsp`` and ``<prefix>wr_rsp``, fed with golden-model items."""

    def __init__(self, dut, prefix):
        self.dut = dut
        clk, rst = dut.clk, dut.rst
        self.req = LayoutSource(dut, prefix + "req", request_layout, clk, rst)
        self.orig = LayoutSource(dut, prefix + "orig", orig_data_layout, clk, rst)
        self.rd_rsp = LayoutSource(dut, prefix + "rd_rsp", rd_rsp_layout, clk, rst)
        self.wr_rsp = LayoutSource(dut, prefix + "wr_rsp", wr_rsp_layout, clk, rst)

    def set_idle(self, generator_factory):
        """Idle each source where a fresh generator from ``generator_factory()`` says so."""
        for source in (self.req, self.orig, self.rd_rsp, self.wr_rsp):
            source.set_idle(generator_factory())

    def send(self, item):
        """Queue a model item as UPLI beats."""
        if isinstance(item, Request):
            self.req.send_nowait(
                cmd=item.cmd, vc=item.vc, asi=item.asi, tag=item.tag, attr=item.attr,
                len=item.length, metadata=item.metadata, addr=item.addr, src_acc=item.src_acc,
                dst_acc=item.dst_acc, num_beats=item.num_beats, pool=0)
            for k, (data, be, err) in enumerate(zip(item.data, item.byte_en, item.error)):
                self.orig.send_nowait(data=_beat(data), byte_en=be, offset=k,
                                      last=k == item.beats - 1, error=err, vc=item.vc, pool=0)
        elif isinstance(item, ReadResponse):
            for k, (data, err) in enumerate(zip(item.data, item.error)):
                multi = item.num_beats != 0
                self.rd_rsp.send_nowait(
                    data=_beat(data), vc=item.vc, pool=0, tag=item.tag, src_acc=item.src_acc,
                    dst_acc=item.dst_acc, num_beats=item.num_beats, status=item.status,
                    offset=k if multi else item.offset,
                    last=(k == item.num_beats) if multi else item.last, error=err)
        elif isinstance(item, WriteResponse):
            self.wr_rsp.send_nowait(vc=item.vc, pool=0, tag=item.tag, src_acc=item.src_acc,
                                    dst_acc=item.dst_acc, status=item.status)
        else:
            raise TypeError(f"not a TL item: {item!r}")

    async def send_in_order(self, items):
        """Send ``items`` so the packer queues responses in exactly this order: each response
        is handed over before the next is offered."""
        for item in items:
            self.send(item)
            if not isinstance(item, Request):
                await (self.rd_rsp if isinstance(item, ReadResponse) else self.wr_rsp).wait()

    async def settle(self, cycles=8):
        """Wait until every source is empty, then ``cycles`` more clocks."""
        for source in (self.req, self.orig, self.rd_rsp, self.wr_rsp):
            await source.wait()
        for _ in range(cycles):
            await RisingEdge(self.dut.clk)


# --- Address cache ---------------------------------------------------------------------------

def model_cache_config(config):
    """The golden model's cache configuration from the RTL's."""
    c = config.tx_cache
    return model_cache.AddrCacheConfig(
        ways=c.ways, rows=c.rows, backoff_window=c.backoff_window,
        backoff_min_hits=c.backoff_min_hits, backoff_length=c.backoff_length)


def cache_receiver(config):
    """The model's receiver and its Rx cache, which follows the Tx's row field."""
    rx = model_cache.RxAddressCache(model_cache_config(config), index=config.cache_tx_index)
    return Unpacker(address_cache=rx), rx


class TxCacheControls:
    """The ``tx_cache`` pins of a ``tl_tx`` top."""

    def __init__(self, dut):
        self.dut = dut
        dut.tx_cache__policy.value = CachePolicy.ALWAYS.value
        dut.tx_cache__invalidate__valid.value = 0
        dut.tx_cache__clear_valid.value = 0

    def policy(self, policy):
        self.dut.tx_cache__policy.value = policy.value

    async def invalidate(self, acc, way):
        """Invalidate one Tx entry (a handshake)."""
        self.dut.tx_cache__invalidate__payload.value = cache_entry_layout.const(
            {"acc": acc, "way": way}).as_bits()
        await self._handshake(self.dut.tx_cache__invalidate__valid,
                              self.dut.tx_cache__invalidate__ready)

    async def clear(self):
        """Clear the Tx cache (a handshake)."""
        await self._handshake(self.dut.tx_cache__clear_valid, self.dut.tx_cache__clear_ready)

    async def _handshake(self, valid, ready):
        """Hold ``valid`` until the clock edge at which ``ready`` is high."""
        valid.value = 1
        while True:
            await ReadOnly()
            taken = bool(ready.value)
            await RisingEdge(self.dut.clk)
            if taken:
                break
        valid.value = 0

    async def idle(self):
        """Wait while the clear walk runs (after reset)."""
        while self.dut.tx_cache__busy.value:
            await RisingEdge(self.dut.clk)

    def counts(self):
        """The cache's counters by :class:`TxCacheCount`."""
        view = tx_cache_counts.from_bits(self.dut.tx_cache__counts.value.to_unsigned())
        return {kind: int(view[kind]) for kind in TxCacheCount}


def delivered_with_cache(config, items, flits):
    """The flits through the model's receiver: every request intact, nothing left owed;
    returns the receiver's Rx cache."""
    u, rx = cache_receiver(config)
    for flit in flits:
        u.feed(flit)
    assert u.error is None, u.error
    assert u.idle()
    assert u.requests == [as_received(i) for i in items if isinstance(i, Request)]
    assert rx.errors == 0
    return rx
