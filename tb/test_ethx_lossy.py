"""System tests of two ETH-X bridges over lossless links and error-injecting channels
(sim/ethx_lossy_pair.py): AxiMasters on both GPUs, AxiRams as both memories, random traffic
both ways while the channels drop and corrupt frames, drop control frames, and the wire goes
down and up. No AXI transaction is lost, doubled or reordered (every read checked, both
memories equal to the model), the bridges see no bad frame, and at the end the links have
nothing kept or owed."""

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from rtl.ethx.config import EthxConfig
from rtl.ethx.link.channel import channel_counters
from rtl.ethx.link.layout import (
    LinkRxCount, LinkTxCount, TxState, default_settings, settings_layout,
)
from rtl.model import ethx_channel as channel_model
from rtl.model import ethx_link as link_model
from sim import harness
from sim.ethx_litmus import message_passing
from sim.ethx_lossy_pair import EthxLossyPair, channel_config, link_config
from sim.ethx_pair import NODES
from sim.ethx_pair_env import PairEnv

TIMEOUT_US = 40000
#: Clocks the proxied writes may take to land: replays by timer at 8 bits take a while.
SETTLE = 400_000
#: Clocks each way on the wire.
DELAY = 100
#: Control-frame kinds a channel can drop, as its ``ctl_kinds`` mask.
ALL_CONTROL = sum(1 << kind for kind in link_model.Ctl)


class LossyEnv(PairEnv):
    """:class:`~sim.ethx_pair_env.PairEnv` on the lossy pair: the links' settings and up
    levels, each channel's controls (``wire[end]``: from ``end``) and counters."""

    def __init__(self, dut, *, delay=DELAY):
        super().__init__(dut, channels=False, quiet=True)
        self.link = link_config(self.config)
        self.wire = channel_config(self.config)
        self.delay = delay
        self.settings = default_settings(self.link, round_trip=2 * delay + 40)
        layout = settings_layout(self.link)
        for end in NODES:
            getattr(dut, f"{end}_link_settings").value = layout.const(self.settings).as_bits()
            getattr(dut, f"{end}_link_up").value = 1
            seed = self.rng.getrandbits(64)
            dut._log.info("channel from %s: seed %#x", end, seed)
            self.control(end, seed=seed, reseed=0, enable=1, cut=0, delay=delay)
            self.errors_off(end)

    def control(self, end, **levels):
        for name, value in levels.items():
            getattr(self.dut, f"{end}_wire_{name}").value = value

    def errors_off(self, end):
        self.control(end, ber_threshold=0, burst_threshold=0, burst_length=0,
                     drop_threshold=0, ctl_threshold=0, ctl_kinds=0)

    def lossy(self, end, *, fer=0.0, ber=0.0, bursts=0.0, burst_length=4, ctl=0.0,
              ctl_kinds=ALL_CONTROL):
        """Frames from ``end`` dropped at rate ``fer``, bits in error at ``ber``, bursts
        starting at a beat at ``bursts``, control frames of ``ctl_kinds`` dropped at ``ctl``."""
        threshold = channel_model.frame_threshold
        self.control(end, drop_threshold=threshold(fer),
                     ber_threshold=channel_model.ber_threshold(ber, self.config.eth_width),
                     burst_threshold=threshold(bursts), burst_length=burst_length,
                     ctl_threshold=threshold(ctl), ctl_kinds=ctl_kinds)

    def cut(self, level):
        """Both channels cut (every frame starting is lost) or whole."""
        for end in NODES:
            self.control(end, cut=level)

    def set_up(self, level):
        """Both links told the wire is up or down."""
        for end in NODES:
            getattr(self.dut, f"{end}_link_up").value = level

    def wire_counts(self, end):
        value = getattr(self.dut, f"{end}_wire_counters").value.to_unsigned()
        return {name: value >> channel_counters[name].offset & 0xFFFF_FFFF
                for name in channel_model.COUNTERS}

    def tx(self, end):
        return {k.name: v for k, v in self.counts(LinkTxCount, f"{end}_link_tx_counts").items()}

    def rx(self, end):
        return {k.name: v for k, v in self.counts(LinkRxCount, f"{end}_link_rx_counts").items()}

    async def drain(self):
        """Errors off; until both links have nothing kept and every credit is back."""
        for end in NODES:
            self.errors_off(end)
        for _ in range(2000):
            if not any(self._owed(end) for end in NODES):
                break
            await ClockCycles(self.dut.clk, 100)

    def _owed(self, end):
        dut = self.dut
        s_cc, s_cf = (getattr(dut, f"{end}_link_{name}").value.to_unsigned()
                      for name in ("s_cc", "s_cf"))
        return int(getattr(dut, f"{end}_link_kept").value) != 0 or s_cc != s_cf

    def check_links(self):
        """Nothing kept, owed, flushed or overflowed; each end's receiver took every eligible
        frame the other sent once; log what the channels did."""
        for end in NODES:
            far = "b" if end == "a" else "a"
            tx, rx, wire = self.tx(end), self.rx(far), self.wire_counts(end)
            self.dut._log.info("%s -> %s: channel %s", end, far, wire)
            self.dut._log.info("%s tx %s", end, tx)
            self.dut._log.info("%s rx %s", far, rx)
            assert not self._owed(end), end
            assert int(getattr(self.dut, f"{end}_link_tx_state").value) == TxState.ADVANCE.value
            assert tx["TX_FLUSHED"] == 0 and tx["CREDIT_ERROR"] == 0, tx
            assert tx["ACK_NACK_SEQ_ERROR"] == 0 and tx["TX_MALFORMED"] == 0, tx
            assert rx["RX_OVERFLOW"] == 0 and rx["RX_FOREIGN"] == 0, rx
            assert tx["TX_OK"] == rx["RX_OK"], (tx, rx)
        self.check_no_errors()


