# SPDX-License-Identifier: BSD-2-Clause
"""Layouts, enums and stream signatures that cross module boundaries: the only copy of each."""

from amaranth.lib import data, stream

__all__ = ["byte_beat_layout", "byte_stream", "crc_result_layout", "crc_result_stream"]


def byte_beat_layout(data_width):
    """One beat of a byte stream, AXI4-Stream style.

    ``data`` carries ``data_width // 8`` bytes, byte ``k`` in ``data[8k:8k+8]`` and byte 0 first
    on the wire. ``keep`` has one bit per byte: all ones on every beat but the last, and on the
    last beat the valid bytes sit at the bottom (``keep`` = 0b0..01..1, possibly zero). ``last``
    marks the final beat of a packet.
    """
    return data.StructLayout({
        "data": data_width,
        "keep": data_width // 8,
        "last": 1,
    })


def byte_stream(data_width):
    """A valid/ready stream of :func:`byte_beat_layout` beats."""
    return stream.Signature(byte_beat_layout(data_width))


#: One CRC result per packet. ``crc`` is the CRC-32 of the packet (append it least-significant
#: byte first to make an 802.3 FCS). ``ok`` is set when the packet, taken to end in its own FCS,
#: leaves the good-frame residue. ``malformed`` is set when some beat of the packet broke the
#: ``keep`` rules of :func:`byte_beat_layout`; then ``crc`` is unspecified and ``ok`` is 0.
crc_result_layout = data.StructLayout({
    "crc": 32,
    "ok": 1,
    "malformed": 1,
})


def crc_result_stream():
    """A valid/ready stream of :data:`crc_result_layout`."""
    return stream.Signature(crc_result_layout)
