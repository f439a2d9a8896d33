"""Open, synthesizable scale-up interconnect IP in Amaranth HDL."""
