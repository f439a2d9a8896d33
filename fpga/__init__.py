# SPDX-License-Identifier: BSD-2-Clause
"""FPGA builds: board self-tests with bitstreams, and per-block Fmax and area on ECP5."""
