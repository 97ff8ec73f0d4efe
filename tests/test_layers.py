"""The model's layers, as its package docstrings state them, hold in the code: every
import (lazy and type-only ones included) points down, never up."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import esplab.model
import esplab.model.kernel

MODEL = Path(esplab.model.__file__).parent


def _order(package: object) -> list[str]:
    """The names of a docstring's ``Layers, top first:`` block, one a line."""
    doc = getattr(package, "__doc__", None) or ""
    block = doc.split("Layers, top first:", 1)[1]
    names: list[str] = []
    for line in block.splitlines()[1:]:
        if not line.strip():
            if names:
                break
            continue
        names.append(line.split()[0])
    return names


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every esplab module ``path`` imports, with its line."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return [(line, name) for line, name in out if name.startswith("esplab.")]


def _layer_of(module: str, root: str, order: list[str]) -> int | None:
    """The index in ``order`` of the layer ``module`` (dotted) belongs to, below ``root``."""
    if not module.startswith(root + "."):
        return None
    first = module[len(root) + 1 :].split(".")[0]
    return order.index(first) if first in order else None


def _upward(folder: Path, base: Path, root: str, order: list[str]) -> list[str]:
    """The imports of the modules under ``folder`` (dotted names relative to ``base``)
    that point up ``order``, as ``file:line (layer) imports name (layer)``."""
    wrong: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(base).with_suffix("")
        here = _layer_of(".".join(rel.parts), root, order)
        if here is None:
            continue
        for line, name in _imports(path):
            there = _layer_of(name, root, order)
            if there is not None and there < here:
                wrong.append(f"{rel}.py:{line} ({order[here]}) imports {name} ({order[there]})")
    return wrong


@pytest.mark.parametrize(
    ("package", "root"),
    [(esplab.model, "esplab.model"), (esplab.model.kernel, "esplab.model.kernel")],
)
def test_imports_point_down(package: object, root: str) -> None:
    order = _order(package)
    folder = MODEL.joinpath(*root.split(".")[2:])
    # every folder and module of the package has its place in the order
    present = {p.stem if p.suffix else p.name for p in folder.iterdir()}
    present -= {"__init__", "__pycache__"}
    assert present - set(order) == set(), f"not placed in {root}'s layers"
    assert _upward(folder, MODEL.parent.parent, root, order) == []


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "esplab" / "demo"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high.py").write_text("from esplab.demo.low import thing\n")
    (pkg / "low" / "mod.py").write_text("def f():\n    from esplab.demo import high\n")
    found = _upward(pkg, tmp_path, "esplab.demo", ["high", "low"])
    assert found == ["esplab/demo/low/mod.py:2 (low) imports esplab.demo.high (high)"]


def test_the_order_is_written_down() -> None:
    # (a docstring without the block would make the test above check nothing)
    assert _order(esplab.model)[:3] == ["lab", "topology", "journey"]
    assert _order(esplab.model.kernel)[0] == "node"
