# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the CRC-32 engine and its traffic."""
