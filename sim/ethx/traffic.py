# SPDX-License-Identifier: BSD-2-Clause
"""Random AXI4 accesses of every burst type for the ETH-X system tests, and what they do to a
memory model (byte array), from the golden model's beat addresses [AXI4 A3.4.1].

cocotbext-axi's AxiMaster places every burst's beats on the lanes an INCR burst would use; that
is right for WRAP bursts whose wrap boundary is at least the bus width and for FIXED bursts of
full-width beats, so only those are drawn (narrow WRAP and FIXED bursts are tested against
the golden model in the block tests)."""

from dataclasses import dataclass

from cocotbext.axi import AxiBurstType

from scaleup_ip.model.ethx import bridge as model

__all__ = ["Access", "random_access"]


@dataclass(frozen=True)
class Access:
    """One AxiMaster call: ``length`` bytes at ``address`` in beats of ``2^size`` bytes."""
    write: bool
    address: int
    length: int
    size: int
    burst: AxiBurstType

    def beats(self):
        """(address, bytes) of each beat of the one burst a WRAP or FIXED access is."""
        step = 1 << self.size
        addresses = model.beat_addresses(self.address, self.length // step - 1, self.size,
                                         int(self.burst))
        return [(a, step) for a in addresses]

    def expect(self, memory):
        """The bytes a read returns from ``memory``."""
        if self.burst == AxiBurstType.INCR:
            return bytes(memory[self.address:self.address + self.length])
        return b"".join(bytes(memory[a:a + n]) for a, n in self.beats())

    def apply(self, memory, data):
        """Do the write of ``data`` on ``memory``."""
        if self.burst == AxiBurstType.INCR:
            memory[self.address:self.address + self.length] = data
            return
        for k, (a, n) in enumerate(self.beats()):
            memory[a:a + n] = data[k * n:(k + 1) * n]

    def call(self, gpu, rng, **kwargs):
        """Start it on ``gpu`` (an AxiMaster); returns (event, the written data or None)."""
        if self.write:
            data = rng.randbytes(self.length)
            return gpu.init_write(self.address, data, size=self.size, burst=self.burst,
                                  **kwargs), data
        return gpu.init_read(self.address, self.length, size=self.size, burst=self.burst,
                             **kwargs), None


def random_access(rng, bus_bytes, base, span):
    """A random legal access inside ``base .. base + span`` (``span`` >= 8 KB): INCR of any
    length and size (AxiMaster cuts it into bursts), WRAP of 2, 4, 8 or 16 beats, FIXED of 1 to
    16 full-width beats."""
    write = rng.random() < 0.5
    kind = rng.choice([AxiBurstType.INCR] * 4 + [AxiBurstType.WRAP, AxiBurstType.FIXED])
    top = bus_bytes.bit_length() - 1
    if kind == AxiBurstType.INCR:
        size = rng.randrange(top + 1)
        length = rng.choice([1, 8, 64, 128, rng.randrange(1, 2500)])
        address = base + rng.randrange(span - length)
        return Access(write, address, length, size, kind)
    if kind == AxiBurstType.WRAP:
        beats = rng.choice([2, 4, 8, 16])
        size = rng.choice([s for s in range(top + 1) if (beats << s) >= bus_bytes])
        total = beats << size
        while True:         # AxiMaster would cut a burst it thinks runs past 4 KB
            start = base + rng.randrange(span // total - 1) * total
            if start % 4096 + 2 * total <= 4096:
                return Access(write, start + rng.randrange(beats) * (1 << size), total, size,
                              kind)
    beats = rng.randrange(1, 17)
    while True:
        address = base + rng.randrange(span // bus_bytes - 1) * bus_bytes
        if address % 4096 + beats * bus_bytes <= 4096:
            return Access(write, address, beats * bus_bytes, top, kind)
