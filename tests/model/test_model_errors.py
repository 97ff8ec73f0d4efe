"""The model raises its own errors: never the command layer's ``BadArgument``, and
each of its classes shows exactly as a command's error does (REPL, ``esplab run``,
``--json``, board output, lab check)."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import esplab.model
from esplab import errors
from esplab.batch import board_error, run_line
from esplab.commands.session import Session
from esplab.errors import (
    BadArgument,
    EsplabError,
    InvalidValue,
    NotFound,
    StateConflict,
    ToolUsageError,
    UsageError,
)

MODEL = Path(esplab.model.__file__).parent
# The command layer's own classes: the model has its own (esplab.errors' docstring).
COMMAND_LAYER_ONLY = frozenset({"BadArgument", "UnknownCommand"})


def command_layer_uses(source: str) -> list[str]:
    """Every import of a command-layer-only error class in ``source``, and every import
    of ``esplab.commands`` (the model sits below the commands), as ``line: name``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            for alias in node.names:
                if alias.name in COMMAND_LAYER_ONLY or module.startswith("esplab.commands"):
                    found.append(f"{node.lineno}: {module}.{alias.name}")
        elif isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: {a.name}"
                for a in node.names
                if a.name.startswith("esplab.commands")
            ]
        elif isinstance(node, ast.Attribute) and node.attr in COMMAND_LAYER_ONLY:
            found.append(f"{node.lineno}: .{node.attr}")  # errors.BadArgument
    return found


def test_the_scan_sees_each_way_of_reaching_bad_argument() -> None:
    assert command_layer_uses("from esplab.errors import BadArgument, KernelError") == [
        "1: esplab.errors.BadArgument"
    ]
    assert command_layer_uses("from esplab import errors\nraise errors.BadArgument('x')") == [
        "2: .BadArgument"
    ]
    assert command_layer_uses("import esplab.commands.parser") == ["1: esplab.commands.parser"]
    assert command_layer_uses("from esplab.errors import InvalidValue, ToolUsageError") == []


def test_no_model_module_imports_bad_argument() -> None:
    modules = sorted(MODEL.rglob("*.py"))
    # the whole model, sub-folders included
    assert {p.parent.name for p in modules} >= {"eip93", "esp", "xfrm", "journey", "iproute2"}
    offenders = {
        str(path.relative_to(MODEL)): uses
        for path in modules
        if (uses := command_layer_uses(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_model_classes_sit_where_their_presentation_needs_them() -> None:
    # A tool's own refusal of its words is a usage error (a lab check: "does not
    # parse"); the model's other refusals are not, and none is the command layer's.
    assert issubclass(ToolUsageError, UsageError)
    assert not issubclass(ToolUsageError, BadArgument)
    for cls in (InvalidValue, StateConflict, NotFound):
        assert issubclass(cls, EsplabError) and not issubclass(cls, UsageError)


def test_the_docstring_tree_draws_every_class() -> None:
    doc = errors.__doc__ or ""
    classes = [
        name
        for name in errors.__all__
        if isinstance(getattr(errors, name), type)
        and issubclass(getattr(errors, name), EsplabError)
    ]
    assert "InvalidValue" in classes and "ToolUsageError" in classes
    assert "\n    EsplabError " in doc  # the root
    assert [c for c in classes if c != "EsplabError" and f"── {c} " not in doc] == []


# ---- presentation: the same line, colour and exit status as before ---------------------

# One model refusal of each class, through the command that reaches it (message
# word for word as the model words it).
MODEL_REFUSALS = [
    ("xsk create 1a", InvalidValue, "'1a' cannot name a socket; valid: a letter, then"),
    ("xsk create a", StateConflict, "socket 'a' exists already; xsk close a"),
    ("xdp driver wan nope", NotFound, "unknown driver profile 'nope'; valid: "),
    (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 1 mode trnsport",
        ToolUsageError,
        'argument "trnsport" is wrong: MODE value is invalid',
    ),
]


def _consoles() -> tuple[Console, Console, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    kw = {"width": 200, "color_system": "standard", "force_terminal": True}
    return Console(file=out, **kw), Console(file=err, **kw), out, err  # type: ignore[arg-type]


@pytest.mark.parametrize(("line", "cls", "message"), MODEL_REFUSALS)
def test_a_model_refusal_prints_as_a_command_error(
    line: str, cls: type[EsplabError], message: str
) -> None:
    session = Session()
    session.execute("xsk create a")
    with pytest.raises(cls) as info:
        session.execute(line)
    said = str(info.value)
    assert said.startswith(message)
    out_c, err_c, out, err = _consoles()
    outcome = run_line(session, line, out_c, err_c)
    assert not outcome.ok and outcome.error == said  # esplab run: exit status 1
    assert out.getvalue() == ""
    # render_error: "error: <message>" in bold red, as for any EsplabError
    assert err.getvalue().startswith("\x1b[1;31merror: ")
    assert said.split(";")[0] in err.getvalue()
    # board output: the tool's own "Error: <what>." with esplab's words beside it
    board, advice = board_error(info.value)
    assert board == f"Error: {info.value.what}." and advice == said
    # --json: the same document whatever the class
    session.output = "json"
    out_c, err_c, out, err = _consoles()
    run_line(session, line, out_c, err_c)
    assert json.loads(out.getvalue()) == {"command": line, "ok": False, "error": said}
