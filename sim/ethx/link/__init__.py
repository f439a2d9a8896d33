# SPDX-License-Identifier: BSD-2-Clause
"""Simulation of the lossless link alone: lossy channel, link pair, benchmark."""
