"""The TL behind UPLI channels (``rtl/tl/endpoint.py``), its flits looped back to itself:
credit-obeying UPLI senders in, credit-releasing UPLI receivers out."""

import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from rtl.tl.endpoint import TlEndpoint
from rtl.tl.layout import (
    TlConfig,
    orig_data_layout,
    rd_rsp_layout,
    request_layout,
    wr_rsp_layout,
)
from sim import harness
from sim.streams import reset
from sim.tl_env import PERIOD_NS
from sim.tl_rx_env import rebuild_items
from sim.tl_traffic import by_kind, random_items, upli_transfers
from sim.upli_bfm import UpliItemSender, UpliReceiver

_OUT = {"req": request_layout, "orig": orig_data_layout, "rd_rsp": rd_rsp_layout,
        "wr_rsp": wr_rsp_layout}


async def _loop(dut):
    """The link: every flit out comes straight back in."""
    dut.flit_out__ready.value = 1
    while True:
        await RisingEdge(dut.clk)
        dut.flit_in__valid.value = dut.flit_out__valid.value
        dut.flit_in__payload.value = dut.flit_out__payload.value


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def endpoint_loopback(dut):
    """Random items in on UPLI come back out on UPLI intact; every UPLI beat in both
    directions went with a credit of the kind it names; no overrun, no error."""
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    rng = random.Random(cocotb.RANDOM_SEED)
    dut.flit_in__valid.value = 0
    sender = UpliItemSender(dut)
    receivers = {name: UpliReceiver(dut, f"rx_{name}", layout, rng, pool=rng.randint(4, 10),
                                    vcs=[rng.randrange(3) for _ in range(4)])
                 for name, layout in _OUT.items()}
    cocotb.start_soon(_loop(dut))
    await reset(dut)
    items = random_items(rng, 200)
    for item in items:
        sender.send(item)
    want = upli_transfers(items)
    for _ in range(20000):
        await RisingEdge(dut.clk)
        if sum(len(r.got) for r in receivers.values()) >= want:
            break
    await ClockCycles(dut.clk, 50)
    assert sender.idle()
    got = rebuild_items({name: r.got for name, r in receivers.items()}, pool=None)
    for kind, delivered, expected in zip(("requests", "read responses", "write responses"),
                                         got, by_kind(items)):
        assert delivered == expected, kind
    assert not dut.error.value and int(dut.overrun.value) == 0


@pytest.mark.parametrize("config", [TlConfig(rx_req=4, rx_rsp=8, rx_req_data=8,
                                             rx_rsp_data=8)], ids=lambda c: c.slug())
def test_tl_endpoint(config):
    harness.run(TlEndpoint(config), config, toplevel="tl_endpoint",
                test_module="tb.test_tl_endpoint")
