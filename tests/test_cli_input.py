"""What a careless user gives the ``esplab`` command: bytes that are not UTF-8 on stdin
and in ``-c``, a word that is no subcommand, a line past the size limit."""

from __future__ import annotations

import subprocess
import sys

import pytest

from esplab.cli import main
from esplab.commands.tokens import MAX_LINE


def _esplab(*args: str, stdin: bytes = b"", lang: str = "C.UTF-8") -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "esplab", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        env={
            "NO_COLOR": "1",
            "PATH": "/usr/bin:/bin",
            "HOME": "/tmp",
            "XDG_STATE_HOME": "/tmp/esplab-test-state",
            "LANG": lang,
            "LC_ALL": lang,
        },
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("lang", ["C.UTF-8", "C"])
def test_invalid_utf8_on_stdin_is_one_error_naming_the_byte(lang: str) -> None:
    # Found by fuzzing: "help \xff\xfe" on stdin gave "internal error: UnicodeEncodeError".
    status, out, err = _esplab(stdin=b"help \xff\xfe\nhelp quit\n", lang=lang)
    assert status == 1
    assert err == (
        "error: byte 0xff is not UTF-8 (column 6, in 'help \\xff\\xfe'); valid: UTF-8 text\n"
    )
    assert "usage: quit" in out  # the next line still ran


def test_invalid_utf8_in_a_packet_string_is_no_internal_error() -> None:
    # Found by fuzzing -c: a string literal with a byte that is not UTF-8 reached Scapy
    # and ended in UnicodeEncodeError.
    line = b'send ap wan IP(dst="\xff")'.decode("utf-8", "surrogateescape")
    status, _, err = _esplab("-c", line)
    assert status == 1
    assert "internal error" not in err
    assert "byte 0xff is not UTF-8 (column 21, in 'send ap wan IP(dst=\"\\xff\")')" in err


def test_lone_surrogate_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-color", "-c", "let x = Raw('\ud800')"]) == 1
    err = capsys.readouterr().err
    assert "character U+D800 is a lone surrogate, not text (column 14" in err
    assert "valid: UTF-8 text" in err


def test_a_line_past_the_limit_is_refused_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-color", "-c", "decode sa " + "0" * MAX_LINE]) == 1
    err = capsys.readouterr().err
    assert f"the command line is {MAX_LINE + 10:,} characters long" in err
    assert f"valid: up to {MAX_LINE:,} characters" in err


def test_unknown_subcommand_lists_the_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    # Found by hand: "esplab foo" said only "unrecognized arguments: foo".
    assert main(["dcode", "x.pcap"]) == 2
    err = capsys.readouterr().err
    from esplab.cli import SUBCOMMANDS

    assert err.startswith(
        f"esplab: unknown subcommand 'dcode'; valid: {', '.join(SUBCOMMANDS)}; "
        "did you mean decode?\n"
    )
    for name in ("run", "check", "decode", "diagnose", "wireshark-plugin"):
        assert f"\n  esplab {name} " in err


def test_a_lab_file_alone_is_pointed_at_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["labs/01-esp-basics.yaml"]) == 2
    assert "'esplab run FILE' runs a lab file" in capsys.readouterr().err
