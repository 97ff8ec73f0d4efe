"""The consoles the command-line entry points print to (the REPL, ``-c``, piped
commands, ``run``, ``check``, ``decode``, ``diagnose``): one way to make them.

Text is never wrapped: a long line stays one line, so a message, a hex value or a
help example can be searched for and copied whole. Soft wrapping would crop text
inside a box, so what ``esplab.render`` puts in one (a help box, a table cell) wraps
at spaces itself. On a terminal, tables fit its width without splitting a value
(``esplab.render_table.FitTable``); when the output is a pipe or a file they get
``PIPE_WIDTH`` columns (``COLUMNS`` overrides it).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["PIPE_WIDTH", "consoles"]

PIPE_WIDTH = 200


def _width(stream: TextIO) -> int | None:
    if os.environ.get("COLUMNS") or stream.isatty():
        return None  # rich asks the terminal, or reads COLUMNS
    return PIPE_WIDTH


def consoles(no_color: bool = False) -> tuple[Console, Console]:
    """Standard output and standard error consoles; ``no_color`` (or ``NO_COLOR`` in
    the environment) makes them plain."""
    from rich.console import Console

    plain = no_color or bool(os.environ.get("NO_COLOR"))
    return (
        Console(no_color=plain, highlight=False, soft_wrap=True, width=_width(sys.stdout)),
        Console(
            stderr=True, no_color=plain, highlight=False, soft_wrap=True, width=_width(sys.stderr)
        ),
    )
