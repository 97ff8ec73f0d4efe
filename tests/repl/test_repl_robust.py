"""The REPL under keys and bytes a careless user sends, driven through a pipe input as
a terminal would send them (each test fails rather than hangs: the REPL runs in a
thread that must finish)."""

from __future__ import annotations

import threading
from io import StringIO
from pathlib import Path

from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from esplab.commands.session import Session
from esplab.repl.app import run_repl

CTRL_C, CTRL_D, CTRL_G, CTRL_R = "\x03", "\x04", "\x07", "\x12"


def _drive(keys: list[str | bytes], history: History | None = None) -> tuple[Session, str]:
    """Type ``keys`` (text, or raw bytes as a terminal sends them) into a REPL and
    return the session and what it printed; fail if the REPL has not ended in 20 s."""
    buf = StringIO()
    console = Console(file=buf, width=100, color_system=None)
    session = Session()
    status: list[int] = []
    with create_pipe_input() as pipe:
        _send(pipe, keys)
        thread = threading.Thread(
            target=lambda: status.append(
                run_repl(
                    session,
                    console,
                    input=pipe,
                    output=DummyOutput(),
                    history=history or InMemoryHistory(),
                )
            ),
            daemon=True,
        )
        thread.start()
        thread.join(20)
        assert not thread.is_alive(), f"the REPL hangs; it ran {session.history}"
    assert status == [0]
    return session, buf.getvalue()


def _send(pipe: PipeInput, keys: list[str | bytes]) -> None:
    for key in keys:
        if isinstance(key, bytes):
            pipe.send_bytes(key)
        else:
            pipe.send_text(key)


def test_ctrl_c_in_history_search_ends_the_search_and_the_line() -> None:
    # Found by hand: Ctrl-R, a few letters, Ctrl-C, and the prompt took nothing more
    # (typed text, quit, Ctrl-D), 3 times out of 3.
    session, out = _drive(["help quit\r", CTRL_R, "hel", CTRL_C, "help ip\r", CTRL_D])
    assert session.history == ["help quit", "help ip"]
    assert "example: host ip -s link show eth0" in out  # help ip ran


def test_ctrl_c_in_history_search_then_quit() -> None:
    session, _ = _drive(["help quit\r", CTRL_R, "q", CTRL_C, CTRL_C, "quit\r"])
    assert session.history == ["help quit", "quit"]


def test_ctrl_g_still_ends_a_history_search() -> None:
    session, _ = _drive(["help quit\r", CTRL_R, "hel", CTRL_G, "help ip\r", CTRL_D])
    assert session.history == ["help quit", "help ip"]


def test_invalid_utf8_typed_is_one_error_and_the_repl_goes_on(tmp_path: Path) -> None:
    # Found by fuzzing stdin: "help \xff\xfe" ended in "internal error: UnicodeEncodeError".
    history = FileHistory(str(tmp_path / "history"))
    keys: list[str | bytes] = [b"help \xff\xfe\r", b'send ap wan Raw(b"\xc3\x28")\r', "quit\r"]
    session, out = _drive(keys, history)
    assert "internal error" not in out
    assert (
        "error: byte 0xff is not UTF-8 (column 6, in 'help \\xff\\xfe'); valid: UTF-8 text" in out
    )
    assert "error: byte 0xc3 is not UTF-8 (column 19" in out
    assert session.history == ["quit"]
    assert (tmp_path / "history").read_bytes().count(b"\n+") == 3  # every line kept


def test_ip_xfrm_help_prints_the_objects() -> None:
    # Found by hand: "ip xfrm help" answered: Object "help" is unknown, try "ip xfrm help".
    _, out = _drive(["ip xfrm help\r", CTRL_D])
    assert "try" not in out
    assert "Usage: ip xfrm XFRM-OBJECT { COMMAND | help }" in out
    assert "where  XFRM-OBJECT := state | policy" in out
