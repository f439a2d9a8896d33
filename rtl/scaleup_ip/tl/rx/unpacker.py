# SPDX-License-Identifier: BSD-2-Clause
"""UALink TL receive: TL flits unpacked into UPLI requests and responses."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...config import ConfiguredComponent
from ..layout import (
    DATA_CREDIT_MAX,
    HALF_BITS,
    REQ_LIMIT,
    RSP_LIMIT,
    SECTORS_PER_HALF,
    CreditClass,
    CreditSlot,
    TlConfig,
    credit_update_layout,
    flit_stream,
    rx_cache_counts,
    rx_error_counts,
    upli_members,
)
from .catch import CatchBuffer
from .decode import request_groups, rx_req_entry, rx_rsp_entry
from .expand import RequestExpand
from ...fifo import RamFifo
from .front import RxFront, rx_beat_layout
from .req_out import RequestDeliver
from .rsp_out import ResponseDeliver

__all__ = ["TlRx"]

#: Most pool credits of one class released per clock at initialisation (one clock may also
#: carry a returned credit, and ``give`` holds 31).
_INIT_CHUNK = DATA_CREDIT_MAX - 1
#: Data buffers deeper than this keep their beats in block RAM [ours]: a distributed RAM cell
#: holds 16 entries, and past that the banks' multiplexers and the cells cost more LUTs than
#: block RAM, which takes none for its entries but makes a beat readable two clocks later
#: (:class:`~scaleup_ip.fifo.RamFifo`).
LUT_RAM_DEPTH = 16


class TlRx(ConfiguredComponent):
    """The TL unpacker: one TL flit per clock into UPLI traffic (README §4).

    Parameters
    ----------
    config : TlConfig
        ``rx_req``, ``rx_rsp``, ``rx_req_data``, ``rx_rsp_data`` size the receive buffers and
        are the pool credits advertised. With ``cache_ways`` (:attr:`TlConfig.rx_cache`) the
        receiver has an Rx address cache and takes compressed requests (README §4,
        :class:`~scaleup_ip.tl.rx.expand.RequestExpand`); without, a compressed request is the
        ``compressed_request`` error.

    Members
    -------
    flit : In(flit_stream())
        Flits from the data link; ``ready`` is always 1.
    req, orig, rd_rsp, wr_rsp : Out(stream)
        UPLI requests with originator data, read response beats and write responses, each in
        the order its fields arrived; requests and read responses are stored and forwarded
        whole. ``pool`` = 0.
    grant : Out(credit_update_layout)
        Credits the peer granted in Flow Control fields, for one clock.
    give : Out(credit_update_layout), give_init : Out(1)
        After reset, the advertised pool credits (up to 30 per class per clock), then
        ``give_init`` (level) one clock after the last of them; afterwards one credit per
        request or response and per data beat that leaves, in the slot its field named, two
        clocks after it left.
    peer_init : Out(1)
        Initial Credit Release Complete received (sticky).
    error : Out(1), error_counts : Out(rx_error_counts), poisoned : Out(16)
        Sticky fatal error, per-kind counters (:class:`RxError`), poisoned half-flits.
    cache_counts : Out(rx_cache_counts)
        With an address cache only: its loads, expansions and errors
        (:class:`~scaleup_ip.tl.layout.RxCacheCount`).

    Latency: an item is valid on its UPLI output 3 clocks after the flit that completes it (its
    control half-flit, or its last data or byte-enable half-flit) is presented, when the buffers
    ahead of it are empty: two decoding the control half (:class:`~scaleup_ip.tl.rx.front.RxFront`;
    the flit is not registered on entry, so it should come from a register), one to sequence and
    check the flit, which writes the item straight into the empty head register of its output (or
    its beat into the data buffer). An item with data in a data buffer in block RAM (deeper
    than :data:`LUT_RAM_DEPTH`, as by default) takes 2 clocks more, 5: a beat there is readable
    3 clocks after it was written. ``grant`` and ``error`` follow 3 clocks after the flit,
    ``error_counts``, ``poisoned`` and ``peer_init`` 4. With an address cache a request header
    takes two clocks more (its cache lookup and the answer's register,
    :class:`~scaleup_ip.tl.rx.expand.RequestExpand`), hidden behind data that arrive later: 5
    clocks for a read; a write's header is ready no later than its data; its
    ``compressed_request`` error, found as the request leaves the cache stage, sets ``error`` 2
    clocks later. Throughput: one flit per clock; one UPLI beat per clock and output. Overflow: an
    arrival beyond the advertised buffers is the ``buffer_overrun`` error; beyond the catch buffers
    ``catch_overrun``.
    """

    config_class = TlConfig

    def __init__(self, config):
        super().__init__(config, lambda config: {
            **({"cache_counts": Out(rx_cache_counts)} if config.rx_cache else {}),
            "flit": In(flit_stream()),
            **upli_members(Out),
            "grant": Out(credit_update_layout),
            "give": Out(credit_update_layout),
            "give_init": Out(1),
            "peer_init": Out(1),
            "error": Out(1),
            "error_counts": Out(rx_error_counts),
            "poisoned": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        m.submodules.front = front = RxFront(cfg)
        wiring.connect(m, wiring.flipped(self.flit), front.flit)
        m.d.comb += [
            self.grant.eq(front.grant), self.peer_init.eq(front.peer_init),
            self.error.eq(front.error), self.error_counts.eq(front.error_counts),
            self.poisoned.eq(front.poisoned),
        ]
        m.submodules.req_out = req_out = RequestDeliver(cfg.rx_req_data,
                                                        cached=cfg.rx_cache is not None)
        m.submodules.rsp_out = rsp_out = ResponseDeliver(cfg.rx_rsp_data)
        self._requests(m, front, req_out)
        self._responses(m, front, rsp_out)
        self._credits(m, front, req_out, rsp_out)
        return m

    def _requests(self, m, front, out):
        cfg = self._config
        cached = cfg.rx_cache is not None
        entry = rx_req_entry(cached)
        m.submodules.req_catch = catch = CatchBuffer(entry, request_groups(cached), REQ_LIMIT)
        m.submodules.req_fifo = fifo = RamFifo(entry, cfg.rx_req)
        m.submodules.req_data = dfifo = _data_buffer(cfg.rx_req_data)
        m.submodules.req_be = be = RamFifo(HALF_BITS, cfg.rx_req)
        if cached:
            m.submodules.req_expand = expand = RequestExpand(cfg)
            self._items(m, front.req, front.req_n, front.take, catch, fifo, expand)
            wiring.connect(m, expand.o, out.head)
            m.d.comb += [front.cache_error.eq(expand.error),
                         self.cache_counts.eq(expand.counts)]
        else:
            self._items(m, front.req, front.req_n, front.take, catch, fifo, out)
        m.d.comb += [
            dfifo.w_en.eq(front.req_beat), dfifo.w_commit.eq(front.commit),
            dfifo.w_data.eq(front.beat),
            be.w_en.eq(front.be_valid), be.w_commit.eq(front.commit), be.w_data.eq(front.be),
            out.beat_level.eq(dfifo.level), out.beat_in.eq(dfifo.kept),
        ]
        wiring.connect(m, dfifo.r, out.beat)
        wiring.connect(m, be.r, out.be)
        wiring.connect(m, out.req, wiring.flipped(self.req))
        wiring.connect(m, out.orig, wiring.flipped(self.orig))

    def _responses(self, m, front, out):
        cfg = self._config
        m.submodules.rsp_catch = catch = CatchBuffer(rx_rsp_entry, SECTORS_PER_HALF, RSP_LIMIT)
        m.submodules.rsp_fifo = fifo = RamFifo(rx_rsp_entry, cfg.rx_rsp)
        m.submodules.rsp_data = dfifo = _data_buffer(cfg.rx_rsp_data)
        self._items(m, front.rsp, front.rsp_n, front.take, catch, fifo, out)
        m.d.comb += [
            dfifo.w_en.eq(front.rsp_beat), dfifo.w_commit.eq(front.commit),
            dfifo.w_data.eq(front.beat), out.beat_level.eq(dfifo.level),
            out.beat_in.eq(dfifo.kept),
        ]
        wiring.connect(m, dfifo.r, out.beat)
        wiring.connect(m, out.rd_rsp, wiring.flipped(self.rd_rsp))
        wiring.connect(m, out.wr_rsp, wiring.flipped(self.wr_rsp))

    @staticmethod
    def _items(m, items, n, take, catch, fifo, out):
        """Front end -> catch buffer -> receive buffer -> head register of the delivery; the
        first item goes straight to the empty head register when nothing is queued."""
        skip = Signal()
        m.d.comb += [
            skip.eq(catch.empty & ~fifo.r.valid & out.idle),
            catch.i.eq(items), catch.i_n.eq(n), catch.take.eq(take), catch.skip.eq(skip),
            fifo.w_data.eq(catch.o.payload), fifo.w_en.eq(catch.o.valid),
            fifo.w_commit.eq(1), catch.o.ready.eq(fifo.w_rdy),
            out.direct.eq(items[0]), out.direct_valid.eq(take & (n != 0) & skip),
        ]
        wiring.connect(m, fifo.r, out.head)

    def _credits(self, m, front, req_out, rsp_out):
        """Initial release of the advertised pool credits, then returns (README §3, [§5.8])."""
        returns = {
            CreditClass.REQ_CMD: (req_out.ret_cmd, req_out.slot),
            CreditClass.REQ_DATA: (req_out.ret_data, req_out.slot),
            CreditClass.RSP_CMD: (rsp_out.ret_cmd, rsp_out.slot),
            CreditClass.RSP_DATA: (rsp_out.ret_data, rsp_out.slot),
        }
        left_all = []
        for c in CreditClass:
            n = self._config.advertised[c]
            left = Signal(range(n + 1), name=f"init_left_{c.name.lower()}", init=n)
            chunk = Signal(range(_INIT_CHUNK + 1), name=f"init_chunk_{c.name.lower()}")
            m.d.comb += chunk.eq(Mux(left > _INIT_CHUNK, _INIT_CHUNK, left))
            m.d.sync += left.eq(left - chunk)
            left_all.append(left == 0)
            ret = Signal(name=f"ret_{c.name.lower()}")
            slot = Signal.like(returns[c][1], name=f"ret_slot_{c.name.lower()}")
            m.d.sync += [ret.eq(returns[c][0]), slot.eq(returns[c][1])]
            m.d.comb += front.freed[c].eq(ret & (slot == CreditSlot.POOL))
            row = getattr(self.give, c.name.lower())
            for s in CreditSlot:
                hit = ret & (slot == s)
                m.d.sync += row[s].eq((chunk if s == CreditSlot.POOL else 0) + hit)
        done = Signal()
        m.d.comb += done.eq(left_all[0] & left_all[1] & left_all[2] & left_all[3])
        m.d.sync += self.give_init.eq(done)


def _data_buffer(depth):
    """A receive data buffer of ``depth`` beats, in block RAM past :data:`LUT_RAM_DEPTH`."""
    return RamFifo(rx_beat_layout, depth, block_ram=depth > LUT_RAM_DEPTH)
