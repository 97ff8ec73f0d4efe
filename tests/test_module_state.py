"""No module-level mutable state (STYLE.md, "One command core" and "Code").

Every module of ``esplab/`` and ``layers/`` is parsed; a module-level name bound to a
mutable container (a dict, list or set display or comprehension, or a call of
``dict``, ``defaultdict``, ``deque``, ``bytearray``...) must never be changed in its
module: no item assignment, augmented assignment, ``del`` or mutating method call.
No ``global`` statement either. A cache is a pure function under
``functools.lru_cache`` (bounded) instead; a constant table is read, never written.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Methods that change a dict, list, set, deque or bytearray in place.
MUTATORS = frozenset(
    {
        "append",
        "add",
        "update",
        "setdefault",
        "pop",
        "clear",
        "extend",
        "insert",
        "remove",
        "discard",
        "popitem",
    }
)
#: Calls that make a mutable container (by their last name: ``collections.deque`` too).
MUTABLE_CALLS = frozenset(
    {
        "dict",
        "list",
        "set",
        "bytearray",
        "defaultdict",
        "deque",
        "OrderedDict",
        "Counter",
        "ChainMap",
        "array",
        "WeakKeyDictionary",
        "WeakValueDictionary",
        "WeakSet",
    }
)
_DISPLAYS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
_WRITES = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)
Write = ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete


def _is_mutable(value: ast.expr) -> bool:
    if isinstance(value, _DISPLAYS):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name in MUTABLE_CALLS
    return False


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run at import: the body, with the blocks of its ``if``, ``try``,
    ``with`` and loops (not the bodies of functions and classes)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _module_level(getattr(stmt, field, []))
        for handler in getattr(stmt, "handlers", []):
            yield from _module_level(handler.body)


def _mutable_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for stmt in _module_level(tree.body):
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        if _is_mutable(value):
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _root(expr: ast.expr) -> str | None:
    """The name an expression such as ``_C``, ``_C[k]`` or ``_C[k][j]`` starts from."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _targets(node: Write) -> Iterator[ast.expr]:
    """The targets an assignment, augmented assignment or ``del`` writes, unpacked."""
    todo: list[ast.expr] = (
        list(node.targets) if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    )
    while todo:
        target = todo.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            todo.extend(target.elts)
        elif isinstance(target, ast.Starred):
            todo.append(target.value)
        else:
            yield target


def _writes(node: Write, names: set[str]) -> list[tuple[int, str, str]]:
    """What ``node`` writes of the module-level containers ``names``."""
    hits = []
    for target in _targets(node):
        root = _root(target)
        if root not in names:
            continue
        if isinstance(target, ast.Subscript):
            verb = "deleted" if isinstance(node, ast.Delete) else "assigned"
            hits.append((node.lineno, str(root), f"item {verb}"))
        elif isinstance(node, ast.AugAssign):
            hits.append((node.lineno, str(root), "augmented assignment"))
    return hits


def scan(source: str) -> list[tuple[int, str, str]]:
    """Each change of module-level state in ``source``: (line, name, what); the name of
    a ``global`` statement is each name it declares."""
    tree = ast.parse(source)
    names = _mutable_names(tree)
    hits: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            hits.extend((node.lineno, name, "global statement") for name in node.names)
            continue
        if isinstance(node, _WRITES):
            hits.extend(_writes(node, names))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
            and _root(node.func.value) in names
        ):
            hits.append((node.lineno, str(_root(node.func.value)), f".{node.func.attr}() called"))
    return sorted(hits)


