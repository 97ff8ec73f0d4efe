"""The expectation language: paths into a result, saved-value references, operators.

Paths
    ``delivered``, ``stages[-1].tap``, ``counts["wan.wire"]``, ``hex[68:76]``,
    ``stages[tap=host.xfrm].counters.XfrmInStateSeqError``. A path starts with a
    key and goes on with ``.KEY``, ``[N]`` (from 0; negative from the end),
    ``[A:B]`` (a slice of a list or of text), ``["KEY"]`` (a key with dots or
    other characters) and ``[KEY=VALUE]`` (the first item of a list of mappings
    whose KEY equals VALUE).

References
    ``${NAME.PATH}`` is the value at PATH in what step ``save: NAME`` kept;
    ``${lab.dir}``, ``${lab.file}``, ``${lab.name}`` and ``${lab.seed}`` are always
    there. In ``run:`` a reference becomes text; in an expectation a value that
    is exactly one reference keeps its type. ``$${`` is a literal ``${``.

Operators
    A plain value must equal the one found (numbers match numbers written as
    text in decimal or ``0x`` hex). A mapping holds operators, all of which must
    hold: ``eq``, ``ne``, ``contains``, ``excludes``, ``in``, ``matches``,
    ``len``, ``gt``, ``ge``, ``lt``, ``le``, ``exists``, ``hex``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Check",
    "Failure",
    "PathError",
    "Seg",
    "as_number",
    "evaluate",
    "parse_path",
    "path_text",
    "plain",
    "references",
    "resolve",
    "show",
    "substitute",
    "substitute_value",
]


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_INT = re.compile(r"-?\d+")
_SLICE = re.compile(r"(-?\d+)?:(-?\d+)?")
_FILTER = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*)=(.*)", re.S)
_REF = re.compile(r"\$\$\{|\$\{([^{}]*)\}")


class PathError(ValueError):
    """A path that does not parse, or that leads nowhere in a value."""


@dataclass(frozen=True)
class Seg:
    """One step of a path: a ``key``, an ``index`` or a ``slice``."""

    kind: str
    key: str = ""
    index: int = 0
    start: int | None = None
    stop: int | None = None

    def text(self) -> str:
        if self.kind == "key":
            return self.key if _NAME.fullmatch(self.key) else f"[{json.dumps(self.key)}]"
        if self.kind == "index":
            return f"[{self.index}]"
        start = "" if self.start is None else str(self.start)
        stop = "" if self.stop is None else str(self.stop)
        return f"[{start}:{stop}]"


def _quoted(text: str, i: int) -> tuple[str, int]:
    quote = text[i]
    out: list[str] = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if ch == quote:
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise PathError(f"unclosed {quote} in path '{text}'")


@dataclass(frozen=True)
class Filter:
    """``[KEY=VALUE]``: the first mapping of a list whose KEY equals VALUE."""

    key: str
    value: str


PathPart = Seg | Filter


def parse_path(text: str) -> list[PathPart]:
    """Parse a path such as ``stages[tap=host.xfrm].counters``; PathError if it does not."""
    parts: list[PathPart] = []
    i = 0
    n = len(text)
    if n == 0:
        raise PathError("empty path")
    while i < n:
        ch = text[i]
        if ch == "[":
            i = _bracket(text, i, parts)
            continue
        if parts:
            if ch != ".":
                raise PathError(f"path '{text}': expected '.' or '[' at column {i + 1}")
            i += 1
        m = _NAME.match(text, i)
        if m is None:
            raise PathError(
                f"path '{text}': expected a key at column {i + 1} "
                '(letters, digits, _ and -; use ["..."] for other characters)'
            )
        parts.append(Seg("key", key=m.group()))
        i = m.end()
    return parts


def _bracket(text: str, i: int, parts: list[PathPart]) -> int:
    if i + 1 < len(text) and text[i + 1] in "'\"":
        key, j = _quoted(text, i + 1)
        if j >= len(text) or text[j] != "]":
            raise PathError(f"path '{text}': expected ']' at column {j + 1}")
        parts.append(Seg("key", key=key))
        return j + 1
    end = text.find("]", i)
    if end < 0:
        raise PathError(f"path '{text}': unclosed '[' at column {i + 1}")
    inner = text[i + 1 : end].strip()
    if _INT.fullmatch(inner):
        parts.append(Seg("index", index=int(inner)))
    elif (m := _SLICE.fullmatch(inner)) is not None:
        start, stop = m.groups()
        parts.append(
            Seg(
                "slice",
                start=None if start is None else int(start),
                stop=None if stop is None else int(stop),
            )
        )
    elif (m := _FILTER.fullmatch(inner)) is not None:
        value = m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        parts.append(Filter(m.group(1), value))
    else:
        raise PathError(
            f"path '{text}': '[{inner}]' is not an index, a slice, a quoted key or KEY=VALUE"
        )
    return end + 1


def path_text(parts: list[PathPart]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, Filter):
            out += f"[{part.key}={part.value}]"
        elif part.kind == "key":
            piece = part.text()
            out += piece if piece.startswith("[") or not out else "." + piece
        else:
            out += part.text()
    return out


def _keys(value: Mapping[str, Any]) -> str:
    keys = list(value)
    shown = ", ".join(keys[:20]) + (", ..." if len(keys) > 20 else "")
    return shown or "none"


def resolve(value: Any, parts: list[PathPart], prefix: list[PathPart] | None = None) -> Any:
    """The value at ``parts`` inside ``value``; PathError saying where it stopped.

    ``prefix`` is the path that led to ``value`` (for messages)."""
    done: list[PathPart] = list(prefix or ())
    for part in parts:
        here = path_text(done) or "the result"
        if isinstance(part, Filter):
            value = _filter(value, part, here)
        elif part.kind == "key":
            if not isinstance(value, Mapping):
                raise PathError(f"{here} is {_kind(value)}, it has no key '{part.key}'")
            if part.key not in value:
                raise PathError(f"{here} has no key '{part.key}'; keys: {_keys(value)}")
            value = value[part.key]
        elif part.kind == "index":
            if not isinstance(value, (list, str)):
                raise PathError(f"{here} is {_kind(value)}, not a list or text")
            if not -len(value) <= part.index < len(value):
                raise PathError(f"{here} has {len(value)} items, no [{part.index}]")
            value = value[part.index]
        else:
            if not isinstance(value, (list, str)):
                raise PathError(f"{here} is {_kind(value)}, it cannot be sliced")
            value = value[part.start : part.stop]
        done.append(part)
    return value


def _filter(value: Any, part: Filter, here: str) -> Any:
    if not isinstance(value, list):
        raise PathError(f"{here} is {_kind(value)}, not a list")
    seen: list[str] = []
    for item in value:
        if isinstance(item, Mapping) and part.key in item:
            if equal(part.value, item[part.key]):
                return item
            seen.append(str(item[part.key]))
    if not seen:
        raise PathError(f"no item of {here} has a key '{part.key}'")
    shown = ", ".join(seen[:20]) + (", ..." if len(seen) > 20 else "")
    raise PathError(f"no item of {here} has {part.key}={part.value}; {part.key} values: {shown}")


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    return f"{show(value)}"


# -- references -------------------------------------------------------------


def references(text: str) -> list[tuple[str, list[PathPart]]]:
    """Every ``${NAME.PATH}`` in ``text`` as (NAME, parsed path); PathError if one is bad."""
    found: list[tuple[str, list[PathPart]]] = []
    for m in _REF.finditer(text):
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
        raise PathError(f"'${{{inner}}}' is {_kind(value)}; pick one value with a longer path")
    return str(value)


def substitute(text: str, saved: Mapping[str, Any]) -> str:
    """``text`` with every reference replaced by its value as text."""

    def replace(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return "${"
        return _as_text(_lookup(m.group(1), saved), m.group(1))

    return _REF.sub(replace, text)


def substitute_value(value: Any, saved: Mapping[str, Any]) -> Any:
    """References inside an expected value; a string that is one reference keeps its type."""
    if isinstance(value, str):
        m = _REF.fullmatch(value)
        if m is not None and m.group(1) is not None:
            return plain(_lookup(m.group(1), saved))
        return substitute(value, saved)
    if isinstance(value, list):
        return [substitute_value(v, saved) for v in value]
    if isinstance(value, dict):
        return {k: substitute_value(v, saved) for k, v in value.items()}
    return value


# -- values -----------------------------------------------------------------


def plain(value: Any) -> Any:
    """``value`` as JSON-like data: bytes become hex text, unknown objects text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    return str(value)


def show(value: Any, limit: int = 160) -> str:
    """A value for a report line: JSON, shortened when long."""
    text = json.dumps(plain(value), ensure_ascii=False)
    if len(text) > limit:
        text = text[: limit - 20] + f"... ({len(text)} characters)"
    return text


def as_number(value: Any) -> float | int | None:
    """A number, or text that reads as one (decimal, 0x-hex, a float); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text, 0)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                return None
    return None


def equal(expected: Any, actual: Any) -> bool:
    """Equality with numbers matching numbers written as text (``"0x1000"`` == 4096)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(equal(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and set(expected) == set(actual)
            and all(equal(v, actual[k]) for k, v in expected.items())
        )
    if isinstance(expected, str) and isinstance(actual, str):
        return expected == actual
    left, right = as_number(expected), as_number(actual)
    if left is not None and right is not None:
        return left == right
    return bool(expected == actual)


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
    return re.search(str(arg), text) is not None


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
        except re.error as exc:  # a pattern made of saved values, known only now
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
