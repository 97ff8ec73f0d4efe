"""The REPL: one PromptSession, then read, execute, print, until Ctrl-D or ``quit``."""

from __future__ import annotations

from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.formatted_text import HTML, FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style
from rich.console import Console

from esplab import __version__
from esplab.batch import run_text
from esplab.commands.base import Session
from esplab.commands.result import QuitResult
from esplab.config import history_path
from esplab.repl.completer import EsplabCompleter
from esplab.repl.keys import build_key_bindings
from esplab.repl.lexer import CommandLexer

__all__ = ["build_prompt_session", "run_repl"]

STYLE = Style.from_dict(
    {
        "command": "ansicyan bold",
        "unknown": "ansired",
        "option": "ansiyellow",
        "number": "ansimagenta",
        "string": "ansigreen",
        "expression": "ansiblue",
        "layer": "ansiblue bold",
        "field": "ansicyan",
        "operator": "ansiyellow",
        "name": "",
        "comment": "ansibrightblack italic",
        "bottom-toolbar": "noreverse bg:#222222 #aaaaaa",
        "bottom-toolbar.key": "bold #ffffff",
        "bottom-toolbar.good": "ansigreen",
        "bottom-toolbar.bad": "ansired bold",
        "bottom-toolbar.step": "ansiyellow bold",
        "prompt": "ansigreen bold",
    }
)


def _history() -> History:
    path = history_path()
    if path is None:
        return InMemoryHistory()
    try:
        return FileHistory(str(path))
    except OSError:
        return InMemoryHistory()


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


class _Toolbar:
    """The bottom toolbar: the current node, step mode, the last journey's verdict,
    and whether the last command worked, in one line of at most ``width`` columns
    (80 unless the terminal says otherwise): the verdict is shortened first, then
    the key hints are left out."""

    WIDTH = 80

    def __init__(self, session: Session) -> None:
        self.session = session
        self.last_ok: bool | None = None

    def parts(self, width: int = WIDTH) -> list[tuple[str, str]]:
        """(style class, text) pieces; plain data, so it is easy to test."""
        session = self.session
        head: list[tuple[str, str]] = [
            ("", " node "),
            ("class:bottom-toolbar.key", session.lab.current),
        ]
        stepped = session.lab.journeys.get(session.stepping[0]) if session.stepping else None
        if session.stepping is not None and stepped is not None:
            jid, index = session.stepping
            total = len(stepped.stages)
            head += [
                ("", "  "),
                ("class:bottom-toolbar.step", f"stepping {jid} {index + 1}/{total}"),
                ("", " (next, continue)"),
            ]
        tail: list[tuple[str, str]] = []
        if self.last_ok is False:
            tail += [("", "  last: "), ("class:bottom-toolbar.bad", "failed")]
        hints: list[tuple[str, str]] = [
            ("", f"  seed {session.options.seed:#x}  "),
            ("class:bottom-toolbar.key", "help"),
            ("", ", Ctrl-D quits"),
        ]
        journey = session.lab.journeys.get()
        used = sum(len(t) for _, t in head + tail)
        if used + sum(len(t) for _, t in hints) > width:
            hints = []
        if journey is not None:
            style = "good" if journey.delivered else "bad"
            label = f"  journey {journey.id}: "
            room = width - used - sum(len(t) for _, t in hints) - len(label)
            if room >= 8:
                head += [
                    ("", label),
                    (f"class:bottom-toolbar.{style}", _short(journey.verdict, min(room, 48))),
                ]
        out = head + tail + hints
        while sum(len(t) for _, t in out) > width and len(out) > 2:
            out.pop()  # a very narrow terminal: the node stays
        return out

    def __call__(self) -> FormattedText:
        try:
            from prompt_toolkit.application import get_app

            columns = get_app().output.get_size().columns or self.WIDTH
            return FormattedText(self.parts(columns))
        except Exception:  # the toolbar must never break the prompt
            return FormattedText([("", f" esplab {__version__}")])


def _lab_follow(session: Session, outcomes: list[Any], console: Console) -> None:
    """In ``lab step``: a command that does the pending step, or completes its task,
    moves the lab on (esplab.lab.stepper.after_command)."""
    walk = session.lab_walk
    if walk is None or not hasattr(walk, "pending"):
        return
    from esplab.lab.stepper import after_command, announce

    for outcome in outcomes:
        if outcome.result is None or outcome.line.split()[:1] == ["lab"]:
            continue
        said = after_command(walk, outcome.line, outcome.result)
        if said:
            console.print("\n".join([*said, "", *announce(walk)]), style="green", markup=False)
            break


def build_prompt_session(
    session: Session,
    *,
    input: Input | None = None,
    output: Output | None = None,
    history: History | None = None,
    toolbar: _Toolbar | None = None,
) -> PromptSession[str]:
    return PromptSession(
        message=HTML("<prompt>esplab&gt;</prompt> "),
        history=history if history is not None else _history(),
        completer=EsplabCompleter(session),
        complete_while_typing=False,
        lexer=CommandLexer(session),
        key_bindings=build_key_bindings(),
        bottom_toolbar=toolbar or _Toolbar(session),
        auto_suggest=AutoSuggestFromHistory(),
        style=STYLE,
        input=input,
        output=output,
    )


def run_repl(
    session: Session,
    console: Console,
    *,
    input: Input | None = None,
    output: Output | None = None,
    history: History | None = None,
) -> int:
    """Run the interactive loop; returns the exit status (0)."""
    toolbar = _Toolbar(session)
    prompt = build_prompt_session(
        session, input=input, output=output, history=history, toolbar=toolbar
    )
    console.print(
        f"esplab {__version__}: an IPsec ESP offload lab. "
        "Type [bold]help[/bold] for commands, Ctrl-D to leave."
    )
    while True:
        try:
            text = prompt.prompt()
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        try:
            outcomes = run_text(session, text, console, console)
        except KeyboardInterrupt:  # the command stops where it is; the REPL goes on
            console.print("interrupted", style="yellow")
            toolbar.last_ok = False
            continue
        if outcomes:
            toolbar.last_ok = all(o.ok for o in outcomes)
            _lab_follow(session, outcomes, console)
        if any(isinstance(o.result, QuitResult) for o in outcomes):
            break
    return 0
