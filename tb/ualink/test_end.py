# SPDX-License-Identifier: BSD-2-Clause
"""A whole UALink end's configuration (``rtl/scaleup_ip/ualink.py``) and that of the two-end
link top: each part's fields checked as the part checks them. The end's traffic runs in
``tb/export/test_simulators.py`` (its DL) and ``tb/ualink/test_link.py`` (TL over DL)."""

import pytest

from scaleup_ip.dl import DlConfig
from scaleup_ip.tl import TlConfig
from scaleup_ip.ualink import UalinkEnd, UalinkEndConfig
from sim.ualink.link import UalinkLinkConfig


@pytest.mark.parametrize("config_class, field, value, message", [
    (config_class, *case) for config_class in (UalinkEndConfig, UalinkLinkConfig) for case in [
        ("replay_depth", 0, "DL replay_depth must be 1 .. 255, not 0"),
        ("cache_ways", 3, "TL cache_ways must be one of 0, 1, 2, 4, not 3")]
] + [(UalinkEndConfig, "nop_flits", 256, "DL nop_flits must be 1 .. 255, not 256"),
     (UalinkLinkConfig, "max_delay", 0, "max_delay")])
def test_both_parts_checked(config_class, field, value, message):
    with pytest.raises(ValueError, match=message):
        config_class(**{field: value})


def test_parts():
    config = UalinkEndConfig(cache_ways=2, replay_depth=64)
    assert config.tl == TlConfig(cache_ways=2) and config.dl == DlConfig(replay_depth=64)


def test_ports():
    end = UalinkEnd(UalinkEndConfig(cache_ways=2))
    end._MustUse__silence = True
    names = list(end.signature.members)
    assert names[:8] == ["req", "rx_req", "orig", "rx_orig", "rd_rsp", "rx_rd_rsp", "wr_rsp",
                         "rx_wr_rsp"]
    assert {"tl_tx_cache", "tl_upli_errors", "phy_out", "phy_in", "dl_enable",
            "dl_tx_counts"} <= set(names)
    assert not {"flit_out", "flit_in", "tl_in", "tl_out"} & set(names)
