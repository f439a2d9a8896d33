# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the board self-test."""
