# SPDX-License-Identifier: BSD-2-Clause
"""An ECP5 EHXPLLL with one output, CLKOP, fed back to itself."""

from amaranth import Instance, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Ecp5Pll"]

#: Input, VCO and output frequency ranges (Hz) of the ECP5 sysCLOCK PLL [Lattice FPGA-DS-02012,
#: ECP5 and ECP5-5G Family Data Sheet, "sysCLOCK PLL Timing"; the same limits are in Project
#: Trellis ``ecppll``].
CLKI_RANGE = (8e6, 400e6)
VCO_RANGE = (400e6, 800e6)
CLKOP_RANGE = (3.125e6, 400e6)
#: Divider range of CLKI_DIV, CLKFB_DIV and CLKOP_DIV.
DIV_RANGE = range(1, 129)
#: Loop-filter settings that Project Trellis ``ecppll`` writes on every EHXPLLL it generates;
#: nextpnr copies them into the bitstream.
ANALOG_ATTRS = {"ICP_CURRENT": "12", "LPF_RESISTOR": "8", "MFG_ENABLE_FILTEROPAMP": "1",
                "MFG_GMCREF_SEL": "2"}


class Ecp5Pll(wiring.Component):
    """Make ``clkop`` = ``clki_hz · clkfb_div / clki_div`` with an ECP5 EHXPLLL.

    The feedback path is CLKOP itself (``FEEDBK_PATH="CLKOP"``), so the VCO runs at
    ``clkop_hz · clkop_div``, which must lie in :data:`VCO_RANGE`. ``CLKOP_CPHASE`` is
    ``clkop_div - 1``, the zero-phase setting that Lattice's generator and LiteX's ``ECP5PLL``
    use. ``lock`` is asynchronous to both clocks; hold the output domain in reset until it is
    high. Use :meth:`for_output` to pick the dividers.

    Parameters
    ----------
    clki_hz : float
        Input clock frequency.
    clki_div, clkfb_div, clkop_div : int
        The three dividers, each 1 to 128.

    Members
    -------
    clki : ``In(1)``
        Input clock.
    clkop : ``Out(1)``
        Output clock.
    lock : ``Out(1)``
        The PLL has locked.
    """

    def __init__(self, clki_hz, clki_div, clkfb_div, clkop_div):
        for name, div in (("clki_div", clki_div), ("clkfb_div", clkfb_div),
                          ("clkop_div", clkop_div)):
            if div not in DIV_RANGE:
                raise ValueError(f"PLL {name} must be 1 to 128, not {div!r}")
        self.clki_hz, self.clki_div = clki_hz, clki_div
        self.clkfb_div, self.clkop_div = clkfb_div, clkop_div
        for what, value, (low, high) in (("input", clki_hz, CLKI_RANGE),
                                         ("VCO", self.vco_hz, VCO_RANGE),
                                         ("output", self.clkop_hz, CLKOP_RANGE)):
            if not low <= value <= high:
                raise ValueError(f"PLL {what} frequency {value / 1e6:g} MHz is outside "
                                 f"{low / 1e6:g} to {high / 1e6:g} MHz")
        super().__init__({"clki": In(1), "clkop": Out(1), "lock": Out(1)})

    @classmethod
    def for_output(cls, clki_hz, clkop_hz):
        """The PLL that makes exactly ``clkop_hz``: smallest input divider first, then the VCO
        nearest the middle of its range."""
        middle = sum(VCO_RANGE) / 2
        for clki_div in DIV_RANGE:
            clkfb_div = clkop_hz * clki_div / clki_hz
            if clkfb_div != round(clkfb_div) or round(clkfb_div) not in DIV_RANGE:
                continue
            dividers = [d for d in DIV_RANGE if VCO_RANGE[0] <= clkop_hz * d <= VCO_RANGE[1]]
            if dividers:
                clkop_div = min(dividers, key=lambda d: abs(clkop_hz * d - middle))
                return cls(clki_hz, clki_div, round(clkfb_div), clkop_div)
        raise ValueError(f"no EHXPLLL setting makes exactly {clkop_hz / 1e6:g} MHz "
                         f"from {clki_hz / 1e6:g} MHz")

    @property
    def clkop_hz(self):
        return self.clki_hz * self.clkfb_div / self.clki_div

    @property
    def vco_hz(self):
        return self.clkop_hz * self.clkop_div

    def elaborate(self, platform):
        m = Module()
        attrs = {f"a_{k}": v for k, v in ANALOG_ATTRS.items()}
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{self.clki_hz / 1e6:g}",
            a_FREQUENCY_PIN_CLKOP=f"{self.clkop_hz / 1e6:g}",
            **attrs,
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA",
            p_CLKI_DIV=self.clki_div, p_CLKFB_DIV=self.clkfb_div, p_FEEDBK_PATH="CLKOP",
            p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=self.clkop_div,
            p_CLKOP_CPHASE=self.clkop_div - 1, p_CLKOP_FPHASE=0,
            i_CLKI=self.clki, i_CLKFB=self.clkop, o_CLKOP=self.clkop, o_LOCK=self.lock,
            i_RST=0, i_STDBY=0, i_PLLWAKESYNC=0, i_ENCLKOP=0,
            i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=0, i_PHASESTEP=0, i_PHASELOADREG=0,
        )
        return m
