from __future__ import annotations

from io import StringIO

from prompt_toolkit.application import create_app_session
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from esplab.commands.session import Session
from esplab.repl.app import run_repl


def test_piped_session_end_to_end() -> None:
    buf = StringIO()
    console = Console(file=buf, width=100, color_system=None)
    session = Session()
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text("help quit\r")
        pipe.send_text("nonsense\r")
        pipe.send_text("\x03")  # Ctrl-C drops the (empty) line and the REPL goes on
        pipe.send_text("help\r")
        pipe.send_text("\x04")  # Ctrl-D on an empty line leaves
        status = run_repl(session, console, input=pipe, output=DummyOutput(),
                          history=InMemoryHistory())
    out = buf.getvalue()
    assert status == 0
    assert "usage: quit" in out
    assert "error: unknown command 'nonsense'" in out
    assert "decode" in out  # the command list from the second help
    assert session.history == ["help quit", "help"]


def test_quit_command_leaves_the_loop() -> None:
    buf = StringIO()
    console = Console(file=buf, width=100, color_system=None)
    session = Session()
    with create_pipe_input() as pipe:
        pipe.send_text("quit\r")
        pipe.send_text("help\r")  # never read
        run_repl(session, console, input=pipe, output=DummyOutput(), history=InMemoryHistory())
    assert session.history == ["quit"]
