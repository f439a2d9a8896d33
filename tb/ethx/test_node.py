# SPDX-License-Identifier: BSD-2-Clause
"""An ETH-X node's configuration and ports (``rtl/scaleup_ip/ethx/node.py``). Its traffic runs
in ``tb/export/test_simulators.py`` (looped back to itself, in Icarus and Verilator)."""

import pytest

from scaleup_ip.ethx import EthxConfig, EthxNode, EthxNodeConfig
from scaleup_ip.ethx.link import LinkConfig


@pytest.mark.parametrize("field, value, message", [
    ("fcs", True, "ETH-X node fcs must be False: the link adds and checks the FCS"),
    ("data_width", 96, "ETH-X data_width must be one of 64, 128, 256, 512, not 96"),
    ("seq_bits", 3, "link seq_bits must be 4 .. 20, not 3"),
    ("mtu", 9000, "link queue_bytes must be one of 16384"),
])
def test_both_parts_checked(field, value, message):
    with pytest.raises(ValueError, match=message):
        EthxNodeConfig(**{field: value})


def test_parts():
    config = EthxNodeConfig(eth_width=8, vcs=3, data_width=256)
    assert config.bridge == EthxConfig(eth_width=8, data_width=256, fcs=False)
    assert config.link == LinkConfig(eth_width=8, vcs=3)


def test_ports():
    node = EthxNode(EthxNodeConfig())
    node._MustUse__silence = True
    names = list(node.signature.members)
    assert names[:3] == ["node", "s_axi", "m_axi"]
    assert {"tx", "rx", "link_up", "link_settings", "link_tx_counts", "counts_write"} <= set(names)
    assert not {"i", "o", "link_node", "link_i"} & set(names)
