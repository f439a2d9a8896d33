# SPDX-License-Identifier: BSD-2-Clause
"""Shared pytest settings: every simulation prints its seed (see sim.harness); the slowest tests
start first (by ``tb/durations.json``), so that the workers finish together; ``rng``, the seeded
random source of the pure-Python tests."""

import json
import os
import random
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")


def pytest_collection_modifyitems(config, items):
    """Longest first (a test missing from the file counts as 10 s): a worker that takes the
    last test has little left to do."""
    try:
        durations = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return
    items.sort(key=lambda item: -durations.get(item.nodeid, 10.0))


@pytest.fixture
def rng():
    """A ``random.Random`` seeded from ``SEED``, else at random; the seed is printed."""
    value = os.environ.get("SEED")
    seed = int(value) if value else random.SystemRandom().randrange(1 << 31)
    print(f"seed {seed} (SEED={seed})")
    return random.Random(seed)
