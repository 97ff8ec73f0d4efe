"""Paths into a result, and the JSON-like values they lead to.

Paths
    ``delivered``, ``stages[-1].tap``, ``counts["wan.wire"]``, ``hex[68:76]``,
    ``stages[tap=host.xfrm].counters.XfrmInStateSeqError``. A path starts with a
    key and goes on with ``.KEY``, ``[N]`` (from 0; negative from the end),
    ``[A:B]`` (a slice of a list or of text), ``["KEY"]`` (a key with dots or
    other characters) and ``[KEY=VALUE]`` (the first item of a list of mappings
    whose KEY equals VALUE).

Values
    What a path finds is JSON-like data (:func:`plain`). Numbers match numbers
    written as text in decimal or ``0x`` hex (:func:`equal`), in a ``[KEY=VALUE]``
    filter as in an expectation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from esplab.errors import shorten

__all__ = [
    "Filter",
    "PathError",
    "PathPart",
    "Seg",
    "as_number",
    "equal",
    "kind_of",
    "parse_path",
    "path_text",
    "plain",
    "resolve",
    "show",
]


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_INT = re.compile(r"-?\d+")
_SLICE = re.compile(r"(-?\d+)?:(-?\d+)?")
_FILTER = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*)=(.*)", re.S)
#: An index or slice bound past this many digits can index nothing a result holds.
_INDEX_DIGITS = 18
#: Text longer than this is no number (64 bits in binary, with sign, 0b and '_').
_NUMBER_CHARS = 100


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
    if (_INT.fullmatch(inner) or _SLICE.fullmatch(inner)) and len(inner) > 2 * _INDEX_DIGITS:
        raise PathError(
            f"path '{shorten(text, 80)}': [{shorten(inner, 30)}] is out of range; "
            f"valid: an index or slice bounds of at most {_INDEX_DIGITS} digits"
        )
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
                raise PathError(f"{here} is {kind_of(value)}, it has no key '{part.key}'")
            if part.key not in value:
                raise PathError(f"{here} has no key '{part.key}'; keys: {_keys(value)}")
            value = value[part.key]
        elif part.kind == "index":
            if not isinstance(value, (list, str)):
                raise PathError(f"{here} is {kind_of(value)}, not a list or text")
            if not -len(value) <= part.index < len(value):
                raise PathError(f"{here} has {len(value)} items, no [{part.index}]")
            value = value[part.index]
        else:
            if not isinstance(value, (list, str)):
                raise PathError(f"{here} is {kind_of(value)}, it cannot be sliced")
            value = value[part.start : part.stop]
        done.append(part)
    return value


def _filter(value: Any, part: Filter, here: str) -> Any:
    if not isinstance(value, list):
        raise PathError(f"{here} is {kind_of(value)}, not a list")
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


# -- values -----------------------------------------------------------------


def kind_of(value: Any) -> str:
    """What ``value`` is, for a message: a mapping, a list, text, null, or itself."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    return f"{show(value)}"


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
        if len(text) > _NUMBER_CHARS:
            return None
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
