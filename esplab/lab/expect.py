"""The expectation language's operators, and checking a value against them.

An expectation is ``PATH: EXPECTATION`` (paths: :mod:`esplab.lab.paths`); its values
may hold references (:mod:`esplab.lab.refs`), replaced before checking.

Operators
    A plain value must equal the one found (numbers match numbers written as
    text in decimal or ``0x`` hex). A mapping holds operators, all of which must
    hold: ``eq``, ``ne``, ``contains``, ``excludes``, ``in``, ``matches``,
    ``len``, ``gt``, ``ge``, ``lt``, ``le``, ``exists``, ``hex``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from esplab.lab.paths import PathError, as_number, equal, show
from esplab.lab.pattern import PatternError, search
from esplab.lab.refs import substitute_value

__all__ = ["Check", "Failure", "evaluate"]


def _hex(text: Any) -> str:
    out = str(text).strip().lower().replace(" ", "").replace(":", "").replace("\n", "")
    return out[2:] if out.startswith("0x") else out


def _contains(actual: Any, arg: Any) -> bool | None:
    if isinstance(actual, str):
        return str(arg) in actual if not isinstance(arg, bool) else None
    if isinstance(actual, list):
        return any(equal(arg, item) for item in actual)
    if isinstance(actual, Mapping):
        return str(arg) in actual
    return None


def _compare(op: str) -> Callable[[Any, Any], bool | None]:
    def check(actual: Any, arg: Any) -> bool | None:
        left, right = as_number(actual), as_number(arg)
        if left is None or right is None:
            return None
        return {"gt": left > right, "ge": left >= right, "lt": left < right, "le": left <= right}[
            op
        ]

    return check


def _matches(actual: Any, arg: Any) -> bool | None:
    text = actual if isinstance(actual, str) else show(actual, limit=1 << 20)
    return search(str(arg), text)


def _length(actual: Any, arg: Any) -> bool | None:
    if isinstance(actual, (str, list, Mapping)):
        return bool(len(actual) == arg)
    return None


_TESTS: dict[str, Callable[[Any, Any], bool | None]] = {
    "eq": equal,
    "ne": lambda a, e: not equal(e, a),
    "contains": _contains,
    "excludes": lambda a, e: None if (c := _contains(a, e)) is None else not c,
    "in": lambda a, e: any(equal(opt, a) for opt in e),
    "matches": _matches,
    "len": _length,
    "gt": _compare("gt"),
    "ge": _compare("ge"),
    "lt": _compare("lt"),
    "le": _compare("le"),
    "hex": lambda a, e: isinstance(a, str) and _hex(a) == _hex(e),
}

_WORDS = {
    "eq": "",
    "ne": "not ",
    "contains": "containing ",
    "excludes": "not containing ",
    "in": "one of ",
    "matches": "matching ",
    "len": "of length ",
    "gt": "> ",
    "ge": ">= ",
    "lt": "< ",
    "le": "<= ",
    "hex": "hex ",
}


@dataclass(frozen=True)
class Check:
    """What an expectation asks: (operator, argument) pairs that must all hold."""

    ops: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, spec: Any) -> Check:
        """A plain value means ``eq``; a mapping is operators."""
        if isinstance(spec, Mapping):
            return cls(tuple((str(k), v) for k, v in spec.items()))
        return cls((("eq", spec),))

    def describe(self) -> str:
        parts = []
        for op, arg in self.ops:
            if op == "exists":
                parts.append("present" if arg else "absent")
            else:
                parts.append(_WORDS[op] + show(arg))
        return " and ".join(parts)


@dataclass(frozen=True)
class Failure:
    """An expectation that did not hold: what was looked at, wanted, and found; ``at``
    is the line and column in the lab file of what failed (the ``run:`` line, the
    ``error:`` key or the ``expect:`` key)."""

    what: str
    expected: str
    actual: str
    at: tuple[int, int] | None = None

    def line(self) -> str:
        return f"{self.what}: expected {self.expected}, got {self.actual}"


def evaluate(
    check: Check, what: str, found: Callable[[], Any], saved: Mapping[str, Any]
) -> Failure | None:
    """Run ``check`` on the value ``found()`` gives (it may raise PathError)."""
    try:
        ops = tuple((op, substitute_value(arg, saved)) for op, arg in check.ops)
    except PathError as exc:
        return Failure(what, check.describe(), f"an unusable reference: {exc}")
    resolved = Check(ops)
    try:
        actual = found()
    except PathError as exc:
        if all(op == "exists" and arg is False for op, arg in ops):
            return None
        return Failure(what, resolved.describe(), f"nothing ({exc})")
    for op, arg in ops:
        if op == "exists":
            if arg is False:
                return Failure(what, resolved.describe(), show(actual))
            continue
        try:
            verdict = _TESTS[op](actual, arg)
        except PatternError as exc:  # a pattern made of saved values, known only now
            return Failure(what, resolved.describe(), f"an invalid pattern ({exc})")
        if verdict is None:
            return Failure(
                what, resolved.describe(), f"{show(actual)}, which '{op}' cannot be applied to"
            )
        if not verdict:
            return Failure(
                what,
                resolved.describe(),
                show(actual) + _first_difference(arg, actual) if op == "eq" else show(actual),
            )
    return None


def _first_difference(expected: Any, actual: Any, context: int = 12) -> str:
    """Where two long texts part (they look the same once shortened), else nothing."""
    if not (isinstance(expected, str) and isinstance(actual, str)):
        return ""
    if all(show(t) == json.dumps(t, ensure_ascii=False) for t in (expected, actual)):
        return ""  # both are shown whole
    at = next(
        (i for i, (e, a) in enumerate(zip(expected, actual, strict=False)) if e != a),
        min(len(expected), len(actual)),
    )
    start = max(at - context, 0)
    left = json.dumps(expected[start : at + context], ensure_ascii=False)[1:-1]
    right = json.dumps(actual[start : at + context], ensure_ascii=False)[1:-1]
    return f"; they first differ at character {at}: expected ...{left}..., got ...{right}..."
