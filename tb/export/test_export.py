# SPDX-License-Identifier: BSD-2-Clause
"""The integration tops (``scaleup_ip.export``): port names and maps, the command line, and the
flattening wrapper's wiring, in Amaranth's simulator."""

import json

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Cat, Module, signed
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from scaleup_ip.crc import Crc32, CrcConfig
from scaleup_ip.export import TOPS, FlatPorts, main, memory_init_by_rows
from scaleup_ip.model.crc import crc32 as model

#: What the port map must hold for every port.
_ENTRY = {"name", "direction", "width", "clock", "meaning"}


def _built(top, config=None):
    core = top.build(config)
    flat = FlatPorts(core, top.names)
    core._MustUse__silence = flat._MustUse__silence = True     # inspected, never elaborated
    return flat


@pytest.mark.parametrize("name", TOPS)
def test_every_port_documented(name):
    """Every port of every top has a meaning from the core's documentation, and every packed
    port's fields tile it exactly."""
    flat = _built(TOPS[name])
    for port in flat.ports:
        assert port.meaning.strip(), f"{name}.{port.name} has no meaning"
        entry = port.as_dict()
        assert _ENTRY <= set(entry)
        if port.fields:
            covered = sorted((lsb, width) for _, lsb, width in port.fields)
            at = 0
            for lsb, width in covered:
                assert lsb == at, f"{name}.{port.name}: field gap or overlap at bit {at}"
                at += width
            assert at == port.width, f"{name}.{port.name}: fields cover {at} of {port.width}"


@pytest.mark.parametrize("name", ["ethx_bridge", "ethx_node"])
def test_axi_ports_named_for_vendor_tools(name):
    names = {port.name for port in _built(TOPS[name]).ports}
    for channel in ("aw", "w", "b", "ar", "r"):
        assert f"s_axi_{channel}valid" in names and f"m_axi_{channel}ready" in names
    assert {"s_axi_awaddr", "s_axi_wdata", "s_axi_wstrb", "m_axi_rdata", "m_axi_rlast"} <= names


def test_streams_named_axi4_stream():
    names = [port.name for port in _built(TOPS["ethx_link"]).ports]
    for stream in ("i", "o", "tx", "rx"):
        assert [n for n in names if n.startswith(f"{stream}_t")] == [
            f"{stream}_{s}" for s in ("tdata", "tkeep", "tlast", "tuser", "tvalid", "tready")]


def test_counter_fields_named_by_their_enum():
    port = {p.name: p for p in _built(TOPS["ualink_dl"]).ports}["tx_counts"]
    assert port.fields[0] == ("flits", 0, 32) and port.fields[-1] == ("peak", 256, 32)


def test_flat_crc_ports():
    top = _built(TOPS["crc32_d512"])
    assert [(p.name, p.width) for p in top.ports] == [
        ("i_tdata", 512), ("i_tkeep", 64), ("i_tlast", 1), ("i_tvalid", 1), ("i_tready", 1),
        ("o_tdata", 34), ("o_tvalid", 1), ("o_tready", 1)]
    assert top.ports[5].fields == [("crc", 0, 32), ("ok", 32, 1), ("malformed", 33, 1)]


def test_flat_ports_reject_name_clash():
    class Clash(wiring.Component):
        a_b: In(1)
        a: Out(wiring.Signature({"b": Out(1)}))

        def elaborate(self, platform):
            raise NotImplementedError

    clash = Clash()
    clash._MustUse__silence = True
    with pytest.raises(ValueError, match=r"Flattened port name 'a_b' occurs twice"):
        FlatPorts(clash)


