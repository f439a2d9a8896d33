# SPDX-License-Identifier: BSD-2-Clause
"""Simulation of the ETH-X bridge: pair tops, AXI traffic and litmus agents, environments, benchmark."""
