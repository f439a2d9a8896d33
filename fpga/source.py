# SPDX-License-Identifier: BSD-2-Clause
"""An endless stream of identical pseudo-random packets, and its pure-Python replica."""

import dataclasses

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from scaleup_ip.config import BlockConfig, check_int
from scaleup_ip.crc import DATA_WIDTHS, CrcConfig
from scaleup_ip.model.crc import crc32 as model
from scaleup_ip.types import byte_stream, crc_result_layout

__all__ = ["SelfTestConfig", "PacketSource", "selftest_packet", "expected_result"]

#: Galois form (shifting right) of the maximal-length 32-bit LFSR with taps 32, 22, 2, 1
#: [Xilinx XAPP052, "Efficient Shift Registers, LFSR Counters, and Long Pseudo-Random Sequence
#: Generators", Table 3]: bit ``t - 1`` set for each tap ``t``.
LFSR_MASK = 0x8020_0003
#: 2^32 / golden ratio, odd, so its multiples by 1..2^32-1 are distinct and non-zero modulo 2^32
#: [Knuth, TAOCP vol. 3, §6.4, multiplicative hashing]. Lane ``k`` is seeded with (k+1) times it.
SEED_STEP = 0x9E37_79B9
#: Bits per LFSR lane.
LANE_WIDTH = 32


@dataclasses.dataclass(frozen=True)
class SelfTestConfig(BlockConfig):
    """Parameters of the CRC self-test: the engine under test and the packets it is fed.

    Parameters
    ----------
    data_width : int
        Bits per beat, one of the CRC's widths from 32 up (a whole number of LFSR lanes).
    pipeline : int
        The CRC's :attr:`~scaleup_ip.crc.CrcConfig.pipeline`.
    packet_bytes : int
        Bytes per packet, at least 1; unless a multiple of ``data_width // 8``, the last beat
        is partial.
    """
    data_width: int = 512
    pipeline: int = 2
    packet_bytes: int = 1000

    def __post_init__(self):
        check_int("self-test", "data_width", self.data_width,
                  [w for w in DATA_WIDTHS if w % LANE_WIDTH == 0])
        if type(self.packet_bytes) is not int or self.packet_bytes < 1:
            raise ValueError(f"self-test packet_bytes must be a positive integer, "
                             f"not {self.packet_bytes!r}")
        self.crc  # validates pipeline

    @property
    def crc(self):
        return CrcConfig(data_width=self.data_width, pipeline=self.pipeline)

    @property
    def lanes(self):
        return self.data_width // LANE_WIDTH

    @property
    def beats(self):
        return -(-self.packet_bytes // self.crc.bytes_per_beat)

    @property
    def last_bytes(self):
        """Valid bytes in the last beat of a packet."""
        return self.packet_bytes - (self.beats - 1) * self.crc.bytes_per_beat


def _seeds(config):
    return [(SEED_STEP * (k + 1)) % (1 << LANE_WIDTH) for k in range(config.lanes)]


def _step(state):
    """One Galois LFSR step of an int."""
    return (state >> 1) ^ (LFSR_MASK if state & 1 else 0)


def selftest_packet(config):
    """The bytes of every packet :class:`PacketSource` sends (the hardware's replica).

    Beat ``n`` of a packet holds, in lane ``k`` (bytes ``4k`` to ``4k+3``, least significant
    byte first), the state of LFSR ``k`` after ``n`` steps from its seed; the packet is cut to
    ``packet_bytes``.
    """
    lanes, beats = _seeds(config), []
    for _ in range(config.beats):
        beats.append(b"".join(lane.to_bytes(LANE_WIDTH // 8, "little") for lane in lanes))
        lanes = [_step(lane) for lane in lanes]
    return b"".join(beats)[:config.packet_bytes]


def expected_result(config):
    """The :data:`~scaleup_ip.types.crc_result_layout` constant every self-test packet must produce."""
    packet = selftest_packet(config)
    return crc_result_layout.const({
        "crc": model.crc32(packet),
        "ok": model.is_good(packet),
        "malformed": 0,
    })


class PacketSource(wiring.Component):
    """Send :func:`selftest_packet` over and over, back to back, honouring ``o.ready``.

    ``o.valid`` is always high. On each accepted beat every 32-bit Galois LFSR lane steps once;
    on the accepted last beat of a packet they are all reseeded, so every packet is the same.
    Bytes of the last beat beyond ``keep`` carry LFSR data too, which the sink must ignore.

    Parameters
    ----------
    config : SelfTestConfig

    Members
    -------
    o : ``Out(byte_stream(config.data_width))``
        The packet beats.
    """

    def __init__(self, config):
        if not isinstance(config, SelfTestConfig):
            raise TypeError(f"PacketSource config must be a SelfTestConfig, not {config!r}")
        self._config = config
        super().__init__({"o": Out(byte_stream(config.data_width))})

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        seeds = _seeds(cfg)
        lanes = [Signal(LANE_WIDTH, init=seed, name=f"lane{k}") for k, seed in enumerate(seeds)]
        beat = Signal(range(cfg.beats))
        last = beat == cfg.beats - 1
        full, tail = (1 << cfg.crc.bytes_per_beat) - 1, (1 << cfg.last_bytes) - 1
        m.d.comb += [
            self.o.valid.eq(1),
            self.o.payload.data.eq(Cat(*lanes)),
            self.o.payload.keep.eq(Mux(last, tail, full)),
            self.o.payload.last.eq(last),
        ]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += beat.eq(Mux(last, 0, beat + 1))
            for lane, seed in zip(lanes, seeds):
                stepped = (lane >> 1) ^ Mux(lane[0], LFSR_MASK, 0)
                m.d.sync += lane.eq(Mux(last, seed, stepped))
        return m
