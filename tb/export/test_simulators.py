# SPDX-License-Identifier: BSD-2-Clause
"""The Verilog ``make verilog`` writes, in the tools an integrator uses: Verilator's lint with
the shipped waivers, and Icarus Verilog, an event-driven simulator.

* Every top passes ``verilator --lint-only -Wall`` with ``verilator.vlt`` and nothing else.
* Every top in Icarus: after reset no output is X or Z.
* One top per family carries a little real traffic in Icarus and under Verilator (the same
  cocotb test): the CRC top gives the catalogue check value and zlib's CRCs, the UALink DL
  looped back to itself delivers every TL flit in order, the ETH-X node looped back to itself
  writes and reads back memory over its own lossless link. Each run records every output
  transfer with its clock number; the two simulators' records must be equal.
"""

import json
import os
import random
import shutil
import subprocess
import zlib
from importlib import resources

import cocotb
import pytest
from amaranth import Module, Signal
from amaranth.back import verilog as amaranth_verilog
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from scaleup_ip.export import TOPS, WAIVERS, FlatPorts, convert, write_top
from sim import harness, toolchain

#: The folder every test here reads the Verilog from: ``make verilog``'s output for the tops'
#: default configurations, written once per source digest.
_FOLDER = toolchain.BUILD / "export"
_ICARUS = shutil.which("iverilog")
_NO_ICARUS = "Icarus Verilog is not installed: apt-get install iverilog"


class _Export:
    """``make verilog``'s folder for this version of the sources, each top written when a test
    first asks for one of its files (``folder / "<top>.v"``), under a lock of its own: the
    regression's two workers write different tops at once rather than one waiting for all."""

    def __init__(self, folder):
        self.folder = folder

    def __truediv__(self, filename):
        top = filename.split(".")[0]
        if top not in TOPS:
            return self.folder / filename           # the waivers, written with the folder
        done = self.folder / f".{top}.done"
        with harness._locked(self.folder / f".{top}.lock"):
            if not done.exists():
                os.environ.setdefault("AMARANTH_USE_YOSYS", "builtin")     # as make verilog
                write_top(TOPS[top], self.folder, None, None)
                done.write_text(top)
        return self.folder / filename


@pytest.fixture(scope="session")
def verilog():
    """The tops' ``.v``, ``.json`` and ``verilator.vlt`` (:class:`_Export`), written once per
    version of the sources and shared by the regression's workers."""
    key = harness._sources_digest()[:16]
    folder = _FOLDER / key
    with harness._locked(_FOLDER / ".lock"):
        if not (folder / WAIVERS).exists():
            for old in _FOLDER.iterdir():           # earlier sources' (the lock file stays)
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
            folder.mkdir(parents=True)
            (folder / WAIVERS).write_text(
                resources.files("scaleup_ip.export").joinpath(WAIVERS).read_text())
    return _Export(folder)


@pytest.mark.parametrize("name", TOPS)
def test_verilator_lint(verilog, name):
    toolchain.setup()
    done = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", name,
                           str(verilog / "verilator.vlt"), str(verilog / f"{name}.v")],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "%Warning" not in done.stderr, done.stderr[-3000:]


def _reset_bench(name, ports):
    """A Verilog testbench: inputs held at 0, reset for four clocks, then every output
    checked for X or Z at once and after three more clocks."""
    inputs = [p for p in ports if p["direction"] == "input" and p["name"] not in ("clk", "rst")]
    outputs = [p for p in ports if p["direction"] == "output"]

    def decl(kind, port):
        width = f"[{port['width'] - 1}:0] " if port["width"] > 1 else ""
        return f"  {kind} {width}{port['name']}{' = 0' if kind == 'reg' else ''};"

    checks = "\n".join(f"      if ($isunknown({p['name']})) begin "
                       f"$display(\"X after reset: {p['name']} = %b\", {p['name']}); "
                       f"bad = bad + 1; end" for p in outputs)
    return "\n".join([
        "`timescale 1ns/1ps", "module bench;", "  reg clk = 0;", "  reg rst = 1;",
        *(decl("reg", p) for p in inputs), *(decl("wire", p) for p in outputs),
        f"  {name} dut(" + ", ".join(f".{p['name']}({p['name']})" for p in ports) + ");",
        "  always #5 clk = ~clk;", "  integer bad = 0;", "  integer pass;", "  initial begin",
        "    repeat (4) @(posedge clk);", "    rst <= 0;",
        "    for (pass = 0; pass < 2; pass = pass + 1) begin",
        "      @(negedge clk);", checks, "      repeat (3) @(posedge clk);", "    end",
        "    $display(\"UNKNOWN %0d\", bad);", "    $finish;", "  end", "endmodule", ""])