def _modules() -> list[Path]:
    """Every module of esplab/ and layers/ once: esplab/layers is a link to layers/."""
    found = []
    for top in ("esplab", "layers"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if "__pycache__" in rel.parts or rel.parts[:2] == ("esplab", "layers"):
                continue
            found.append(rel)
    return found


def _findings() -> list[tuple[str, int, str, str]]:
    return [
        (rel.as_posix(), line, name, what)
        for rel in _modules()
        for line, name, what in scan((ROOT / rel).read_text(encoding="utf-8"))
    ]


# -- the tree ----------------------------------------------------------------------


def test_no_module_changes_its_module_level_state() -> None:
    bad = [f"{path}:{line}: {name}: {what}" for path, line, name, what in _findings()]
    assert not bad, "module-level state changed at run time:\n" + "\n".join(bad)


def test_the_scan_sees_both_trees_once() -> None:
    modules = _modules()
    assert len(modules) == len(set(modules))
    assert Path("layers/dsa.py") in modules
    assert Path("esplab/model/hw/eip93/basic.py") in modules
    assert not any(m.parts[:2] == ("esplab", "layers") for m in modules)


# -- the scanner on samples ----------------------------------------------------------


@pytest.mark.parametrize("method", sorted(MUTATORS))
def test_each_mutating_method_is_flagged(method: str) -> None:
    source = f"_CACHE = {{}}\n\ndef f(k):\n    _CACHE.{method}(k)\n"
    assert scan(source) == [(4, "_CACHE", f".{method}() called")]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("_C = {}\ndef f(k):\n    _C[k] = 1\n", [(3, "_C", "item assigned")]),
        ("_C = {}\ndef f(k):\n    _C[k][0] = 1\n", [(3, "_C", "item assigned")]),
        ("_C = []\ndef f():\n    _C[0] += 1\n", [(3, "_C", "item assigned")]),
        ("_C = []\n_C += [1]\n", [(2, "_C", "augmented assignment")]),
        ("_C = {1: 2}\ndef f():\n    del _C[1]\n", [(3, "_C", "item deleted")]),
        ("_C = {}\ndef f(k):\n    a, _C[k] = 1, 2\n", [(3, "_C", "item assigned")]),
        ("_C: dict[int, int] = {}\ndef f(k):\n    _C[k] = 1\n", [(3, "_C", "item assigned")]),
        ("_C = {k: 0 for k in 'ab'}\n_C['c'] = 1\n", [(2, "_C", "item assigned")]),
        ("_C = [0 for _ in 'ab']\n_C.append(1)\n", [(2, "_C", ".append() called")]),
        ("_C = set()\n_C.add(1)\n", [(2, "_C", ".add() called")]),
        ("_C = dict()\n_C.update(a=1)\n", [(2, "_C", ".update() called")]),
        ("_C = bytearray(4)\n_C[0] = 1\n", [(2, "_C", "item assigned")]),
        (
            "import collections\n_C = collections.defaultdict(list)\n_C[1].append(2)\n_C.pop(1)\n",
            [(3, "_C", ".append() called"), (4, "_C", ".pop() called")],
        ),
        (
            "from collections import deque\n_C = deque()\n_C.append(1)\n",
            [(3, "_C", ".append() called")],
        ),
        (
            "from collections import Counter\n_C = Counter()\n_C['a'] += 1\n",
            [(3, "_C", "item assigned")],
        ),
        (
            "try:\n    _C = {}\nexcept ImportError:\n    _C = {}\n_C[1] = 2\n",
            [(5, "_C", "item assigned")],
        ),
        ("_N = 0\ndef f():\n    global _N\n    _N += 1\n", [(3, "_N", "global statement")]),
        (
            "def f():\n    global _A, _B\n",
            [(2, "_A", "global statement"), (2, "_B", "global statement")],
        ),
    ],
)
def test_each_change_of_module_state_is_flagged(
    source: str, expected: list[tuple[int, str, str]]
) -> None:
    assert scan(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        # A constant table, read only.
        "_TABLE = {'a': 1, 'b': 2}\n\ndef f(k):\n    return _TABLE.get(k, _TABLE['a'])\n",
        "_NAMES = ['x', 'y']\n\ndef f():\n    return [*_NAMES, 'z']\n",
        # Immutable values, and containers local to a function.
        "_T = (1, 2)\n_F = frozenset({1})\n\n"
        "def f():\n    acc = []\n    acc.append(1)\n    return acc\n",
        # The state of an object, not of the module.
        "class C:\n    def __init__(self):\n        self.d = {}\n        self.d[1] = 2\n",
        # A bounded cache as a pure function.
        "from functools import lru_cache\n\n@lru_cache(maxsize=8)\ndef f(n):\n    return n * 2\n",
    ],
)
def test_a_constant_table_passes(source: str) -> None:
    assert scan(source) == []
