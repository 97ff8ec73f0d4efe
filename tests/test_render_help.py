"""``help COMMAND`` on the consoles esplab prints to (soft-wrapping, as
``esplab.console`` makes them): the box's text wraps at spaces and is never cut,
and the example, a command line to copy, stays one line."""

from __future__ import annotations

import re
from io import StringIO

import pytest

from esplab.commands.result import HelpResult
from esplab.commands.session import Session
from esplab.lab.command import every_command
from esplab.render import render


def shown(line: str, width: int) -> str:
    """``line``'s result as esplab's soft-wrapping console prints it ``width`` wide."""
    from rich.console import Console

    buf = StringIO()
    console = Console(file=buf, width=width, color_system=None, soft_wrap=True, highlight=False)
    console.print(render(Session(every_command()).run(line)))
    return buf.getvalue()


def box_words(text: str) -> list[str]:
    """The words inside the help box, in reading order, borders and title dropped."""
    words: list[str] = []
    for line in text.splitlines():
        if line.startswith("│"):
            words.extend(line.strip("│ ").split())
    return words


@pytest.mark.parametrize("width", [80, 160, 200])
@pytest.mark.parametrize("name", ["ip", "diff", "send", "decode"])
def test_the_help_box_wraps_its_whole_text(name: str, width: int) -> None:
    result = Session().run(f"help {name}")
    assert isinstance(result, HelpResult) and result.detail is not None
    d = result.detail
    out = shown(f"help {name}", width)
    expected = f"{d.summary} usage: {d.usage} {d.details}".split()
    assert box_words(out) == expected
    assert all(len(line) <= width for line in out.splitlines() if line.startswith("│"))


def test_every_command_help_is_shown_whole_at_80_columns() -> None:
    for command in every_command():
        out = shown(f"help {command.name}", 80)
        aliases = ["aliases:", *", ".join(command.aliases).split()] if command.aliases else []
        expected = [
            *command.summary.split(),
            "usage:",
            *command.usage.split(),
            *aliases,
            *command.details.split(),
        ]
        assert box_words(out) == expected, command.name


@pytest.mark.parametrize("width", [40, 80, 160])
def test_an_example_is_one_line_never_cut(width: int) -> None:
    result = Session().run("help decode")
    assert isinstance(result, HelpResult) and result.detail is not None
    example = result.detail.example
    assert len(example) > 80  # longer than the terminal: it runs past the edge
    assert f"example: {example}" in shown("help decode", width).splitlines()


def test_help_ip_shows_the_end_of_its_details() -> None:
    out = shown("help ip", 160)
    joined = re.sub(r"\s+", " ", " ".join(box_words(out)))
    assert "flush cache; ip neigh add ADDR lladdr MAC dev DEV; ip xfrm state|policy ..." in joined
