"""Simulation harness, shared cocotb helpers, system simulations and benchmarks."""
