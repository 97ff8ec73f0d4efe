"""The package's imports, read from its source (ast): no circle of imports spans more
than a module and its helpers (STYLE.md), and no command handler module imports
another. Every import counts: at the top of a module, inside a function (a lazy one)
and under ``if TYPE_CHECKING``. ``lint-imports`` checks the layers (pyproject.toml).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import esplab

PACKAGE = Path(esplab.__file__).parent

#: The widest circle allowed: a module and its helpers.
WIDEST = 3


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (``esplab.layers`` is apart: it
    imports nothing else from esplab)."""
    found: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[:2] == ["esplab", "layers"]:
            continue
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, typed: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each import statement, and whether it sits under ``if TYPE_CHECKING``."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, typed
        else:
            inside = typed or (isinstance(child, ast.If) and _type_checking(child))
            yield from _imports(child, inside)


def _graph(modules: dict[str, Path], *, typed: bool) -> dict[str, set[str]]:
    """Which modules each module imports (with ``typed``: the TYPE_CHECKING ones too);
    ``from package import name`` is the submodule when ``name`` is one."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node, type_only in _imports(ast.parse(path.read_text(encoding="utf-8")), False):
            if type_only and not typed:
                continue
            if isinstance(node, ast.Import):
                targets = [known(alias.name) for alias in node.names]
            else:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                mod = node.module or ""
                source = (base + "." + mod if mod else base) if node.level else mod
                targets = [
                    known(f"{source}.{alias.name}")
                    if f"{source}.{alias.name}" in modules
                    else known(source)
                    for alias in node.names
                ]
            edges[name].update(t for t in targets if t is not None and t != name)
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _under(name: str, packages: dict[str, str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _wide(edges: dict[str, set[str]], skip: dict[str, str]) -> list[list[str]]:
    """Circles wider than WIDEST, among the modules not under ``skip``."""
    kept = {
        name: {t for t in targets if not _under(t, skip)}
        for name, targets in edges.items()
        if not _under(name, skip)
    }
    return [c for c in _circles(kept) if len(c) > WIDEST]


def test_no_import_circle_is_wider_than_a_module_and_its_helpers() -> None:
    # (lazy and type-only imports count: no package is allowed a wider circle)
    assert _wide(_graph(_modules(), typed=True), {}) == []


def test_a_wide_circle_is_found() -> None:
    """The check itself: four modules importing round in a circle are one wide circle,
    and a module with its two helpers is not."""
    ring = {"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"a"}, "e": {"a"}}
    assert _circles(ring) == [["a", "b", "c", "d"]]
    assert _wide(ring, {}) == [["a", "b", "c", "d"]]
    assert _wide({"m": {"h1", "h2"}, "h1": {"m"}, "h2": {"m"}}, {}) == []


def test_no_handler_module_imports_another() -> None:
    """A command handler module (one declaring COMMANDS) imports only the core and
    helpers: what two handlers share lives beside them (esplab.commands)."""
    modules = _modules()
    handlers = {
        name
        for name, path in modules.items()
        if name.startswith("esplab.commands.handlers.")
        and "\nCOMMANDS = (" in path.read_text(encoding="utf-8")
    }
    assert len(handlers) > 10
    edges = _graph(modules, typed=True)
    assert {h: sorted(edges[h] & handlers) for h in handlers if edges[h] & handlers} == {}


def test_the_lab_runner_uses_the_command_core_only() -> None:
    """esplab.lab reaches the commands through the registry, the parser, the session
    and the collected registry (esplab.commands.handlers), never a handler module."""
    modules = _modules()
    edges = _graph(modules, typed=True)
    reached = {
        (name, target)
        for name in modules
        if name.startswith("esplab.lab.")
        for target in edges[name]
        if target.startswith("esplab.commands.handlers.")
    }
    assert reached == set()


def test_the_command_core_imports_no_front_end() -> None:
    """esplab.commands imports nothing from the lab runner, the renderers, the batch
    printer, the REPL or the CLI, lazily or for types only: the core never prints, and
    ``lab`` is no command of its (esplab.lab.command declares it, over the lab runner)."""
    modules = _modules()
    edges = _graph(modules, typed=True)
    above = ("esplab.lab", "esplab.render", "esplab.batch", "esplab.repl", "esplab.cli")
    core = [name for name in modules if _under(name, {"esplab.commands": ""})]
    assert len(core) > 30
    reached = {
        (name, target)
        for name in core
        for target in edges[name]
        if target.startswith(above)  # esplab.render, render_json, render_table, ...
    }
    assert reached == set()


def test_only_the_front_ends_import_the_lab_command() -> None:
    """The ``lab`` command, and the registry of every command with it, sit over the lab
    runner: only the front ends reach esplab.lab.command, never the runner's modules."""
    modules = _modules()
    edges = _graph(modules, typed=True)
    importers = {name for name in modules if "esplab.lab.command" in edges[name]}
    assert importers == {"esplab.cli", "esplab.lab.cli", "esplab.lab.gradecli"}
