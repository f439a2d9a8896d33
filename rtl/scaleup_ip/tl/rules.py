# SPDX-License-Identifier: BSD-2-Clause
"""Legality rules of UPLI requests and responses, shared by the TL receiver (which checks
fields from the link, README §4) and the UPLI checker in front of the packer (which keeps
the same fields from ever being sent, README §5)."""

from amaranth import Const, Mux, Signal

from .layout import BEAT_BYTES, ReqCmd, Status
from .logic import plus_one

__all__ = ["LEGAL_COMMANDS", "READ_STATUSES", "WRITE_STATUSES", "legal_command",
           "legal_status", "request_beats", "request_length_ok"]

#: [Table 2-6] legal request commands (README §4).
LEGAL_COMMANDS = frozenset([0x03, *range(0x08, 0x10), 0x28, 0x29, 0x2A, *range(0x2C, 0x30),
                            0x30, 0x32, *range(0x3C, 0x40)])
#: [Tables 2-9, 2-12] legal response status codes.
READ_STATUSES = frozenset(s.value for s in Status if s is not Status.ISOLATE)
WRITE_STATUSES = frozenset(s.value for s in Status)

#: Bytes of the block a request must not leave [§2.7.4].
_BLOCK_BYTES = 256
#: log2 of the beat size: byte lane = address mod 64 [§2.8].
_BEAT_SHIFT = BEAT_BYTES.bit_length() - 1


def _mask(values, width):
    return Const(sum(1 << v for v in values), width)


def legal_command(cmd):
    """1 when ``cmd`` (6-bit ReqCmd) is in :data:`LEGAL_COMMANDS`."""
    return _mask(LEGAL_COMMANDS, 1 << len(cmd)).bit_select(cmd, 1)


def legal_status(rd, status):
    """1 when ``status`` is legal for a read (``rd`` = 1) or a write response."""
    return Mux(rd, _mask(READ_STATUSES, 16).bit_select(status, 1),
               _mask(WRITE_STATUSES, 16).bit_select(status, 1))


def request_beats(cmd, num_beats):
    """Data beats of a request: ``num_beats + 1`` for a command with data (CMD[5]), else 0."""
    return Mux(cmd[5], plus_one(num_beats), 0)


def request_length_ok(m, cmd, a256, length, num_beats, name):
    """README §4 length checks of a request; returns a 1-bit signal.

    ``a256`` is ReqAddr[7:0], ``length`` ReqLen (doublewords − 1). Reads and write-class
    commands stay inside their 256-byte block; a write-class command's NumBeats matches its
    address and length; a WriteFull is 64-byte aligned and whole beats; an AtomicR/NR has one
    beat. Vendor-defined read and atomic commands are not checked.
    """
    nbytes = Signal(9, name=f"{name}_bytes")
    in_block = Signal(name=f"{name}_in_block")
    beats_ok = Signal(name=f"{name}_beats_ok")
    ok = Signal(name=f"{name}_ok")
    lane = a256[:_BEAT_SHIFT]                              # address mod 64
    m.d.comb += [
        nbytes.eq((length + 1) << 2),
        in_block.eq(a256 + nbytes <= _BLOCK_BYTES),
        beats_ok.eq(num_beats + 1 == ((lane + nbytes + BEAT_BYTES - 1) >> _BEAT_SHIFT)),
    ]
    with m.If(cmd == ReqCmd.READ.value):
        m.d.comb += ok.eq(in_block)
    with m.Elif(cmd[4:6] == 0b10):
        full = cmd == ReqCmd.WRITE_FULL.value
        m.d.comb += ok.eq(in_block & beats_ok & (~full | ((lane == 0) & (length[:4] == 0xF))))
    with m.Elif((cmd == ReqCmd.ATOMIC_R.value) | (cmd == ReqCmd.ATOMIC_NR.value)):
        m.d.comb += ok.eq(num_beats == 0)
    with m.Else():
        m.d.comb += ok.eq(1)
    return ok
