# SPDX-License-Identifier: BSD-2-Clause
"""A running scenario's progress, from inside the simulator to ``make sim``'s display.

The cocotb side starts :func:`watch` with what counts as done; every ``every`` clocks it writes
``{"done", "total", "cycles", "errors", "wall"}`` to the file ``SIM_PROGRESS`` names (nothing,
when it names none). :func:`read` is the other side: ``make sim`` polls the file while the
simulator runs. The file is replaced whole each time, so a reader never sees half of it.
"""

import json
import os
import time

import cocotb
from cocotb.triggers import ClockCycles

from sim import streams

__all__ = ["Counter", "read", "watch"]


class Counter:
    """Something done, counted by the testbench where it is done (``counter.done += 1``)."""

    def __init__(self):
        self.done = 0

    def __call__(self):
        return self.done


def _write(path, figures):
    part = f"{path}.part"
    with open(part, "w") as f:
        json.dump(figures, f)
    os.replace(part, path)


def watch(dut, total, done, errors=lambda: 0, every=2000, period_ns=None):
    """Start reporting ``done()`` of ``total`` (and ``errors()``) every ``every`` clocks of
    ``dut.clk`` (with its ``period_ns``, without a wake-up per clock); return the task (it runs
    until the test ends)."""
    path = os.environ.get("SIM_PROGRESS")
    started = time.monotonic()

    async def report():
        cycles = 0
        while True:
            if period_ns is None:
                await ClockCycles(dut.clk, every)
            else:
                await streams.clocks(dut.clk, every, period_ns)
            cycles += every
            _write(path, {"done": done(), "total": total, "cycles": cycles, "errors": errors(),
                          "wall": time.monotonic() - started})

    return cocotb.start_soon(report()) if path else None


def read(path):
    """The last figures written to ``path``, or ``None``."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
