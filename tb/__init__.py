# SPDX-License-Identifier: BSD-2-Clause
"""The regression: cocotb testbenches and pytest tests, folders mirroring the cores."""
