# SPDX-License-Identifier: BSD-2-Clause
"""Every register a placed design's paths reach too late for a clock, grouped by where it is:
``python -m fpga.census <build dir> --mhz 100``.

nextpnr's report names only the worst path of each clock; fixing it shows the next one, and a
design can have thousands of paths past a target. The census places the build again with the
same arguments and seed (nextpnr 0.11 is deterministic: the same netlist and seed give the same
placement, checked on the TL packer's build) and ``--detailed-timing-report``, which adds
``detailed_net_timings`` to the report: one entry per net, ``{"net", "driver", "port",
"event", "endpoints": [{"cell", "port", "event", "delay": [min, max]}]}``, where each endpoint
is a timing endpoint (a flop's ``DI``, ``M``, ``CE`` or ``LSR``, a distributed RAM's write
port, a block RAM's inputs) and ``delay`` the shortest and longest path delay to it in ns (the
longest equals the critical path's delay for its endpoint; checked on a real run). A register
(or RAM cell) is *late* for a period when its longest delay over all its ports exceeds it.
They are grouped by the first ``depth`` parts of their hierarchical name, with the cell
suffixes that Yosys and nextpnr add (``_TRELLIS_FF_Q...``, ``$DPRAM...``) removed.
"""

import argparse
import collections
import json
import re
import subprocess
from pathlib import Path

from fpga import report
from sim import toolchain

__all__ = ["census", "census_args", "census_report", "detailed_report", "main"]

#: What names the census's report and log beside the seed: ``nextpnr-report-census-seed1.json``.
_TAG = "census-seed"

_SUFFIX = re.compile(r"(_TRELLIS_|\$).*$")


def census(detailed, period_ns, depth=3):
    """The late registers of a ``--detailed-timing-report`` report (``detailed``, parsed JSON)
    for ``period_ns``: ``{"registers", "late", "worst_ns", "groups": [(name, late, worst_ns)]}``
    with the groups worst first (ties by name)."""
    longest = {}
    for net in detailed["detailed_net_timings"]:
        for end in net["endpoints"]:
            longest[end["cell"]] = max(longest.get(end["cell"], 0.0), end["delay"][1])
    groups = collections.defaultdict(list)
    for cell, delay in longest.items():
        if delay > period_ns:
            name = ".".join(cell.split(".")[:depth])
            groups[_SUFFIX.sub("", name)].append(delay)
    rows = sorted(((name, len(d), round(max(d), 2)) for name, d in groups.items()),
                  key=lambda row: (-row[2], row[0]))
    return {"registers": len(longest), "late": sum(r[1] for r in rows),
            "worst_ns": round(max(longest.values(), default=0.0), 2), "groups": rows}


def detailed_report(build_dir, seed=report.SEED):
    """The detailed report of ``build_dir`` (an Amaranth build with its ``build_top.json``
    plan) for ``seed``: read if the census made it from the build's present netlist, else
    placed and routed again with the plan's nextpnr arguments (:func:`census_args`). A report
    older than the netlist (``top.json``, written again when the design is built again) is
    of a design that is gone, and is made again."""
    path = Path(build_dir) / census_report(seed)
    netlist = Path(build_dir) / "top.json"
    if not path.exists() or path.stat().st_mtime < netlist.stat().st_mtime:
        tool, args = report.nextpnr_plan(build_dir)
        subprocess.run([tool, *census_args(args, seed)], cwd=build_dir, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(path.read_text())


def census_report(seed):
    """The census's nextpnr report in a build directory, for ``seed``."""
    return report.seeded(report.NEXTPNR_REPORT, seed, _TAG)


def census_args(args, seed):
    """nextpnr's arguments ``args`` (of the build plan) for the census of ``seed``: that seed,
    the census's own report and log (:func:`~fpga.report.reseeded`), no bitstream
    configuration, the detailed timing."""
    return [*report.reseeded(args, seed, _TAG), "--detailed-timing-report"]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fpga.census",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("build_dir", help="a build directory (build/synth/blocks/<block>-...)")
    parser.add_argument("--mhz", type=float, default=100.0,
                        help="the clock to count late registers for (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=report.SEED,
                        help="the placement seed (default: %(default)s)")
    parser.add_argument("--depth", type=int, default=3,
                        help="name parts a group keeps (default: %(default)s)")
    parser.add_argument("--top", type=int, default=20, help="groups shown (default: %(default)s)")
    args = parser.parse_args(argv)
    toolchain.setup()
    found = census(detailed_report(args.build_dir, args.seed), 1e3 / args.mhz, args.depth)
    print(f"{found['late']} of {found['registers']} registers and RAM cells late for "
          f"{args.mhz:g} MHz (worst {found['worst_ns']} ns, seed {args.seed})")
    print(report.format_table([{"worst_ns": w, "late": n, "group": g}
                               for g, n, w in found["groups"][:args.top]],
                              ["worst_ns", "late", "group"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
