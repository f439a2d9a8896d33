# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the Verilog for integrators: names, port maps, command line, simulators."""
