# SPDX-License-Identifier: BSD-2-Clause
"""The ETH-X bridge's configuration: one frozen object from the RTL to the testbench."""

import dataclasses

from ..config import BlockConfig, check_int
from ..model.ethx.bridge import HEADER_BYTES, WORD, capacity

__all__ = ["EthxConfig"]

#: Ethernet stream widths (those of the CRC engine).
ETH_WIDTHS = (8, 32, 64, 128, 256, 512)


@dataclasses.dataclass(frozen=True)
class EthxConfig(BlockConfig):
    """Parameters of the ETH-X bridge's blocks.

    Parameters
    ----------
    eth_width : int
        Bits per beat of the Ethernet transmit and receive streams: 8, 32, 64, 128, 256 or 512.
    mtu : int
        Largest Ethernet payload (EtherType to FCS exclusive), 1500 to 9000 bytes.
    fcs : bool
        Generate the FCS on transmit and check it on receive (``False``: an external MAC does;
        frames then end before the FCS).
    tx_frames, rx_frames : int
        Largest frames the transmit and receive frame buffers hold, 1 to 8.
    sources : int
        Node IDs 0 .. ``sources`` - 1 may send requests here (a power of two, 1 to 256): the
        serving side keeps compression state and request room for each.
    data_width : int
        AXI data width of both AXI ports: 64, 128, 256 or 512 bits.
    addr_width : int
        AXI address width, 32 to 64 bits.
    windows : int
        Access windows of the serving side, 1 to 8 (README §4).
    outstanding : int
        Reads, and writes, the serving side has in flight at its memory, 2 to 64.
    read_piece : int
        Most data bytes in one READ_DATA record, a power of two from 256 up to what fits the
        MTU (1024 for 1500).
    node_bits : int
        Bits of AxUSER that name the destination node, 1 to 16.
    id_width : int
        AXI ID width of the requester's port, 1 to 8.
    proxy : bool
        Write proxy: relaxed writes are answered at once, remote errors reported later
        (README §5).
    fill : int
        Aggregation watermark: a frame is sent once its records reach this many bytes, 64 to
        the MTU.
    timeout : int
        Aggregation timeout: a frame is sent at the first record boundary this many clocks
        after it was opened, 0 to 65535 (0: as soon as no record follows at once).
    completion_timeout : int
        Clocks a read or write may wait for its answer before it is completed SLVERR and its
        slot freed (README §5): 16 to 2**32 - 1, or 0 for never. It expires between this and
        1.125 times this plus 9 clocks after it was sent.
    """
    eth_width: int = 64
    mtu: int = 1500
    fcs: bool = True
    tx_frames: int = 2
    rx_frames: int = 2
    sources: int = 16
    data_width: int = 64
    addr_width: int = 48
    windows: int = 2
    outstanding: int = 8
    read_piece: int = 1024
    node_bits: int = 4
    id_width: int = 4
    proxy: bool = False
    fill: int = 1400
    timeout: int = 64
    completion_timeout: int = 1_000_000

    def __post_init__(self):
        check_int("ETH-X", "eth_width", self.eth_width, ETH_WIDTHS)
        check_int("ETH-X", "mtu", self.mtu, range(1500, 9001))
        if type(self.fcs) is not bool:
            raise TypeError(f"ETH-X fcs must be a bool, not {self.fcs!r}")
        check_int("ETH-X", "tx_frames", self.tx_frames, range(1, 9))
        check_int("ETH-X", "rx_frames", self.rx_frames, range(1, 9))
        check_int("ETH-X", "sources", self.sources, tuple(1 << k for k in range(9)))
        check_int("ETH-X", "data_width", self.data_width, (64, 128, 256, 512))
        check_int("ETH-X", "addr_width", self.addr_width, range(32, 65))
        check_int("ETH-X", "windows", self.windows, range(1, 9))
        check_int("ETH-X", "outstanding", self.outstanding, range(2, 65))
        pieces = tuple(p for p in (256, 512, 1024, 2048, 4096, 8192)
                       if p + 2 * WORD <= WORD * capacity(self.mtu))
        check_int("ETH-X", "read_piece", self.read_piece, pieces)
        check_int("ETH-X", "node_bits", self.node_bits, range(1, 17))
        check_int("ETH-X", "id_width", self.id_width, range(1, 9))
        if type(self.proxy) is not bool:
            raise TypeError(f"ETH-X proxy must be a bool, not {self.proxy!r}")
        check_int("ETH-X", "fill", self.fill, range(64, self.mtu + 1))
        check_int("ETH-X", "timeout", self.timeout, range(0, 65536))
        check_int("ETH-X", "completion_timeout", self.completion_timeout, range(1 << 32))
        if 0 < self.completion_timeout < 16:
            raise ValueError("ETH-X completion_timeout must be 0 (never) or 16 .. 4294967295, "
                             f"not {self.completion_timeout}")

    @property
    def eth_bytes(self):
        """Bytes per Ethernet beat."""
        return self.eth_width // 8

    @property
    def bus_words(self):
        """8-byte lanes of the AXI data bus."""
        return self.data_width // 64

    @property
    def bus_size(self):
        """AxSIZE of a beat as wide as the bus."""
        return (self.data_width // 8).bit_length() - 1

    @property
    def lanes(self):
        """Record words per frame-buffer row: one, or the words of a wide Ethernet beat."""
        return max(1, self.eth_width // 64)

    @property
    def record_words(self):
        """Record words in the largest frame."""
        return capacity(self.mtu)

    @property
    def frame_words(self):
        """Words of the largest frame in a buffer: the two header words, the records and the
        FCS word (its low 4 bytes) when the bridge makes the FCS."""
        return HEADER_BYTES // WORD + self.record_words + self.fcs

    @property
    def frame_rows(self):
        """Buffer rows of the largest frame (frames start on a row)."""
        return -(-self.frame_words // self.lanes)

    @property
    def max_frame_bytes(self):
        """Bytes of the longest frame that is not oversized (FCS included with ``fcs``)."""
        return 14 + self.mtu + 4 * self.fcs

    @property
    def rx_frame_rows(self):
        """Receive-buffer rows of the longest frame that is not oversized."""
        return -(-self.max_frame_bytes // (8 * self.lanes))

    def buffer_rows(self, frames):
        """Rows of a frame buffer for ``frames`` largest frames, a power of two."""
        return 1 << (frames * max(self.frame_rows, self.rx_frame_rows) - 1).bit_length()
