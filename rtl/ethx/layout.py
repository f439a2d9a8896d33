"""Layouts, enums and stream signatures the ETH-X bridge's blocks share: the only copy of each.
The frame format is README §1-2; the numbers are :mod:`rtl.model.ethx`'s."""

import enum as py_enum

from amaranth.lib import data, enum, stream

from ..model import ethx as model

__all__ = ["NODE_BITS", "VC_BITS", "WORD_BITS", "DeframerCount", "FramerCount", "eth_beat_layout", "eth_header_layout",
           "eth_stream", "link_header_layout", "record_stream", "record_word_layout",
           "deframer_counts", "framer_counts"]

WORD_BITS = model.WORD * 8      #: a record word [ours]
NODE_BITS = 16                  #: node IDs, the last two bytes of a MAC address [ours]
VC_BITS = 3


def eth_beat_layout(width):
    """An Ethernet stream beat, AXI4-Stream style: ``data`` (byte ``k`` in bits ``8k+7:8k``, byte 0
    first on the wire), ``keep`` (the valid bytes, at the bottom on a frame's last beat, all
    ones before), ``last``, and ``user``: on receive, set on a frame's last beat by a MAC that
    found the frame bad; on transmit, always 0."""
    return data.StructLayout({"data": width, "keep": width // 8, "last": 1, "user": 1})


def eth_stream(width):
    """A valid/ready stream of :func:`eth_beat_layout` beats."""
    return stream.Signature(eth_beat_layout(width))


#: The link header [README §1]: version 1, the frame's VC, zeros.
link_header_layout = data.StructLayout({"version": 4, "vc": VC_BITS, "zero": 9})


#: The first 16 bytes of a frame as two record words [README §1]; node IDs and the EtherType
#: are big-endian on the wire, so their bytes are separate fields.
eth_header_layout = data.StructLayout({
    "da_prefix": 32, "da_hi": 8, "da_lo": 8,
    "sa_prefix": 32, "sa_hi": 8, "sa_lo": 8,
    "type_hi": 8, "type_lo": 8,
    "link": link_header_layout,
})

#: ``da_prefix``/``sa_prefix`` of our MAC addresses as a little-endian 32-bit value.
MAC_PREFIX = int.from_bytes(model.MAC_PREFIX, "little")


#: One record word on its way into a frame (``dst``, ``vc``: the frame's, read with its first
#: word) or out of one (``dst``: the source node).
record_word_layout = data.StructLayout({
    "data": WORD_BITS,
    "last": 1,
    "node": NODE_BITS,
    "vc": VC_BITS,
})


def record_stream():
    """A valid/ready stream of :data:`record_word_layout`: one frame's records, ``last`` on
    the final word."""
    return stream.Signature(record_word_layout)


class FramerCount(py_enum.IntEnum):
    """Transmit framer counters (32-bit, wrapping)."""
    FRAMES = 0          # frames sent
    WORDS = 1           # record words taken
    CUT = 2             # frames longer than the MTU: cut at the MTU, the rest dropped


framer_counts = data.ArrayLayout(32, len(FramerCount))


class DeframerCount(py_enum.IntEnum):
    """Receive counters (32-bit, wrapping): good frames, and the frames dropped for each
    :class:`~rtl.model.ethx.FrameError` (the same numbers), in the order the receiver checks:
    RUNT, OVERSIZED, MAC_ERROR, BAD_FCS, ETHERTYPE, DESTINATION, SOURCE, VERSION, LENGTH."""
    FRAMES = 0          # good frames: their record words went on
    RUNT = model.FrameError.RUNT
    OVERSIZED = model.FrameError.OVERSIZED
    BAD_FCS = model.FrameError.BAD_FCS
    ETHERTYPE = model.FrameError.ETHERTYPE
    DESTINATION = model.FrameError.DESTINATION
    SOURCE = model.FrameError.SOURCE
    VERSION = model.FrameError.VERSION
    LENGTH = model.FrameError.LENGTH      # also: a beat whose keep breaks the stream rules
    MAC_ERROR = 9       # the MAC marked the frame bad (``user`` on its last beat)


deframer_counts = data.ArrayLayout(32, len(DeframerCount))
