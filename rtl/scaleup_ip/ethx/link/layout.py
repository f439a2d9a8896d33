# SPDX-License-Identifier: BSD-2-Clause
"""Layouts, enums and signatures the lossless link's blocks share: the only copy of each. The
formats are README §1; the numbers are :mod:`scaleup_ip.model.ethx.link`'s."""

import enum as py_enum

from amaranth import Cat, Const, Mux, Shape
from amaranth.lib import data, enum

from ...model.ethx import link as model
from ...model.ethx.bridge import MAC_PREFIX
from ..layout import eth_beat_layout, eth_stream, link_header_layout
from .config import LinkConfig

__all__ = [
    "BE_FRAMES", "BeCount", "be_counts", "be_side_counts", "CAPTURE_FROM", "COUNT_BITS", "CONTROL_DA", "Class", "Ctl", "LINK_ETHERTYPE", "LinkRxCount",
    "LinkTxCount", "POISON", "RxState", "TxState", "capture_layout", "control_header",
    "control_layout",
    "ctl_in_layout", "ctl_requests_layout", "default_settings", "eth_beat_layout", "eth_stream",
    "frame_layout", "freed_layout", "head_layout", "link_vc", "link_word_layout", "rx_beat_layout", "rx_counts",
    "settings_layout", "tag_word", "tagged", "tci_of", "tx_counts", "vc_shape", "verdict_layout",
]

LINK_ETHERTYPE = model.LINK_ETHERTYPE
POISON = model.POISON
CONTROL_DA = model.CONTROL_DA
COUNT_BITS = model.COUNT_BITS
MAX_VCS = model.MAX_VCS

#: The link word after byte 16 of an eligible frame [README §1].
link_word_layout = data.StructLayout({"seq": model.SEQ_FIELD_BITS,
                                      "zero": 8 * model.LINK_WORD_BYTES - model.SEQ_FIELD_BITS})


class Ctl(enum.Enum, shape=8):
    """Kinds of link-control frame (byte 14) [README §1]; ``NONE``: not a control frame."""
    NONE = 0
    ACK = model.Ctl.ACK
    NACK = model.Ctl.NACK
    INIT = model.Ctl.INIT
    INIT_ECHO = model.Ctl.INIT_ECHO
    CF_UPDATE = model.Ctl.CF_UPDATE
    CC_UPDATE = model.Ctl.CC_UPDATE


#: The control frames asked for (one bit each) and the pulses that take them, in the order
#: the control sender serves them.
ctl_requests_layout = data.StructLayout({"echo": 1, "init": 1, "nack": 1, "ack": 1, "cf": 1})


def vc_shape_of(vcs):
    """The shape of a link VC number of ``vcs`` VCs (at least one bit)."""
    return range(max(2, vcs))


def vc_shape(config):
    """The shape of a link VC number (at least one bit)."""
    return vc_shape_of(config.vcs)


#: A link-control frame, 64 bytes before its FCS [README §1]; byte ``k`` in bits ``8k+7:8k``.
control_layout = data.StructLayout({
    "da": 48,
    "sa_prefix": 32, "sa_hi": 8, "sa_lo": 8,
    "type_hi": 8, "type_lo": 8,
    "kind": Ctl,
    "zero0": 8,
    "word": link_word_layout,            # the sequence number, or a CC_UPDATE's link word
    "counts": data.ArrayLayout(32, MAX_VCS),
    "zero1": 64,
})

def control_header(frame, node):
    """Statements that fill a :data:`control_layout` frame's DA, SA (of node ``node``) and
    EtherType."""
    return [frame.da.eq(int.from_bytes(CONTROL_DA, "little")),
            frame.sa_prefix.eq(int.from_bytes(MAC_PREFIX, "little")),
            frame.sa_hi.eq(node[8:16]), frame.sa_lo.eq(node[:8]),
            frame.type_hi.eq(LINK_ETHERTYPE >> 8), frame.type_lo.eq(LINK_ETHERTYPE & 0xFF)]


def ctl_in_layout(config):
    """A received control message for the transmit side: ACK, NACK, INIT_ECHO (``seq``) or
    CF_UPDATE (``counts``); valid for one clock. ``seq`` is the frame's 20-bit field as
    received: the transmit side reads its low ``seq_bits`` bits (README §1), and a CF_UPDATE's
    is not read."""
    return data.StructLayout({"valid": 1, "kind": Ctl, "seq": COUNT_BITS,
                              "counts": data.ArrayLayout(COUNT_BITS, config.vcs)})


