# SPDX-License-Identifier: BSD-2-Clause
"""Verilog that every simulator runs: no process is left for an event-driven simulator to skip."""

import re
from contextlib import contextmanager

from amaranth.back import rtlil
from amaranth.hdl import _nir

from .ports import FlatPorts

__all__ = ["convert", "memory_init_by_rows"]


def convert(top, name, header="", purge=True):
    """Return the Verilog of ``top`` (a component) as module ``name``; a
    :class:`~scaleup_ip.export.FlatPorts` has its ports in the order ``clk``, ``rst``, then
    ``top.ports``.

    Amaranth's own Verilog keeps combinational processes as ``always @*`` blocks; one that
    reads only constants never runs in an event-driven simulator (Icarus, Questa, VCS,
    Xcelium), whose outputs then stay X. Here Yosys turns every process into cells (``proc``),
    so the module holds continuous assignments, clocked blocks and memories only. One round of
    constants folded and identical cells merged (``opt_expr``, ``opt_merge``) makes its
    Verilator model faster; ``opt -fast``'s further rounds (with ``opt_dff``) cost the UALink
    link's conversion 26 s more (86 s against 60) and made the model no faster (its traffic
    made and checked in hardware ran 4.9 s either way). ``header`` (comment lines) goes
    first. ``purge`` drops the named signals that nothing reads (a
    simulation that looks inside keeps them).
    """
    from amaranth._toolchain.yosys import find_yosys       # the one Amaranth converts with

    with memory_init_by_rows():
        text = rtlil.convert(top, name=name, emit_src=False)
    if isinstance(top, FlatPorts):
        text = _order_ports(text, name, ["clk", "rst", *(port.name for port in top.ports)])
    yosys = find_yosys(lambda version: version >= (0, 40))
    script = [f"read_rtlil <<rtlil\n{text}\nrtlil", "proc", "memory_collect",
              "opt_expr", "opt_merge", "opt_clean -purge" if purge else "opt_clean",
              "write_verilog -noattr"]
    verilog = yosys.run(["-q", "-"], "\n".join(script))
    return header + verilog


@contextmanager
def memory_init_by_rows():
    """Within this context Amaranth's RTLIL back-end writes a memory's initial contents from
    its rows at once. Its own emitter makes one netlist constant per bit and then reads them
    back (``rtlil.ModuleEmitter.emit_memory``): 1.5 million of them for the 180 KB of buffers of
    a jumbo-frame ETH-X link pair, 13 of the 21 s that pair converts in. The text is the same,
    byte for byte (``tb/export/test_export.py`` compares them)."""
    original = rtlil.ModuleEmitter.emit_memory

    def emit_memory(self, cell_idx, cell):
        if not cell.width or not cell.depth:
            return original(self, cell_idx, cell)
        mask = (1 << cell.width) - 1
        bits = "".join(format(row & mask, f"0{cell.width}b") for row in reversed(cell.init))
        self.builder.cell("$meminit_v2", ports={
            "ADDR": self.sigspec(),
            "DATA": f"{cell.width * cell.depth}'{bits}",
            "EN": self.sigspec(_nir.Value.ones(cell.width)),
        }, parameters={
            "MEMID": self.memories[cell_idx].memid,
            "ABITS": 0,
            "WIDTH": cell.width,
            "WORDS": cell.depth,
            "PRIORITY": 0,
        }, src_loc=cell.src_loc)

    rtlil.ModuleEmitter.emit_memory = emit_memory
    try:
        yield
    finally:
        rtlil.ModuleEmitter.emit_memory = original


_PORT = re.compile(r"^(\s*wire (?:width \d+ )?)(input|output|inout) (\d+)( +\\(\S+))$", re.M)


def _order_ports(text, name, order):
    """Renumber the top module's ports so that Verilog lists them in ``order``."""
    start = text.index(f"module \\{name}\n")
    end = text.index("\nend\n", start)
    rank = {port: k + 1 for k, port in enumerate(order)}
    body = _PORT.sub(lambda m: f"{m[1]}{m[2]} {rank.get(m[5], len(rank) + int(m[3]))}{m[4]}",
                     text[start:end])
    return text[:start] + body + text[end:]
