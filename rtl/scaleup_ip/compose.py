# SPDX-License-Identifier: BSD-2-Clause
"""Building a component out of others: their ports passed on under a prefix, and their
configurations out of one that holds the fields of all."""

import dataclasses

from amaranth.lib.wiring import In

__all__ = ["other_ports", "part_config", "pass_ports", "port_members"]


def part_config(config_class, config):
    """The ``config_class`` configuration made of the fields of ``config`` (a configuration
    that holds every field of ``config_class``, and others)."""
    return config_class(**{field.name: getattr(config, field.name)
                           for field in dataclasses.fields(config_class)})


def other_ports(component, keep):
    """The names of ``component``'s members but those in ``keep``."""
    return tuple(name for name in component.signature.members if name not in keep)


def port_members(component, prefix, skip=()):
    """The members of ``component`` (built for its signature only, never elaborated) but those
    named in ``skip``, each as ``<prefix>_<name>`` (``name`` when ``prefix`` is empty): the
    ports :func:`pass_ports` joins."""
    component._MustUse__silence = True
    return {_prefixed(prefix, name): member
            for name, member in component.signature.members.items() if name not in skip}


def _prefixed(prefix, name):
    return f"{prefix}_{name}" if prefix else name


def pass_ports(m, outer, prefix, inner, skip=()):
    """Join each port ``name`` of ``inner`` (a port, or an interface of any depth) to
    ``outer``'s ``<prefix>_<name>`` (``name`` without a prefix), but those in ``skip``: inputs
    flow in, outputs out, combinationally."""
    for name, member in inner.signature.members.items():
        if name in skip:
            continue
        ours, theirs = getattr(outer, _prefixed(prefix, name)), getattr(inner, name)
        if member.is_port:
            pairs = [(ours, theirs, member.flow)]
        else:
            pairs = [(_at(ours, path), value, sub.flow)
                     for path, sub, value in member.signature.flatten(theirs)]
        for o, t, flow in pairs:
            m.d.comb += (t.eq(o) if flow == In else o.eq(t))


def _at(interface, path):
    for step in path:
        interface = interface[step] if isinstance(step, int) else getattr(interface, step)
    return interface
