# SPDX-License-Identifier: BSD-2-Clause
"""Open, synthesizable scale-up interconnect IP in Amaranth HDL."""