#: Bytes 8 .. 55 of a received frame, taken as they pass: where every field the link reads is.
capture_layout = data.StructLayout({
    "sa": 16, "sa_hi": 8, "sa_lo": 8,       # bytes 8 .. 11: the SA's last four bytes
    "type_hi": 8, "type_lo": 8,
    "b14": 8,                               # a data frame's link-header byte with its VC, or a kind
    "b15": 8,
    "word": link_word_layout,
    "counts": data.ArrayLayout(32, MAX_VCS),
})
CAPTURE_FROM = 8                            # the frame byte ``capture_layout`` starts at


class Class(enum.Enum, shape=3):
    """What a received frame is [README §1]."""
    BAD = 0         # the MAC's error, a length rule, or its FCS
    FOREIGN = 1     # good FCS, but neither ours nor the link's
    DATA = 2        # a bridge frame: eligible
    CC = 3          # CC_UPDATE: eligible
    CONTROL = 4     # ACK, NACK, INIT, INIT_ECHO, CF_UPDATE
    POISONED = 5    # a data frame with its FCS poisoned: eligible, never delivered


def link_vc(byte14, vcs):
    """The link VC of a bridge frame whose link header's first byte is ``byte14``: the VC it
    names, and VCs at or above ``vcs`` share the last one [ours]."""
    field = data.View(link_header_layout, Cat(byte14, Const(0, 8))).vc
    return Mux(field >= vcs, vcs - 1, field)[:Shape.cast(vc_shape_of(vcs)).width]


def verdict_layout(config):
    """A received frame, judged once its FCS is checked: its class, the link word's sequence
    number (or a control frame's), the bridge frame's bytes (a foreign frame's, less 12: with
    ``vlan`` up to 8 more than a bridge frame's), its VC, a control kind, a
    CF/CC_UPDATE's counts, and whether it came with the link's tag (``bytes`` and the fields
    are then the untagged frame's)."""
    return data.StructLayout({
        "cls": Class, "kind": Ctl, "seq": COUNT_BITS,
        "bytes": range(config.max_frame_bytes + config.tag_bytes + 1),
        "vc": vc_shape(config), "counts": data.ArrayLayout(COUNT_BITS, config.vcs),
        "tagged": 1,
    })


def frame_layout(config):
    """A bridge frame in the receive buffer: its VC and bytes."""
    return data.StructLayout({"vc": vc_shape(config), "bytes": range(config.max_frame_bytes + 1)})


def head_layout(config):
    """The head of a VC's transmit queue: a whole frame of ``bytes`` bytes waits, to be sent
    poisoned if ``poison`` (README §1)."""
    return data.StructLayout({"valid": 1, "bytes": range(config.max_frame_bytes + 1),
                              "poison": 1})


def freed_layout(config):
    """A frame that has left the receive buffer for the bridge: its credits are free."""
    return data.StructLayout({"valid": 1, "frame": frame_layout(config)})


def rx_beat_layout(config):
    """A received beat on its way to the receive buffer: ``store`` is clear on the link
    word's beats (and a tag's); ``merge`` (a tagged frame at 64 bits): the bytes to store are
    the previous beat's low half and this one's; ``verdict`` is valid with ``last``."""
    return data.StructLayout({"data": config.eth_width, "last": 1, "store": 1, "merge": 1,
                              "verdict": verdict_layout(config)})


def tag_word(tci):
    """Bytes 12 .. 15 of a tagged frame: the TPID and the TCI ``tci`` (16 bits), big-endian
    [README §1]."""
    return Cat(Const(model.TPID >> 8, 8), Const(model.TPID & 0xFF, 8), tci[8:16], tci[:8])


def tagged(frame, tci):
    """The value of a frame (byte ``k`` in bits ``8k+7:8k``, at least 16 bytes) with the link's
    tag [README §1]: bytes 0 .. 11, the tag, bytes 12 .. 15, four zero bytes, bytes 16 on."""
    return Cat(frame[:96], tag_word(tci), frame[96:128], Const(0, 32), frame[128:])


def tci_of(settings, pcp):
    """The TCI of a frame sent with ``pcp``: DEI 0 and the settings' VID."""
    return Cat(settings.vid, Const(0, 1), pcp)


