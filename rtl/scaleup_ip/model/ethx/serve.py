# SPDX-License-Identifier: BSD-2-Clause
"""The serving side of an ETH-X bridge as the format documentation states it (README §4,
"Serving side"): which requests are refused and why, what memory a served write leaves, and
the records that answer each request. Pure Python, written from the documentation."""

from dataclasses import dataclass
from enum import Enum

from .bridge import (
    WORD,
    ReadData,
    Resp,
    Write,
    WriteResp,
    axi_error,
    beat_addresses,
    beat_words,
    container,
    data_bytes,
)

__all__ = ["Window", "Refusal", "Serve", "DATA_WORDS"]

#: Most data words of a write record the serving side takes [README §4, ours].
DATA_WORDS = 256


@dataclass(frozen=True)
class Window:
    """An access window: ``2**size_log2`` bytes (at least 4 KB) at ``base``, open to the
    sources whose bits are set in ``sources``."""
    base: int
    size_log2: int
    sources: int
    enable: bool = True

    def holds(self, address, source):
        size = max(12, self.size_log2)
        return (self.enable and (address ^ self.base) >> size == 0
                and bool(self.sources >> source & 1))


class Refusal(Enum):
    """Why a request is answered DECERR without memory."""
    STALE = "stale"         # no compression state, or from beyond ``sources``
    DENIED = "denied"       # no enabled window open to its source holds its address
    ILLEGAL = "illegal"     # a burst AXI4 forbids, wider than the bus, or too long a write


class Serve:
    """The serving side of one node: ``memory`` (a bytearray standing for the memory, indexed
    by address modulo its length: a memory that ignores the address bits above it),
    ``windows``, the AXI bus width and address width, and ``read_piece`` (most data bytes of a
    READ_DATA record)."""

    def __init__(self, memory, windows, *, bus_bytes, address_width, read_piece):
        self.memory = memory
        self.windows = windows
        self.bus_bytes, self.address_width, self.read_piece = bus_bytes, address_width, read_piece

    def refusal(self, request, source, *, foreign=False):
        """The :class:`Refusal` of ``request`` (decoded, with its ``stale`` flag) from
        ``source``, or ``None`` if it is served. ``foreign``: the source is at or beyond the
        receiver's ``sources``."""
        if request.stale or foreign:
            return Refusal.STALE
        # The windows compare the address's ``address_width`` bits; bits above them make
        # the request ILLEGAL (an AXI address that wide does not exist) [README §4, ours].
        low = request.addr & ((1 << self.address_width) - 1)
        if not any(w.holds(low, source) for w in self.windows):
            return Refusal.DENIED
        if axi_error(request.addr, request.len, request.size, request.burst,
                     bus_bytes=self.bus_bytes, address_width=self.address_width):
            return Refusal.ILLEGAL
        if isinstance(request, Write) and data_bytes(request.len, request.size) // WORD > DATA_WORDS:
            return Refusal.ILLEGAL
        return None

    def _place(self, address, size):
        """Where a beat's carried bytes start in memory: its container from 8 bytes up, else
        the aligned word that holds it."""
        start = container(address, size) if size >= 3 else address & ~(WORD - 1)
        return start % len(self.memory)

    def write(self, w):
        """Do a served write: only its strobed container bytes change [AXI4 A3.4.3]."""
        step = beat_words(w.size) * WORD
        written = w.written()
        for k, a in enumerate(beat_addresses(w.addr, w.len, w.size, w.burst)):
            start = self._place(a, w.size)
            for b in range(step):
                if written >> (k * step + b) & 1:
                    self.memory[start + b] = w.data[k * step + b]

    def read_bytes(self, r):
        """Where each data byte of a served read's answer comes from: memory indices, in the
        order of the READ_DATA records' data."""
        step = beat_words(r.size) * WORD
        return [self._place(a, r.size) + b
                for a in beat_addresses(r.addr, r.len, r.size, r.burst) for b in range(step)]

    def read(self, r):
        """The READ_DATA records of a served read, from memory now."""
        addrs = beat_addresses(r.addr, r.len, r.size, r.burst)
        step = beat_words(r.size) * WORD
        per = self.read_piece // step
        where = self.read_bytes(r)
        out = []
        for first in range(0, len(addrs), per):
            chunk = addrs[first:first + per]
            data = bytes(self.memory[i] for i in where[first * step:(first + len(chunk)) * step])
            out.append(ReadData(id=r.id, resp=Resp.OKAY, last=first + per >= len(addrs),
                                count=len(chunk) - 1, size=r.size, burst=r.burst, len=r.len,
                                addr=chunk[0] & 0xFFF, data=data))
        return out

    @staticmethod
    def refused(request):
        """The one record that answers a refused request: DECERR, a READ_DATA without data
        for all of a read's beats."""
        if isinstance(request, Write):
            return [WriteResp(id=request.id, resp=Resp.DECERR)]
        return [ReadData(id=request.id, resp=Resp.DECERR, last=True, count=request.len,
                         size=request.size, burst=request.burst, len=request.len,
                         addr=request.addr & 0xFFF, data=None)]

    def answer(self, request, source, *, foreign=False):
        """Serve or refuse ``request``: returns ``(refusal or None, answering records)``."""
        why = self.refusal(request, source, foreign=foreign)
        if why is not None:
            return why, self.refused(request)
        if isinstance(request, Write):
            self.write(request)
            return None, [WriteResp(id=request.id, resp=Resp.OKAY)]
        return None, self.read(request)
