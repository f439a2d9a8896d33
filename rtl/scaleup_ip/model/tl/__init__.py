# SPDX-License-Identifier: BSD-2-Clause
"""Golden models of the TL: flit packer and unpacker, address cache, UPLI traffic."""
