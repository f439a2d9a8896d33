# SPDX-License-Identifier: BSD-2-Clause
"""A simulation top's inputs cut from the logic inside by registers, so that its model
evaluates little more than those registers when only the clock has moved.

Verilator evaluates, at every call of the model (twice a clock), all the combinational logic
that the top's inputs reach ("ico" in its profile). The reset is an input too, and Amaranth's
Verilog computes each register's next value with its reset in combinational logic: so every
next-state function of a design is in that logic. Inside the boundary the design runs in a
domain whose reset is the top's, registered, and its other inputs are registered too. Measured
on the two-end UALink top with its traffic in hardware: 31-35 k cycles/s without the boundary,
65 k with it.
"""

from amaranth import ClockDomain, ClockSignal, DomainRenamer, ResetSignal, Signal
from amaranth.lib import stream, wiring

from scaleup_ip.skid import SkidBuffer

__all__ = ["register_boundary"]

#: The domain of the design inside the boundary.
DOMAIN = "inner"


def register_boundary(m, outer, inner, instance="inner"):
    """Add ``inner`` (a component of the same members as the top ``outer``) to ``m`` as
    ``instance``, in a domain clocked by ``sync`` and reset by ``sync``'s reset registered (a clock
    late); join each input port through a register (one clock later inside), each valid/ready
    stream through a :class:`~scaleup_ip.skid.SkidBuffer` (one clock; a stream out has its ``ready``
    registered too), outputs straight through; members of other signatures directly."""
    m.domains += ClockDomain(DOMAIN, local=True)
    reset = Signal(init=1)
    m.d.sync += reset.eq(ResetSignal("sync"))
    m.d.comb += [ClockSignal(DOMAIN).eq(ClockSignal("sync")), ResetSignal(DOMAIN).eq(reset)]
    m.submodules[instance] = DomainRenamer(DOMAIN)(inner)
    for name, member in outer.signature.members.items():
        mine, theirs = getattr(outer, name), getattr(inner, name)
        if member.is_port:
            if member.flow == wiring.In:
                m.d.sync += theirs.eq(mine)
            else:
                m.d.comb += mine.eq(theirs)
        elif isinstance(member.signature, stream.Signature):
            m.submodules[f"{name}_skid"] = skid = SkidBuffer(member.signature.members["payload"].shape)
            if member.flow == wiring.In:
                wiring.connect(m, wiring.flipped(mine), skid.i)
                wiring.connect(m, skid.o, theirs)
            else:
                wiring.connect(m, theirs, skid.i)
                wiring.connect(m, skid.o, wiring.flipped(mine))
        elif member.flow == wiring.In:
            wiring.connect(m, wiring.flipped(mine), theirs)
        else:
            wiring.connect(m, theirs, wiring.flipped(mine))
