# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the UALink TL."""
