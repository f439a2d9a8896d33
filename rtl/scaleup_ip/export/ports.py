# SPDX-License-Identifier: BSD-2-Clause
"""A core's ports as plain Verilog ports with the names integration tools expect, and their map."""

import fnmatch
import inspect
import re

from amaranth import Cat, Module, Shape, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["FlatPorts", "Port"]

#: A stream's payload fields that keep their own AXI4-Stream port; the others go into ``tuser``.
_AXIS_FIELDS = {"data": "tdata", "keep": "tkeep", "last": "tlast"}


class Port:
    """One port of a :class:`FlatPorts` top, as its port map describes it.

    Attributes
    ----------
    name : str
    flow : In or Out
    width : int
    meaning : str
        What the port carries, from the core's documentation of the member it belongs to.
    fields : list of (name, lsb, width)
        The bit fields of a packed port (more than one field), lowest first; empty otherwise.
    """

    def __init__(self, name, flow, width, meaning, fields, value):
        self.name, self.flow, self.width = name, flow, width
        self.meaning, self.fields, self._value = meaning, fields, value

    def as_dict(self):
        """The port's entry in the JSON port map."""
        entry = {"name": self.name, "direction": "input" if self.flow == In else "output",
                 "width": self.width, "clock": "clk", "meaning": self.meaning}
        if self.fields:
            entry["fields"] = [{"name": n, "lsb": lsb, "width": w} for n, lsb, w in self.fields]
        return entry


class FlatPorts(wiring.Component):
    """Wrap a component so that every port is a plain signal named as integration tools expect.

    Naming: a port's path joined with ``_`` (``s_axi_awaddr``, ``m_axi_rdata``: AXI4 ports are
    named so by the cores). A valid/ready stream ``s`` becomes AXI4-Stream ports
    ``s_tdata``, ``s_tkeep``, ``s_tlast`` (its payload's ``data``, ``keep``, ``last``
    fields), ``s_tuser`` (every other payload field, packed in layout order), ``s_tvalid`` and
    ``s_tready``; a payload without a ``data`` field is ``s_tdata`` whole. A UPLI channel
    ``c`` (``vld``, ``payload``, ``credit``) gives ``c_vld``, one ``c_<field>`` per payload
    field, and ``c_credit``. Every multi-field port lists its fields (:class:`Port`).

    Behaviour, latency and throughput are the wrapped component's: the ports are wires.

    Parameters
    ----------
    inner : wiring.Component
    names : dict of str to enum.Enum, optional
        Names of the elements of array ports (counters indexed by an enum), by port name.
    """

    def __init__(self, inner, names=None):
        self._inner = inner
        self.ports = _flat_ports(inner, names or {})
        members = {}
        for port in self.ports:
            if port.name in members or port.name in ("clk", "rst"):
                self._MustUse__silence = True           # never built: nothing to warn about
                raise ValueError(f"Flattened port name {port.name!r} occurs twice")
            members[port.name] = port.flow(port.width)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = self._inner
        for port in self.ports:
            ours = getattr(self, port.name)
            m.d.comb += port._value.eq(ours) if port.flow == In else ours.eq(port._value)
        return m


def _flat_ports(component, names):
    meanings = _member_meanings(type(component), list(component.signature.members))
    ports = []
    for name, member in component.signature.members.items():
        ports += _ports(name, member, getattr(component, name), meanings.get(name, ""), names)
    return ports


def _ports(name, member, value, meaning, names):
    if member.is_port:
        return [_port(name, member.flow, member.shape, value, meaning, names)]
    members = member.signature.members
    if set(members) == {"payload", "valid", "ready"}:
        return _stream(name, members, value, meaning)
    ports = []
    for sub, submember in members.items():
        subvalue = getattr(value, sub)
        if sub == "payload" and isinstance(submember.shape, data.StructLayout):
            for field, shape in _struct(submember.shape):
                ports.append(_port(f"{name}_{field}", submember.flow, shape, subvalue[field],
                                   f"{meaning} Payload field {field}.", names))
        else:
            ports += _ports(f"{name}_{sub}", submember, subvalue, meaning, names)
    return ports


def _struct(layout):
    return [(field, member.shape) for field, member in layout]


