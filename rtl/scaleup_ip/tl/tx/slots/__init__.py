# SPDX-License-Identifier: BSD-2-Clause
"""The slot packer (README §3, *Slot packer*): control halves in slots and response units."""

from .banks import BankQueue
from .compose import SlotCompose
from .decide import SlotDecide, request_slots
from .place import SlotPlacer
from .units import UnitQueue

__all__ = ["BankQueue", "SlotCompose", "SlotDecide", "SlotPlacer", "UnitQueue", "request_slots"]