@pytest.mark.skipif(_ICARUS is None, reason=_NO_ICARUS)
@pytest.mark.parametrize("name", TOPS)
def test_icarus_no_x_after_reset(verilog, name, tmp_path):
    ports = json.loads((verilog / f"{name}.json").read_text())["ports"]
    stdout = _icarus(tmp_path, _reset_bench(name, ports), verilog / f"{name}.v")
    assert "UNKNOWN 0" in stdout, stdout[-3000:]


def _icarus(folder, bench, *sources):
    """Compile the Verilog testbench ``bench`` with ``sources`` in Icarus, run it, return what
    it printed."""
    (folder / "bench.v").write_text(bench)
    subprocess.run(["iverilog", "-g2012", "-o", str(folder / "bench.vvp"), str(folder / "bench.v"),
                    *map(str, sources)], check=True)
    return subprocess.run(["vvp", "-n", str(folder / "bench.vvp")], capture_output=True,
                          text=True, check=True).stdout


class _Constant(wiring.Component):
    """A struct whose constant field sits beside one written in a case statement: Amaranth's
    own Verilog sets the constant in an ``always @*`` block that reads nothing."""

    def __init__(self):
        super().__init__({"sel": In(2), "o": Out(data.StructLayout({"code": 3, "kind": 4}))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.o.kind.eq(3)
        with m.Switch(self.sel), m.Case(1):
            m.d.comb += self.o.code.eq(4)
        m.d.sync += Signal().eq(self.sel[0])          # a clock domain, as every top has
        return m


@pytest.mark.skipif(_ICARUS is None, reason=_NO_ICARUS)
@pytest.mark.parametrize("ours", [False, True])
def test_icarus_check_sees_x(ours, tmp_path):
    """The reset check finds the X that Amaranth's own Verilog leaves in Icarus, and none in
    ours."""
    source = (convert(_Constant(), "top") if ours
              else amaranth_verilog.convert(_Constant(), name="top", emit_src=False))
    (tmp_path / "top.v").write_text(source)
    ports = [{"name": "clk", "direction": "input", "width": 1},
             {"name": "rst", "direction": "input", "width": 1},
             {"name": "sel", "direction": "input", "width": 2},
             {"name": "o", "direction": "output", "width": 7}]
    stdout = _icarus(tmp_path, _reset_bench("top", ports), tmp_path / "top.v")
    assert ("UNKNOWN 0" in stdout) == ours, stdout


@pytest.mark.skipif(_ICARUS is None, reason=_NO_ICARUS)
def test_readme_verilog_example(verilog, tmp_path):
    """The README's Verilog example, in Icarus: the catalogue check value of ``123456789``."""
    from tb.test_install import readme_block
    (tmp_path / "frame_crc.v").write_text(readme_block("verilog", "### In Verilog"))
    bench = """`timescale 1ns/1ps
module bench;
  reg clk = 0, rst = 1, last = 0, valid = 0;
  reg [63:0] data = 0; reg [7:0] keep = 0;
  wire ready, crc_valid; wire [31:0] crc;
  frame_crc dut(.clk(clk), .rst(rst), .data(data), .keep(keep), .last(last), .valid(valid),
                .ready(ready), .crc(crc), .crc_valid(crc_valid));
  always #5 clk = ~clk;
  always @(posedge clk) if (crc_valid) $display("CRC %h", crc);
  initial begin
    repeat (4) @(posedge clk); rst <= 0;
    @(posedge clk); data <= 64'h3837363534333231; keep <= 8'hff; valid <= 1;
    @(posedge clk); while (!ready) @(posedge clk);
    data <= 64'h39; keep <= 8'h01; last <= 1;
    @(posedge clk); while (!ready) @(posedge clk);
    valid <= 0; last <= 0;
    repeat (20) @(posedge clk);
    $finish;
  end
endmodule
"""
    stdout = _icarus(tmp_path, bench, tmp_path / "frame_crc.v", verilog / "crc32_d64.v")
    assert stdout.split().count("CRC") == 1 and "CRC cbf43926" in stdout, stdout


# -- traffic, the same cocotb test in both simulators -------------------------------------------

#: Family -> (top, cocotb test).
FAMILIES = {"crc": ("crc32_d64", "crc_traffic"), "ualink": ("ualink_dl", "dl_traffic"),
            "ethx": ("ethx_node", "ethx_traffic")}
#: Where a run writes its record (set by the pytest side).
_RECORD = "EXPORT_RECORD"


def _record(events):
    with open(os.environ[_RECORD], "w") as out:
        json.dump(events, out)


async def _start(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0


def _set_inputs_zero(dut, ports):
    for port in ports:
        if port["direction"] == "input" and port["name"] not in ("clk", "rst"):
            getattr(dut, port["name"]).value = 0


def _ports(name):
    return [port.as_dict() for port in _flat(name).ports]


def _flat(name):
    top = TOPS[name]
    flat = FlatPorts(top.build(), top.names)
    flat._MustUse__silence = True
    flat._inner._MustUse__silence = True
    return flat


@cocotb.test()
async def crc_traffic(dut):
    """``123456789`` (the catalogue check value), then 20 random frames of 1 to 40 bytes, with
    the stream stalled at random; every result recorded with its clock."""
    rng = random.Random(int(os.environ["EXPORT_SEED"]))
    _set_inputs_zero(dut, _ports("crc32_d64"))
    await _start(dut)
    frames = [b"123456789"] + [rng.randbytes(rng.randint(1, 40)) for _ in range(20)]
    events, clock = [], 0

    async def watch():
        nonlocal clock
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            clock += 1
            if dut.o_tvalid.value and dut.o_tready.value:
                events.append([clock, int(dut.o_tdata.value)])

    cocotb.start_soon(watch())
    for frame in frames:
        for offset in range(0, len(frame), 8):
            chunk = frame[offset:offset + 8]
            await RisingEdge(dut.clk)
            dut.o_tready.value = rng.random() < 0.8
            dut.i_tdata.value = int.from_bytes(chunk, "little")
            dut.i_tkeep.value = (1 << len(chunk)) - 1
            dut.i_tlast.value = offset + 8 >= len(frame)
            dut.i_tvalid.value = 1
            await ReadOnly()
            while not dut.i_tready.value:
                await RisingEdge(dut.clk)
                await ReadOnly()
        await RisingEdge(dut.clk)
        dut.i_tvalid.value = 0
    dut.o_tready.value = 1
    await ClockCycles(dut.clk, 20)
    crcs = [value & 0xFFFFFFFF for _, value in events]
    assert crcs == [zlib.crc32(frame) for frame in frames]
    assert crcs[0] == 0xCBF43926
    _record(events)


@cocotb.test()
async def dl_traffic(dut):
    """The DL's PHY side looped back to itself a clock later; 200 random TL flits in, with
    stalls on both TL streams: every one out in order; every TL flit out recorded."""
    from scaleup_ip.dl import ACK_TIMEOUT_DEFAULT, REPLAY_LIMIT_DEFAULT
    rng = random.Random(int(os.environ["EXPORT_SEED"]))
    _set_inputs_zero(dut, _ports("ualink_dl"))
    dut.ack_timeout.value = ACK_TIMEOUT_DEFAULT
    dut.replay_limit.value = REPLAY_LIMIT_DEFAULT
    dut.enable.value = 1
    await _start(dut)
    sent = [(rng.getrandbits(512), rng.getrandbits(2)) for _ in range(200)]
    events = []

    def watch(clock):
        if dut.tl_out_tvalid.value and dut.tl_out_tready.value:
            events.append([clock, int(dut.tl_out_tdata.value), int(dut.tl_out_tuser.value)])

    def stall():
        dut.tl_out_tready.value = rng.random() < 0.7

    cocotb.start_soon(_loopback(dut, "phy_out", "phy_in", ("tdata", "tlast"), watch, stall))
    for data, msg in sent:
        await RisingEdge(dut.clk)
        dut.tl_in_tdata.value, dut.tl_in_tuser.value, dut.tl_in_tvalid.value = data, msg, 1
        await ReadOnly()
        while not dut.tl_in_tready.value:
            await RisingEdge(dut.clk)
            await ReadOnly()
        await RisingEdge(dut.clk)
        dut.tl_in_tvalid.value = 0
        if rng.random() < 0.3:
            await ClockCycles(dut.clk, rng.randint(1, 5))
    for _ in range(20000):
        if len(events) == len(sent):
            break
        await RisingEdge(dut.clk)
    assert [(data, msg) for _, data, msg in events] == sent
    await ClockCycles(dut.clk, 50)
    assert len(events) == len(sent), "a TL flit came out twice"
    _record(events)


async def _loopback(dut, out, into, fields, watch=None, drive=None):
    """Stream ``out`` of ``dut`` into its ``into`` a clock later, every beat kept until taken
    (``out`` is always ready). Each clock, right after the edge, ``drive()`` may set inputs;
    then, with the values settled, ``watch(clock)`` may look at outputs."""
    beats, clock = [], 0
    getattr(dut, f"{out}_tready").value = 1
    while True:
        await RisingEdge(dut.clk)
        clock += 1
        getattr(dut, f"{into}_tvalid").value = bool(beats)
        if beats:
            for field, value in zip(fields, beats[0]):
                getattr(dut, f"{into}_{field}").value = value
        if drive:
            drive()
        await ReadOnly()
        if beats and getattr(dut, f"{into}_tready").value:
            beats.pop(0)
        if getattr(dut, f"{out}_tvalid").value:
            beats.append([int(getattr(dut, f"{out}_{field}").value) for field in fields])
        if watch:
            watch(clock)


@cocotb.test()
async def ethx_traffic(dut):
    """The node's Ethernet port looped back to itself; the GPU side writes 16 random bursts to
    its own node's memory and reads them back; every AXI response recorded."""
    from cocotbext.axi import AxiBus, AxiMaster, AxiRam

    from scaleup_ip.ethx import user_layout, window_layout
    from scaleup_ip.ethx.link import default_settings, settings_layout

    config = TOPS["ethx_node"].config
    rng = random.Random(int(os.environ["EXPORT_SEED"]))
    _set_inputs_zero(dut, _ports("ethx_node"))
    node = 1
    dut.node.value = node
    window = {"base": 0, "size_log2": 20, "sources": 1 << node, "enable": 1}
    dut.windows.value = data.ArrayLayout(window_layout(config), config.windows).const(
        [window]).as_bits()
    dut.link_settings.value = settings_layout(config.link).const(
        default_settings(config.link)).as_bits()
    dut.link_up.value = 1
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=1 << 20)
    gpu = AxiMaster(AxiBus.from_prefix(dut, "s_axi"), dut.clk, dut.rst)
    await _start(dut)
    clock = 0

    def count(now):
        nonlocal clock
        clock = now

    cocotb.start_soon(_loopback(dut, "tx", "rx", ("tdata", "tkeep", "tlast", "tuser"), count))
    user = user_layout(config).const({"node": node}).as_bits()
    events = []
    for k in range(16):
        address = rng.randrange(0, 1 << 16) * 8
        payload = rng.randbytes(rng.choice((8, 24, 64, 200)))
        write = await gpu.write(address, payload, user=user)
        events.append([clock, "B", int(write.resp)])
        read = await gpu.read(address, len(payload), user=user)
        events.append([clock, "R", int(read.resp), read.data.hex()])
        assert read.data == payload, f"burst {k}"
        assert ram.read(address, len(payload)) == payload
    _record(events)


def _run_icarus(verilog, name, test, seed, record, tmp_path):
    from cocotb_tools.runner import get_runner
    runner = get_runner("icarus")
    runner.build(sources=[verilog / f"{name}.v"], hdl_toplevel=name,
                 build_dir=tmp_path / "icarus", timescale=("1ns", "1ps"))
    results = runner.test(test_module=__name__, hdl_toplevel=name, testcase=test,
                          build_dir=tmp_path / "icarus", test_dir=tmp_path / "icarus",
                          extra_env={_RECORD: str(record), "EXPORT_SEED": str(seed)})
    failed = harness._failed_tests(results)
    assert not failed, f"{test} failed in Icarus: see {tmp_path / 'icarus'}"


@pytest.mark.skipif(_ICARUS is None, reason=_NO_ICARUS)
#: The UALink link's run in Icarus takes longest: it runs in ``make soak`` only (the
#: regression's time budget); its Verilog is linted and checked free of X here all the same.
@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.soak_only)
                                    if f == "ualink" else f for f in FAMILIES])
def test_traffic_icarus_and_verilator(verilog, family, tmp_path):
    name, test = FAMILIES[family]
    seed = harness.seed()
    print(f"{family}: SEED={seed}")
    _run_icarus(verilog, name, test, seed, tmp_path / "icarus.json", tmp_path)
    top = TOPS[name]
    core = top.build()
    core._MustUse__silence = True       # the exported Verilog is built, not converted again
    flat = FlatPorts(core, top.names)
    flat.OPT_FAST = "-O0"           # a few thousand clocks: half the build, and fast enough
    harness.run(flat, top.config, toplevel=name, verilog=(verilog / f"{name}.v").read_text(),
                test_module=__name__, testcase=test, seed_value=seed,
                extra_env={_RECORD: str(tmp_path / "verilator.json"), "EXPORT_SEED": str(seed)})
    icarus = json.loads((tmp_path / "icarus.json").read_text())
    verilator = json.loads((tmp_path / "verilator.json").read_text())
    assert icarus, "no transfer recorded"
    assert icarus == verilator, "Icarus and Verilator disagree"
