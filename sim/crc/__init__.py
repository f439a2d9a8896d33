# SPDX-License-Identifier: BSD-2-Clause
"""Simulation of the CRC-32 engine: cocotb environment, traffic top, system scenario, benchmark."""
