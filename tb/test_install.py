# SPDX-License-Identifier: BSD-2-Clause
"""The package as a user gets it: ``pip install`` into a fresh virtual environment pulls
Amaranth alone, and a design folder of the user's own, with its own ``rtl`` package, elaborates
every core and runs the README's Amaranth example. The block documents ship with the package.

The fresh environment installs from PyPI (Amaranth and what it needs, and the build backend),
so this test needs the network, as ``make`` does.
"""

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scaleup_ip.export import TOPS

REPO = Path(__file__).resolve().parents[1]


def readme_block(language, heading):
    """The first ``language`` code block of the README after ``heading``."""
    text = (REPO / "README.md").read_text()
    start = text.index(heading)
    return re.search(rf"```{language}\n(.*?)```", text[start:], re.S).group(1)


#: Run in the fresh environment from the design folder: every core elaborates, each block
#: document is a file of the installed package, and nothing comes from the repository.
_CHECK = textwrap.dedent('''
    import importlib.metadata, importlib.resources, json, sys
    from amaranth.hdl import Fragment
    import rtl                                   # the user's own package of that name
    import scaleup_ip
    from scaleup_ip.export import TOPS
    for top in TOPS.values():
        Fragment.get(top.build(), None)
    docs = [str(path.relative_to(importlib.resources.files("scaleup_ip")))
            for path in importlib.resources.files("scaleup_ip").rglob("README.md")]
    dists = sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions())
    requires = importlib.metadata.requires("scaleup-ip")
    print(json.dumps({"package": scaleup_ip.__file__, "rtl": rtl.__file__, "docs": docs,
                      "tops": len(TOPS), "dists": dists, "requires": requires}))
''')


def _amaranth_closure(python):
    """Distribution names Amaranth needs, in the environment of ``python``."""
    code = textwrap.dedent('''
        import importlib.metadata as md, json, re
        seen, todo = set(), ["amaranth"]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            try:
                requires = md.requires(name) or ()
            except md.PackageNotFoundError:          # a requirement whose marker left it out
                continue
            seen.add(name)
            for req in requires:
                if "extra ==" in req:
                    continue
                todo.append(re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower().replace("_", "-"))
        print(json.dumps(sorted(seen)))
    ''')
    return set(json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True,
                                         check=True).stdout))


def test_fresh_install_elaborates_every_core(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "rtl", source / "rtl",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    done = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

    design = tmp_path / "design"
    (design / "rtl").mkdir(parents=True)
    (design / "rtl" / "__init__.py").write_text('"""The user\'s own rtl package."""\n')
    (design / "rtl" / "design.py").write_text(readme_block("python", "### In Amaranth"))
    example = subprocess.run([python, "-m", "rtl.design"], cwd=design, capture_output=True,
                             text=True, env={"PATH": "/usr/bin:/bin"})
    assert example.returncode == 0, example.stderr[-3000:]
    assert example.stdout.strip() == "elaborated"
    checked = subprocess.run([python, "-c", _CHECK], cwd=design, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin"})
    assert checked.returncode == 0, checked.stderr[-3000:]
    found = json.loads(checked.stdout)
    assert found["package"].startswith(str(venv)), found["package"]
    assert found["rtl"] == str(design / "rtl" / "__init__.py")
    assert found["tops"] == len(TOPS)             # every top the repository has
    assert {"tl/README.md", "dl/README.md", "ethx/README.md", "ethx/link/README.md",
            "tl/traffic/README.md"} <= set(found["docs"])
    plain = [r for r in found["requires"] if "extra ==" not in r]
    assert [re.match(r"[\w-]+", r).group(0) for r in plain] == ["amaranth"], plain
    extra = set(found["dists"]) - _amaranth_closure(python) - {"pip", "setuptools", "scaleup-ip"}
    assert not extra, f"installed beside Amaranth: {sorted(extra)}"
