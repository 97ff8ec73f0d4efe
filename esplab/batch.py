"""Running command text for the non-interactive front ends (``-c``, piped stdin), and
printing each result (the REPL's loop and ``esplab run``'s step output print here too).
It sits over the command core and the renderers: the core never prints.

The REPL and this runner share one rule: an EsplabError is one red line and the
session carries on; anything else is one line plus a traceback in the log.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from esplab.commands.base import Session
from esplab.commands.hexinput import is_dump_line
from esplab.commands.result import MessageResult, QuitResult, Result, TextResult
from esplab.commands.tokens import split_commands
from esplab.config import LOG, log_path, setup_logging
from esplab.errors import EsplabError
from esplab.render import render, render_error

__all__ = ["INTERRUPTED", "Outcome", "command_pieces", "emit", "run_line", "run_text"]


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
        from esplab.commands.tokens import json_flag
        from esplab.render_json import error_json

        bare, as_json = json_flag(line)
        if as_json or session.output == "json":  # the error as the JSON stream's line
            out.file.write(error_json(bare, str(exc)) + "\n")
        elif session.output == "board":
            said, advice = board_error(exc)
            err.print(Text(said))
            if advice:
                err.print(Text(f"  (esplab: {advice})", style="dim"))
        else:
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
    if session.output == "board" and _board_silent(result, line, session):
        return Outcome(line, result)
    emit(out, result, line)
    return Outcome(line, result)


# Commands a board answers with silence when they succeed (iproute2, ethtool).
_SILENT_TOOLS = frozenset({"ip", "ethtool"})


def _board_silent(result: Result, line: str, session: Session) -> bool:
    """A successful ``ip``/``ethtool`` change: a board prints nothing (listings print)."""
    return (
        isinstance(result, MessageResult)
        and _command_word(line, session.node_names()) in _SILENT_TOOLS
    )


def board_error(exc: EsplabError) -> tuple[str, str]:
    """What a board prints for this error, and esplab's own words beside it: a kernel
    refusal as iproute2 prints it (``Error: <extack>.`` or ``RTNETLINK answers: ...``),
    a line the tool refuses itself as ``Error: <what>.``."""
    from esplab.errors import KernelError

    if isinstance(exc, KernelError):
        said = exc.board
    elif exc.board_text:
        said = exc.board_text
    else:
        said = f"Error: {exc.what}."
    full = str(exc)
    return said, "" if full in (said, exc.what) else full


def emit(out: Console, result: Result, line: str = "") -> None:
    """Print a result. Verbatim text (iproute2 output) is written byte for byte when
    the output is not a terminal, so it can be diffed against a board's. A result
    marked for JSON is one line of it (``esplab.render_json``)."""
    if result.output == "json":
        from esplab.commands.tokens import json_flag
        from esplab.render_json import result_json

        out.file.write(result_json(result, json_flag(line)[0]) + "\n")
        return
    if isinstance(result, QuitResult):
        return
    if isinstance(result, TextResult):
        if not result.text:
            return  # iproute2 prints nothing for an empty list, not an empty line
        if out.is_terminal:
            out.print(Text(result.text), soft_wrap=True)
        else:
            out.file.write(result.text + "\n")
        return
    out.print(render(result))


_STRAY_DUMP = (
    "this looks like a line of a memory dump, with nothing to decode it; "
    "paste the dump together with the command, e.g. decode sa followed by "
    "the lines of md.l 0x08000000 0x20"
)


def _is_decode(line: str, nodes: Collection[str]) -> bool:
    """``decode ...`` or ``NODE decode ...``."""
    return _command_word(line, nodes) == "decode"


def _whole(line: str, nodes: Collection[str], commands: Collection[str]) -> bool:
    """Whether a one-line ``decode`` must be taken as it is: it does not split (an
    unbalanced quote), or what follows a ``;`` is no command (a dump's ASCII column)."""
    try:
        parts = split_commands(line)
    except EsplabError:
        return True
    return any(_command_word(part, nodes) not in commands for part in parts[1:])


def _command_word(line: str, nodes: Collection[str]) -> str:
    """The command a line runs, after an optional node name."""
    words = line.split(None, 2)
    if len(words) > 1 and words[0] in nodes:
        return words[1]
    return words[0] if words else ""


def command_pieces(
    text: str, nodes: Collection[str] = (), commands: Collection[str] = ()
) -> list[tuple[str, bool]]:
    """The commands of ``text`` in order, as (text, whole).

    A ``decode`` line followed by dump lines (address column first, blank lines between
    allowed) is one command with them, taken whole (``whole`` is True): a dump's ASCII
    column may hold ``;``, ``#`` or quotes, which are no syntax there. So is a one-line
    ``decode`` that splitting would break (:func:`_whole`). Every other line is split at
    ``;`` and comments by :func:`split_commands`. ``nodes`` are the names a command may
    start with, ``commands`` the command names (and aliases).
    """
    # Each piece's lines are gathered in a list and joined once: adding a dump's lines
    # to a string one by one would copy it once a line (quadratic in the paste).
    pieces: list[tuple[list[str], bool]] = []
    decoding = False  # whether the last piece is a decode command (a dump may follow)
    for physical in text.splitlines():
        if not physical.strip():
            continue  # (a blank line between decode and its dump changes nothing)
        if decoding and is_dump_line(physical):
            pieces[-1][0].append(physical)
            pieces[-1] = (pieces[-1][0], True)
            continue
        decoding = _is_decode(physical, nodes)
        whole = decoding and _whole(physical, nodes, commands)
        pieces.append(([physical], whole))
    return [("\n".join(lines), whole) for lines, whole in pieces]


def run_text(
    session: Session, text: str, out: Console, err: Console, *, batch: bool = False
) -> list[Outcome]:
    """Run every command in ``text`` (``;`` or newline separated); stop at ``quit``.
    A memory dump pasted after ``decode LAYER`` goes to it whole (:func:`command_pieces`).
    A ``batch`` (``esplab -c``, commands on standard input) stops at the first Ctrl-C,
    names the command it stopped in, and ends its outcomes with an interrupted one."""
    outcomes: list[Outcome] = []
    try:
        _run_pieces(session, text, out, err, outcomes, batch)
    except KeyboardInterrupt:
        if not batch:
            raise
        if not outcomes or outcomes[-1].error != INTERRUPTED:  # between two commands
            outcomes.append(Outcome(text.strip(), None, INTERRUPTED))
        _say_stopped(err, len(outcomes), outcomes[-1].line)
    return outcomes


def _say_stopped(err: Console, number: int, line: str) -> None:
    shown = line if len(line) <= 120 else line[:117] + "..."
    err.print(
        render_error(
            f"interrupted (Ctrl-C) in command {number}: {shown}; the commands after it were not run"
        )
    )


#: The error of an outcome a batch's Ctrl-C ended (its exit status is 130).
INTERRUPTED = "interrupted"


def _run_pieces(
    session: Session,
    text: str,
    out: Console,
    err: Console,
    outcomes: list[Outcome],
    batch: bool,
) -> None:
    nodes = session.node_names()
    for piece, whole in command_pieces(text, nodes, session.registry.names(aliases=True)):
        if not whole and is_dump_line(piece):
            err.print(render_error(_STRAY_DUMP))
            outcomes.append(Outcome(piece, None, _STRAY_DUMP))
            continue
        try:
            lines = [piece.strip()] if whole else split_commands(piece)
        except EsplabError as exc:
            err.print(render_error(str(exc)))
            outcomes.append(Outcome(piece, None, str(exc)))
            continue
        for line in lines:
            outcomes.append(Outcome(line, None, INTERRUPTED))  # until it has run
            outcome = run_line(session, line, out, err)
            outcomes[-1] = outcome
            if isinstance(outcome.result, QuitResult):
                return
            # A send that Ctrl-C stopped between two packets ends a batch there too.
            if batch and outcome.result is not None and outcome.result.data.get("interrupted"):
                _say_stopped(err, len(outcomes), line)
                outcomes.append(Outcome(line, None, INTERRUPTED))
                return
