from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
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
        status = run_repl(
            session, console, input=pipe, output=DummyOutput(), history=InMemoryHistory()
        )
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


def test_a_dump_pasted_after_decode_is_one_command() -> None:
    # A terminal's bracketed paste (ESC[200~ ... ESC[201~) puts the dump's lines into the
    # one input line; Enter then runs decode with all of them. md.l words are
    # little-endian (eip93.md 5.2): 0x133a1310 is sa_cmd0 of the seed SA (eip93.md 4.1).
    buf = StringIO()
    console = Console(file=buf, width=100, color_system=None)
    session = Session()
    dump = "".join(
        f"\n{0x08000000 + 16 * i:08x}: "
        + " ".join(["133a1310", "22001101", "00000000", "00000000"] if i == 0 else ["00000000"] * 4)
        + '    ..;.#"..........'
        for i in range(8)
    )
    with create_pipe_input() as pipe:
        pipe.send_text("decode sa")
        pipe.send_text(f"\x1b[200~{dump}\x1b[201~")
        pipe.send_text("\r")
        pipe.send_text("\x04")
        run_repl(session, console, input=pipe, output=DummyOutput(), history=InMemoryHistory())
    out = buf.getvalue()
    assert "error" not in out
    assert "EIP93SARecord (128 bytes)" in out
    assert session.history[0].startswith("decode sa\n08000000: 133a1310")


def test_ctrl_c_during_a_command_drops_it_and_the_repl_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import esplab.repl.app as app

    real = app.run_text  # type: ignore[attr-defined]
    calls: list[str] = []

    def interrupted_once(session: Session, text: str, *args: Any) -> Any:
        calls.append(text)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(session, text, *args)

    monkeypatch.setattr(app, "run_text", interrupted_once)
    buf = StringIO()
    console = Console(file=buf, width=100, color_system=None)
    session = Session()
    with create_pipe_input() as pipe:
        pipe.send_text('send ap wan IP(dst="192.0.2.2")/UDP() count 1000\r')
        pipe.send_text("help quit\r")
        pipe.send_text("\x04")
        status = run_repl(
            session, console, input=pipe, output=DummyOutput(), history=InMemoryHistory()
        )
    assert status == 0 and len(calls) == 2
    assert "interrupted" in buf.getvalue() and "usage: quit" in buf.getvalue()
