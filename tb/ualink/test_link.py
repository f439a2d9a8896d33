# SPDX-License-Identifier: BSD-2-Clause
"""Two full UALink ends, TL and DL, over the error-injecting links (``sim/ualink/link.py``),
random UPLI traffic both ways (every command class, 4-256 bytes, every response status, idle
cycles and backpressure), from Python against the TL model and made and checked in hardware
(``rtl/tl/traffic``): every request, response and data beat
arrives once, intact and in the order the TL keeps, whatever the link does.

While the traffic flows, the error links go through bit errors at BER 1e-6, 1e-5 and 1e-4, error
bursts (which take Acks and Replay Requests with them), lone dropped flits, and a retrain of both
ends; the sequence numbers wrap (more than 511 payload flits each way) and TxReplay fills (the round
trip is longer than it holds). Then errors stop, every item must have arrived, every TL credit be
home, and every DL flit be acknowledged. The seeds of the traffic and the error links come from the
test's seed.
"""

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from sim import harness
from sim.dl.link_env import ber_threshold, up
from sim.tl.system import check
from sim.ualink.link import UALINK_LINK, UalinkLink
from sim.ualink.system import run, run_traffic

#: The error phases, (name, controls, clocks), in order; a retrain follows them.
PHASES = (("BER 1e-6", {"ber_threshold": ber_threshold(1e-6)}, 6_000),
          ("BER 1e-5", {"ber_threshold": ber_threshold(1e-5)}, 6_000),
          ("BER 1e-4", {"ber_threshold": ber_threshold(1e-4)}, 6_000),
          # Bursts of 16000 bits: 3 or 4 DL flits in a row, Acks and Replay Requests among them.
          ("bursts", {"ber_threshold": 0, "burst_threshold": int(2**32 * 5e-4),
                      "burst_length": 16_000}, 6_000),
          ("drops", {"burst_threshold": 0, "drop_threshold": int(2**32 * 2e-3)}, 6_000))
#: Items each end sends: enough to keep traffic flowing through every phase.
ITEMS = 6000
#: Clocks each way through the error links: a replay round trip of about 54 DL flits, more than
#: TxReplay holds (32), so that it fills; and a replay limit above that round trip.
DELAY, REPLAY_LIMIT = 200, 72


def _phases(dut):
    """The error phases of :data:`PHASES`, then a retrain of both ends."""
    async def phases():
        for name, controls, clocks in PHASES:
            for control, value in controls.items():
                getattr(dut, control).value = value
            await ClockCycles(dut.clk, clocks)
            dut._log.info("after %s", name)
        dut.drop_threshold.value = 0
        dut.retrain.value = 1                              # both ends retrain mid-traffic
        await ClockCycles(dut.clk, 200)
        dut.retrain.value = 0
        await up(dut)
    return phases()


def _check_errors_met(report):
    """The phases happened in traffic, and did what they are for."""
    check(report)
    dl = report["dl"]
    assert report["cycles"] > sum(clocks for *_, clocks in PHASES), "traffic ended too soon"
    assert dl["a_tx_payload"] > 511 and dl["b_tx_payload"] > 511, "no sequence wrap"
    assert dl["a_tx_peak"] == UALINK_LINK.replay_depth, "TxReplay never full"
    assert min(dl[f"{end}_tx_replayed"] for end in "ab") > 0
    assert min(dl[f"{end}_rx_bad_crc"] for end in "ab") > 0


@cocotb.test(timeout_time=1000, timeout_unit="ms")
async def link_errors(dut):
    """The phases with random UPLI traffic from Python, checked against the TL model."""
    report = await run(dut, ITEMS, delay=DELAY, replay_limit=REPLAY_LIMIT, during=_phases(dut))
    dut._log.info("report %s", report)
    _check_errors_met(report)


@cocotb.test(timeout_time=1000, timeout_unit="ms")
async def link_errors_in_hardware(dut):
    """The phases with the traffic made and checked in hardware (every command class, every
    response status, idle clocks and backpressure: rtl/scaleup_ip/tl/traffic/README.md)."""
    report = await run_traffic(dut, ITEMS, ber=0, delay=DELAY, replay_limit=REPLAY_LIMIT,
                               during=_phases(dut))
    dut._log.info("report %s", report)
    _check_errors_met(report)
    assert report["lost"] == 0


@cocotb.test(timeout_time=1000, timeout_unit="ms")
async def traffic_in_hardware(dut):
    """The same link with its traffic made and checked in hardware (the ``make sim`` scenario):
    at BER 1e-5, every transfer arrives once and intact, and errors were met on the way."""
    report = await run_traffic(dut, 4000, ber=1e-5)
    dut._log.info("report %s", report)
    check(report)
    assert report["lost"] == 0
    assert sum(report["dl"][f"{end}_rx_bad_crc"] for end in "ab") > 0
    for d in report["directions"].values():
        assert d["transfers"]["req"] == 2000 and d["transfers"]["wr_rsp"] == 800


#: The case ``make test`` runs: the error phases with the traffic made and checked in hardware.
#: ``link_errors`` (the same phases with the traffic from Python against the TL model) and
#: ``traffic_in_hardware`` (the ``make sim`` scenario, whose BER the phases include) are
#: ``make soak``'s only.
HARDWARE_TESTS = "link_errors_in_hardware"


def test_ualink_link():
    # One run for these: two pytest workers would each wait for the same long build.
    harness.run(UalinkLink(UALINK_LINK), UALINK_LINK, toplevel="ualink_link",
                test_module=__name__, testcase=HARDWARE_TESTS)


@pytest.mark.soak_only
def test_ualink_link_model():
    harness.run(UalinkLink(UALINK_LINK), UALINK_LINK, toplevel="ualink_link",
                test_module=__name__, testcase="link_errors,traffic_in_hardware",
                run_name="link_errors")
