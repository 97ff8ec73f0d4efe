from __future__ import annotations

import subprocess
import sys

import pytest

from esplab import __version__
from esplab.cli import main


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "esplab", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "NO_COLOR": "1",
            "PATH": "/usr/bin:/bin",
            "HOME": "/tmp",
            "XDG_STATE_HOME": "/tmp/esplab-test-state",
        },
    )


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"esplab {__version__}"


def test_help_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "-c COMMANDS" in capsys.readouterr().out


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--bogus"]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["zz", "-3", "0x", "0x10000000000000000"])
def test_a_bad_seed_is_named_with_what_is_valid(
    seed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([f"--seed={seed}", "-c", "help"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (
        f"esplab: error: argument --seed: '{seed}' is not a seed; valid: a number "
        "from 0 to 2**64 - 1, decimal (24301) or hex (0x5eed)"
    )


def test_seed_in_hex_reaches_the_session() -> None:
    proc = run("--seed", "0x10", "-c", "set")
    assert proc.returncode == 0
    rows = [line.replace("\u2502", " ").split() for line in proc.stdout.splitlines()]
    assert ["seed", "0x10"] in [row[:2] for row in rows]


def test_commands_with_c_succeed() -> None:
    proc = run("-c", "help decode; help quit")
    assert proc.returncode == 0, proc.stderr
    assert "usage: decode LAYER" in proc.stdout
    assert "usage: quit" in proc.stdout
    assert proc.stderr == ""


def test_a_failed_command_makes_the_exit_status_nonzero_but_the_rest_runs() -> None:
    proc = run("-c", "nonsense; help quit")
    assert proc.returncode == 1
    assert "error: unknown command 'nonsense'" in proc.stderr
    assert "usage: quit" in proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout


def test_piped_output_keeps_long_lines_and_table_cells_whole() -> None:
    res = run("-c", "ip link set eth0 down; xfrm states; nonsense " + "x" * 120)
    lines = res.stdout.splitlines()
    assert any(line.startswith("eth0 down; lan1 down") and "lan4 down" in line for line in lines)
    assert all(len(line) <= 200 for line in lines)
    assert len(res.stderr.strip().splitlines()) == 1  # one error, one line


def test_commands_from_non_terminal_stdin() -> None:
    proc = run(stdin="help quit\n\n# a comment\nhelp decode\n")
    assert proc.returncode == 0, proc.stderr
    assert "usage: quit" in proc.stdout and "usage: decode" in proc.stdout


def test_bad_line_in_stdin_does_not_stop_the_rest() -> None:
    proc = run(stdin="help 'unclosed\nhelp quit\n")
    assert proc.returncode == 1
    assert "unterminated ' quote" in proc.stderr
    assert "usage: quit" in proc.stdout


def test_ctrl_c_ends_any_front_end_with_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import esplab.cli as cli

    def interrupted(argv: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_main", interrupted)
    assert main(["run", "labs"]) == 130
    assert capsys.readouterr().err.strip() == "esplab: interrupted"


def test_an_empty_listing_prints_nothing() -> None:
    # iproute2 prints no line at all for an empty list (ip -6 addr of a device
    # without IPv6 addresses).
    res = run("-c", "ip link set lan3 down; ip -6 addr show dev lan3")
    assert res.returncode == 0
    assert res.stdout.splitlines()[-1].startswith("lan3: deleted IPv6 addresses")
    assert not res.stdout.endswith("\n\n")
