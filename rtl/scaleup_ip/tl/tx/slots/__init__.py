# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer (README §3, *Slot packer*): control halves in slots and response units."""

from .decide import SlotDecide, request_slots

__all__ = ["SlotDecide", "request_slots"]
