# SPDX-License-Identifier: BSD-2-Clause
"""Golden models of ETH-X: the bridge's frame format, the lossless link, the lossy channel."""
