# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of an originator device on a :class:`scaleup_ip.tl.upli.UpliOriginator`'s
streams: requests (with their data beats) in, every response beat and write response
collected by tag, and the checks that each request was answered once and whole."""

import collections

import cocotb

from scaleup_ip.model.tl.isolation import ReadBeat
from scaleup_ip.model.tl.flit import WriteResponse
from scaleup_ip.tl import orig_data_layout, rd_rsp_layout, request_layout, wr_rsp_layout

from sim.streams import LayoutSink, LayoutSource, random_pauses

__all__ = ["OriginatorDevice", "read_beat", "write_response"]


def read_beat(view):
    """A read-response beat of the RTL's layout as the model's :class:`ReadBeat`."""
    return ReadBeat(tag=int(view.tag), vc=int(view.vc), src_acc=int(view.src_acc),
                    dst_acc=int(view.dst_acc), num_beats=int(view.num_beats),
                    offset=int(view.offset), last=bool(view.last), status=int(view.status),
                    data=int(view.data), error=int(view.error))


def write_response(view):
    """A write response of the RTL's layout as the model's ``WriteResponse``."""
    return WriteResponse(vc=int(view.vc), tag=int(view.tag), src_acc=int(view.src_acc),
                         dst_acc=int(view.dst_acc), status=int(view.status))


class OriginatorDevice:
    """The device on the ``<prefix>req``/``orig`` and ``<rx_prefix>rd_rsp``/``wr_rsp`` streams
    (``rx_prefix`` as ``prefix`` unless given).

    :meth:`send` queues a request with its beats (beat 0 shown with it); :attr:`reads` and
    :attr:`writes` hold what came back, by tag, in arrival order, and :attr:`order` every
    response beat or write response as ``(channel, item)``. ``backpressure``: the chance a
    response channel is not ready in a clock."""

    def __init__(self, dut, rng, prefix="", backpressure=0.0, rx_prefix=None):
        clk, rst = dut.clk, dut.rst
        rx_prefix = prefix if rx_prefix is None else rx_prefix
        self.req = LayoutSource(dut, f"{prefix}req", request_layout, clk, rst)
        self.orig = LayoutSource(dut, f"{prefix}orig", orig_data_layout, clk, rst)
        self.rd = LayoutSink(dut, f"{rx_prefix}rd_rsp", rd_rsp_layout, clk, rst)
        self.wr = LayoutSink(dut, f"{rx_prefix}wr_rsp", wr_rsp_layout, clk, rst)
        for sink in (self.rd, self.wr):
            sink.set_backpressure(random_pauses(rng, backpressure))
        self.sent = []
        self.uses = collections.Counter()
        self.reads = collections.defaultdict(list)
        self.writes = collections.defaultdict(list)
        self.by_tag = collections.defaultdict(list)
        self.since = {}
        self.order = []
        cocotb.start_soon(self._collect(self.rd, self.reads, "rd", read_beat))
        cocotb.start_soon(self._collect(self.wr, self.writes, "wr", write_response))

    async def _collect(self, sink, into, channel, convert):
        while True:
            item = convert(await sink.recv())
            into[item.tag].append(item)
            self.by_tag[item.tag].append(item)
            self.order.append((channel, item))

    def send(self, r):
        """Queue request ``r`` (a model ``Request``) and its data beats."""
        self.sent.append(r)
        self.uses[r.tag] += 1
        self.since[r.tag] = len(self.by_tag[r.tag])     # the tag's earlier uses are answered
        self.req.send_nowait(cmd=r.cmd, vc=r.vc, asi=r.asi, tag=r.tag, attr=r.attr, len=r.length,
                             metadata=r.metadata, addr=r.addr, src_acc=r.src_acc,
                             dst_acc=r.dst_acc, num_beats=r.num_beats, pool=0)
        for k, (d, be, err) in enumerate(zip(r.data, r.byte_en, r.error)):
            self.orig.send_nowait(data=int.from_bytes(d, "little"), byte_en=be, offset=k,
                                  last=k == r.beats - 1, error=err, vc=r.vc, pool=0)

    def answered(self, tag):
        """Whether every request sent with ``tag`` has had its whole answer (a write response,
        or the read beat with last): the tag is free again [§2.7.4.2]."""
        done = len(self.writes.get(tag, ())) + sum(b.last for b in self.reads.get(tag, ()))
        return done >= self.uses[tag]

    def answers(self, tag):
        """What came back for the latest request of ``tag``, in arrival order."""
        return list(self.by_tag.get(tag, ()))[self.since.get(tag, 0):]

    def check_bursts(self):
        """Multi-beat read responses reached the device whole and back to back [§2.7.8]."""
        open_tag = None
        for channel, item in self.order:
            if channel != "rd":
                continue
            if open_tag is not None:
                assert item.tag == open_tag, f"tag {item.tag} inside the burst of tag {open_tag}"
                assert item.num_beats == num_beats and item.offset == offset + 1, \
                    f"burst of tag {open_tag}: {item} after offset {offset}"
            open_tag = item.tag if item.num_beats and not item.last else None
            num_beats, offset = item.num_beats, item.offset
        assert open_tag is None, f"the burst of tag {open_tag} never ended"
