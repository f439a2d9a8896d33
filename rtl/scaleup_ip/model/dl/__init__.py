# SPDX-License-Identifier: BSD-2-Clause
"""Golden models of the DL: flits and CRC, link-level replay, the error-injecting link."""