def _stream(name, members, value, meaning):
    payload, flow = members["payload"], members["payload"].flow
    layout = payload.shape
    fields = _struct(layout) if isinstance(layout, data.StructLayout) else []
    ports = []
    if any(field == "data" for field, _ in fields):
        user = []
        for field, shape in fields:
            if field in _AXIS_FIELDS:
                ports.append(Port(f"{name}_{_AXIS_FIELDS[field]}", flow, Shape.cast(shape).width,
                                  f"{meaning} Payload field {field}.", [],
                                  Value.cast(value.payload[field])))
            else:
                user.append((field, shape))
        if user:
            lsb, packed = 0, []
            for field, shape in user:
                packed.append((field, lsb, Shape.cast(shape).width))
                lsb += Shape.cast(shape).width
            ports.append(Port(f"{name}_tuser", flow, lsb,
                              f"{meaning} Payload field{'s' if len(user) > 1 else ''} "
                              f"{', '.join(f for f, _ in user)}.",
                              packed if len(packed) > 1 else [],
                              Cat(*(Value.cast(value.payload[f]) for f, _ in user))))
    else:
        ports.append(_port(f"{name}_tdata", flow, layout, value.payload, f"{meaning} Payload.",
                           {}))
    ports.append(Port(f"{name}_tvalid", members["valid"].flow, 1, f"{meaning} Valid.", [],
                      value.valid))
    ports.append(Port(f"{name}_tready", members["ready"].flow, 1, f"{meaning} Ready.", [],
                      value.ready))
    return ports


def _port(name, flow, shape, value, meaning, names):
    return Port(name, flow, Shape.cast(shape).width, meaning,
                _fields(shape, names.get(name)), Value.cast(value))


def _fields(shape, names=None, prefix="", lsb=0):
    """(name, lsb, width) of every leaf field of a layout, nested names joined with ``.``."""
    if isinstance(shape, data.StructLayout):
        parts = [(name, member.offset, member.shape) for name, member in shape]
    elif isinstance(shape, data.ArrayLayout):
        element = Shape.cast(shape.elem_shape).width if not isinstance(
            shape.elem_shape, data.Layout) else shape.elem_shape.size
        labels = ([member.name.lower() for member in names] if names is not None
                  else [f"[{k}]" for k in range(shape.length)])
        parts = [(labels[k] if k < len(labels) else f"[{k}]", k * element, shape.elem_shape)
                 for k in range(shape.length)]
    else:
        return [(prefix.rstrip("."), lsb, Shape.cast(shape).width)] if prefix else []
    fields = []
    for name, offset, sub in parts:
        sep = "" if name.startswith("[") else "."
        fields += _fields(sub, None, f"{prefix.rstrip('.')}{sep if prefix else ''}{name}.",
                          lsb + offset)
    return fields


def _member_meanings(cls, order):
    """Member name -> meaning, from the numpydoc ``Members`` section of ``cls``'s docstring.

    An entry ``a, b, c : Type`` documents each name; ``a, ..., d`` every member from ``a`` to
    ``d`` in signature order. The meaning is the entry's first sentence.
    """
    doc = inspect.getdoc(cls) or ""
    section = re.search(r"^Members\n-------\n(.*?)(?:\n\n[A-Z][a-z]+\n-+\n|\Z)", doc, re.S | re.M)
    meanings = {}
    if not section:
        return meanings
    entries = re.findall(r"^(\S[^\n]*)\n((?:    [^\n]*\n?|\n(?=    ))*)", section.group(1), re.M)
    for head, body in entries:
        text = _plain(" ".join(body.split()))
        first = re.match(r"(.+?\.)(\s|$)", text)
        meaning = first.group(1) if first else text
        # "a : In(1), b : Out(2)" and "a : In(1); b : Out(2)" document a and b; "a, ..., d" a
        # range; "a_* : Out(...)" every member the pattern matches.
        names = [n.strip() for part in re.split(r"[,;]\s*(?![^(]*\))", head)
                 for n in [part.split(":")[0]] if n.strip()]
        listed = []
        for k, n in enumerate(names):
            if "*" in n:
                listed += fnmatch.filter(order, n)
            elif n == "..." and 0 < k < len(names) - 1 and names[k - 1] in order \
                    and names[k + 1] in order:
                listed += order[order.index(names[k - 1]) + 1:order.index(names[k + 1])]
            else:
                listed.append(n)
        for n in listed:
            meanings.setdefault(n, meaning)
    return meanings


def _plain(text):
    """Documentation text without Sphinx roles: ``:class:`~a.b.C``` -> ``C``."""
    text = re.sub(r":\w+:`~?([\w.]+)`", lambda m: m.group(1).rsplit(".", 1)[-1], text)
    return text.replace("``", "`")
