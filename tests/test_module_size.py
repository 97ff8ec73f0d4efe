"""STYLE: modules stay under 500 lines, in the package and in the Scapy layers."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 500


def test_no_module_is_over_500_lines() -> None:
    modules = [
        path
        for top in ("esplab", "layers")
        for path in (ROOT / top).rglob("*.py")
        if "__pycache__" not in path.parts
        and path.relative_to(ROOT).parts[:2] != ("esplab", "layers")
    ]
    assert len(modules) > 200  # (the whole package was read)
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in modules}
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}
