# SPDX-License-Identifier: BSD-2-Clause
"""The integration tops ``make verilog`` writes: each a core and the configuration it is built
with by default."""

import dataclasses

from ..config import BlockConfig
from ..crc import Crc32, CrcConfig
from ..dl import DlConfig, RxCount, TxCount, UalinkDl
from ..ethx import (
    AggregateCount,
    CompleterCount,
    DeframerCount,
    EthxBridge,
    EthxConfig,
    EthxNode,
    EthxNodeConfig,
    FramerCount,
    ParseCount,
    ReadCount,
    WriteCount,
)
from ..ethx.link import EthxLink, LinkConfig, LinkRxCount, LinkTxCount
from ..tl import (
    OriginatorConfig,
    OriginatorCount,
    RxError,
    TlConfig,
    TlEndpoint,
    TxCacheCount,
    UpliError,
)
from ..tl.upli import UpliOriginator
from ..ualink import UalinkEnd, UalinkEndConfig

__all__ = ["TOPS", "Top"]


@dataclasses.dataclass(frozen=True)
class Top:
    """One integration top.

    Attributes
    ----------
    name : str
        The Verilog module's name (and its files' ``<name>.v``, ``<name>.md``, ``<name>.json``).
    core : type
        The :class:`~scaleup_ip.config.ConfiguredComponent` it wraps.
    config : BlockConfig
        Its default configuration; any field can be changed by name.
    summary : str
        One line on what it is.
    names : dict
        Enum naming the elements of each counter array port, by flattened port name.
    """
    name: str
    core: type
    config: BlockConfig
    summary: str
    names: dict = dataclasses.field(default_factory=dict)

    def build(self, config=None):
        """The core built with ``config`` (by default :attr:`config`)."""
        return self.core(self.config if config is None else config)


_TL_NAMES = {"error_counts": RxError, "upli_errors": UpliError, "tx_cache_counts": TxCacheCount}
_DL_NAMES = {"tx_counts": TxCount, "rx_counts": RxCount}
_BRIDGE_NAMES = {"counts_framer": FramerCount, "counts_deframer": DeframerCount,
                 "counts_parse": ParseCount, "counts_completer": CompleterCount,
                 "counts_aggregate": AggregateCount, "counts_read": ReadCount,
                 "counts_write": WriteCount}
_LINK_NAMES = {"tx_counts": LinkTxCount, "rx_counts": LinkRxCount}


def _prefixed(prefix, names):
    return {f"{prefix}_{name}": enum for name, enum in names.items()}


#: Every integration top by name.
TOPS = {top.name: top for top in [
    Top("crc32_d64", Crc32, CrcConfig(data_width=64, pipeline=1),
        "IEEE 802.3 CRC-32 over a 64-bit byte stream"),
    Top("crc32_d512", Crc32, CrcConfig(data_width=512, pipeline=2),
        "IEEE 802.3 CRC-32 over a 512-bit byte stream"),
    Top("ualink_tl", TlEndpoint, TlConfig(),
        "UALink transaction layer: UPLI channels to and from TL flits, no address cache",
        _TL_NAMES),
    Top("ualink_tl_cache", TlEndpoint, TlConfig(cache_ways=4),
        "UALink transaction layer with 4-way address caches (request compression)",
        _TL_NAMES | {"tx_cache_counts": TxCacheCount}),
    Top("ualink_originator", UpliOriginator, OriginatorConfig(),
        "An accelerator's UPLI originator: a watchdog per request and Isolation Mode, to put "
        "in front of ualink_tl or ualink_end", {"counts": OriginatorCount}),
    Top("ualink_dl", UalinkDl, DlConfig(),
        "UALink data link: TL flits to and from 640-byte DL flits, CRC, link-level replay",
        _DL_NAMES),
    Top("ualink_end", UalinkEnd, UalinkEndConfig(),
        "A whole UALink end: the transaction layer over the data link",
        _prefixed("tl", _TL_NAMES) | _prefixed("dl", _DL_NAMES)),
    Top("ethx_bridge", EthxBridge, EthxConfig(),
        "ETH-X bridge: AXI4 transactions to and from Ethernet frames", _BRIDGE_NAMES),
    Top("ethx_link", EthxLink, LinkConfig(),
        "Lossless Ethernet link: link-level retry and credit-based flow control", _LINK_NAMES),
    Top("ethx_node", EthxNode, EthxNodeConfig(),
        "An ETH-X node: the bridge over the lossless link",
        _BRIDGE_NAMES | _prefixed("link", _LINK_NAMES)),
]}
