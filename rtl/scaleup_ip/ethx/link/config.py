# SPDX-License-Identifier: BSD-2-Clause
"""The lossless link's configuration: one frozen object from the RTL to the testbench and model."""

import dataclasses

from ...config import BlockConfig, check_int
from ...model.ethx.bridge import HEADER_BYTES, MIN_WORDS, WORD
from ...model.ethx.link import (CONTROL_BYTES, FCS_BYTES, LINK_WORD_BYTES, MIN_BYTES, TAG_BYTES,
                                wire_bytes_of)

__all__ = ["CONTROL_BYTES", "FCS_BYTES", "LINK_WORD_BYTES", "MIN_BE_BYTES", "MIN_BYTES",
           "MIN_FRAME_BYTES", "TAG_BYTES", "LinkConfig"]

#: DA, SA and EtherType: a frame is at most this and the MTU [802.3].
MAC_HEADER_BYTES = 14
#: The shortest best-effort frame (no FCS): the shortest good frame's [README §6] [802.3].
MIN_BE_BYTES = MIN_BYTES - FCS_BYTES
#: The smallest bridge frame (no FCS): its header and six record words [../README.md §1].
MIN_FRAME_BYTES = HEADER_BYTES + MIN_WORDS * WORD

#: The largest MTU: a switch's jumbo MTU [ours].
MAX_MTU = 9216

#: Stream widths: every field of a wire frame starts on a beat [README §1].
ETH_WIDTHS = (8, 32, 64)
_POWERS = tuple(1 << k for k in range(21))


@dataclasses.dataclass(frozen=True)
class LinkConfig(BlockConfig):
    """Parameters of the lossless link's blocks (README §2-4).

    Parameters
    ----------
    eth_width : int
        Bits per beat of the bridge-side and wire-side streams: 8, 32 or 64.
    mtu : int
        The MTU of the frames it carries, 1500 to 9216 (a switch's jumbo MTU; the ETH-X bridge's
        is at most 9000): they are at most ``14 + mtu`` bytes, the wire's ``14 + mtu + 12``.
    vcs : int
        Virtual channels with their own transmit queue and credits, 1 to 8.
    seq_bits : int
        Sequence-number bits, 4 to 20 (UEC: 20; fewer for proofs).
    replay_frames : int
        Frames the replay ring keeps unacknowledged, a power of two, 2 to ``2**(seq_bits-1)``.
    replay_bytes : int
        Bytes of the replay ring, a power of two holding at least one longest wire frame.
    queue_bytes : int
        Bytes of each VC's transmit queue, a power of two holding at least one longest frame
        (two for line rate on one VC: a frame enters the queue whole before it leaves).
    queue_frames : int
        Frames each VC's transmit queue holds, 2 to 16.
    rx_bytes : int
        Bytes of the receive buffer, a power of two holding at least one longest frame.
    credit_size : int
        Bytes per credit, a power of two from 32 to 2048 (UEC default 128).
    pkt_overhead : int
        Bytes added to a frame's length before its credits are counted, 0 to 127.
    be_bytes : int
        Bytes of each of the best-effort path's two buffers (README §6), a power of two
        holding at least one longest wire frame; 0 (the default): no best-effort path, frames
        that are not the link's are counted and dropped.
    vlan : bool
        Send the link's frames with an 802.1Q tag, its PCP by VC, and take tagged frames, the
        VC from their PCP (README §1 "802.1Q tag"): for a link through standard switches.
    """
    eth_width: int = 64
    mtu: int = 1500
    vcs: int = 2
    seq_bits: int = 20
    replay_frames: int = 64
    replay_bytes: int = 16384
    queue_bytes: int = 4096
    queue_frames: int = 4
    rx_bytes: int = 8192
    credit_size: int = 128
    pkt_overhead: int = 0
    be_bytes: int = 0
    vlan: bool = False

    def __post_init__(self):
        check_int("link", "eth_width", self.eth_width, ETH_WIDTHS)
        check_int("link", "mtu", self.mtu, range(1500, MAX_MTU + 1))
        check_int("link", "vcs", self.vcs, range(1, 9))
        check_int("link", "seq_bits", self.seq_bits, range(4, 21))
        check_int("link", "replay_frames", self.replay_frames,
                  tuple(p for p in _POWERS if 2 <= p <= 1 << (self.seq_bits - 1)))
        for name, least in (("replay_bytes", self.max_wire_bytes),
                            ("queue_bytes", self.max_frame_bytes),
                            ("rx_bytes", self.max_frame_bytes)):
            check_int("link", name, getattr(self, name),
                      tuple(p for p in _POWERS if least <= p))
        check_int("link", "queue_frames", self.queue_frames, range(2, 17))
        check_int("link", "credit_size", self.credit_size, tuple(1 << k for k in range(5, 12)))
        check_int("link", "pkt_overhead", self.pkt_overhead, range(0, 128))
        if type(self.vlan) is not bool:
            raise TypeError(f"link vlan must be a bool, not {self.vlan!r}")
        check_int("link", "be_bytes", self.be_bytes,
                  (0,) + tuple(p for p in _POWERS if self.max_wire_bytes <= p))

    @property
    def eth_bytes(self):
        """Bytes per beat."""
        return self.eth_width // 8

    @property
    def max_frame_bytes(self):
        """Bytes of the longest bridge frame (no FCS)."""
        return MAC_HEADER_BYTES + self.mtu

    @property
    def max_wire_bytes(self):
        """Bytes of the longest wire frame: link word, FCS and, with ``vlan``, the tag added
        [README §1]."""
        return wire_bytes_of(self.max_frame_bytes) + self.tag_bytes

    @property
    def tag_bytes(self):
        """Bytes the tag adds to a frame: :data:`TAG_BYTES` with ``vlan``, else 0."""
        return TAG_BYTES if self.vlan else 0

    @property
    def max_be_bytes(self):
        """Bytes of the longest best-effort frame (no FCS): the longest wire frame's
        [README §6]."""
        return self.max_wire_bytes - FCS_BYTES

    def rows(self, nbytes):
        """Beats of ``nbytes`` bytes."""
        return -(-nbytes // self.eth_bytes)

    @property
    def rx_credits(self):
        """Credits the receive buffer holds: the largest safe port limit [README §4]."""
        return self.rx_bytes // self.credit_size
