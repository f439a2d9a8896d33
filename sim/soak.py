# SPDX-License-Identifier: BSD-2-Clause
"""``make soak``: the regression over many seeds, then the long runs.

1. Every randomized test (the regression but the formal proofs, whose outcome no seed changes)
   once per seed: ``SOAK_SEEDS`` seeds (20), drawn fresh and printed, or counted up from
   ``SOAK_SEED``. A failing test is reported with the seed that reproduces it
   (``make test SEED=<seed>``); such a seed then becomes a fixed case (``soak_only``).
2. The long runs: the long forms of the tests marked ``soak`` (``SOAK=1``: the thousand-round
   message-passing litmus through two bridges), and as ``make sim`` scenarios the ETH-X long
   run over ``SOAK_ETHX_FRAMES`` (10^6) bridge frames and the full UALink link over
   ``SOAK_UALINK_ITEMS`` (10^6) items each way at BER 1e-6, every item checked.

Extra arguments go to pytest (``make soak SHARD=k/n`` runs the k-th part of each seed's
regression; the first part also does the long runs). Writes ``build/soak/report.json``;
exits non-zero if anything failed.
"""

import json
import os
import random
import subprocess
import sys
import time
from xml.etree import ElementTree

from sim import toolchain

SEEDS = int(os.environ.get("SOAK_SEEDS", "20"))
ETHX_FRAMES = os.environ.get("SOAK_ETHX_FRAMES", "1000000")
UALINK_ITEMS = os.environ.get("SOAK_UALINK_ITEMS", "1000000")


def _seeds():
    first = os.environ.get("SOAK_SEED")
    if first:
        return [int(first) + k for k in range(SEEDS)]
    rng = random.SystemRandom()
    return [rng.randrange(1 << 31) for _ in range(SEEDS)]


def _failed(results):
    """Node ids of the failed tests in a JUnit XML file."""
    if not results.exists():
        return ["(no results: pytest did not finish)"]
    tree = ElementTree.parse(results)
    return [f"{case.get('classname')}::{case.get('name')}" for case in tree.iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None]


def regression(seed, folder, extra):
    """The regression at ``seed``; returns the failed tests."""
    results = folder / f"seed-{seed}.xml"
    results.unlink(missing_ok=True)
    with open(folder / f"seed-{seed}.log", "w") as log:
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", os.environ.get("JOBS", "auto"),
                        "--dist", "worksteal", "-k", "not proof", f"--junitxml={results}",
                        *extra, "tb"],
                       env={**os.environ, "SEED": str(seed)}, stdout=log,
                       stderr=subprocess.STDOUT, cwd=toolchain.REPO)
    return _failed(results)


def long_runs(folder):
    """The long forms of the tests, then the long ``make sim`` scenarios; returns (the
    scenarios' report, whether everything passed)."""
    results = folder / "long-tests.xml"
    with open(folder / "long-tests.log", "w") as log:
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "soak",
                        f"--junitxml={results}", "tb"], env={**os.environ, "SOAK": "1"},
                       stdout=log, stderr=subprocess.STDOUT, cwd=toolchain.REPO)
    failed = _failed(results)
    print(f"long forms of the tests: {len(failed)} failed"
          + "".join(f"\n  {test}" for test in failed), flush=True)
    env = {**os.environ, "SIM_SCENARIOS": "ethx_long,ualink", "SIM_ETHX_LONG_FRAMES": ETHX_FRAMES,
           "SIM_UALINK_ITEMS": UALINK_ITEMS, "SIM_BER": "1e-6"}
    done = subprocess.run([sys.executable, "-m", "sim.system"], env=env, cwd=toolchain.REPO)
    report = toolchain.BUILD / "sim" / "report.json"
    figures = json.loads(report.read_text()) if report.exists() else None
    if figures:
        (folder / "long.json").write_text(json.dumps(figures, indent=2))
    return figures, done.returncode == 0 and not failed


def main(extra):
    folder = toolchain.BUILD / "soak"
    folder.mkdir(parents=True, exist_ok=True)
    report = {"seeds": {}, "failures": {}}
    started = time.monotonic()
    for n, seed in enumerate(_seeds(), 1):
        t = time.monotonic()
        failed = regression(seed, folder, extra)
        report["seeds"][seed] = failed
        for test in failed:
            report["failures"].setdefault(test, []).append(seed)
        print(f"seed {n}/{SEEDS} SEED={seed}: {len(failed)} failed in {time.monotonic() - t:.0f} s"
              + "".join(f"\n  {test}" for test in failed), flush=True)
    if "--group" in extra and extra[extra.index("--group") + 1] != "1":
        long, passed = None, True       # the first part of a split soak does the long runs
    else:
        long, passed = long_runs(folder)
    report["long"] = {"passed": passed, "figures": long}
    report["wall_seconds"] = round(time.monotonic() - started)
    (folder / "report.json").write_text(json.dumps(report, indent=2))
    print(f"soak: {len(report['failures'])} tests failed for some seed, long runs "
          f"{'passed' if passed else 'FAILED'} ({report['wall_seconds']} s); "
          f"report: {(folder / 'report.json').relative_to(toolchain.REPO)}")
    return 1 if report["failures"] or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
