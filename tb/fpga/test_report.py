# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the synthesis report helpers (fpga/report.py): the other seeds' nextpnr arguments,
the worst of several seeds, and the clocks that miss their target (a board build fails on them)."""

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
