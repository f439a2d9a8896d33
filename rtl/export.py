"""``make verilog``: Verilog of every integration top into ``build/verilog/``.

Each top is wrapped so that its stream payloads are split into one port per layout field:
``i_data``, ``i_keep``, ``i_last``, ``i_valid``, ``i_ready``, ``o_crc``, … plus ``clk`` and
``rst`` (synchronous, active high). The Verilog carries no source paths (``emit_src=False``);
a ``<name>.json`` beside it lists the configuration and every port with its direction and width.
"""

import json
import os
import sys
from pathlib import Path

from amaranth import Module, Shape
from amaranth.back import verilog
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In

from .crc import Crc32, CrcConfig
from .dl.dl import UalinkDl
from .dl.layout import DlConfig
from .tl.endpoint import TlEndpoint
from .tl.layout import TlConfig

__all__ = ["TOPS", "FlatPorts", "main"]

#: Integration tops: module name -> (component class, configuration).
TOPS = {
    "crc32_d64": (Crc32, CrcConfig(data_width=64, pipeline=1)),
    "crc32_d512": (Crc32, CrcConfig(data_width=512, pipeline=2)),
    "ualink_tl": (TlEndpoint, TlConfig()),
    "ualink_dl": (UalinkDl, DlConfig()),
}


def _flat_members(component):
    """Yield (port name, flow, shape, getter) for each leaf of ``component``'s ports: a payload
    layout contributes one port per field, named ``<stream>_<field>``."""
    for path, member, value in component.signature.flatten(component):
        *outer, last = map(str, path)
        layout = member.shape if isinstance(member.shape, data.Layout) else None
        if last == "payload" and isinstance(layout, data.StructLayout):
            for name, field in layout:
                yield ("_".join(outer + [name]), member.flow, field.shape,
                       lambda value=value, name=name: value[name])
        else:
            yield "_".join(outer + [last]), member.flow, member.shape, lambda value=value: value


class FlatPorts(wiring.Component):
    """Wrap a component so that every port is a plain signal with a readable name.

    Parameters
    ----------
    inner : wiring.Component
        The wrapped component; its behaviour, latency and throughput are unchanged.

    Members
    -------
    <stream>_<field> : ``In`` or ``Out``, the field's width
        One port per field of each stream payload of ``inner`` (``i_data``, ``o_crc``, …),
        flowing as the stream's payload does.
    <stream>_valid, <stream>_ready : ``In(1)`` or ``Out(1)``
        The stream handshakes.
    <name> : as in ``inner``
        Every other port of ``inner``, its path joined with ``_``.
    """

    def __init__(self, inner):
        self._inner = inner
        members = {}
        for name, flow, shape, _ in _flat_members(inner):
            if name in members:
                self._MustUse__silence = True           # never built: nothing to warn about
                raise ValueError(f"Flattened port name {name!r} occurs twice")
            members[name] = flow(Shape.cast(shape).width)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = self._inner
        for name, flow, _, inner_value in _flat_members(self._inner):
            port = getattr(self, name)
            if flow == In:
                m.d.comb += inner_value().eq(port)
            else:
                m.d.comb += port.eq(inner_value())
        return m


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0] if argv else "build/verilog")
    out.mkdir(parents=True, exist_ok=True)
    os.environ["AMARANTH_USE_YOSYS"] = "builtin"        # never a system Yosys
    for name, (component_class, config) in TOPS.items():
        top = FlatPorts(component_class(config))
        ports = {"clk": {"dir": "In", "width": 1}, "rst": {"dir": "In", "width": 1}}
        ports.update({port: {"dir": member.flow.value, "width": Shape.cast(member.shape).width}
                      for (port,), member, _ in top.signature.flatten(top)})
        (out / f"{name}.v").write_text(verilog.convert(top, name=name, emit_src=False))
        (out / f"{name}.json").write_text(json.dumps(
            {"config": json.loads(config.to_json()), "ports": ports}, indent=2))
        print(f"{out / name}.v  ({component_class.__name__}, {config.slug()}): "
              + ", ".join(ports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
