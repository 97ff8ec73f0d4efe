"""Time from starting ``esplab`` to a prompt you can type in, beside Scapy's own start.

Run from the repository root: ``python bench/bench_startup.py [--runs N]``.

Each case is a fresh interpreter (``sys.executable``), timed with a wall clock
from spawn to readiness, N times (median and best reported):

* ``esplab`` REPL: spawned on a pseudo-terminal; ready when the ``esplab>``
  prompt is drawn (the process then gets Ctrl-D and exits);
* ``esplab -c help``: the non-interactive front end, to exit;
* ``scapy`` shell: Scapy's interactive console on a pseudo-terminal, ready at
  its ``>>>`` prompt;
* ``python -c "from scapy.all import *"``: what a Scapy script pays first;
* ``python -c pass``: the interpreter alone, the floor under every row.

The REPL row must stay at or under 0.7 s (the exit status is 1 otherwise). The
largest imports on the way to the prompt follow the table, from
``python -X importtime``, so a regression points at its cause.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.7
TIMEOUT = 30.0
CPR_REQUEST = b"\x1b[6n"  # prompt-toolkit asks where the cursor is; answer row 1, col 1
CPR_ANSWER = b"\x1b[1;1R"


def _env(state: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "XDG_STATE_HOME": state,
            "TERM": "xterm-256color",
            "COLUMNS": "100",
            "LINES": "40",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.pop("NO_COLOR", None)
    return env


def time_to_prompt(argv: list[str], prompt: bytes, env: dict[str, str], quit_key: bytes) -> float:
    """Seconds from spawning ``argv`` on a pty until ``prompt`` appears in its output."""
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: become the program
        os.chdir(ROOT)
        os.execvpe(argv[0], argv, env)
    seen = b""
    ready = None
    try:
        while time.perf_counter() - start < TIMEOUT:
            readable, _, _ = select.select([fd], [], [], 0.05)
            if not readable:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if CPR_REQUEST in chunk:
                os.write(fd, CPR_ANSWER)
            if prompt in seen:
                ready = time.perf_counter() - start
                break
        if ready is None:
            tail = seen[-300:].decode(errors="replace")
            raise RuntimeError(f"{' '.join(argv)}: no {prompt!r} within {TIMEOUT} s: {tail!r}")
        os.write(fd, quit_key)
        deadline = time.perf_counter() + 5
        while time.perf_counter() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if select.select([fd], [], [], 0.05)[0]:
                with contextlib.suppress(OSError):  # the child closed its end
                    os.read(fd, 65536)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    finally:
        os.close(fd)
    return ready


def time_to_exit(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        argv, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def largest_imports(code: str, env: dict[str, str], count: int = 8) -> list[tuple[float, str]]:
    """(cumulative seconds, module) of the slowest top-level imports of ``code``."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    found: list[tuple[float, str]] = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2]
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 1:  # direct imports of the code and their first level
            found.append((int(parts[1]) / 1e6, name.strip()))
    return sorted(found, reverse=True)[:count]


def measure(runs: int, case: Callable[[], float]) -> list[float]:
    case()  # warm the file cache and the .pyc files once
    return [case() for _ in range(runs)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case (default 5)")
    args = parser.parse_args(argv)
    py = sys.executable
    scapy = shutil.which("scapy", path=str(Path(py).parent)) or shutil.which("scapy")
    with tempfile.TemporaryDirectory() as state:
        env = _env(state)
        cases: list[tuple[str, Callable[[], float], float | None]] = [
            (
                "`esplab` REPL, to the `esplab>` prompt",
                lambda: time_to_prompt([py, "-m", "esplab"], b"esplab>", env, b"\x04"),
                TARGET,
            ),
            (
                "`esplab -c help`, to exit",
                lambda: time_to_exit([py, "-m", "esplab", "-c", "help"], env),
                None,
            ),
        ]
        if scapy is not None:
            cases.append(
                (
                    "`scapy` shell, to the `>>>` prompt",
                    lambda: time_to_prompt([py, scapy, "-H"], b">>> ", env, b"exit()\r"),
                    None,
                )
            )
        cases += [
            (
                '`python -c "from scapy.all import *"`',
                lambda: time_to_exit([py, "-c", "from scapy.all import *"], env),
                None,
            ),
            (
                "`python -c pass` (the interpreter alone)",
                lambda: time_to_exit([py, "-c", "pass"], env),
                None,
            ),
        ]
        results = [(name, measure(args.runs, case), target) for name, case, target in cases]
        imports = largest_imports(
            "from esplab.commands.base import Session\n"
            "from esplab.lab.command import every_command\n"
            "from esplab.repl.app import build_prompt_session\n"
            "from esplab.render import render\n"
            "Session(every_command())",
            env,
        )
    print(
        f"Start-up on {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPU(s); {args.runs} runs each\n"
    )
    print("| start-up | median (s) | best (s) | target |")
    print("|---|---:|---:|---|")
    failed = False
    for name, times, target in results:
        median = statistics.median(times)
        verdict = ""
        if target is not None:
            ok = median <= target
            failed |= not ok
            verdict = f"<= {target} s: {'met' if ok else 'MISSED'}"
        print(f"| {name} | {median:.3f} | {min(times):.3f} | {verdict} |")
    print("\nLargest imports before the prompt (python -X importtime, cumulative):\n")
    for seconds, module in imports:
        print(f"- {module}: {seconds * 1000:.0f} ms")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
