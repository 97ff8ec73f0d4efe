"""Reading a lab file into plain values, keeping where each value came from.

A lab file is UTF-8 YAML read with PyYAML's safe constructors only: no tags that
build Python objects, so a lab file can never run code. On top of the safe
loader this module refuses what YAML would accept silently but a lab author
never means: duplicate keys (PyYAML keeps the last one), tab characters, merge
keys, keys that are not text, more than one document, an empty file, a top level
that is not a mapping, and files over :data:`MAX_BYTES`. Alias expansion is
bounded by :data:`MAX_NODES`, so a small file cannot expand into a huge one.

Every problem is a :class:`~esplab.errors.LabFileError` at ``file:line:col``
(both 1-based). A successful load gives a :class:`Document`: the plain values
(dict, list, str, int, float, bool, None, and whatever else the YAML core schema
builds, such as dates) plus the position of every value and every key, looked up
by path (``("steps", 2, "run")``), and of a word inside a text value
(:meth:`Document.offset_mark`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from esplab.errors import LabFileError, shorten

__all__ = [
    "MAX_BYTES",
    "MAX_NODES",
    "Document",
    "LabLoader",
    "Mark",
    "PathKey",
    "describe_value",
    "expand",
    "load_document",
    "load_text",
]

#: Largest lab file read (1 MiB): a lab is a page or two of YAML.
MAX_BYTES = 1 << 20
#: Most values a file may expand to (aliases included).
MAX_DEPTH = 64  # levels of lists and mappings in one value
MAX_NODES = 100_000
#: Longest text read as a number: 64 bits in binary with a sign, 0b and underscores
#: fits; anything longer is refused before Python's int() (4,300 digits at most).
_INT_CHARS = 100

PathKey = tuple[str | int, ...]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_CORE = "tag:yaml.org,2002:"
# The tags a lab file may use (implicitly): plain data, nothing that builds objects.
_TAGS = frozenset(
    _CORE + t for t in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq")
)


@dataclass(frozen=True)
class Mark:
    """Where a value starts: 1-based line and column; ``text`` and ``style`` of a scalar.

    ``start`` and ``end`` are the value's character offsets in the file's text (-1 when
    unknown), for :meth:`Document.offset_mark`.
    """

    line: int
    col: int
    text: str | None = None
    style: str | None = None
    start: int = field(default=-1, compare=False)
    end: int = field(default=-1, compare=False)


@dataclass
class Document:
    """A loaded lab file: its values and where each one is."""

    file: str
    path: Path
    data: Any
    marks: dict[PathKey, Mark] = field(default_factory=dict)
    key_marks: dict[PathKey, Mark] = field(default_factory=dict)
    source: str = ""

    def mark(self, path: PathKey) -> Mark:
        """Position of the value at ``path`` (or of its nearest known ancestor)."""
        for end in range(len(path), -1, -1):
            found = self.marks.get(path[:end])
            if found is not None:
                return found
        return Mark(1, 1)

    def key_mark(self, path: PathKey) -> Mark:
        """Position of the key naming ``path`` (falls back to the value's)."""
        return self.key_marks.get(path) or self.mark(path)

    def offset_mark(self, path: PathKey, offset: int) -> Mark:
        """Position of character ``offset`` of the text value at ``path``.

        Exact when every line of the scalar appears verbatim in its value (plain,
        quoted without escapes, literal and folded scalars); otherwise, and for an
        offset the value does not have, the scalar's start.
        """
        mark = self.mark(path)
        if mark.text is None or mark.start < 0 or not 0 <= offset < len(mark.text):
            return mark
        spans = _scalar_spans(self.source[mark.start : mark.end], mark.text, mark.style)
        if not spans:
            return mark
        where = next(
            (src + max(0, offset - at) for at, src, size in spans if offset < at + size),
            None,
        )
        if where is None:
            return mark
        line, col = _position(self.source, mark.start + where)
        return Mark(line, col)

    def error(self, mark: Mark, what: str, **kw: Any) -> LabFileError:
        return LabFileError(self.file, mark.line, mark.col, what, **kw)


def describe_value(value: Any) -> str:
    """A value as the user wrote it, for messages: ``text 'abc'``, ``the number 3``."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if value != value else f"{'-' if value < 0 else ''}.inf"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"text {shown!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    kind = type(value).__name__
    if kind in ("date", "datetime"):
        return f"a date ({value})"
    if kind == "bytes":
        return "binary data (!!binary)"
    return f"a {kind}"


class LabLoader(yaml.SafeLoader):
    """A SafeLoader that records the position of every value and key.

    Mappings are built here rather than by ``construct_mapping``, so duplicate keys
    and merge keys can be refused with their position; scalars still go through
    the safe constructors, so ``0x5eed`` is a number and ``true`` a boolean.
    """

    def __init__(self, text: str, file: str) -> None:
        super().__init__(text)
        self.file = file
        self.value_marks: dict[PathKey, Mark] = {}
        self.key_marks: dict[PathKey, Mark] = {}
        self.count = 0

    def _fail(self, node: Node, what: str, **kw: Any) -> LabFileError:
        mark = node.start_mark
        return LabFileError(self.file, mark.line + 1, mark.column + 1, what, **kw)

    @staticmethod
    def _mark(node: Node) -> Mark:
        start, end = node.start_mark, node.end_mark
        if isinstance(node, ScalarNode):
            return Mark(
                start.line + 1, start.column + 1, node.value, node.style, start.index, end.index
            )
        return Mark(start.line + 1, start.column + 1, start=start.index, end=end.index)

    def load_marked(self) -> Any:
        """The single document's value; None for a file without content."""
        try:
            node = self.get_single_node()
            return None if node is None else self._value(node, ())
        finally:
            self.dispose()

    def _value(self, node: Node, path: PathKey) -> Any:
        self.count += 1
        if len(path) > MAX_DEPTH:  # deep nesting, or an alias that contains itself
            raise self._fail(
                node,
                f"values nest more than {MAX_DEPTH} levels deep",
                hint="an alias (*name) inside what it names repeats forever",
            )
        if self.count > MAX_NODES:
            raise self._fail(
                node,
                f"the file expands to more than {MAX_NODES} values",
                hint="aliases (*name) repeat what they point to; write the steps out instead",
            )
        self.value_marks[path] = self._mark(node)
        if node.tag not in _TAGS:
            raise self._fail(
                node,
                f"the tag {node.tag.replace(_CORE, '!!')} is not allowed",
                valid="text, numbers, true/false, null, lists and mappings",
            )
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            return [self._value(item, (*path, i)) for i, item in enumerate(node.value)]
        if node.tag == _CORE + "int" and len(str(node.value)) > _INT_CHARS:
            raise self._fail(
                node,
                f"the number {shorten(str(node.value), 40)} is too long",
                valid="a number of at most 64 bits (up to 0xffffffffffffffff)",
            )
        value = self.construct_object(node, deep=True)
        if isinstance(value, int) and not -(1 << 64) < value < 1 << 64:
            raise self._fail(
                node,
                f"the number {node.value} is out of range",
                valid="a number of at most 64 bits (up to 0xffffffffffffffff)",
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise self._fail(
                node,
                f"{describe_value(value)} is no number a lab can use",
                valid="a finite number, e.g. 0.5",
            )
        return value

    def _mapping(self, node: MappingNode, path: PathKey) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first: dict[str, Mark] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                raise self._fail(
                    key_node,
                    "merge keys (<<) are not supported in lab files",
                    hint="write the keys out",
                )
            if not isinstance(key_node, ScalarNode):
                raise self._fail(key_node, "a key must be text, not a list or a mapping")
            key = str(key_node.value)
            mark = self._mark(key_node)
            if key in first:
                raise self._fail(
                    key_node,
                    f"duplicate key '{key}' (first at line {first[key].line})",
                    hint="YAML would keep only the last one; remove or rename one",
                )
            first[key] = mark
            here = (*path, key)
            self.key_marks[here] = mark
            result[key] = self._value(value_node, here)
        return result


def _scalar_spans(segment: str, value: str, style: str | None) -> list[tuple[int, int, int]]:
    """``(value offset, segment offset, length)`` of each line of a scalar's source
    ``segment`` in its ``value``; empty when a line is not found verbatim (an escape,
    a ``''``), so columns cannot be recovered."""
    spans: list[tuple[int, int, int]] = []
    lines = segment.splitlines(keepends=True)
    offset = 0
    if style in ("|", ">") and lines:  # the header line: '|', '>-', '|2' and a comment
        offset = len(lines[0])
        lines = lines[1:]
    elif style in ('"', "'"):  # the quotes are no part of the value
        offset = 1
        lines = segment[1:-1].splitlines(keepends=True)
    at = 0
    for raw in lines:
        content = raw.rstrip("\r\n").strip(" ")
        if content and at < len(value.rstrip()):
            found = value.find(content, at)
            if found < 0 or value[at:found].strip():
                return []
            spans.append((found, offset + raw.index(content), len(content)))
            at = found + len(content)
        offset += len(raw)
    return spans


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def _tabs(text: str, file: str) -> None:
    first = text.find("\t")
    if first < 0:
        return
    lines = [n for n, row in enumerate(text.split("\n"), 1) if "\t" in row]  # one pass
    line, col = _position(text, first)
    more = ""
    if len(lines) > 1:
        shown = ", ".join(str(n) for n in lines[:10]) + (", ..." if len(lines) > 10 else "")
        more = f" (tabs on lines {shown})"
    raise LabFileError(
        file,
        line,
        col,
        f"tab character{more}",
        hint="indent with spaces; inside text write \\t in a double-quoted string",
    )


def _decode(data: bytes, file: str) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode("utf-8")
        line, col = _position(good, len(good))
        raise LabFileError(
            file,
            line,
            col,
            f"byte 0x{data[exc.start]:02x} is not UTF-8 text",
            hint="save the file as UTF-8",
        ) from None


def _yaml_error(exc: yaml.YAMLError, text: str, file: str) -> LabFileError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        if exc.context == "expected a single document in the stream":
            return LabFileError(
                file, line, col, "a second YAML document ('---')", valid="one document per lab file"
            )
        problem = exc.problem or exc.context or "cannot be read"
        context = ""
        if exc.context and exc.problem:
            start = exc.context_mark
            where = (
                ""
                if start is None or start.line + 1 == line
                else f" at line {start.line + 1}, column {start.column + 1}"
            )
            context = f" ({exc.context}{where})"
        return LabFileError(file, line, col, f"invalid YAML: {problem}{context}")
    if isinstance(exc, yaml.reader.ReaderError):
        line, col = _position(text, exc.position)
        return LabFileError(
            file,
            line,
            col,
            f"invalid YAML: control character U+{exc.character:04X}",
            hint="remove it; YAML allows only printable characters",
        )
    return LabFileError(file, 1, 1, f"invalid YAML: {exc}")


def load_text(text: str, file: str, path: Path | None = None) -> Document:
    """Load lab YAML from ``text``; ``file`` is the name used in messages."""
    _tabs(text, file)
    if not text.strip():
        raise LabFileError(
            file, 1, 1, "the file is empty", valid="a mapping with name, description and steps"
        )
    try:
        loader = LabLoader(text, file)
        data = loader.load_marked()
    except LabFileError:
        raise
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, file) from exc
    except RecursionError:  # nesting deeper than the YAML reader itself can follow
        raise LabFileError(
            file,
            1,
            1,
            f"values nest more than {MAX_DEPTH} levels deep",
            valid="steps of plain keys and values",
        ) from None
    if data is None:
        raise LabFileError(
            file,
            1,
            1,
            "the file has only comments",
            valid="a mapping with name, description and steps",
        )
    if not isinstance(data, dict):
        mark = loader.value_marks.get((), Mark(1, 1))
        raise LabFileError(
            file,
            mark.line,
            mark.col,
            f"the top level must be a mapping, got {describe_value(data)}",
            valid="a mapping with name, description and steps",
        )
    return Document(
        file, path or Path(file), data, loader.value_marks, loader.key_marks, source=text
    )


def load_document(path: str | Path, file: str | None = None) -> Document:
    """Read and load the lab file at ``path``; ``file`` (default: ``path``) names it."""
    from esplab.errors import FileError
    from esplab.files import open_input, user_path

    name = str(path) if file is None else file
    try:
        target = user_path(path, "lab file")
        is_dir = target.is_dir()
    except FileError as exc:  # a NUL byte, a name too long
        raise LabFileError(name, 1, 1, exc.what, valid=exc.valid) from None
    if is_dir:
        # Name the lab files it holds: one of them is what was meant, or all of them
        # (esplab run and esplab check take a directory; lab run in the REPL takes a file).
        labs = sorted(p.name for p in [*target.glob("*.yaml"), *target.glob("*.yml")])
        raise LabFileError(
            name,
            1,
            1,
            "is a directory, not a lab file",
            valid=[str(target / lab) for lab in labs] or "a lab file (.yaml); it holds none",
            hint=f"esplab run {name} runs every lab in it" if labs else None,
        )
    try:  # a regular file only: a FIFO would block, a device never end (esplab.files)
        with open_input(target, "lab file") as fh:
            data = fh.read(MAX_BYTES + 1)
    except FileError as exc:
        raise LabFileError(name, 1, 1, exc.what, valid=exc.valid) from None
    except OSError as exc:
        raise LabFileError(name, 1, 1, f"cannot read the file: {exc.strerror or exc}") from exc
    if len(data) > MAX_BYTES:
        size = _size(target, len(data))
        raise LabFileError(
            name, 1, 1, f"the file is too big ({size})", valid=f"at most {MAX_BYTES} bytes (1 MiB)"
        )
    return load_text(_decode(data, name), name, target)


def _size(target: Path, read: int) -> str:
    try:
        return f"{target.stat().st_size} bytes"
    except OSError:
        return f"more than {read - 1} bytes"


def expand(names: Sequence[str]) -> list[Path]:
    """Lab files named on the command line; a directory gives its ``*.yaml`` files."""
    files: list[Path] = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            files.extend(sorted([*path.glob("*.yaml"), *path.glob("*.yml")]))
        else:
            files.append(path)
    return files
