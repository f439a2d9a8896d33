# SPDX-License-Identifier: BSD-2-Clause
"""Feed the CRC engine the self-test packets forever and check every result."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from scaleup_ip.crc import Crc32

from fpga.source import PacketSource, SelfTestConfig, expected_result

__all__ = ["CrcSelfCheck"]


class CrcSelfCheck(wiring.Component):
    """A :class:`PacketSource` into a :class:`~scaleup_ip.crc.Crc32`, every result compared with
    :func:`~fpga.source.expected_result`, worked out at elaboration time.

    All in the ``sync`` domain (rename it for a board). ``o.ready`` of the engine is held high,
    so it runs at one beat per clock; the source still follows the engine's ``i.ready``. A
    watchdog fails the check when no result comes for :attr:`watchdog_cycles` cycles, so an
    engine that stops cannot leave ``passed`` lit.

    Parameters
    ----------
    config : SelfTestConfig

    Members
    -------
    passed : ``Out(1)``
        At least one result checked and none wrong so far.
    failed : ``Out(1)``
        Some result was wrong (sticky until reset).
    packets : ``Out(32)``
        Results checked, modulo 2^32.
    """

    @property
    def watchdog_cycles(self):
        """Cycles without a result after which the check fails: four packets' worth, more than
        one packet's beats plus the engine's latency."""
        return 4 * (self._config.beats + self._config.crc.latency)

    def __init__(self, config):
        if not isinstance(config, SelfTestConfig):
            raise TypeError(f"CrcSelfCheck config must be a SelfTestConfig, not {config!r}")
        self._config = config
        super().__init__({"passed": Out(1), "failed": Out(1), "packets": Out(32)})

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        m.submodules.source = source = PacketSource(self._config)
        m.submodules.crc = crc = Crc32(self._config.crc)
        wiring.connect(m, source.o, crc.i)
        expected = expected_result(self._config).as_value()
        checked = Signal()
        idle = Signal(range(self.watchdog_cycles + 1))
        m.d.sync += idle.eq(idle + 1)
        with m.If(idle == self.watchdog_cycles):
            m.d.sync += [self.failed.eq(1), idle.eq(idle)]
        m.d.comb += [
            crc.o.ready.eq(1),
            self.passed.eq(checked & ~self.failed),
        ]
        with m.If(crc.o.valid):
            m.d.sync += [checked.eq(1), self.packets.eq(self.packets + 1), idle.eq(0)]
            with m.If(crc.o.payload.as_value() != expected):
                m.d.sync += self.failed.eq(1)
        return m
