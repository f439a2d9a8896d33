"""The simulation harness refuses Verilog whose simulation would differ from synthesis."""

import pytest
from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from sim.harness import _check_constant_blocks

_pair = data.StructLayout({"code": 3, "kind": 4})


class _Field(wiring.Component):
    """A struct whose constant ``kind`` sits beside a field written in a case statement (as the
    packer's compressed field did before its fix), or not."""

    def __init__(self, in_case):
        self._in_case = in_case
        super().__init__({"sel": In(2), "o": Out(_pair)})

    def elaborate(self, platform):
        m = Module()
        target = self.o.code if self._in_case else Signal(3)
        m.d.comb += self.o.kind.eq(3)
        with m.Switch(self.sel), m.Case(1):
            m.d.comb += target.eq(4)
        if not self._in_case:
            m.d.comb += self.o.code.eq(target)
        return m


def test_constant_bits_in_a_never_running_block_are_refused():
    source = verilog.convert(_Field(in_case=True), name="top", emit_src=False)
    with pytest.raises(RuntimeError, match="never run in simulation"):
        _check_constant_blocks(source, "top")


def test_the_same_struct_written_outside_a_case_passes():
    _check_constant_blocks(verilog.convert(_Field(in_case=False), name="top", emit_src=False),
                           "top")
