# SPDX-License-Identifier: BSD-2-Clause
"""Simulation of the UALink TL: UPLI models, environments, link tops, traffic, benchmarks."""
