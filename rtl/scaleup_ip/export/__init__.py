# SPDX-License-Identifier: BSD-2-Clause
"""Verilog of the integration tops for designs in any language (``make verilog``): ports named
as integration tools expect, a port map beside each, Verilog that any simulator runs."""

from .cli import WAIVERS, configure, main, write_top
from .ports import FlatPorts, Port
from .tops import TOPS, Top
from .verilog import convert, memory_init_by_rows

__all__ = ["TOPS", "WAIVERS", "FlatPorts", "Port", "Top", "configure", "convert", "main",
           "memory_init_by_rows", "write_top"]
