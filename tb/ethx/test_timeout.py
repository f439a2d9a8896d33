# SPDX-License-Identifier: BSD-2-Clause
"""Completion timeouts at the system level (README §5): two ETH-X bridges over lossless links
and channels (sim/ethx/lossy_pair.py) whose far side goes silent, or whose wire breaks for
good. Every read and write of the near GPU completes, SLVERR, within the timeout's bounds, and
its AXI port sees every burst whole and every request answered."""

import cocotb
import pytest
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiResp

from scaleup_ip.ethx import ReadCount, WriteCount
from sim import harness
from sim.ethx.axi_check import AxiAnswerCheck
from sim.ethx.lossy_env import LossyEnv
from sim.ethx.lossy_pair import EthxLossyPair
from sim.ethx.pair import NODES
from tb.ethx.test_lossy import CONFIGS, synchronized

TIMEOUT_US = 20000


async def _gone(dut, tb):
    """Reads and writes from the first node's GPU while channels lose every frame for good
    (the caller cuts them): each completes by ``completion_timeout`` (SLVERR; with proxy a
    write is OKAY at once and the next release is SLVERR), and the port stays clean."""
    cfg = tb.config
    a, b = NODES
    dest = tb.user_bits(NODES[b])
    gpu = tb.gpu[a]
    check = AxiAnswerCheck(dut, f"{a}_s_axi", dut.clk)
    start = 0
    reads = [cocotb.start_soon(gpu.read(0x1000 + 0x100 * k, 64, arid=k % 2, user=dest))
             for k in range(4)]
    writes = [cocotb.start_soon(gpu.write(0x2000 + 0x100 * k, bytes(64), awid=k % 2,
                                          user=dest)) for k in range(4)]
    while not all(t.done() for t in reads + writes):
        await ClockCycles(dut.clk, 100)
        start += 100
    limit = cfg.completion_timeout
    assert start <= limit + limit // 8 + 2000, f"{start} clocks for {limit}"
    assert all(t.result().resp == AxiResp.SLVERR for t in reads)
    for t in writes:
        assert t.result().resp == (AxiResp.OKAY if cfg.proxy else AxiResp.SLVERR)
    flag = await gpu.write(0x3000, b"flag", awid=3, user=tb.user_bits(NODES[b], order=1))
    assert flag.resp == AxiResp.SLVERR
    check.idle()
    read = tb.counts(ReadCount, f"{a}_counts_read")
    write = tb.counts(WriteCount, f"{a}_counts_write")
    assert read[ReadCount.TIMEOUTS] == 4 and write[WriteCount.TIMEOUTS] == 5, (read, write)
    return read, write


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def dead_peer(dut):
    """The far node goes silent (nothing of its comes back, its link too): the near node's
    requests time out."""
    tb = LossyEnv(dut)
    await tb.reset()
    await synchronized(dut, tb)
    tb.control("b", cut=1)
    await _gone(dut, tb)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def link_gone(dut):
    """The wire breaks both ways and never comes back (both links told it is down): the
    requests time out; nothing reaches either memory."""
    tb = LossyEnv(dut)
    await tb.reset()
    before = tb.memories()
    tb.cut(1)
    tb.set_up(0)
    await _gone(dut, tb)
    assert tb.memories() == before


#: The lossy tests' first configuration (its build is theirs), whose timeout is short enough
#: for these tests to need few clocks.
CONFIG = CONFIGS[0]


def test_timeout():
    harness.run(EthxLossyPair(CONFIG), CONFIG, toplevel="ethx_lossy_pair",
                test_module=__name__)
