# SPDX-License-Identifier: BSD-2-Clause
"""The requester's address stage: an AR or AW checked and registered before it is admitted."""

from ..skid import SkidBuffer
from .burst import illegal
from .layout import address_layout, beyond_sources, user_layout

__all__ = ["address_stage"]

#: What the stage works out rather than copies from the channel.
_CHECKS = ("bad", "local")


def address_stage(m, config, axi, channel, name):
    """Feed ``axi``'s ``channel`` (``"ar"`` or ``"aw"``) through a
    :class:`~scaleup_ip.skid.SkidBuffer` named ``name``, with the burst checks made on the way in
    (:func:`~scaleup_ip.ethx.burst.illegal`, the destination against ``sources``), and return the
    buffer's output stream of :func:`~scaleup_ip.ethx.layout.address_layout`.

    The checks' arithmetic (4 KB crossing, WRAP rules) then ends at a register instead of in
    front of the slot compares, and ``*ready`` is a flop. Latency: one clock; throughput: one
    address per clock.
    """
    layout = address_layout(config)
    skid = m.submodules[name] = SkidBuffer(layout)
    p = skid.i.p
    f = {k: getattr(axi, f"{channel}{k}") for k, _ in layout if k not in _CHECKS}
    bad = illegal(f["addr"], f["len"], f["size"], f["burst"], bus_bytes=config.data_width // 8)
    node = user_layout(config)(f["user"]).node
    m.d.comb += [getattr(p, k).eq(v) for k, v in f.items()]
    m.d.comb += [p.bad.eq(bad), p.local.eq(bad | beyond_sources(node, config.sources)),
                 skid.i.valid.eq(getattr(axi, f"{channel}valid")),
                 getattr(axi, f"{channel}ready").eq(skid.i.ready)]
    return skid.o
