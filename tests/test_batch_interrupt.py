"""A batch (-c, standard input) stops at the first Ctrl-C and names where; long runs
show progress on a terminal only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from io import StringIO

from rich.console import Console

from esplab.commands.session import Session
from esplab.progress import Tick, for_console, silent

SEND = 'send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=9)'


def test_ctrl_c_stops_a_batch_in_its_send_and_names_it() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "esplab", "-c", f"{SEND} count 100000; " * 5 + "help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    time.sleep(2.0)  # start-up and a part of the runs (each takes seconds)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    said = err.decode()
    assert "interrupted (Ctrl-C) in command " in said
    assert said.split("interrupted (Ctrl-C) in command ")[1][2:].startswith(" send ap wan")
    assert "the commands after it were not run" in said
    assert b"interrupted after" in out  # the send says how far it got
    assert b"lab run FILE" not in out  # help never ran


@contextmanager
def _recording(ticks: list[int], label: str, total: int) -> Iterator[Tick]:
    ticks.append(-total)
    yield ticks.append


def test_a_long_send_reports_its_progress() -> None:
    session = Session()
    ticks: list[int] = []
    session.progress = lambda label, total: _recording(ticks, label, total)
    session.execute(f"{SEND} count 1000")
    assert ticks[0] == -1000
    assert sum(ticks[1:]) == 768  # every 256 packets


def test_progress_is_a_bar_on_a_terminal_only() -> None:
    assert for_console(Console(file=StringIO())) is silent
    assert for_console(Console(file=StringIO(), force_terminal=True)) is not silent
