# SPDX-License-Identifier: BSD-2-Clause
"""Golden models of CRC-32 and of the CRC traffic sequence."""
