"""The shipped JSON Schema: valid, within what the built-in validator understands,
and in agreement with jsonschema on every shipped and every bad lab."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from esplab.errors import LabFileError
from esplab.lab.loader import load_document
from esplab.lab.schema import KEYWORDS, lab_schema, validate
from tests.lab.support import BAD_LABS, LABS, SHIPPED


def _keywords(schema: Any, found: set[str]) -> set[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            found.add(key)
            if key in ("properties", "$defs"):
                for sub in value.values():
                    _keywords(sub, found)
            elif key not in ("enum", "default", "required", "type"):
                _keywords(value, found)
    elif isinstance(schema, list):
        for item in schema:
            _keywords(item, found)
    return found


def test_schema_is_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(lab_schema())


def test_schema_uses_only_supported_keywords() -> None:
    assert _keywords(lab_schema(), set()) <= KEYWORDS


def test_unsupported_keyword_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported keywords"):
        validate({}, {"type": "object", "oneOf": []})


def _jsonschema_valid(data: Any) -> bool:
    validator = jsonschema.Draft202012Validator(lab_schema())
    return not list(validator.iter_errors(data))


def _loadable(paths: list[Path]) -> list[Path]:
    loadable = []
    for path in paths:
        try:
            load_document(path)
        except LabFileError:
            continue
        loadable.append(path)
    return loadable


@pytest.mark.parametrize(
    "path", SHIPPED + sorted((LABS / "data").glob("*.yaml")), ids=lambda p: p.name
)
def test_shipped_labs_are_valid_for_both(path: Path) -> None:
    data = load_document(path).data
    assert validate(data) == []
    assert _jsonschema_valid(data)


@pytest.mark.parametrize("path", _loadable(BAD_LABS), ids=lambda p: p.name)
def test_bad_labs_agree_with_jsonschema(path: Path) -> None:
    data = load_document(path).data
    ours = validate(data)
    assert (not ours) == _jsonschema_valid(data), [i.what for i in ours]


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (
            {
                "name": "x",
                "description": "y",
                "steps": [{"name": "a", "run": "help"}],
                "seed": True,
            },
            "'seed' must be a whole number",
        ),
        (
            {
                "name": "x",
                "description": "y",
                "steps": [{"name": "a", "run": "help", "wait": {"attempts": 0}}],
            },
            "'attempts' must be at least 1",
        ),
        (
            {
                "name": "x",
                "description": "y",
                "steps": [{"name": "a", "run": "help", "wait": {"tries": 3}}],
            },
            "unknown key 'tries' in 'wait'",
        ),
        (
            {
                "name": "x",
                "description": "y",
                "steps": [{"name": "a", "run": "help", "expect": {"a": {"len": "x"}}}],
            },
            "'len' must be a whole number",
        ),
        (
            {"name": "x", "description": "y", "steps": [{"name": "a", "run": "help", "error": 3}]},
            "'error' must be text the error message contains",
        ),
        (
            {"name": "x" * 201, "description": "y", "steps": [{"name": "a", "run": "help"}]},
            "'name' is too long (201 characters)",
        ),
        (
            {
                "name": "x",
                "description": "y",
                "steps": [{"name": "a", "run": "help"}],
                "seed": 2**64,
            },
            "'seed' must be at most",
        ),
    ],
)
def test_messages(data: dict[str, Any], fragment: str) -> None:
    issues = validate(data)
    assert any(fragment in issue.what for issue in issues), [i.what for i in issues]
    assert not _jsonschema_valid(data)


@pytest.mark.parametrize(
    ("bound", "good"),
    [
        (5, True),
        (-1.5, True),
        ("0x1000", True),
        (" 12 ", True),
        ("1_000", True),
        ("1e3", True),
        ("0b101", True),
        ("${lab.seed}", True),
        ("abc", False),
        ("many", False),
        ("0x", False),
        ("1e", False),
        ("", False),
        (True, False),
        (None, False),
    ],
)
@pytest.mark.parametrize("op", ["gt", "ge", "lt", "le"])
def test_comparison_bounds_agree_with_the_checker(op: str, bound: Any, good: bool) -> None:
    """gt/ge/lt/le take what the run compares as a number: the schema (for both validators)
    and ``esplab check`` accept and refuse the same values."""
    from esplab.lab.check import check_document
    from esplab.lab.loader import load_text

    data = {
        "name": "x",
        "description": "y",
        "steps": [{"name": "a", "run": "capture list", "expect": {"counts.x": {op: bound}}}],
    }
    assert _jsonschema_valid(data) is good
    assert (validate(data) == []) is good
    text = yaml.safe_dump(data, sort_keys=False)
    _, errors = check_document(load_text(text, "bound.yaml"))
    assert (errors == []) is good, [str(e) for e in errors]
    if not good and isinstance(bound, str):
        assert [str(e) for e in errors] == [
            f"bound.yaml:8:{errors[0].col}: '{op}' needs a number, got text '{bound}'"
        ]
