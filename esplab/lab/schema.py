"""The lab file's JSON Schema, and a validator for it that needs no dependency.

``schema.json`` ships in the package so editors can validate lab files while
they are typed (point the YAML language server at it). At run time esplab does
not depend on ``jsonschema``: :func:`validate` interprets the small part of JSON
Schema 2020-12 the file uses (see :data:`KEYWORDS`) and turns every violation into
a message for a person, with the value, what is valid and a did-you-mean. The
tests run ``jsonschema`` over every shipped and every bad lab and check that
both agree.

Four annotations of our own shape the messages; JSON Schema ignores them:
``x-valid`` (what is valid, in words), ``x-key`` (what the keys of a mapping are
called, default "key"), ``x-hint`` (advice when a key is unknown) and ``x-invalid``
(what text that misses the ``pattern`` lacks: "'gt' needs a number, got text 'many'").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from esplab.lab.loader import PathKey, describe_value

__all__ = ["KEYWORDS", "Issue", "json_type", "lab_schema", "validate"]

#: The JSON Schema keywords this validator understands; the schema uses no others.
KEYWORDS = frozenset(
    {
        "$schema",
        "$defs",
        "$ref",
        "title",
        "description",
        "default",
        "type",
        "enum",
        "anyOf",
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "x-valid",
        "x-key",
        "x-hint",
        "x-invalid",
    }
)

_TYPE_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "array": "a list",
    "object": "a mapping",
}


@cache
def lab_schema() -> dict[str, Any]:
    """The shipped schema (read once; treat it as read-only)."""
    text = resources.files("esplab.lab").joinpath("schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@dataclass(frozen=True)
class Issue:
    """One violation: where (``at_key``: point at the key, not the value) and what."""

    path: PathKey
    what: str
    at_key: bool = False
    valid: str | list[str] | None = None
    hint: str | None = None
    value: str | None = None


def json_type(value: Any) -> str | None:
    """The JSON type of a loaded value, or None for values JSON cannot hold (dates)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def _type_ok(value: Any, wanted: str) -> bool:
    actual = json_type(value)
    if wanted == "number":
        return actual in ("integer", "number")
    return actual == wanted


def _types(schema: dict[str, Any]) -> list[str] | None:
    kind = schema.get("type")
    if kind is None:
        return None
    return [kind] if isinstance(kind, str) else list(kind)


def where(path: PathKey) -> str:
    """A path for messages: ``'seed'``, ``step 3``, ``'run'``."""
    if not path:
        return "the lab"
    last = path[-1]
    if isinstance(last, int):
        if path[:-1] == ("steps",):
            return f"step {last + 1}"
        return f"item {last + 1} of {where(path[:-1])}"
    return f"'{last}'"


