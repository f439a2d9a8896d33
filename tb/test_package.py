# SPDX-License-Identifier: BSD-2-Clause
"""The package's shape: every module loads and exports what its ``__all__`` names; the package's
modules import each other without a cycle; code outside the package (the simulation, the tests,
the board builds) reaches a core through the public names of the package that holds it; every
source file carries its licence line."""

import ast
import importlib
import pkgutil
import subprocess
from pathlib import Path

import pytest

import scaleup_ip
import sim

REPO = Path(__file__).resolve().parents[1]
SPDX = "SPDX-License-Identifier: BSD-2-Clause"

MODULES = sorted(
    info.name for package in (scaleup_ip, sim)
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    if not info.name.endswith(("system", "bench", "__main__"))  # cocotb modules, command lines
)


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name):
    module = importlib.import_module(name)
    for symbol in getattr(module, "__all__", ()):
        assert hasattr(module, symbol), f"{name}.__all__ names missing {symbol!r}"


def _modules(root, package):
    """Module name -> path of every module under ``root`` (the folder of ``package``)."""
    found = {}
    for path in root.rglob("*.py"):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name, path):
    """(line, imported module, names) of every ``from ... import`` in the module, relative
    ones resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            yield node.lineno, target, [alias.name for alias in node.names]


PACKAGE = _modules(REPO / "rtl" / "scaleup_ip", "scaleup_ip")


def test_no_import_cycle():
    """The package's own imports form no cycle (a package's ``__init__`` re-exporting its
    modules is fine: its modules import each other, never the ``__init__`` above them)."""
    graph = {}
    for name, path in PACKAGE.items():
        edges = set()
        for _, target, names in _imports(name, path):
            for imported in [f"{target}.{n}" for n in names] + [target]:
                if imported in PACKAGE:
                    edges.add(imported)
                    break
        graph[name] = edges - {name}
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def _is_package(name):
    return PACKAGE[name].name == "__init__.py"


def test_outside_code_uses_public_names():
    """``sim/``, ``tb/`` and ``fpga/`` import a core from the package that holds it
    (``from scaleup_ip.tl.tx import TxAddrCache``), never from the module inside it, and only
    names that package exports. The golden models' modules and the top-level modules
    (``scaleup_ip.crc``, ``scaleup_ip.config``, …) are public as they are."""
    wrong = []
    for folder in ("sim", "tb", "fpga"):
        for name, path in _modules(REPO / folder, folder).items():
            for line, target, names in _imports(name, path):
                if not target.startswith("scaleup_ip.") or target.startswith("scaleup_ip.model"):
                    continue
                if target not in PACKAGE:
                    wrong.append(f"{path.relative_to(REPO)}:{line}: no module {target}")
                elif _is_package(target):
                    exported = set(importlib.import_module(target).__all__)
                    missing = [n for n in names if n not in exported
                               and f"{target}.{n}" not in PACKAGE]
                    if missing:
                        wrong.append(f"{path.relative_to(REPO)}:{line}: {target} does not "
                                     f"export {missing}")
                elif target.count(".") > 1:
                    wrong.append(f"{path.relative_to(REPO)}:{line}: {target} is a module "
                                 f"inside a package: import from the package")
    assert not wrong, "\n".join(wrong)


def test_every_source_file_has_licence_line():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    sources = [f for f in files if f.endswith((".py", ".v", ".sh")) or Path(f).name in
               ("Makefile", "run")]
    assert len(sources) > 200
    missing = [f for f in sources if SPDX not in "".join((REPO / f).read_text().splitlines(
        keepends=True)[:3])]
    assert not missing, missing
