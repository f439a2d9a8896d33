# SPDX-License-Identifier: BSD-2-Clause
"""Two UALink DL ends (``rtl/scaleup_ip/dl/dl.py``) over the error-injecting links
(``rtl/scaleup_ip/dl/err_link.py``), with numbered TL flits each way checked in hardware
(``sim/dl/link.py``): every TL flit arrives once, in order, whatever the errors.

One run goes through bit errors at BER 1e-6, 1e-5 and 1e-4, error bursts (which take Acks and
Replay Requests with them), lone dropped flits, a retrain of both ends in the middle of
traffic, and more than 511 payload flits (the sequence numbers wrap), with TxReplay full at
times; then traffic stops and everything must be delivered and acknowledged. The seeds of the
error links come from the test's seed.
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from sim import harness
from sim.dl.link import DL_LINK, DlLink
from sim.dl.link_env import ber_threshold, drain, measure, start, up

#: Clocks each way through the error link: with the DL's own latency, a replay round trip of
#: 24 DL flits (as the benchmark measures it), well below the replay limit of 80.
DELAY = 60


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def link_errors(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    await start(dut, delay=DELAY, seed=rng.getrandbits(64) | 1, ack_timeout=2000,
                replay_limit=80)
    dut.link_enable.value = 1
    phases = [("BER 1e-6", {"ber_threshold": ber_threshold(1e-6)}, 20_000),
              ("BER 1e-5", {"ber_threshold": ber_threshold(1e-5)}, 20_000),
              ("BER 1e-4", {"ber_threshold": ber_threshold(1e-4)}, 10_000),
              # About 4 bursts each way of 16000 bits: 3 or 4 DL flits in a row, Acks and
              # Replay Requests among them.
              ("bursts", {"ber_threshold": 0, "burst_threshold": int(2**32 * 2e-4),
                          "burst_length": 16_000}, 20_000),
              ("drops", {"burst_threshold": 0, "drop_threshold": int(2**32 * 2e-3)}, 20_000)]
    for name, controls, clocks in phases:
        for control, value in controls.items():
            getattr(dut, control).value = value
        delta, goodput = await measure(dut, clocks)
        dut._log.info("%s: goodput a %.3f b %.3f; %s", name, goodput["a"], goodput["b"],
                      {k: v for k, v in delta.items() if v and ("tx" in k or "rx" in k)})
        assert delta["a_bad"] == 0 and delta["b_bad"] == 0
    dut.drop_threshold.value = 0
    dut.retrain.value = 1                                  # both ends retrain mid-traffic
    await ClockCycles(dut.clk, 200)
    dut.retrain.value = 0
    await up(dut)
    await measure(dut, 10_000)
    final = await drain(dut)
    dut._log.info("final %s", final)
    assert final["a_tx_payload"] > 511 and final["b_tx_payload"] > 511
    assert final["a_tx_peak"] == DL_LINK.replay_depth, "TxReplay never full"
    assert final["a_tx_replayed"] > 0 and final["b_rx_bad_crc"] > 0


#: In ``make soak`` only (the regression's time budget): the same phases run with the TL on top
#: in tb/ualink/test_link.py, whose replay round trip is longer than TxReplay holds.
@pytest.mark.soak_only
def test_dl_link():
    harness.run(DlLink(DL_LINK), DL_LINK, toplevel="dl_link", test_module=__name__,
                testcase="link_errors")
