# SPDX-License-Identifier: BSD-2-Clause
"""The CRC self-test on a ULX3S 85F: a PLL-made fast clock, the check, and status LEDs."""

from amaranth import ClockDomain, DomainRenamer, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth_boards.ulx3s import ULX3S_85F_Platform

from fpga.pll import Ecp5Pll
from fpga.selfcheck import CrcSelfCheck
from fpga.source import SelfTestConfig

__all__ = ["ULX3SPlatform", "CrcSelfTest", "FAST_HZ"]

#: Default frequency of the fast domain that runs the check.
FAST_HZ = 125e6
#: Frequency of the board oscillator, from the platform's ``clk25`` resource.
BOARD_HZ = 25e6


class ULX3SPlatform(ULX3S_85F_Platform):
    """The ULX3S 85F as amaranth-boards describes it, minus the programmer: building a
    bitstream needs only the yowasp tools, not ``openFPGALoader``."""

    @property
    def required_tools(self):
        return [tool for tool in super().required_tools if tool != "openFPGALoader"]


class CrcSelfTest(wiring.Component):
    """Board top: run :class:`~fpga.selfcheck.CrcSelfCheck` forever in a PLL-made domain.

    An :class:`~fpga.pll.Ecp5Pll` makes domain ``fast`` at ``fast_hz`` from the 25 MHz
    ``clk25``; ``fast`` stays in reset until the PLL has locked (and re-enters it if lock is
    lost). The LEDs show:

    ====== ==============================================================================
    led[0] pass: at least one packet checked, none wrong
    led[1] fail: some packet was wrong (sticky)
    led[2] heartbeat: the top bit of a free-running ``fast`` counter, blinking at about 1 Hz
    led[3] PLL locked
    led[4:8] four bits of the checked-packet counter, the lowest blinking at about 1 Hz
    ====== ==============================================================================

    Every packet is the same, so the engine's ``keep`` takes only two values and synthesis
    folds most of its partial-beat logic away: the Fmax of this top is not that of the engine on
    general traffic (see :mod:`fpga.blocks` for that).

    Parameters
    ----------
    config : SelfTestConfig
        Defaults to the 512-bit, pipeline-2 engine fed 1000-byte packets.
    fast_hz : float
        Frequency of domain ``fast``; it must be reachable exactly by the PLL.

    Members
    -------
    None: the top drives board pins, requested from the platform.
    """

    def __init__(self, config=SelfTestConfig(), fast_hz=FAST_HZ):
        if not isinstance(config, SelfTestConfig):
            raise TypeError(f"CrcSelfTest config must be a SelfTestConfig, not {config!r}")
        self._config = config
        self._pll = Ecp5Pll.for_output(BOARD_HZ, fast_hz)
        super().__init__({})

    @property
    def config(self):
        return self._config

    @property
    def fast_hz(self):
        return self._pll.clkop_hz

    def elaborate(self, platform):
        m = Module()
        m.domains.fast = fast = ClockDomain()
        m.submodules.pll = pll = self._pll
        m.d.comb += [pll.clki.eq(platform.request("clk25", 0).i), fast.clk.eq(pll.clkop)]
        # No add_clock_constraint here: Amaranth names the net as in its hierarchy, which is not
        # the name Yosys keeps after flattening, so nextpnr would ignore it. nextpnr derives the
        # constraint of CLKOP from CLKI's and the dividers ("Derived frequency constraint").
        m.submodules.reset_sync = ResetSynchronizer(~pll.lock, domain="fast")
        m.submodules.check = check = DomainRenamer("fast")(CrcSelfCheck(self._config))

        # Bit b of a counter toggles every 2^b counts: pick b so that happens about each second.
        heartbeat = Signal(int(self.fast_hz).bit_length())
        m.d.fast += heartbeat.eq(heartbeat + 1)
        per_second = int(self.fast_hz) // self._config.beats
        packet_bit = per_second.bit_length() - 1
        status = [check.passed, check.failed, heartbeat[-1], pll.lock,
                  *check.packets[packet_bit:packet_bit + 4]]
        for n, value in enumerate(status):
            m.d.comb += platform.request("led", n).o.eq(value)
        return m
