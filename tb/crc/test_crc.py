# SPDX-License-Identifier: BSD-2-Clause
"""Tests of rtl/scaleup_ip/crc.py and its model rtl/scaleup_ip/model/crc/crc32.py."""

import itertools
import random
import zlib

import cocotb
import pytest
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.crc import Crc32, CrcConfig
from scaleup_ip.model.crc import crc32 as model
from scaleup_ip.types import byte_beat_layout, crc_result_layout
from sim import harness
from sim.crc.env import CrcEnv
from sim.streams import LayoutMonitor, bytes_to_beats, random_pauses

# --- Layer 1: the model and the configuration, no simulator -----------------------------------

def _clause_3_2_9(data):
    """802.3 §3.2.9 taken literally: bits in transmit order (LSB of each octet first), the first
    32 complemented, times x^32, divided by G(x), remainder complemented, x^31 sent first."""
    bits = [(byte >> i) & 1 for byte in data for i in range(8)]
    bits = [b ^ 1 if k < 32 else b for k, b in enumerate(bits)] + [0] * 32
    remainder = 0
    for b in bits:                      # polynomial long division, MSB (first bit) first
        remainder = (remainder << 1) | b
        if remainder >> 32:
            remainder ^= (1 << 32) | model.POLYNOMIAL
    remainder ^= 0xFFFF_FFFF
    sent = [(remainder >> (31 - k)) & 1 for k in range(32)]   # x^31 first on the wire
    return sum(bit << k for k, bit in enumerate(sent))         # = the FCS octets, little-endian


def test_model_check_value():
    assert model.crc32(b"123456789") == model.CHECK == 0xCBF43926


@pytest.mark.parametrize("length", [4, 5, 9, 63, 64, 65, 640, 1518])
def test_model_is_clause_3_2_9(length):
    data = random.Random(length).randbytes(length)
    assert model.crc32(data) == _clause_3_2_9(data)


def test_model_matches_zlib():
    rng = random.Random(1)
    for length in list(range(0, 70)) + [rng.randrange(70, 2001) for _ in range(50)]:
        data = rng.randbytes(length)
        assert model.crc32(data) == zlib.crc32(data), length


def test_model_residue():
    rng = random.Random(2)
    for length in (0, 1, 60, 1514):
        frame = rng.randbytes(length)
        assert model.register(frame + model.fcs(frame)) == model.RESIDUE
        assert model.is_good(frame + model.fcs(frame))
        bad = bytearray(frame + model.fcs(frame))
        bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        assert not model.is_good(bytes(bad))


def test_model_retreat_undoes_advance():
    rng = random.Random(3)
    for nbits in (1, 8, 32, 64 * 8):
        state = rng.getrandbits(32)
        assert model.retreat(model.advance(state, 0, nbits), nbits) == state


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"data_width": 16}, ValueError,
     r"CRC data_width must be one of 8, 32, 64, 128, 256, 512, not 16"),
    ({"data_width": 1024}, ValueError, r"CRC data_width must be one of .*, not 1024"),
    ({"data_width": "64"}, TypeError, r"CRC data_width must be an integer, not '64'"),
    ({"data_width": True}, TypeError, r"CRC data_width must be an integer, not True"),
    ({"pipeline": -1}, ValueError, r"CRC pipeline must be one of 0, 1, 2, 3, not -1"),
    ({"pipeline": 4}, ValueError, r"CRC pipeline must be one of 0, 1, 2, 3, not 4"),
    ({"pipeline": 1.0}, TypeError, r"CRC pipeline must be an integer, not 1.0"),
])
def test_config_rejects(kwargs, error, message):
    with pytest.raises(error, match=message):
        CrcConfig(**kwargs)


def test_config_round_trip():
    config = CrcConfig(data_width=512, pipeline=2)
    assert CrcConfig.from_json(config.to_json()) == config
    assert config.slug() == "data_width-512_pipeline-2"


def test_component_rejects_other_config():
    with pytest.raises(TypeError, match=r"Crc32 config must be a CrcConfig, not 64"):
        Crc32(64)


def test_component_ports():
    dut = Crc32(CrcConfig(data_width=128))
    dut._MustUse__silence = True          # inspected, never elaborated
    assert dut.i.payload.shape() == byte_beat_layout(128)
    assert dut.o.payload.shape() == crc_result_layout


# --- Layer 2: cocotb tests, run inside the simulator ------------------------------------------

#: Simulated time after which a test fails instead of hanging (the longest needs ~30 us).
TIMEOUT_US = 1000

