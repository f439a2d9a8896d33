# SPDX-License-Identifier: BSD-2-Clause
"""System tests of two ETH-X bridges over lossless links and error-injecting channels
(sim/ethx/lossy_pair.py): AxiMasters on both GPUs, AxiRams as both memories, random traffic
both ways while the channels drop and corrupt frames, drop control frames, and the wire goes
down and up. No AXI transaction is lost, doubled or reordered (every read checked, both
memories equal to the model), the bridges see no bad frame, and at the end the links have
nothing kept or owed. Then completion timeouts: the far side goes silent, or the wire breaks for
good; every read and write of the near GPU completes SLVERR within the timeout's bounds and its
AXI port sees every burst whole and every request answered."""

import os

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from cocotbext.axi import AxiResp

from scaleup_ip.ethx import EthxConfig, ReadCount, WriteCount
from scaleup_ip.ethx.link import TxState
from scaleup_ip.model.ethx import channel as channel_model
from scaleup_ip.model.ethx import link as link_model
from sim import harness
from sim.ethx.axi_check import AxiAnswerCheck
from sim.ethx.env import clocks_until
from sim.ethx.litmus import message_passing
from sim.ethx.lossy_env import SETTLE, LossyEnv
from sim.ethx.lossy_pair import EthxLossyPair
from sim.ethx.pair import NODES

TIMEOUT_US = 40000


