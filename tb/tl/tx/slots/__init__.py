# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the slot packer's blocks."""
