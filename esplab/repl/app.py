"""The REPL: one PromptSession, then read, execute, print, until Ctrl-D or ``quit``."""

from __future__ import annotations

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.formatted_text import HTML
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style
from rich.console import Console

from esplab import __version__
from esplab.commands.result import QuitResult
from esplab.commands.runner import run_text
from esplab.commands.session import Session
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
        "bottom-toolbar": "noreverse bg:#222222 #aaaaaa",
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


class _Toolbar:
    """The bottom toolbar: seed and the verdict of the last command."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.last_ok: bool | None = None

    def __call__(self) -> HTML:
        verdict = {None: "-", True: "ok", False: "<ansired>failed</ansired>"}[self.last_ok]
        return HTML(
            f" esplab {__version__}  seed 0x{self.session.options.seed:x}"
            f"  last: {verdict}  <b>help</b> lists commands, Ctrl-D quits"
        )


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
        outcomes = run_text(session, text, console, console)
        if outcomes:
            toolbar.last_ok = all(o.ok for o in outcomes)
        if any(isinstance(o.result, QuitResult) for o in outcomes):
            break
    return 0
