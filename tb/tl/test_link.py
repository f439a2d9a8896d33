# SPDX-License-Identifier: BSD-2-Clause
"""Two TL cores back to back (``rtl/scaleup_ip/tl/core.py``): traffic both ways, the credit loop closed
in RTL on both sides."""

import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from scaleup_ip.model.tl.flit import credit_table
from scaleup_ip.tl import TlConfig
from sim import harness, toolchain
from sim.streams import random_pauses, reset
from sim.tl.env import PERIOD_NS, UpliItemSource, config_credits, credit_table_of
from sim.tl.link import TlLink
from sim.tl.rx_env import UpliItemSink
from sim.tl.system import check, hardware_exchange
from sim.tl.traffic import by_kind, random_items, upli_transfers


@cocotb.test(timeout_time=4, timeout_unit="ms")
async def link_random_both_ways(dut):
    """Random traffic of every kind both ways with idle and backpressure: every item arrives
    once, intact, in order per channel; no error; both ends exchanged Initial Credit Release
    Complete."""
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    sources = {end: UpliItemSource(dut, f"{end}_") for end in "ab"}
    sinks = {end: UpliItemSink(dut, f"{end}_rx_", rng) for end in "ab"}
    await reset(dut)
    sent = {}
    for end in "ab":
        sources[end].set_idle(lambda: random_pauses(rng, 0.3))
        sinks[end].set_backpressure(0.3)
        sent[end] = random_items(rng, 250)
        for item in sent[end]:
            sources[end].send(item)
    for end in "ab":
        await sources[end].settle(0)
    want = sum(upli_transfers(sent[end]) for end in "ab")
    for _ in range(5000):
        await RisingEdge(dut.clk)
        if sum(sinks[end].count() for end in "ab") >= want:
            break
    await ClockCycles(dut.clk, 50)
    config = TlConfig.from_env()
    for end, far in (("a", "b"), ("b", "a")):
        assert sinks[far].delivered() == by_kind(sent[end]), f"{end} -> {far}"
        assert getattr(dut, f"{end}_peer_init").value and not getattr(dut, f"{end}_error").value
        # credit conservation: with nothing in flight, every credit is home again
        held = credit_table_of(getattr(dut, f"{end}_credits").value)
        assert held == credit_table(config_credits(config)), f"{end} holds {held}"


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def traffic_in_hardware(dut):
    """The traffic made and checked in hardware (``make sim``'s ``tl``; the cacheable requests
    too, sent uncompressed here): every transfer of 3000 items each way arrives once and
    intact, every credit comes home."""
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    await reset(dut)
    report = await hardware_exchange(dut, TlConfig.from_env(), random.Random(cocotb.RANDOM_SEED),
                                     3000, period_ns=PERIOD_NS, cacheable=True)
    dut._log.info("report %s", report)
    check(report)
    for d in report["directions"].values():
        assert d["transfers"]["req"] == 1500 and d["transfers"]["wr_rsp"] == 600


CONFIGS = [TlConfig(rx_req=4, rx_rsp=8, rx_req_data=8, rx_rsp_data=8)]


#: In ``make soak`` only (the regression's time budget: 16 MB of C++ for a second of simulation):
#: two TL cores exchange the same Python and hardware traffic in tb/ualink/test_link.py, over
#: the DL, and these small buffers run looped back in tb/tl/test_endpoint.py.
@pytest.mark.soak_only
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.slug())
def test_tl_link(config):
    link = TlLink(config)
    # Bound by the Python traffic, not the model: the usual level builds in half the time.
    link.OPT_FAST = toolchain.OPT_FAST
    harness.run(link, config, toplevel="tl_link", test_module=__name__)
