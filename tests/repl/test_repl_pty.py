"""The REPL on a real terminal (a pseudo-terminal): the bytes a user's keyboard and
paste send, read back as the terminal shows them."""

from __future__ import annotations

import os
import pty
import select
import sys
import time

WAIT = 30.0  # seconds for the REPL to answer (a busy CI machine)


class Terminal:
    """``esplab`` on a pseudo-terminal; :meth:`expect` waits for text on its screen."""

    def __init__(self, env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: exec esplab (never returns)
            os.environ.update(env)
            os.execv(sys.executable, [sys.executable, "-m", "esplab"])
        self.seen = b""

    def expect(self, text: bytes, count: int = 1) -> None:
        end = time.monotonic() + WAIT
        while self.seen.count(text) < count:
            assert time.monotonic() < end, f"no {text!r} x{count} in {self.seen[-400:]!r}"
            if not self.read():
                break

    def read(self) -> bool:
        """Read what the terminal shows within 0.1 s; False once the child has exited."""
        ready, _, _ = select.select([self.fd], [], [], 0.1)
        if ready:
            try:
                self.seen += os.read(self.fd, 65536)
            except OSError:
                return False
        return True

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def exit_status(self, again: bytes = b"") -> int:
        """The exit status; ``again`` is typed once more if it has not exited after a
        few seconds (a key pressed while the prompt was still being set up is lost on
        a loaded machine, and a user would press it again)."""
        end = time.monotonic() + WAIT
        retry = time.monotonic() + 5.0
        while time.monotonic() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            if again and time.monotonic() > retry:
                self.send(again)
                again = b""
            self.read()  # (what it still prints)
        os.kill(self.pid, 9)
        raise AssertionError(f"esplab did not exit; the screen ended {self.seen[-300:]!r}")


def test_a_terminal_session_with_bad_bytes_and_ctrl_c_in_history_search(tmp_path: object) -> None:
    term = Terminal(
        {
            "LANG": "C.UTF-8",
            "TERM": "xterm",
            "NO_COLOR": "1",
            # No cursor-position requests: this terminal has no one to answer them.
            "PROMPT_TOOLKIT_NO_CPR": "1",
            "XDG_STATE_HOME": f"{tmp_path}/state",
            "XDG_CONFIG_HOME": f"{tmp_path}/config",
        }
    )
    term.expect(b"esplab>")
    term.send(b"help \xff\xfe\r")  # bytes that are not UTF-8, as a broken paste sends them
    term.expect(b"is not UTF-8")
    term.expect(b"esplab>", 2)
    term.send(b"\x12hel")  # Ctrl-R: history search
    term.expect(b"hel")
    term.send(b"\x03")  # Ctrl-C: ends the search and the line
    term.expect(b"esplab>", 3)
    term.send(b"help quit\r")
    term.expect(b"leave esplab")
    term.expect(b"esplab>", 4)
    term.send(b"\x04")  # Ctrl-D on an empty line leaves
    assert term.exit_status(again=b"\x04") == 0
    assert b"internal error" not in term.seen
    assert b"byte 0xff is not UTF-8 (column 6" in term.seen
