"""Tests of rtl/export.py: the Verilog for integrators."""

import json

import pytest
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from rtl.crc import Crc32, CrcConfig
from rtl.export import TOPS, FlatPorts, main
from rtl.model import crc32 as model


def test_writes_every_top(tmp_path):
    main([str(tmp_path)])
    for name in TOPS:
        text = (tmp_path / f"{name}.v").read_text()
        ports = json.loads((tmp_path / f"{name}.json").read_text())["ports"]
        assert f"module {name}(" in text
        assert "/work/" not in text and ".py:" not in text        # emit_src=False
        for port, info in ports.items():
            width = f"[{info['width'] - 1}:0] " if info["width"] > 1 else ""
            direction = "input" if info["dir"] == "In" else "output"
            assert f"  {direction} {width}{port};" in text, port


def test_flat_crc_ports():
    inner = Crc32(CrcConfig(data_width=512, pipeline=2))
    top = FlatPorts(inner)
    inner._MustUse__silence = top._MustUse__silence = True      # inspected, never elaborated
    widths = {name: len(getattr(top, name)) for name in top.signature.members}
    assert widths == {"i_data": 512, "i_keep": 64, "i_last": 1, "i_valid": 1, "i_ready": 1,
                      "o_crc": 32, "o_ok": 1, "o_malformed": 1, "o_valid": 1, "o_ready": 1}


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


def test_flat_wrapper_computes_check_value():
    """The wrapper wires fields to the right ports: "123456789" through the 64-bit top."""
    config = CrcConfig(data_width=64, pipeline=1)
    top = FlatPorts(Crc32(config))
    message = b"123456789"
    results = []

    async def bench(ctx):
        ctx.set(top.o_ready, 1)
        for offset in range(0, len(message), config.bytes_per_beat):
            chunk = message[offset:offset + config.bytes_per_beat]
            ctx.set(top.i_data, int.from_bytes(chunk, "little"))
            ctx.set(top.i_keep, (1 << len(chunk)) - 1)
            ctx.set(top.i_last, offset + config.bytes_per_beat >= len(message))
            ctx.set(top.i_valid, 1)
            await ctx.tick().until(top.i_ready)
        ctx.set(top.i_valid, 0)
        for _ in range(2 * config.latency):
            await ctx.tick()
            if ctx.get(top.o_valid):
                results.append((ctx.get(top.o_crc), ctx.get(top.o_ok), ctx.get(top.o_malformed)))

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert results == [(model.CHECK, 0, 0)]
