# SPDX-License-Identifier: BSD-2-Clause
"""The ETH-X bridge of one node: both roles, one Ethernet port."""

from amaranth import Module, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out, connect, flipped

from ..config import ConfiguredComponent
from ..skid import SkidBuffer
from ..model.ethx.bridge import Kind
from .aggregate import Aggregator
from .completer.completer import Completer
from .compress import Compress
from .config import EthxConfig
from .deframer import EthxDeframer
from .framer import EthxFramer
from .layout import (
    NODE_BITS,
    aggregate_counts,
    axi4_read_signature,
    axi4_signature,
    completer_counts,
    deframer_counts,
    eth_stream,
    framer_counts,
    parse_counts,
    read_counts,
    user_layout,
    window_layout,
    write_counts,
    write_resp_layout,
)
from .merge import RecordMerge
from .parse import RecordParse
from .requester.read import ReqRead
from .requester.write import ReqWrite

__all__ = ["EthxBridge"]


class EthxBridge(ConfiguredComponent):
    """One node's ETH-X bridge [README §4]: the GPU's AXI4 transactions to other nodes out as
    records in Ethernet frames, and other nodes' requests done on local memory.

    ``s_axi`` → :class:`ReqRead`/:class:`ReqWrite` → :class:`Compress` → :class:`Aggregator`
    (with the :class:`Completer`'s responses) → :class:`EthxFramer` → ``tx``; ``rx`` →
    :class:`EthxDeframer` → :class:`RecordParse` → requests to the :class:`Completer`
    (``m_axi``), responses back to the requesting side. A :class:`~scaleup_ip.skid.SkidBuffer` sits
    between each pair of blocks (README §4), so no combinational path runs from one block into
    the next, and the responses for each side pass their own after the split; each costs a
    clock: a request gains two on its way out and two at the serving side, a response two at
    the serving side and two on its way back. The blocks' own pipeline registers are listed
    in README §4 ("Pipeline cuts").

    Members
    -------
    s_axi : ``In(axi4_signature(addr_width, data_width, id_width, user bits))``
        The GPU's port; AxUSER as :func:`~scaleup_ip.ethx.layout.user_layout`.
    m_axi : ``Out(axi4_signature(addr_width, data_width, 1))``
        Toward local memory.
    tx : ``Out(eth_stream(eth_width))``; rx : ``In(eth_stream(eth_width))``
        The Ethernet side: frames out and in, with the FCS when ``config.fcs``.
    node : ``In(16)``
        This node's ID.
    windows : ``In(data.ArrayLayout(window_layout(config), windows))``
        The serving side's access windows.
    proxy_error : ``Out(1)``
        With ``config.proxy``: a write answered early met a remote error; the next release's
        B returns SLVERR and clears it (README §5).
    counts_* : ``Out(...)``
        Every block's counters, 32-bit wrapping.
    """

    config_class = EthxConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "s_axi": In(axi4_signature(c.addr_width, c.data_width, c.id_width,
                                       user_layout(c).size)),
            "m_axi": Out(axi4_signature(c.addr_width, c.data_width, 1)),
            "tx": Out(eth_stream(c.eth_width)),
            "rx": In(eth_stream(c.eth_width)),
            "node": In(NODE_BITS),
            "windows": In(data.ArrayLayout(window_layout(c), c.windows)),
            "proxy_error": Out(1),
            "counts_framer": Out(framer_counts), "counts_deframer": Out(deframer_counts),
            "counts_parse": Out(parse_counts), "counts_completer": Out(completer_counts),
            "counts_aggregate": Out(aggregate_counts), "counts_read": Out(read_counts),
            "counts_write": Out(write_counts),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        blocks = dict(reads=ReqRead(cfg), writes=ReqWrite(cfg), requests=RecordMerge(cfg, 2),
                      compress=Compress(cfg), aggregate=Aggregator(cfg), framer=EthxFramer(cfg),
                      deframer=EthxDeframer(cfg), parse=RecordParse(cfg),
                      completer=Completer(cfg))
        for name, block in blocks.items():
            m.submodules[name] = block
        b = type("Blocks", (), blocks)
        self._axi(m, b)
        connect(m, b.reads.req, b.requests.i0)
        connect(m, b.writes.req, b.requests.i1)
        _cut(m, "requests", b.requests.o, b.compress.i)
        _cut(m, "compressed", b.compress.o, b.aggregate.req)
        _cut(m, "responses", b.completer.rsp, b.aggregate.rsp)
        _cut(m, "records", b.aggregate.o, b.framer.i)
        connect(m, b.framer.o, flipped(self.tx))
        connect(m, flipped(self.rx), b.deframer.i)
        _cut(m, "received", b.deframer.o, b.parse.i)
        _cut(m, "served", b.parse.req, b.completer.req)
        connect(m, flipped(self.m_axi), b.completer.mem)
        self._responses(m, b, _cut(m, "answers", b.parse.rsp))
        m.d.comb += [b.framer.node.eq(self.node), b.deframer.node.eq(self.node),
                     b.aggregate.busy.eq(b.framer.busy),
                     b.completer.windows.eq(self.windows),
                     b.writes.acquiring.eq(b.reads.acquiring),
                     b.reads.hold.eq(b.writes.proxied),
                     self.proxy_error.eq(b.writes.proxy_error),
                     self.counts_framer.eq(b.framer.counts),
                     self.counts_deframer.eq(b.deframer.counts),
                     self.counts_parse.eq(b.parse.counts),
                     self.counts_completer.eq(b.completer.counts),
                     self.counts_aggregate.eq(b.aggregate.counts),
                     self.counts_read.eq(b.reads.counts), self.counts_write.eq(b.writes.counts)]
        return m

    def _axi(self, m, b):
        """The GPU port's read half to the read side, its write half to the write side."""
        cfg, s = self.config, self.s_axi
        reads = set(axi4_read_signature(cfg.addr_width, cfg.data_width, cfg.id_width,
                                        user_layout(cfg).size).members)
        for name, member in s.signature.members.items():
            side = b.reads.axi if name in reads else b.writes.axi
            ours, theirs = getattr(s, name), getattr(side, name)
            if member.flow == In:            # driven by the GPU
                m.d.comb += theirs.eq(ours)
            else:
                m.d.comb += ours.eq(theirs)

    def _responses(self, m, b, rsp):
        """Response records ``rsp`` to the side that asked: READ_DATA to reads, WRITE_RESP to
        writes, each through its own :class:`~scaleup_ip.skid.SkidBuffer`, so that neither side's
        checks follow the split."""
        to_writes = Signal()
        current = Signal()
        m.d.comb += current.eq(to_writes)
        with m.If(rsp.valid & rsp.p.first):
            m.d.comb += current.eq(write_resp_layout(rsp.p.word).kind == Kind.WRITE_RESP)
        with m.If(rsp.valid & rsp.ready):
            m.d.sync += to_writes.eq(current)
        sides = []
        for name, side, chosen in (("read_answers", b.reads.rsp, ~current),
                                   ("write_answers", b.writes.rsp, current)):
            skid = _skid(m, name, rsp.payload.shape())
            connect(m, skid.o, side)
            m.d.comb += [skid.i.payload.eq(rsp.payload), skid.i.valid.eq(rsp.valid & chosen)]
            sides.append(skid.i.ready & chosen)
        m.d.comb += rsp.ready.eq(sides[0] | sides[1])


def _skid(m, name, shape):
    """A :class:`~scaleup_ip.skid.SkidBuffer` of ``shape`` added to ``m`` as ``{name}_skid``."""
    skid = m.submodules[f"{name}_skid"] = SkidBuffer(shape)
    return skid


def _cut(m, name, src, dst=None):
    """Join stream ``src`` to ``dst`` through a :class:`~scaleup_ip.skid.SkidBuffer` ``name``, so that
    no combinational path runs from one block into the next (one clock more); without ``dst``,
    return the buffer's output."""
    skid = _skid(m, name, src.payload.shape())
    connect(m, src, skid.i)
    if dst is None:
        return skid.o
    connect(m, skid.o, dst)
