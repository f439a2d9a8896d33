# SPDX-License-Identifier: BSD-2-Clause
"""Simulation harness, shared cocotb helpers, system simulations and benchmarks."""
