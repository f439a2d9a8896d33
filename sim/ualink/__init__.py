# SPDX-License-Identifier: BSD-2-Clause
"""Simulation of a UALink end to end: TL over DL at both ends of an error-injecting link."""
