"""Every module of the importable packages loads and exports what its ``__all__`` names."""

import importlib
import pkgutil

import pytest

import rtl
import sim

MODULES = sorted(
    info.name for package in (rtl, sim)
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    if not info.name.endswith(("_system", "_bench"))      # cocotb modules: need a simulator
)


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name):
    module = importlib.import_module(name)
    for symbol in getattr(module, "__all__", ()):
        assert hasattr(module, symbol), f"{name}.__all__ names missing {symbol!r}"
