"""Saved-value references: ``${NAME.PATH}`` is the value at PATH (see
:mod:`esplab.lab.paths`) in what step ``save: NAME`` kept; ``${lab.dir}``,
``${lab.file}``, ``${lab.name}`` and ``${lab.seed}`` are always there. In ``run:`` a
reference becomes text; in an expectation a value that is exactly one reference keeps
its type. ``$${`` is a literal ``${``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from esplab.lab.paths import PathError, PathPart, Seg, kind_of, parse_path, plain, resolve

__all__ = ["REF", "references", "substitute", "substitute_value"]

#: A reference (group 1: NAME.PATH) or ``$${`` (no group), which means a literal ``${``.
REF = re.compile(r"\$\$\{|\$\{([^{}]*)\}")


def references(text: str) -> list[tuple[str, list[PathPart]]]:
    """Every ``${NAME.PATH}`` in ``text`` as (NAME, parsed path); PathError if one is bad."""
    found: list[tuple[str, list[PathPart]]] = []
    for m in REF.finditer(text):
        if m.group(1) is None:
            continue
        inner = m.group(1).strip()
        parts = parse_path(inner)
        first = parts[0]
        if not isinstance(first, Seg) or first.kind != "key":
            raise PathError(f"reference '${{{inner}}}' must start with a saved name")
        found.append((first.key, parts))
    return found


def _lookup(inner: str, saved: Mapping[str, Any]) -> Any:
    parts = parse_path(inner.strip())
    first = parts[0]
    if not isinstance(first, Seg) or first.kind != "key" or first.key not in saved:
        name = first.key if isinstance(first, Seg) else inner
        raise PathError(f"'${{{inner}}}': nothing was saved as '{name}'")
    try:
        return resolve(saved[first.key], parts[1:], parts[:1])
    except PathError as exc:
        raise PathError(f"'${{{inner}}}': {exc}") from None


def _as_text(value: Any, inner: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise PathError(f"'${{{inner}}}' is {kind_of(value)}; pick one value with a longer path")
    return str(value)


def substitute(text: str, saved: Mapping[str, Any]) -> str:
    """``text`` with every reference replaced by its value as text."""

    def replace(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return "${"
        return _as_text(_lookup(m.group(1), saved), m.group(1))

    return REF.sub(replace, text)


def substitute_value(value: Any, saved: Mapping[str, Any]) -> Any:
    """References inside an expected value; a string that is one reference keeps its type."""
    if isinstance(value, str):
        m = REF.fullmatch(value)
        if m is not None and m.group(1) is not None:
            return plain(_lookup(m.group(1), saved))
        return substitute(value, saved)
    if isinstance(value, list):
        return [substitute_value(v, saved) for v in value]
    if isinstance(value, dict):
        return {k: substitute_value(v, saved) for k, v in value.items()}
    return value
