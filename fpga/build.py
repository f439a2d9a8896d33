# SPDX-License-Identifier: BSD-2-Clause
"""Build a board's bitstream and report its Fmax and area: ``python -m fpga.build --board ulx3s``.

Synthesis is Amaranth's Trellis flow for ECP5 with the yowasp tools of this environment: Yosys
``synth_ecp5`` (which maps LUTs with ``abc9`` in Yosys 0.70), then nextpnr-ecp5 with
:func:`fpga.report.nextpnr_opts` (``--freq``, ``--report``, the placer's timing weight) for
each of the seeds :data:`fpga.report.SEEDS`, the worst reported, then ``ecppack`` on the first
seed's placement.
Everything goes to ``build/synth/<board>/``; the figures to ``build/synth/<board>/report.json``.
The build fails (exit status 1) when any seed misses a clock's target.
"""

import argparse
import json
import sys

from sim import toolchain

from fpga import report

__all__ = ["BOARDS", "main"]


def _ulx3s(freq_mhz):
    from fpga.ulx3s import CrcSelfTest, ULX3SPlatform
    return ULX3SPlatform(), CrcSelfTest(fast_hz=freq_mhz * 1e6)


#: Board name -> function of the target frequency (MHz) returning ``(platform, top)``.
BOARDS = {
    "ulx3s": _ulx3s,
}


def build(board, freq_mhz):
    """Build ``board`` for ``freq_mhz``; return the figures written to its ``report.json``."""
    if board not in BOARDS:
        raise SystemExit(f"unknown board {board!r}; known boards: {', '.join(sorted(BOARDS))}")
    toolchain.setup()
    build_dir = toolchain.BUILD / "synth" / board
    platform, top = BOARDS[board](freq_mhz)
    figures = report.build(platform, top, build_dir, freq_mhz)
    bitstream = build_dir / "top.bit"
    if not bitstream.is_file():
        raise SystemExit(f"no bitstream at {bitstream}")
    figures = {
        "board": board,
        **figures,
        "config": json.loads(top.config.to_json()),
        "bitstream": str(bitstream.relative_to(toolchain.REPO)),
        "tools": report.tool_versions(),
    }
    (build_dir / "report.json").write_text(json.dumps(figures, indent=2) + "\n")
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fpga.build",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--board", required=True, help=f"one of: {', '.join(sorted(BOARDS))}")
    parser.add_argument("--freq", type=float, default=125.0,
                        help="target frequency of the fast domain in MHz (default: 125)")
    args = parser.parse_args(argv)
    figures = build(args.board, args.freq)
    rows = [{"clock": clock, "fmax_mhz": fmax, "target_mhz": figures["constraint_mhz"][clock],
             "met": "yes" if fmax >= figures["constraint_mhz"][clock] else "NO"}
            for clock, fmax in figures["fmax_mhz"].items()]
    print(report.format_table(rows, ["clock", "fmax_mhz", "target_mhz", "met"]))
    print(f"luts {figures['luts']}  ffs {figures['ffs']}  ebr {figures['ebr']}  "
          f"({figures['device']}, seed {figures['seed']}, {figures['seconds']} s)")
    print(f"bitstream {figures['bitstream']}")
    late = report.missed(figures)
    if late:
        print(f"timing not met at seed {figures['seed']}: {', '.join(late)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