async def synchronized(dut, tb, clocks=20_000):
    """Until both transmitters have their INIT echoed (ADVANCE). Errors that start earlier can
    corrupt a frame of the INIT exchange; the receiver that sees it NACKs, and a transmitter
    still in INIT counts that NACK as ``ACK_NACK_SEQ_ERROR``, which :meth:`LossyEnv.check_links`
    refuses (SEED=853100781 did that in ``lossy_heavy``)."""
    for _ in range(clocks // 10):
        if all(tb.get(f"{e}_link", "tx_state") == TxState.ADVANCE.value for e in NODES):
            return
        await ClockCycles(dut.clk, 10)
    raise AssertionError("the links did not synchronize")


async def _force(dut, tb, errors):
    """For certain, on the channel from the first node: a frame dropped, then a beat with a
    bit error (each threshold at its top until its counter moves, then as ``errors`` say)."""
    end = next(iter(NODES))
    for counter, level in (("dropped", "drop_threshold"), ("error_beats", "ber_threshold")):
        before = tb.wire_counts(end)[counter]
        tb.control(end, **{level: channel_model.frame_threshold(1)})
        while tb.wire_counts(end)[counter] == before:
            await ClockCycles(dut.clk, 1)
        tb.lossy(end, **errors)


async def _run(dut, accesses, *, workers=3, forced=False, **errors):
    """Random traffic over channels with ``errors`` from the links' synchronization on; with
    ``forced``, one frame dropped and one bit error among them for certain (:func:`_force`)."""
    tb = LossyEnv(dut)
    await tb.reset()
    await synchronized(dut, tb)
    tb.lossy_both(**errors)
    force = cocotb.start_soon(_force(dut, tb, errors)) if forced else None
    await tb.traffic(accesses, workers, settle=SETTLE)
    if force:
        await force
    await tb.drain()
    tb.check_links()
    return tb


def _scaled(config, accesses):
    """Fewer accesses at a narrow wire: a byte a clock is slow to simulate."""
    return max(6, accesses * config.eth_width // 64)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lossy_1e3(dut):
    """Frames dropped at 1e-3 and bit errors at a BER that corrupts about 1e-3 of frames,
    both ways, with random traffic both ways."""
    cfg = EthxConfig.from_env()
    ber = 1e-3 / (8 * 700)          # about 1e-3 of a mean frame's bits
    tb = await _run(dut, _scaled(cfg, 40), fer=1e-3, ber=ber)
    assert sum(tb.wire_counts(e)["frames"] for e in NODES) > 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lossy_heavy(dut):
    """Three percent of frames dropped, bit errors and error bursts, control frames of every
    kind dropped (and one frame dropped and one bit error for certain): many replays, by NACK
    and by timer."""
    cfg = EthxConfig.from_env()
    tb = await _run(dut, _scaled(cfg, 30), fer=0.03, ber=2e-5, bursts=2e-4, ctl=0.03,
                    forced=True)
    wire = [tb.wire_counts(e) for e in NODES]
    assert sum(w["dropped"] for w in wire) > 0 and sum(w["error_beats"] for w in wire) > 0
    assert sum(tb.tx(e)["TX_REPLAYED"] for e in NODES) > 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def lost_control_frames(dut):
    """A third of the ACKs, NACKs, CF_UPDATEs and CC_UPDATEs dropped (and data at 1 %, for
    NACKs to lose): cumulative ACKs, the replay timer and the next updates recover."""
    cfg = EthxConfig.from_env()
    kinds = sum(1 << k for k in (link_model.Ctl.ACK, link_model.Ctl.NACK,
                                 link_model.Ctl.CF_UPDATE, link_model.Ctl.CC_UPDATE))
    tb = await _run(dut, _scaled(cfg, 30), fer=0.01, ctl=0.33, ctl_kinds=kinds)
    assert sum(tb.wire_counts(e)["ctl_dropped"] for e in NODES) > 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def link_down_and_up(dut):
    """The wire breaks three times in the middle of traffic (every frame starting on it lost;
    both links told a while later) and comes back before ``down_max``: the kept frames are
    replayed."""
    cfg = EthxConfig.from_env()
    tb = LossyEnv(dut)
    await tb.reset()
    tb.lossy_both(fer=1e-3)
    task = cocotb.start_soon(tb.traffic(_scaled(cfg, 40), settle=SETTLE))
    def cut():
        return sum(tb.wire_counts(e)["cut"] for e in NODES)

    for _ in range(3):
        await ClockCycles(dut.clk, tb.rng.randrange(1000, 4000))
        before = cut()
        tb.cut(1)                           # the wire breaks; the PHYs notice a while later,
        await ClockCycles(dut.clk, tb.rng.randrange(50, 400))
        for _ in range(200):                # once a frame has started into the break
            if cut() > before:
                break
            await ClockCycles(dut.clk, 20)
        tb.set_up(0)
        await ClockCycles(dut.clk, tb.rng.randrange(100, 2000))
        tb.set_up(1)
        tb.cut(0)
    await task
    await tb.drain()
    tb.check_links()
    assert cut() >= 3


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def message_passing_lossy(dut):
    """Release and acquire (sim/ethx/litmus.py) while frames are lost: the retry keeps the
    order the bridges rely on (MP_ROUNDS rounds of the producer, fewer at a narrow wire)."""
    cfg = EthxConfig.from_env()
    tb = LossyEnv(dut)
    await tb.reset()
    tb.lossy_both(fer=0.01, ber=1e-6)
    rounds = _scaled(cfg, int(os.environ.get("MP_ROUNDS", "100")))
    reads, seen, failures = await message_passing(tb, rounds)
    assert not failures, failures[:10]
    await tb.drain()
    tb.check_links()


# --- Completion timeouts (README §5): the far side silent, or the wire broken for good ------

async def _gone(dut, tb):
    """Reads and writes from the first node's GPU while channels lose every frame for good
    (the caller cuts them): each completes by ``completion_timeout`` (SLVERR; with proxy a
    write is OKAY at once and the next release is SLVERR), and the port stays clean."""
    cfg = tb.config
    a, b = NODES
    dest = tb.user_bits(NODES[b])
    gpu = tb.gpu[a]
    check = AxiAnswerCheck(dut, f"{a}_s_axi", dut.clk)
    reads = [cocotb.start_soon(gpu.read(0x1000 + 0x100 * k, 64, arid=k % 2, user=dest))
             for k in range(4)]
    writes = [cocotb.start_soon(gpu.write(0x2000 + 0x100 * k, bytes(64), awid=k % 2,
                                          user=dest)) for k in range(4)]
    start, _ = await clocks_until(dut.clk, *reads, *writes, step=100)
    limit = cfg.completion_timeout
    assert start <= limit + limit // 8 + 2000, f"{start} clocks for {limit}"
    assert all(t.result().resp == AxiResp.SLVERR for t in reads)
    for t in writes:
        assert t.result().resp == (AxiResp.OKAY if cfg.proxy else AxiResp.SLVERR)
    flag = await gpu.write(0x3000, b"flag", awid=3, user=tb.user_bits(NODES[b], order=1))
    assert flag.resp == AxiResp.SLVERR
    check.idle()
    beats = 64 // (cfg.data_width // 8)
    assert check.seen == {"ar": 4, "r": 4 * beats, "aw": 5, "b": 5}, check.seen
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


#: The tests above that the 8-bit configuration runs; the lighter losses and the
#: completion-timeout tests run on the first only (whose timeout is short enough for them to
#: need few clocks), and the 8-bit link alone runs the rest (tb/ethx/link/test_link.py).
LOSSY_TESTS = "lossy_heavy,link_down_and_up,message_passing_lossy"

#: The first one's completion timeout is short, for ``dead_peer`` and ``link_gone``: more than
#: three times a timeout (30,000 clocks) the other tests were seen to pass with.
CONFIGS = [EthxConfig(sources=4, fcs=False, completion_timeout=100_000),
           EthxConfig(sources=4, eth_width=8, data_width=128, proxy=True, fcs=False)]


#: Cases that once failed, run by ``make soak`` with their seed: at 1068361684 no frame started on
#: the 8-bit wire in any of the three breaks (the PHYs noticed too soon), so nothing was lost.
#: At 853100781 a bit error hit the INIT exchange of ``lossy_heavy`` (errors now start once the
#: links are synchronized). Both were faults of the test, whose structure now rules them out.
#: At 1804400685 an error burst inverted the FCS beat of a data frame: with the inverted FCS as
#: the poison, the link took it for poisoned and dropped it, and a read timed out (the poison is
#: now another pattern, link README §1).
SEEDS = [(CONFIGS[1], "link_down_and_up", 1068361684), (CONFIGS[1], "lossy_heavy", 853100781),
         (CONFIGS[0], "lossy_heavy", 1804400685)]


#: Rounds of ``message_passing_lossy`` at a 64-bit wire (the long form's at ``make soak``).
MP_ROUNDS = harness.long_form(40, 100)


#: The 8-bit pair runs in ``make soak`` only (the regression's time budget: its build is a
#: minute and a half of CPU): its bridges run in tb/ethx/test_bridge.py and its link in
#: tb/ethx/link/test_link.py, both at 8 bits.
@pytest.mark.soak
@pytest.mark.parametrize("config", [CONFIGS[0], pytest.param(CONFIGS[1],
                                                             marks=pytest.mark.soak_only)],
                         ids=[c.slug() for c in CONFIGS])
def test_lossy(config):
    harness.run(EthxLossyPair(config), config, toplevel="ethx_lossy_pair",
                test_module=__name__, testcase=None if config is CONFIGS[0] else LOSSY_TESTS,
                extra_env={"MP_ROUNDS": str(MP_ROUNDS)})


@pytest.mark.soak_only
@pytest.mark.parametrize("config, testcase, seed", SEEDS,
                         ids=[f"{c.slug()}-{t}-{s}" for c, t, s in SEEDS])
def test_lossy_seeds(config, testcase, seed):
    harness.run(EthxLossyPair(config), config, toplevel="ethx_lossy_pair",
                test_module=__name__, testcase=testcase, seed_value=seed,
                run_name=f"{testcase}-{seed}")
