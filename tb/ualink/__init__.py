# SPDX-License-Identifier: BSD-2-Clause
"""Tests of a whole UALink end (TL over DL)."""
