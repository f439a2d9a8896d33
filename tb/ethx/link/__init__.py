# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the lossless Ethernet link."""
