# SPDX-License-Identifier: BSD-2-Clause
"""``python -m scaleup_ip.export`` (``make verilog``): Verilog of the integration tops.

Beside each ``<top>.v``: ``<top>.md`` and ``<top>.json``, its port map (every port's direction,
width, clock and meaning, and the bit fields of every packed port) and configuration; and
``verilator.vlt``, the lint waivers, once per folder.
"""

import argparse
import dataclasses
import json
import os
import sys
from importlib import resources
from pathlib import Path

from .ports import FlatPorts
from .tops import TOPS
from .verilog import convert

__all__ = ["WAIVERS", "main", "write_top"]

#: The lint waivers shipped with the package and written beside the Verilog.
WAIVERS = "verilator.vlt"


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m scaleup_ip.export",
        description="Write Verilog of integration tops, with their port maps "
                    "(<top>.v, <top>.md, <top>.json).",
        epilog="tops: " + "; ".join(f"{name} ({top.summary})" for name, top in TOPS.items()))
    parser.add_argument("--out", default="build/verilog", type=Path,
                        help="folder to write into (default: %(default)s)")
    parser.add_argument("--top", action="append", choices=list(TOPS), metavar="TOP",
                        help="a top to write (repeatable; default: every top)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="change a configuration field of the one --top (repeatable)")
    parser.add_argument("--name", help="the Verilog module's name (default: the top's)")
    parser.add_argument("--list", action="store_true",
                        help="list the tops and their configuration fields, and stop")
    return parser


def _value(field, text):
    kind = field.type
    if kind in (bool, "bool"):
        if text.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"{field.name} takes true or false, not {text!r}")
        return text.lower() in ("true", "1")
    if kind in (int, "int"):
        return int(text, 0)
    return text


def configure(top, settings):
    """``top``'s default configuration with ``settings`` (``FIELD=VALUE`` strings) applied;
    ``ValueError`` names an unknown field or a bad value."""
    fields = {field.name: field for field in dataclasses.fields(top.config)}
    changes = {}
    for setting in settings:
        name, sep, text = setting.partition("=")
        if not sep:
            raise ValueError(f"--set takes FIELD=VALUE, not {setting!r}")
        if name not in fields:
            raise ValueError(f"{top.name} has no configuration field {name!r}; its fields: "
                             + ", ".join(fields))
        changes[name] = _value(fields[name], text)
    return dataclasses.replace(top.config, **changes)


def write_top(top, out, config=None, name=None):
    """Write ``<name>.v``, ``.md`` and ``.json`` of ``top`` built with ``config`` into
    ``out``; return the :class:`FlatPorts` written."""
    config = top.config if config is None else config
    name = name or top.name
    flat = FlatPorts(top.build(config), top.names)
    header = (f"// SPDX-License-Identifier: BSD-2-Clause\n"
              f"// {name}: {top.summary}.\n"
              f"// {top.core.__name__} built by scaleup_ip.export with {config!r}.\n"
              f"// Ports: {name}.md; clk rising edge, rst synchronous and active high.\n")
    (out / f"{name}.v").write_text(convert(flat, name, header))
    ports = [_clock(), _reset()] + [port.as_dict() for port in flat.ports]
    (out / f"{name}.json").write_text(json.dumps(
        {"module": name, "core": top.core.__name__, "summary": top.summary,
         "config": dataclasses.asdict(config), "ports": ports}, indent=2) + "\n")
    (out / f"{name}.md").write_text(_markdown(name, top, config, ports))
    return flat


def _clock():
    return {"name": "clk", "direction": "input", "width": 1, "clock": "clk",
            "meaning": "The clock: every other port is sampled and driven at its rising edge."}


def _reset():
    return {"name": "rst", "direction": "input", "width": 1, "clock": "clk",
            "meaning": "Synchronous reset, active high: every register and counter to its "
                       "initial value."}


def _markdown(name, top, config, ports):
    lines = [f"# `{name}`", "", f"{top.summary}: `{top.core.__name__}` with", "",
             "| field | value |", "|---|---|"]
    lines += [f"| `{k}` | `{v}` |" for k, v in dataclasses.asdict(config).items()]
    lines += ["", "## Ports", "", "| port | dir | width | meaning |", "|---|---|---|---|"]
    lines += [f"| `{p['name']}` | {p['direction'][:-3] if p['direction'] == 'output' else 'in'}"
              f" | {p['width']} | {p['meaning']} |" for p in ports]
    packed = [p for p in ports if p.get("fields")]
    if packed:
        lines += ["", "## Fields of packed ports", ""]
        for p in packed:
            lines += [f"`{p['name']}`: " + ", ".join(
                f"`{f['name']}` [{f['lsb'] + f['width'] - 1}:{f['lsb']}]" for f in p["fields"]),
                ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv=None):
    """The command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        for name, top in TOPS.items():
            fields = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(top.config).items())
            print(f"{name}: {top.summary}\n    {fields}")
        return 0
    tops = args.top or list(TOPS)
    if (args.set or args.name) and len(tops) != 1:
        parser.error("--set and --name apply to one --top")
    try:
        config = configure(TOPS[tops[0]], args.set) if args.set else None
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    os.environ.setdefault("AMARANTH_USE_YOSYS", "builtin")     # never a system Yosys
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / WAIVERS).write_text(
        resources.files(__package__).joinpath(WAIVERS).read_text())
    for name in tops:
        top = TOPS[name]
        flat = write_top(top, args.out, config, args.name)
        print(f"{args.out / (args.name or name)}.v  ({top.core.__name__}, "
              f"{len(flat.ports) + 2} ports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
