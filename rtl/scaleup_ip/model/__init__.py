# SPDX-License-Identifier: BSD-2-Clause
"""Pure-Python golden models: ints and bytes in, ints and bytes out; no Amaranth, no cocotb."""
