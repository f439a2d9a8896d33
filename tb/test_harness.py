# SPDX-License-Identifier: BSD-2-Clause
"""The simulation harness: its Verilog has no process an event-driven simulator could skip,
it caches builds, shares Verilator's runtime objects; ``make sim``'s scenario names and progress
file."""

import dataclasses
import os

import pytest
from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from scaleup_ip.config import BlockConfig
from scaleup_ip.export import convert
from sim import harness, progress, system

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


@pytest.mark.parametrize("in_case", [True, False])
def test_constant_bits_are_continuous_assignments(in_case):
    """Amaranth's own Verilog writes the constant ``kind`` of a struct whose other field is
    written in a case statement in an ``always @*`` block that reads nothing, which an
    event-driven simulator never runs (its outputs stay X); the harness's Verilog (the one
    ``make verilog`` writes) has no such block."""
    if in_case:
        assert "always @*" in verilog.convert(_Field(in_case), name="top", emit_src=False)
    assert "always @*" not in convert(_Field(in_case), "top")


# --- builds, scenarios, progress --------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Config(BlockConfig):
    """A build of :class:`_Field` of its own."""
    in_case: bool = False


def test_a_second_build_neither_converts_nor_compiles(monkeypatch):
    """The quick key skips the conversion to Verilog; a changed configuration is another
    folder."""
    config = _Config()
    folder = harness.build(_Field(in_case=False), config, toplevel="harness_field")
    assert (folder / "harness_field").exists()

    def refuse(*args, **kwargs):
        raise AssertionError("converted again")
    monkeypatch.setattr(harness, "convert", refuse)
    assert harness.build(_Field(in_case=False), config, toplevel="harness_field") == folder
    with pytest.raises(AssertionError, match="converted again"):
        harness.build(_Field(in_case=False), config, toplevel="harness_field",
                      internal=["inner.sig"])


def test_control_file(tmp_path):
    """The model's control file: the top's ports readable, its input (``sel`` of
    :class:`_Field`, which has no clock) writable, and of the signals inside only those
    named."""
    source = verilog.convert(_Field(in_case=False), name="top", emit_src=False)
    (tmp_path / "top.v").write_text(source)
    control = harness._public(tmp_path, "top", ["a.b.sig"]).read_text().splitlines()
    assert control[0] == "`verilator_config"
    assert control[1] == 'public_flat_rd -module "top" -var "*"'
    assert control[2:-1] == ['public_flat_rw -module "top" -var "sel"']
    assert control[-1] == 'public_flat_rw -module "*a.b" -var "sig"'


def test_runtime_objects_are_shared():
    """The runtime objects of the build above were kept for the builds after it."""
    folder = harness.build(_Field(in_case=False), _Config(), toplevel="harness_field")
    runtime = harness._runtime_dir(folder, None).parent
    kept = {path.name for path in runtime.glob("*/*.o")}
    assert {f"{name}.o" for name in harness._RUNTIME} <= kept


def test_runtime_key(tmp_path):
    """Models share the runtime whether make compiles them as one file or several; a model
    that traces has its own."""
    def key(**flags):
        folder = tmp_path / "-".join(f"{k}{v}" for k, v in flags.items())
        folder.mkdir()
        lines = [f"VM_{name} = {flags.get(name, 0)}" for name in ("PARALLEL_BUILDS", "TRACE")]
        (folder / "Vtop_classes.mk").write_text("\n".join(["# flags", *lines, ""]))
        return harness._runtime_dir(folder, ["tools"])
    assert key(PARALLEL_BUILDS=0) == key(PARALLEL_BUILDS=1)
    assert key(TRACE=1) != key(TRACE=0)


def test_runtime_headers_precompiled_and_used():
    """A one-file model and cocotb's main are compiled with the runtime's shared precompiled
    headers forced in, and the compiler used them (``-Winvalid-pch`` would say otherwise)."""
    folder = harness.build(_Field(in_case=False), _Config(), toplevel="harness_field")
    log = (folder / "build.log").read_text()
    compiled = [line.split() for line in log.splitlines() if line.startswith("c++")]
    objects = {words[words.index("-o") + 1]: words for words in compiled if "-c" in words}
    for name in ("verilator.o", "Vtop__ALL.o"):
        header = objects[name][objects[name].index("-include") + 1]
        assert header.endswith("verilated_all.h.fast"), name
        assert os.path.exists(header + ".gch")
    assert "warning" not in log.lower(), "GCC: <header>.gch: not used because ..."


def test_unknown_scenario_names_the_valid_ones():
    assert system.chosen("") == list(system.SUMMARY)
    assert system.chosen("ethx, tl") == ["ethx", "tl"]
    with pytest.raises(SystemExit, match="unknown scenario bogus; the scenarios are: crc, tl"):
        system.chosen("tl,bogus")


def test_long_form(monkeypatch):
    monkeypatch.delenv("SOAK", raising=False)
    assert harness.long_form(1, 10) == 1
    monkeypatch.setenv("SOAK", "1")
    assert harness.long_form(1, 10) == 10


def test_progress_file(tmp_path):
    path = tmp_path / "progress.json"
    assert progress.read(path) is None
    progress._write(path, {"done": 3, "total": 9})
    assert progress.read(path) == {"done": 3, "total": 9}
    assert not path.with_name("progress.json.part").exists()


def test_run_environment_wins(monkeypatch):
    """A run's own variables win over those the shell exports (cocotb's runner lays the
    process's environment over the run's), and the process's come back after it."""
    monkeypatch.setenv("SIM_ETHX_FRAMES", "5000")
    monkeypatch.delenv("SIM_ONLY_HERE", raising=False)
    with harness._environment({"SIM_ETHX_FRAMES": "1000000", "SIM_ONLY_HERE": "1"}):
        assert os.environ["SIM_ETHX_FRAMES"] == "1000000" and os.environ["SIM_ONLY_HERE"] == "1"
    assert os.environ["SIM_ETHX_FRAMES"] == "5000" and "SIM_ONLY_HERE" not in os.environ