class TB(CrcEnv):
    """The shared environment plus a monitor on ``i`` and a scoreboard."""

    def __init__(self, dut):
        super().__init__(dut)
        self.monitor = LayoutMonitor(dut, "i", self.beat_layout, dut.clk, dut.rst)
        self.expected = []
        self.sent = []

    def beats(self, packet):
        """The packet's beats with garbage in the byte lanes that ``keep`` leaves out, and, for a
        whole number of beats, sometimes an extra empty (``keep`` = 0) last beat."""
        nbytes = self.config.bytes_per_beat
        beats = bytes_to_beats(packet, nbytes)
        if packet and len(packet) % nbytes == 0 and self.rng.random() < 0.5:
            beats[-1]["last"] = 0
            beats.append({"data": 0, "keep": 0, "last": 1})
        lanes = beats[-1]["keep"].bit_length()
        beats[-1]["data"] |= self.rng.getrandbits(8 * (nbytes - lanes)) << (8 * lanes)
        return beats

    def send(self, packet, beats=None):
        """Queue a packet; expect its CRC and, read as data + FCS, whether it is good."""
        for beat in beats or self.beats(packet):
            self.source.send_nowait(**beat)
            self.sent.append(beat)
        good = len(packet) >= 4 and zlib.crc32(packet[:-4]).to_bytes(4, "little") == packet[-4:]
        self.expected.append((zlib.crc32(packet), int(good), 0))

    async def stalls(self):
        """Wait until every queued beat is in; count cycles where ``i.valid`` met a low
        ``i.ready``."""
        stalls = 0
        while not self.source.empty() or self.dut.i__valid.value:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            stalls += int(self.dut.i__valid.value and not self.dut.i__ready.value)
        return stalls

    async def check(self):
        """Receive and compare every expected result, then require that nothing else comes."""
        for index, (crc, ok, malformed) in enumerate(self.expected):
            result = await self.sink.recv()
            got = (int(result.crc), int(result.ok), int(result.malformed))
            if malformed:
                got = (crc, int(result.ok), int(result.malformed))   # crc is unspecified
            assert got == (crc, ok, malformed), (
                f"packet {index}: got crc={got[0]:#010x} ok={got[1]} malformed={got[2]}, "
                f"expected crc={crc:#010x} ok={ok} malformed={malformed}")
        self.expected.clear()
        await ClockCycles(self.dut.clk, 4 * self.config.latency)
        assert self.source.empty() and self.sink.empty(), "results or beats left over"
        assert not self.dut.o__valid.value, "a result nobody asked for"

    def random_packet(self, max_length=2000):
        length = self.rng.choice([self.rng.randrange(0, 80), self.rng.randrange(1, max_length + 1)])
        packet = self.rng.randbytes(length)
        if length >= 4 and self.rng.random() < 0.5:     # a frame ending in its FCS...
            packet = packet[:-4] + model.fcs(packet[:-4])
            if self.rng.random() < 0.3:                   # ...sometimes corrupted
                flipped = bytearray(packet)
                flipped[self.rng.randrange(length)] ^= 1 << self.rng.randrange(8)
                packet = bytes(flipped)
        return packet


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def crc_check_value(dut):
    """"123456789" gives the catalogue check value; with its FCS appended it checks good."""
    tb = TB(dut)
    await tb.reset()
    tb.send(b"123456789")
    tb.send(b"123456789" + model.CHECK.to_bytes(4, "little"))
    tb.send(b"")
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def crc_empty_last_beat(dut):
    """Whole-beat packets closed by an empty last beat, and zero-length packets, with garbage
    in every lane that ``keep`` excludes."""
    tb = TB(dut)
    await tb.reset()
    nbytes = tb.config.bytes_per_beat
    for count in (1, 2, 3, 0, 1, 0, 0, 4):
        packet = tb.rng.randbytes(count * nbytes)
        beats = bytes_to_beats(packet, nbytes)
        if packet:
            beats[-1]["last"] = 0
            beats.append({"data": 0, "keep": 0, "last": 1})
        beats[-1]["data"] = tb.rng.getrandbits(8 * nbytes)       # all of it excluded by keep
        tb.send(packet, beats=beats)
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(idle=[0.0, 0.3], backpressure=[0.0, 0.6])
async def crc_random_packets(dut, idle, backpressure):
    """Random packets of 0..2000 bytes, half of them frames with (sometimes corrupted) FCS."""
    tb = TB(dut)
    tb.source.set_idle(random_pauses(tb.rng, idle))
    tb.sink.set_backpressure(random_pauses(tb.rng, backpressure))
    await tb.reset()
    budget = 6000 * tb.config.bytes_per_beat           # bytes: keeps each run to ~6k beats
    while budget > 0:
        packet = tb.random_packet()
        budget -= max(len(packet), 1) + 64
        tb.send(packet)
    await tb.check()
    seen = [{"data": int(b.data), "keep": int(b.keep), "last": int(b.last)}
            for b in tb.monitor.take_all()]
    assert seen == tb.sent, "the engine did not take exactly the beats that were sent"


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def crc_long_output_stall(dut):
    """With ``o`` stalled, ``i`` must stop once the result queue is full, and lose nothing."""
    tb = TB(dut)
    tb.sink.set_backpressure(itertools.chain(itertools.repeat(1, 400), itertools.repeat(0)))
    await tb.reset()
    for length in range(0, 3 * tb.config.result_depth):
        tb.send(tb.rng.randbytes(length % (2 * tb.config.bytes_per_beat)))
    await tb.check()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def crc_line_rate(dut):
    """Back-to-back packets of every length (1-beat ones too): no bubble on ``i``."""
    tb = TB(dut)
    await tb.reset()
    lengths = list(range(0, 3 * tb.config.bytes_per_beat + 1)) + [1518, 640] * 3
    for length in lengths:
        tb.send(tb.rng.randbytes(length))
    stalls = await tb.stalls()
    await tb.check()
    assert stalls == 0, f"{stalls} cycles with i.valid and not i.ready"


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def crc_reset_mid_packet(dut):
    """A reset with results queued, a last beat in flight and a malformed packet half received
    leaves nothing behind: afterwards results are right and the input runs at full rate."""
    tb = TB(dut)
    nbytes = tb.config.bytes_per_beat
    await tb.reset()
    tb.sink.set_backpressure(itertools.repeat(1))
    for _ in range(2):                                   # results that will never be read
        tb.send(tb.rng.randbytes(3 * nbytes))
    tb.send(tb.rng.randbytes(nbytes))                    # a last beat still in the pipeline
    cut = bytes_to_beats(tb.rng.randbytes(5 * nbytes), nbytes)
    cut[0]["keep"] >>= 1                                 # malformed, and cut short by the reset
    for beat in cut[:2]:
        tb.source.send_nowait(**beat)
    await tb.source.wait()
    tb.expected.clear()
    await tb.reset()
    assert tb.sink.empty(), "a result came out while o was stalled"
    tb.sink.set_backpressure(None)
    for _ in range(3 * tb.config.result_depth):           # one result per cycle: no room to spare
        tb.send(tb.rng.randbytes(tb.rng.randrange(1, nbytes + 1)))
    stalls = await tb.stalls()
    for _ in range(5):
        tb.send(tb.random_packet(max_length=300))
    await tb.check()
    assert stalls == 0, f"{stalls} cycles with i.valid and not i.ready after the reset"


