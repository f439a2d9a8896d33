"""UPLI traffic made and checked in hardware (README.md here): :class:`UpliGen` and
:class:`UpliCheck`."""

from .check import UpliCheck
from .gen import UpliGen

__all__ = ["UpliCheck", "UpliGen"]