class _Validator:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.issues: list[Issue] = []

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            ref = schema["$ref"]
            if not ref.startswith("#/$defs/"):
                raise ValueError(f"unsupported $ref {ref!r} in the lab schema")
            schema = self.root["$defs"][ref.removeprefix("#/$defs/")]
        unknown = set(schema) - KEYWORDS
        if unknown:
            raise ValueError(f"unsupported keywords in the lab schema: {sorted(unknown)}")
        return schema

    def add(self, path: PathKey, what: str, **kw: Any) -> None:
        self.issues.append(Issue(path, what, **kw))

    def type_error(
        self, value: Any, schema: dict[str, Any], path: PathKey, types: list[str]
    ) -> None:
        wanted = schema.get("x-valid") or " or ".join(_TYPE_WORDS[t] for t in types)
        self.add(path, f"{where(path)} must be {wanted}, got {describe_value(value)}")

    def check(self, value: Any, schema: dict[str, Any], path: PathKey) -> None:
        schema = self.resolve(schema)
        if "anyOf" in schema:
            self.any_of(value, schema, path)
            return
        types = _types(schema)
        if types is not None and not any(_type_ok(value, t) for t in types):
            self.type_error(value, schema, path, types)
            return
        if "enum" in schema and value not in schema["enum"]:
            self.enum(value, schema, path)
            return
        if isinstance(value, str):
            self.string(value, schema, path)
        elif json_type(value) in ("integer", "number"):
            self.number(value, schema, path)
        elif isinstance(value, list):
            self.array(value, schema, path)
        elif isinstance(value, dict):
            self.mapping(value, schema, path)

    def any_of(self, value: Any, schema: dict[str, Any], path: PathKey) -> None:
        branches = [self.resolve(b) for b in schema["anyOf"]]
        fitting = [
            b
            for b in branches
            if _types(b) is None or any(_type_ok(value, t) for t in _types(b) or ())
        ]
        if not fitting:
            types = [t for b in branches for t in (_types(b) or ())]
            self.type_error(value, schema, path, types)
            return
        first: list[Issue] | None = None
        for branch in fitting:
            saved, self.issues = self.issues, []
            self.check(value, branch, path)
            found, self.issues = self.issues, saved
            if not found:
                return
            first = found if first is None else first
        self.issues.extend(first or [])

    def enum(self, value: Any, schema: dict[str, Any], path: PathKey) -> None:
        choices = [str(c) for c in schema["enum"]]
        name = str(path[-1]) if path and isinstance(path[-1], str) else "value"
        shown = f"'{value}'" if isinstance(value, str) else describe_value(value)
        self.add(path, f"unknown {name} {shown}", valid=choices, value=str(value))

    def string(self, value: str, schema: dict[str, Any], path: PathKey) -> None:
        low, high = schema.get("minLength"), schema.get("maxLength")
        if low is not None and len(value) < low:
            self.add(
                path,
                f"{where(path)} must not be empty"
                if low == 1
                else f"{where(path)} is too short ({len(value)} characters)",
                valid=None if low == 1 else f"at least {low} characters",
            )
        elif high is not None and len(value) > high:
            self.add(
                path,
                f"{where(path)} is too long ({len(value)} characters)",
                valid=f"at most {high} characters",
            )
        pattern = schema.get("pattern")
        if pattern is not None and re.search(pattern, value) is None and "x-invalid" in schema:
            self.add(path, f"{where(path)} {schema['x-invalid']} '{value}'")
        elif pattern is not None and re.search(pattern, value) is None:
            self.add(
                path,
                f"{where(path)} cannot be '{value}'",
                valid=schema.get("x-valid") or f"text matching {pattern}",
            )

    def number(self, value: float, schema: dict[str, Any], path: PathKey) -> None:
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and value < low:
            self.add(
                path,
                f"{where(path)} must be at least {low}, got {value}",
                valid=schema.get("x-valid"),
            )
        elif high is not None and value > high:
            self.add(
                path,
                f"{where(path)} must be at most {high}, got {value}",
                valid=schema.get("x-valid"),
            )

    def array(self, value: list[Any], schema: dict[str, Any], path: PathKey) -> None:
        low, high = schema.get("minItems"), schema.get("maxItems")
        if low is not None and len(value) < low:
            self.add(
                path,
                f"{where(path)} must not be empty"
                if low == 1
                else f"{where(path)} needs at least {low} items, got {len(value)}",
            )
        elif high is not None and len(value) > high:
            self.add(path, f"{where(path)} has {len(value)} items", valid=f"at most {high}")
        items = schema.get("items")
        if items is not None:
            for index, item in enumerate(value):
                self.check(item, items, (*path, index))

    def mapping(self, value: dict[str, Any], schema: dict[str, Any], path: PathKey) -> None:
        low = schema.get("minProperties")
        if low is not None and len(value) < low:
            self.add(path, f"{where(path)} must not be empty")
        for key in schema.get("required", ()):
            if key not in value:
                self.add(path, f"{where(path)} is missing '{key}'")
        properties: dict[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        noun = schema.get("x-key", "key")
        for key, item in value.items():
            if key in properties:
                self.check(item, properties[key], (*path, key))
            elif extra is False:
                place = "" if not path else f" in {where(path)}"
                self.add(
                    (*path, key),
                    f"unknown {noun} '{key}'{place}",
                    at_key=True,
                    valid=list(properties),
                    value=key,
                    hint=schema.get("x-hint"),
                )
            elif isinstance(extra, dict):
                self.check(item, extra, (*path, key))


def validate(data: Any, schema: dict[str, Any] | None = None) -> list[Issue]:
    """Every violation of the lab schema (or ``schema``) by ``data``, in document order."""
    root = lab_schema() if schema is None else schema
    validator = _Validator(root)
    validator.check(data, root, ())
    return validator.issues