def _contiguous(keep):
    return keep & (keep + 1) == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def crc_malformed_keep(dut):
    """Every packet that breaks the keep rules is flagged and never passes, even one whose
    register ends at the good residue; the packets around it are intact."""
    tb = TB(dut)
    await tb.reset()
    nbytes = tb.config.bytes_per_beat
    full = (1 << nbytes) - 1
    holes_last = sorted(k for k in {0b10, 0b101, 1 << (nbytes - 1) | 1, full & ~0b10,
                                    full & ~(1 << nbytes // 2)}
                        if k <= full and not _contiguous(k))
    holes_before_last = sorted({0, full >> 1, full & ~1, full & ~(1 << nbytes // 2)} - {full})

    def malformed(beats):
        tb.send(b"", beats=beats)
        tb.expected[-1] = (0, 0, 1)                      # crc unspecified, never ok
        tb.send(tb.random_packet(max_length=3 * nbytes))  # a good neighbour

    for keep in holes_last:                              # single-beat and multi-beat packets
        for count in (1, 3):
            beats = bytes_to_beats(tb.rng.randbytes(count * nbytes), nbytes)
            beats[-1]["keep"] = keep
            malformed(beats)
    for keep in holes_before_last:
        for index in (0, 1):
            beats = bytes_to_beats(tb.rng.randbytes(3 * nbytes), nbytes)
            beats[index]["keep"] = keep
            malformed(beats)
    # The missing byte is zero, so the register still ends at the residue: only the flag
    # keeps this packet from passing.
    frame = bytearray(tb.rng.randbytes(2 * nbytes))
    frame[nbytes - 1] = 0
    beats = bytes_to_beats(bytes(frame) + model.fcs(bytes(frame)), nbytes)
    beats[0]["keep"] = full & ~(1 << (nbytes - 1))
    assert model.is_good(bytes(frame) + model.fcs(bytes(frame)))
    malformed(beats)
    await tb.check()


# --- Layer 3: the hardware configurations -----------------------------------------------------

CONFIGS = [
    CrcConfig(data_width=8, pipeline=0),
    CrcConfig(data_width=32, pipeline=1),
    CrcConfig(data_width=64, pipeline=1),
    CrcConfig(data_width=128, pipeline=3),
    CrcConfig(data_width=256, pipeline=0),
    CrcConfig(data_width=512, pipeline=2),
]


@pytest.mark.sim
@pytest.mark.parametrize("config", CONFIGS, ids=CrcConfig.slug)
def test_crc(config):
    harness.run(Crc32(config), config, toplevel="crc32", test_module=__name__)
