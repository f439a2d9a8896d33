# SPDX-License-Identifier: BSD-2-Clause
"""Simulation of the UALink DL: environments, link tops, flit traffic, benchmark."""