def test_command_line_writes_a_configured_top(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--top", "crc32_d64", "--set", "data_width=32",
                 "--set", "pipeline=1", "--name", "crc32_d32"]) == 0
    text = (tmp_path / "crc32_d32.v").read_text()
    ports = json.loads((tmp_path / "crc32_d32.json").read_text())
    assert ports["config"] == {"data_width": 32, "pipeline": 1}
    assert text.startswith("// SPDX-License-Identifier: BSD-2-Clause\n")
    assert "module crc32_d32(clk, rst, i_tdata, i_tkeep, i_tlast, i_tvalid, i_tready," in text
    assert "always @*" not in text and "/work/" not in text and ".py:" not in text
    for port in ports["ports"]:
        width = f"[{port['width'] - 1}:0] " if port["width"] > 1 else ""
        assert f"  {port['direction']} {width}{port['name']};" in text, port
    assert "| `i_tdata` | in | 32 |" in (tmp_path / "crc32_d32.md").read_text()
    assert "lint_off -rule" in (tmp_path / "verilator.vlt").read_text()


@pytest.mark.parametrize("argv, message", [
    (["--top", "crc32_d64", "--set", "width=8"], "crc32_d64 has no configuration field 'width'"),
    (["--top", "crc32_d64", "--set", "data_width=7"], "data_width must be"),
    (["--set", "data_width=8"], "--set and --name apply to one --top"),
    (["--top", "nothing"], "invalid choice: 'nothing'"),
    (["--top", "ethx_node", "--set", "fcs=yes"], "fcs takes true or false"),
])
def test_command_line_errors(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["--out", str(tmp_path)] + argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_help_lists_tops(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in TOPS)


def test_flat_wrapper_computes_check_value():
    """The wrapper wires fields to the right ports: "123456789" through the 64-bit top."""
    config = CrcConfig(data_width=64, pipeline=1)
    top = FlatPorts(Crc32(config))
    message = b"123456789"
    results = []

    async def bench(ctx):
        ctx.set(top.o_tready, 1)
        for offset in range(0, len(message), config.bytes_per_beat):
            chunk = message[offset:offset + config.bytes_per_beat]
            ctx.set(top.i_tdata, int.from_bytes(chunk, "little"))
            ctx.set(top.i_tkeep, (1 << len(chunk)) - 1)
            ctx.set(top.i_tlast, offset + config.bytes_per_beat >= len(message))
            ctx.set(top.i_tvalid, 1)
            await ctx.tick().until(top.i_tready)
        ctx.set(top.i_tvalid, 0)
        for _ in range(2 * config.latency):
            await ctx.tick()
            if ctx.get(top.o_tvalid):
                word = ctx.get(top.o_tdata)
                results.append((word & 0xFFFFFFFF, word >> 32 & 1, word >> 33))

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert results == [(model.CHECK, 0, 0)]      # no FCS follows: not "ok"


class _Memories(wiring.Component):
    """Memories of awkward shapes: signed rows with negative initial values, one bit wide, one
    row deep, rows wider than a machine word, all zero."""

    def __init__(self):
        super().__init__({"addr": In(4), "out": Out(1)})

    def elaborate(self, platform):
        m = Module()
        shapes = [(signed(7), 12, [-1, 5, -64, 63, 0]), (1, 9, [1, 0, 1]), (8, 1, [0xa5]),
                  (131, 16, [(1 << 130) | 3, 1 << 64]), (513, 256, [])]
        taps = []
        for k, (shape, depth, init) in enumerate(shapes):
            m.submodules[f"mem{k}"] = mem = memory.Memory(shape=shape, depth=depth, init=init)
            port = mem.read_port(domain="comb")
            m.d.comb += port.addr.eq(self.addr)
            taps.append(port.data.xor())
        m.d.comb += self.out.eq(Cat(*taps).xor())
        return m


def test_memory_init_text_is_amaranths():
    """The fast emission of memories' initial contents writes exactly the RTLIL text Amaranth's
    own emitter writes."""
    own = rtlil.convert(_Memories(), name="memories", emit_src=False)
    with memory_init_by_rows():
        fast = rtlil.convert(_Memories(), name="memories", emit_src=False)
    assert own.count("$meminit_v2") == 5
    assert fast == own
