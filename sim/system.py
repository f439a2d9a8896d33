"""``make sim``: the system simulation and its report.

For now the system is the 512-bit CRC-32 engine, fed several thousand random Ethernet frames
(checked by their FCS) and 640-byte UALink DL-flit-sized blocks (CRC generated), every result
compared with :func:`zlib.crc32`. Writes ``build/sim/report.json``; exits non-zero on any
mismatch. ``SEED=n`` reproduces a run, ``WAVES=1`` dumps waves, ``SIM_FRAMES``/``SIM_BLOCKS``
change the traffic.
"""

import json
import os
import sys
import time

from rtl.crc import Crc32, CrcConfig
from sim import harness, toolchain

#: The configuration simulated: the production 512-bit engine (also one of the test builds).
CONFIG = CrcConfig(data_width=512, pipeline=2)


def main():
    report = toolchain.BUILD / "sim" / "report.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)
    env = {
        "SIM_FRAMES": os.environ.get("SIM_FRAMES", "3000"),
        "SIM_BLOCKS": os.environ.get("SIM_BLOCKS", "2000"),
        "SIM_REPORT": str(report),
    }
    started = time.monotonic()
    failure = None
    try:
        harness.run(Crc32(CONFIG), CONFIG, toplevel="crc32", test_module="sim.crc_system",
                    run_name="system", extra_env=env)
    except AssertionError as exc:
        failure = str(exc)
    wall = time.monotonic() - started
    if not report.exists():
        print(f"make sim: no report written ({failure})")
        return 1
    figures = json.loads(report.read_text())
    figures["wall_seconds"] = round(wall, 1)
    report.write_text(json.dumps(figures, indent=2))
    rows = [
        ("engine", f"CRC-32, {CONFIG.data_width}-bit beats, pipeline {CONFIG.pipeline}"),
        ("seed", figures["seed"]),
        ("Ethernet frames (with FCS)", f"{figures['frames']} ({figures['corrupted']} corrupted, "
                                       f"{figures['rejected']} rejected)"),
        ("640-byte blocks", figures["blocks"]),
        ("bytes", figures["bytes"]),
        ("cycles", figures["cycles"]),
        ("bytes per cycle", f"{figures['bytes_per_cycle']} of {figures['peak_bytes_per_cycle']}"),
        ("mismatches", figures["mismatches"]),
        ("simulator speed", f"{figures['sim_cycles_per_second']} cycles/s"),
        ("wall time (with build)", f"{figures['wall_seconds']} s"),
    ]
    print("\nmake sim report (build/sim/report.json)")
    for name, value in rows:
        print(f"  {name:<28} {value}")
    if failure:
        print(f"FAILED: {failure}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
