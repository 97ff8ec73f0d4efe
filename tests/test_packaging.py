"""What `pip install .` installs: every package of the tree, with its data files."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _listed() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^packages = \[(.*?)^\]", text, re.S | re.M)
    assert block is not None
    return set(re.findall(r'"([^"]+)"', block.group(1)))


def test_every_package_in_the_tree_is_installed() -> None:
    # A package missing from the hand-kept list imports from a checkout and fails
    # after `pip install .` (esplab.picture was missed once).
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "esplab").rglob("__init__.py")
        if "layers" not in init.parts and "__pycache__" not in init.parts
    }
    assert found - _listed() == set()
    assert "esplab.layers" in _listed()
