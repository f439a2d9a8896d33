# SPDX-License-Identifier: BSD-2-Clause
"""Run nextpnr-ecp5 with a target frequency and a JSON report, and reduce that report to figures.

What nextpnr 0.11 writes with ``--report <file>`` (checked on a real run, not assumed): a JSON
object with three keys.

``fmax``
    ``{clock net: {"achieved": MHz, "constraint": MHz}}`` after routing (the last "Max frequency"
    of the log). Global clock nets are named ``$glbnet$<net>``; the prefix is dropped here.
    ``constraint`` comes from the LPF ``FREQUENCY`` of the clock or, for a clock without one,
    from ``--freq``.
``utilization``
    ``{bel type: {"available": n, "used": n}}``, e.g. ``TRELLIS_COMB``, ``TRELLIS_FF``,
    ``DP16KD``, ``EHXPLLL``.
``critical_paths``
    One entry per clock pair: ``{"from", "to", "path": [{"type", "delay", "from", "to",
    "net"?}]}`` with ``type`` one of ``clk-to-q``, ``routing``, ``logic``, ``setup``; delays in ns.

``luts`` below counts ``TRELLIS_COMB`` cells: LUT4 slots (each holds one LUT4, or half of a CCU2C
carry cell, or part of a wider LUT built with PFUMX), so it is a LUT4-equivalent count, not a
count of slices. ``ffs`` counts ``TRELLIS_FF``; ``ebr`` counts ``DP16KD`` (18 kbit block RAM).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from scaleup_ip.export import memory_init_by_rows

__all__ = ["NEXTPNR_REPORT", "MAPPERS", "SEEDS", "mapper_overrides", "build", "nextpnr_opts",
           "nextpnr_command", "nextpnr_plan", "missed", "read_report", "reseeded", "seeded",
           "tool_versions", "format_table", "worst"]

#: File name of nextpnr's JSON report inside a build directory.
NEXTPNR_REPORT = "nextpnr-report.json"
#: Placement seed of the build whose bitstream is kept: fixed, so that figures are reproducible.
SEED = 1
#: Every design is placed and routed with each of these seeds and the worst is reported: one
#: seed's Fmax can be a few MHz off the design's (the ETH-X link moved from 64.6 to 66.0 MHz
#: between two builds of nearly the same design).
SEEDS = (1, 2, 3)


#: The heap placer's timing weight (nextpnr's default is 10). At 30 the DL end's worst of its
#: paths placed and routed at 96.1 MHz where it was 79.8 at 10 (the same netlist, seed 1): its
#: paths are mostly routing between wide registers, which the placer then keeps together.
PLACER_TIMING_WEIGHT = 30


def nextpnr_opts(freq_mhz, report=NEXTPNR_REPORT, seed=SEED):
    """Options for Amaranth's ``nextpnr_opts`` override.

    ``--freq`` is always given, besides any clock constraint in the LPF: it sets the target of
    every clock without one. ``--timing-allow-fail`` lets a design that misses its target still
    produce a bitstream and a report, so that the miss can be measured. The placer weighs
    timing by :data:`PLACER_TIMING_WEIGHT`.
    """
    return ["--freq", f"{freq_mhz:g}", "--report", str(report), "--seed", str(seed),
            "--timing-allow-fail", "--placer-heap-timingweight", str(PLACER_TIMING_WEIGHT)]


def _clock_name(net):
    return net.removeprefix("$glbnet$")


def _used(utilization, bel):
    return utilization.get(bel, {}).get("used", 0)


def _critical_path(report, clock):
    """Summarize the worst register-to-register path of ``clock``: endpoints, delay, levels."""
    edge = f"posedge {clock}"
    paths = [p for p in report.get("critical_paths", []) if p["from"] == edge == p["to"]]
    if not paths:
        return None
    steps = paths[0]["path"]
    routing = sum(s["delay"] for s in steps if s["type"] == "routing")
    return {
        "from": steps[0]["from"]["cell"],
        "to": steps[-1]["to"]["cell"],
        "delay_ns": round(sum(s["delay"] for s in steps), 3),
        "routing_ns": round(routing, 3),
        "logic_levels": sum(1 for s in steps if s["type"] == "logic"),
        "nets": [s["net"] for s in steps if s["type"] == "routing"],
    }


#: LUT mappers: ``abc9`` is ``synth_ecp5``'s own (Yosys 0.70); ``abc`` stops ``synth_ecp5``
#: before its ``map_luts`` step, maps with classic ``abc -lut 4:7`` (LUT4s, wider functions
#: through PFUMX/L6MUX21) and resumes at ``map_cells``. Under WebAssembly ABC9 ran over 35
#: minutes on the TL packer (88 k AIG nodes) where classic ABC takes 12 seconds.
MAPPERS = ("abc9", "abc")

_ABC_MAP_LUTS = """\
check -latchonly -assert
techmap -map +/lattice/latches_map.v
abc -lut 4:7
clean
synth_ecp5 -run map_cells:"""


def mapper_overrides(mapper):
    """Amaranth Trellis overrides that select ``mapper`` (one of :data:`MAPPERS`)."""
    if mapper not in MAPPERS:
        raise ValueError(f"mapper must be one of {MAPPERS}, not {mapper!r}")
    if mapper == "abc9":
        return {}
    return {"synth_opts": "-run :map_luts", "script_after_synth": _ABC_MAP_LUTS}


def build(platform, top, build_dir, freq_mhz, mapper="abc9", seeds=SEEDS):
    """Build ``top`` on ``platform`` into ``build_dir`` for ``freq_mhz`` with LUT mapper
    ``mapper``, placed and routed once per seed of ``seeds`` (the bitstream is the first's,
    the others run two at a time); return the figures of :func:`read_report` of the worst seed
    (:func:`worst`), each seed's Fmax in ``fmax_by_seed`` and the build time in ``seconds``."""
    started = time.monotonic()
    build_dir = Path(build_dir)
    with memory_init_by_rows():
        platform.build(top, name="top", build_dir=build_dir, do_program=False,
                       nextpnr_opts=nextpnr_opts(freq_mhz, seed=seeds[0]),
                       **mapper_overrides(mapper))
    device = f"{platform.device}-{platform.speed}{platform.package}"
    tool, args = nextpnr_plan(build_dir)
    runs = {}
    for k in range(1, len(seeds), 2):               # two at a time: the machine's cores
        for seed in seeds[k:k + 2]:
            runs[seed] = subprocess.Popen([tool, *reseeded(args, seed)], cwd=build_dir,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for seed in seeds[k:k + 2]:
            if runs[seed].wait():
                raise RuntimeError(f"nextpnr with seed {seed} failed in {build_dir}")
    reports = [read_report(build_dir / (seeded(NEXTPNR_REPORT, seed) if k else NEXTPNR_REPORT),
                           target_mhz=freq_mhz, device=device, seed=seed)
               for k, seed in enumerate(seeds)]
    return {**worst(reports), "fmax_by_seed": {r["seed"]: r["fmax_mhz"] for r in reports},
            "seconds": round(time.monotonic() - started, 1)}


def nextpnr_plan(build_dir):
    """The nextpnr executable and its arguments in the build plan (``build_top.json``) of
    Amaranth build ``build_dir``, the executable as the environment names it."""
    nextpnr = nextpnr_command((Path(build_dir) / "build_top.json").read_text())
    return os.environ.get(nextpnr[0].upper().replace("-", "_"), nextpnr[0]), nextpnr[1:]


def nextpnr_command(plan):
    """The nextpnr command (its name, then its arguments) of an Amaranth build plan's
    ``build_top.json`` text ``plan``."""
    return next(c for c in json.loads(plan)["commands"] if c[0].startswith("nextpnr"))


def seeded(name, seed, tag="seed"):
    """The name of a file of another seed's run: ``top.tim`` → ``top-seed2.tim`` (``tag``
    before the seed)."""
    stem, dot, suffix = name.rpartition(".")
    return f"{stem}-{tag}{seed}{dot}{suffix}"


def reseeded(args, seed, tag="seed"):
    """nextpnr's arguments ``args`` (of the build plan) for another placement ``seed``: its own
    report and log (named with ``tag`` and the seed, :func:`seeded`), no bitstream
    configuration."""
    out, items = [], iter(args)
    for arg in items:
        if arg in ("--seed", "--report", "--log", "--textcfg"):
            value = next(items)
            if arg == "--seed":
                out += [arg, str(seed)]
            elif arg != "--textcfg":
                out += [arg, seeded(value, seed, tag)]
        else:
            out.append(arg)
    return out


def missed(figures):
    """The clocks of ``figures`` (of :func:`read_report`) below their target, slowest first."""
    return sorted((c for c, f in figures["fmax_mhz"].items()
                   if f < figures["constraint_mhz"][c]),
                  key=lambda c: figures["fmax_mhz"][c] / figures["constraint_mhz"][c])


def worst(reports):
    """The report of :func:`read_report` whose slowest clock is furthest below its target
    (lowest achieved over constraint); area is the same for every seed."""
    def margin(r):
        return min((f / r["constraint_mhz"][c] for c, f in r["fmax_mhz"].items()),
                   default=float("inf"))
    return min(reports, key=margin)


def read_report(path, *, target_mhz, device, seed=SEED):
    """Reduce nextpnr's ``--report`` JSON at ``path`` to our figures (a dict)."""
    report = json.loads(Path(path).read_text())
    utilization = report["utilization"]
    fmax = report.get("fmax", {})
    return {
        "fmax_mhz": {_clock_name(c): round(v["achieved"], 2) for c, v in fmax.items()},
        "constraint_mhz": {_clock_name(c): round(v["constraint"], 2) for c, v in fmax.items()},
        "target_mhz": target_mhz,
        "luts": _used(utilization, "TRELLIS_COMB"),
        "ffs": _used(utilization, "TRELLIS_FF"),
        "ebr": _used(utilization, "DP16KD"),
        "device": device,
        "seed": seed,
        "critical_path": {_clock_name(c): _critical_path(report, c) for c in fmax},
    }


def _version(tool, flag):
    exe = Path(sys.executable).parent / f"yowasp-{tool}"
    try:
        done = subprocess.run([str(exe), flag], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    # Some tools print their version on stderr; yowasp adds a "Preparing to run" line there.
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if line.strip() and not line.startswith("Preparing to run")]
    return lines[0].strip() if lines else None


def tool_versions():
    """First line of ``--version`` of each yowasp tool of this environment, and Amaranth's."""
    import amaranth
    return {
        "amaranth": amaranth.__version__,
        "yosys": _version("yosys", "-V"),
        "nextpnr-ecp5": _version("nextpnr-ecp5", "--version"),
        "ecppack": _version("ecppack", "--version"),
    }


def format_table(rows, columns):
    """Plain-text table of ``rows`` (dicts) under ``columns`` (keys), for stdout."""
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)
