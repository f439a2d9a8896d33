# SPDX-License-Identifier: BSD-2-Clause
"""Shared pytest settings: every simulation prints its seed (see sim.harness); the slowest tests
start first (by ``tb/durations.json``), so that the workers finish together."""

import json
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")


def pytest_collection_modifyitems(config, items):
    """Longest first (a test missing from the file counts as 10 s): a worker that takes the
    last test has little left to do."""
    try:
        durations = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return
    items.sort(key=lambda item: -durations.get(item.nodeid, 10.0))
