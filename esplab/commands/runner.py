"""Running command text for the non-interactive front ends (``-c``, piped stdin).

The REPL and this runner share one rule: an EsplabError is one red line and the
session carries on; anything else is one line plus a traceback in the log.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from esplab.commands.result import QuitResult, Result, TextResult
from esplab.commands.session import Session
from esplab.commands.tokens import split_commands
from esplab.config import LOG, log_path, setup_logging
from esplab.errors import EsplabError
from esplab.render import render, render_error

__all__ = ["Outcome", "emit", "run_line", "run_text"]


@dataclass
class Outcome:
    line: str
    result: Result | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def run_line(session: Session, line: str, out: Console, err: Console) -> Outcome:
    """Execute one command line and print its result (or its one-line error)."""
    try:
        result = session.execute(line)
    except EsplabError as exc:
        err.print(render_error(str(exc)))
        return Outcome(line, None, str(exc))
    except Exception as exc:  # a bug: one line for the user, the traceback to the log
        setup_logging()
        LOG.exception("internal error while running %r", line)
        where = log_path()
        message = f"internal error: {type(exc).__name__}: {exc}"
        if where is not None:
            message += f" (details in {where})"
        err.print(render_error(message))
        return Outcome(line, None, message)
    emit(out, result)
    return Outcome(line, result)


def emit(out: Console, result: Result) -> None:
    """Print a result. Verbatim text (iproute2 output) is written byte for byte when
    the output is not a terminal, so it can be diffed against a board's."""
    if isinstance(result, QuitResult):
        return
    if isinstance(result, TextResult):
        if out.is_terminal:
            out.print(Text(result.text), soft_wrap=True)
        else:
            out.file.write(result.text + "\n")
        return
    out.print(render(result))


def run_text(session: Session, text: str, out: Console, err: Console) -> list[Outcome]:
    """Run every command in ``text`` (``;`` or newline separated); stop at ``quit``."""
    outcomes: list[Outcome] = []
    for physical in text.splitlines():
        try:
            lines = split_commands(physical)
        except EsplabError as exc:
            err.print(render_error(str(exc)))
            outcomes.append(Outcome(physical, None, str(exc)))
            continue
        for line in lines:
            outcome = run_line(session, line, out, err)
            outcomes.append(outcome)
            if isinstance(outcome.result, QuitResult):
                return outcomes
    return outcomes