async def _run(dut, accesses, *, workers=3, **errors):
    tb = LossyEnv(dut)
    await tb.reset()
    for end in NODES:
        tb.lossy(end, **errors)
    await tb.traffic(accesses, workers, settle=SETTLE)
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
    kind dropped: many replays, by NACK and by timer."""
    cfg = EthxConfig.from_env()
    tb = await _run(dut, _scaled(cfg, 30), fer=0.03, ber=2e-6, bursts=2e-4, ctl=0.03)
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
    for end in NODES:
        tb.lossy(end, fer=1e-3)
    task = cocotb.start_soon(tb.traffic(_scaled(cfg, 40), settle=SETTLE))
    for _ in range(3):
        await ClockCycles(dut.clk, tb.rng.randrange(1000, 4000))
        tb.cut(1)                           # the wire breaks; the PHYs notice a while later
        await ClockCycles(dut.clk, tb.rng.randrange(50, 400))
        tb.set_up(0)
        await ClockCycles(dut.clk, tb.rng.randrange(100, 2000))
        tb.set_up(1)
        tb.cut(0)
    await task
    await tb.drain()
    tb.check_links()
    assert sum(tb.wire_counts(e)["cut"] for e in NODES) > 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def message_passing_lossy(dut):
    """Release and acquire (sim/ethx_litmus.py) while frames are lost: the retry keeps the
    order the bridges rely on."""
    cfg = EthxConfig.from_env()
    tb = LossyEnv(dut)
    await tb.reset()
    for end in NODES:
        tb.lossy(end, fer=0.01, ber=1e-6)
    rounds = _scaled(cfg, 100)
    reads, seen, failures = await message_passing(tb, rounds)
    assert not failures, failures[:10]
    await tb.drain()
    tb.check_links()


CONFIGS = [EthxConfig(sources=4, fcs=False),
           EthxConfig(sources=4, eth_width=8, data_width=128, proxy=True, fcs=False)]


@pytest.mark.parametrize("config", CONFIGS, ids=[c.slug() for c in CONFIGS])
def test_lossy(config):
    harness.run(EthxLossyPair(config), config, toplevel="ethx_lossy_pair",
                test_module="tb.test_ethx_lossy")
