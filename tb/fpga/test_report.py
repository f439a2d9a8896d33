# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the synthesis report helpers (fpga/report.py): the other seeds' nextpnr arguments,
the worst of several seeds, and the clocks that miss their target (a board build fails on them)."""

import json
import os
import sys

from fpga import report

#: nextpnr's arguments as Amaranth 0.5's build plan has them (build_top.json).
PLAN = ["--quiet", "--freq", "125", "--report", "nextpnr-report.json", "--seed", "1",
        "--timing-allow-fail", "--log", "top.tim", "--85k", "--package", "CABGA381",
        "--speed", "6", "--json", "top.json", "--lpf", "top.lpf", "--textcfg", "top.config"]


def _figures(seed, **fmax):
    return {"seed": seed, "fmax_mhz": fmax, "constraint_mhz": {c: 125.0 for c in fmax},
            "luts": 100}


def test_reseeded():
    """Another seed: its own report and log, no bitstream configuration, the rest as it was."""
    assert report.reseeded(PLAN, 3) == [
        "--quiet", "--freq", "125", "--report", "nextpnr-report-seed3.json", "--seed", "3",
        "--timing-allow-fail", "--log", "top-seed3.tim", "--85k", "--package", "CABGA381",
        "--speed", "6", "--json", "top.json", "--lpf", "top.lpf"]


def test_worst_and_missed():
    """The worst seed is the one whose slowest clock is furthest below its target."""
    runs = [_figures(1, clk=130.0, fast=126.0), _figures(2, clk=124.0, fast=140.0),
            _figures(3, clk=131.0, fast=121.0)]
    assert report.worst(runs)["seed"] == 3
    assert report.missed(runs[0]) == []
    assert report.missed(runs[2]) == ["fast"]
    assert report.missed(_figures(4, clk=100.0, fast=120.0)) == ["clk", "fast"]
    assert report.worst(runs[:2])["seed"] == 2


def _net(*endpoints):
    return {"net": "n", "driver": "d", "port": "F", "event": "posedge clk",
            "endpoints": [{"cell": c, "port": p, "event": "posedge clk", "delay": [0.5, d]}
                          for c, p, d in endpoints]}


def test_census():
    """Late registers, each counted once at its longest delay over its ports, grouped by the
    first parts of their names without the cells' suffixes, worst group first."""
    from fpga import census
    detailed = {"detailed_net_timings": [
        _net(("top.a.x_TRELLIS_FF_Q", "DI", 9.0), ("top.a.x_TRELLIS_FF_Q_1", "M", 11.0)),
        _net(("top.a.x_TRELLIS_FF_Q", "CE", 10.5), ("top.b.q.storage.0.1$DPRAM_COMB3", "WAD0",
                                                     12.25)),
        _net(("top.b.q.storage.0.0$DPRAM_COMB0", "WD", 10.0), ("top.c_TRELLIS_FF_Q", "LSR", 3.0)),
    ]}
    found = census.census(detailed, 10.0)
    assert found == {"registers": 5, "late": 3, "worst_ns": 12.25,
                     "groups": [("top.b.q", 1, 12.25), ("top.a.x", 2, 11.0)]}
    assert census.census(detailed, 10.0, depth=2)["groups"] == [("top.b", 1, 12.25),
                                                                 ("top.a", 2, 11.0)]
    assert census.census(detailed, 20.0)["late"] == 0


def test_census_args():
    """The census places the build as it was, with its seed, its own report and log, no
    bitstream configuration, and the detailed timing."""
    from fpga import census
    assert census.census_args(PLAN, 2) == [
        "--quiet", "--freq", "125", "--report", "nextpnr-report-census-seed2.json", "--seed",
        "2", "--timing-allow-fail", "--log", "top-census-seed2.tim", "--85k", "--package",
        "CABGA381", "--speed", "6", "--json", "top.json", "--lpf", "top.lpf",
        "--detailed-timing-report"]
    assert census.census_report(2) == "nextpnr-report-census-seed2.json"


def test_census_report_of_the_present_netlist(tmp_path, monkeypatch):
    """The census places a build again unless its report was made from the build's present
    netlist: a report older than ``top.json`` (the design built again) is made again."""
    from fpga import census
    tool = tmp_path / "fake_nextpnr.py"
    tool.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "args = sys.argv[1:]\n"
        "open('runs', 'a').write('run\\n')\n"
        "json.dump({'detailed_net_timings': []}, open(args[args.index('--report') + 1], 'w'))\n")
    (tmp_path / "build_top.json").write_text(json.dumps({"commands": [
        ["yosys", "top.ys"], ["nextpnr-ecp5", *PLAN]]}))
    tool.chmod(0o755)
    monkeypatch.setenv("NEXTPNR_ECP5", str(tool))
    netlist = tmp_path / "top.json"
    netlist.write_text("{}")
    os.utime(netlist, (1000, 1000))
    runs = lambda: (tmp_path / "runs").read_text().count("run")
    assert census.detailed_report(tmp_path, 1) == {"detailed_net_timings": []}
    assert runs() == 1
    report_path = tmp_path / census.census_report(1)
    os.utime(report_path, (2000, 2000))
    census.detailed_report(tmp_path, 1)
    assert runs() == 1                       # the netlist is the one it was made from
    os.utime(netlist, (3000, 3000))          # built again
    census.detailed_report(tmp_path, 1)
    assert runs() == 2
