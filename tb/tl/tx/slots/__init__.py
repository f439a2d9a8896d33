# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the TL transmit side."""