class TxState(enum.Enum, shape=3):
    """The LLR transmitter's state [README §3.2]."""
    OFF = 0
    INIT = 1
    ADVANCE = 2
    REPLAY = 3
    FLUSH = 4


class RxState(enum.Enum, shape=2):
    """The LLR receiver's state [README §3.1]."""
    OFF = 0
    SEND_ACKS = 1
    NACK_SENT = 2


#: Transmitter counters (32-bit, wrapping) [README §5]; ``PEAK_REPLAY`` is a maximum.
LinkTxCount = py_enum.IntEnum("LinkTxCount", model.TX_COUNTERS, start=0)
#: Receiver counters (32-bit, wrapping) [README §5].
LinkRxCount = py_enum.IntEnum("LinkRxCount", model.RX_COUNTERS, start=0)

tx_counts = data.ArrayLayout(32, len(LinkTxCount))
rx_counts = data.ArrayLayout(32, len(LinkRxCount))


class BeCount(py_enum.IntEnum):
    """The best-effort path's counters (32-bit, wrapping) [README §6]: frames sent, frames
    from the source dropped as malformed, frames received for ``be_o``, frames received and
    dropped for lack of room."""
    BE_TX = 0
    BE_TX_MALFORMED = 1
    BE_RX = 2
    BE_RX_DROPPED = 3


#: Each side's two best-effort counters, in :class:`BeCount` order.
be_side_counts = data.ArrayLayout(32, 2)
be_counts = data.ArrayLayout(32, len(BeCount))
#: Whole frames waiting in the best-effort transmit buffer at most [ours].
BE_FRAMES = 8


def settings_layout(config):
    """The link's run-time settings (README §3-4), a port so that tests and management change
    them without a rebuild: clocks, bytes and credits."""
    return data.StructLayout({
        "replay_timeout": 16,       # clocks without progress before everything kept is replayed
        "replay_max": 8,            # replays without progress before FLUSH
        "max_outstanding": range(config.replay_frames),  # frames kept (0: replay_frames − 1)
        "init_period": 16,          # clocks between INITs
        "down_max": 16,             # clocks down before FLUSH
        "ack_bytes": 16,            # accepted bytes per ACK (UEC default 2048)
        "ack_delay": 16,            # clocks an accepted frame waits for its ACK at most
        "cf_bytes": 16,             # freed bytes per CF_UPDATE
        "cf_period": 16,            # clocks between CF_UPDATEs anyway
        "cc_period": 16,            # clocks between CC_UPDATEs (0: none)
        "limits": data.ArrayLayout(COUNT_BITS, config.vcs),   # S_CL per VC
        "port_limit": COUNT_BITS,
    } | ({
        "vid": 12,                  # the VID of the link's tags (0: priority tags)
        "pcps": data.ArrayLayout(3, config.vcs),    # the PCP of each VC's data frames
        "ctl_pcp": 3,               # the PCP of control frames and CC_UPDATEs
        "vc_of_pcp": data.ArrayLayout(vc_shape(config), 8),   # a tagged data frame's VC
    } if config.vlan else {}))


def default_settings(config, round_trip=500):
    """Settings for a link whose round trip (wire, MACs and the peer's turnaround) is
    ``round_trip`` clocks or less [ours]: the replay timer waits eight longest frames and two
    round trips (it must exceed a longest frame and a round trip, or a replay never
    completes and the link ends in FLUSH; an ACK may wait for three frames on the way back:
    one in the control sender and two on the wire); every VC may use the whole receive
    buffer, and so may the port. With ``vlan``: VID 0 (priority tags), PCP ``v`` for VC ``v``,
    PCP 7 for control frames, and PCP ``p`` enters VC ``min(p, vcs - 1)``."""
    assert isinstance(config, LinkConfig)
    frame = config.rows(config.max_wire_bytes)
    vlan = {"vid": 0, "pcps": list(range(config.vcs)), "ctl_pcp": 7,
            "vc_of_pcp": [min(p, config.vcs - 1) for p in range(8)]} if config.vlan else {}
    return vlan | {
        "replay_timeout": min(0xFFFF, 8 * frame + 2 * round_trip), "replay_max": 8,
        "max_outstanding": 0, "init_period": min(0xFFFF, frame + round_trip), "down_max": 20000,
        "ack_bytes": 2048, "ack_delay": 64, "cf_bytes": 2048, "cf_period": 512,
        "cc_period": 4096,
        "limits": [config.rx_credits] * config.vcs, "port_limit": config.rx_credits,
    }
