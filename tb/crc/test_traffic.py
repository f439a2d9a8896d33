# SPDX-License-Identifier: BSD-2-Clause
"""The CRC engine's hardware traffic (sim/crc/traffic.py) against its golden model
(rtl/scaleup_ip/model/crc/traffic.py): the model from the sequence's text (lengths, order, FCS,
flipped bits, digest), then the generator, engine and digest in Verilator equal to the model's
counts
and digest for random seeds, corrupted frames rejected."""

import random
import zlib

import cocotb
import pytest
from cocotb.clock import Clock

from scaleup_ip.crc import CrcConfig
from scaleup_ip.model.crc import traffic as model
from sim import harness
from sim.crc.system import PERIOD_NS, counts, expected, run
from sim.crc.traffic import CrcTraffic

from tb.crc import traffic_second_model as second

#: The build of ``make sim``'s ``crc`` scenario, and a 64-bit engine (frames of many beats,
#: the FCS spilling into a beat of its own more often).
CONFIGS = [CrcConfig(data_width=512, pipeline=2), CrcConfig(data_width=64, pipeline=1)]


@pytest.mark.parametrize("width", [64, 512])
def test_model_sequence(width):
    """Blocks of 640 bytes; each frame's body (60 to 1514 bytes) bare, then LAG frames later
    with its FCS, at most one bit flipped; the last Bs after the last item, in order."""
    sent = model.packets(12345, 400, width)
    bodies = [p for kind, p in sent if kind == "A"]
    checked = [p for kind, p in sent if kind == "B"]
    assert len(bodies) == len(checked) > 100
    assert all(len(p) == 640 for kind, p in sent if kind == "block")
    assert all(60 <= len(p) <= 1514 for p in bodies)
    flipped = 0
    for body, packet in zip(bodies, checked):
        good = body + zlib.crc32(body).to_bytes(4, "little")
        diff = [bin(a ^ b).count("1") for a, b in zip(packet, good)]
        assert len(packet) == len(good) and sum(diff) <= 1
        flipped += sum(diff)
    assert 0 < flipped < len(checked) // 10
    kinds = "".join(k[0] for k, _ in sent if k != "block")
    assert kinds.startswith("A" * (model.LAG + 1) + "B") and kinds.endswith("B" * model.LAG)
    assert model.packets(12345, 400, width) == sent != model.packets(12346, 400, width)


@pytest.mark.parametrize("width", [64, 128, 512])
def test_second_model(width):
    """The golden model and a second one written from the same text alone agree on the
    packets and the digest, for several seeds and lengths."""
    for seed in (1, 2, 0xDEADBEEF12345678, 98765):
        for items in (1, 7, 300):
            sent = model.packets(seed, items, width)
            assert sent == second.packets(seed, items, width)
            assert model.digest(model.results(sent)) == second.digest(sent)


def test_model_digest():
    """The digest changes with any one bit of any one result, and with their order."""
    rng = random.Random(7)
    results = [(rng.getrandbits(32), rng.random() < 0.5, False) for _ in range(100)]
    d = model.digest(results)
    for _ in range(50):
        k, bit = rng.randrange(100), rng.randrange(32)
        changed = list(results)
        crc, ok, bad = changed[k]
        changed[k] = (crc ^ 1 << bit, ok, bad)
        assert model.digest(changed) != d
    assert model.digest(results[1:] + results[:1]) != d
    good = b"123456789"
    assert zlib.crc32(good) == 0xCBF43926                       # the CRC-32 check value
    assert model.results([("B", good + zlib.crc32(good).to_bytes(4, "little"))])[0][1]


@cocotb.test(timeout_time=1000, timeout_unit="ms")
async def matches_model(dut):
    """Three seeds: the counts and digest of the run equal the model's; the engine rejected
    exactly the frames whose bit was flipped."""
    rng = random.Random(cocotb.RANDOM_SEED)
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    for items in (1, 300, 2000):
        seed = rng.getrandbits(64)
        sent, results, want = expected(seed, items, CrcConfig.from_env().data_width)
        await run(dut, seed, items, watch=False)
        got = counts(dut)
        dut._log.info("seed %#x, %d items: %s", seed, items, got)
        assert int(dut.done.value)
        assert {k: got[k] for k in want} == want, (got, want)
        bad = sum(not ok for (kind, _), (_, ok, _) in zip(sent, results) if kind == "B")
        assert items < 2000 or bad > 0


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.slug())
def test_crc_traffic(config):
    harness.run(CrcTraffic(config), config, toplevel="crc_traffic",
                test_module=__name__)
