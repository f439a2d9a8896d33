# SPDX-License-Identifier: BSD-2-Clause
"""What the cocotb runs of two ETH-X bridges over lossless links and error-injecting channels
(:class:`sim.ethx.lossy_pair.EthxLossyPair`) share: :class:`LossyEnv`, the pair environment
with the links' settings, the channels' controls and counters, and the end-of-run checks."""

from cocotb.triggers import ClockCycles

from scaleup_ip.ethx.link import (
    LinkRxCount,
    LinkTxCount,
    TxState,
    default_settings,
    settings_layout,
)
from scaleup_ip.model.ethx import channel as channel_model
from scaleup_ip.model.ethx import link as link_model

from sim.ethx.link.pair import channel_counts
from sim.ethx.lossy_pair import link_config
from sim.ethx.pair import NODES, other
from sim.ethx.pair_env import PairEnv

__all__ = ["ALL_CONTROL", "DELAY", "SETTLE", "LossyEnv"]

#: Clocks the proxied writes may take to land: replays by timer at 8 bits take a while.
SETTLE = 400_000
#: Clocks each way on the wire.
DELAY = 100
#: Control-frame kinds a channel can drop, as its ``ctl_kinds`` mask.
ALL_CONTROL = sum(1 << kind for kind in link_model.Ctl)


class LossyEnv(PairEnv):
    """:class:`~sim.ethx.pair_env.PairEnv` on the lossy pair (or on a pair whose bridges meet
    the channels without links, :class:`~sim.ethx.wire_pair.EthxWirePair`): the links' settings and
    up levels, each channel's controls and counters (ports ``<end>_wire_<name>``: the channel
    from ``end``); ``axi`` as for :class:`~sim.ethx.pair_env.PairEnv`."""

    def __init__(self, dut, *, delay=DELAY, axi=True):
        super().__init__(dut, channels=False, quiet=True, axi=axi)
        #: Lossless links between bridges and channels (bridges built with ``fcs=False``);
        #: without them, the bridges' Ethernet ports meet the channels directly.
        self.links = not self.config.fcs
        if self.links:
            link = link_config(self.config)
            self.settings = default_settings(link, round_trip=2 * delay + 40)
            layout = settings_layout(link)
        for end in NODES:
            if self.links:
                self.set(f"{end}_link", settings=layout.const(self.settings).as_bits(), up=1)
            seed = self.rng.getrandbits(64)
            dut._log.info("channel from %s: seed %#x", end, seed)
            self.control(end, seed=seed, reseed=0, enable=1, cut=0, delay=delay)
            self.errors_off(end)

    def control(self, end, **levels):
        self.set(f"{end}_wire", **levels)

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

    def lossy_both(self, **errors):
        """:meth:`lossy` on both channels."""
        for end in NODES:
            self.lossy(end, **errors)

    def cut(self, level):
        """Both channels cut (every frame starting is lost) or whole."""
        for end in NODES:
            self.control(end, cut=level)

    def set_up(self, level):
        """Both links told the wire is up or down."""
        for end in NODES:
            self.set(f"{end}_link", up=level)

    def wire_counts(self, end):
        return channel_counts(self.dut, end)

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
        if not self.links:
            return False
        link = f"{end}_link"
        return self.get(link, "kept") != 0 or self.get(link, "s_cc") != self.get(link, "s_cf")

    def check_links(self):
        """Nothing kept, owed, flushed or overflowed; each end's receiver took every eligible
        frame the other sent once; log what the channels did. Without links: no drop or
        refusal at either bridge."""
        for end in NODES if self.links else ():
            far = other(end)
            tx, rx, wire = self.tx(end), self.rx(far), self.wire_counts(end)
            self.dut._log.info("%s -> %s: channel %s", end, far, wire)
            self.dut._log.info("%s tx %s", end, tx)
            self.dut._log.info("%s rx %s", far, rx)
            assert not self._owed(end), end
            assert self.get(f"{end}_link", "tx_state") == TxState.ADVANCE.value
            assert tx["TX_FLUSHED"] == 0 and tx["CREDIT_ERROR"] == 0, tx
            assert tx["ACK_NACK_SEQ_ERROR"] == 0 and tx["TX_MALFORMED"] == 0, tx
            assert rx["RX_OVERFLOW"] == 0 and rx["RX_FOREIGN"] == 0, rx
            assert tx["TX_OK"] == rx["RX_OK"], (tx, rx)
        self.check_no_errors()
