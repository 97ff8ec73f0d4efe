"""The README's REPL transcripts are what esplab prints: each block is run and compared
line by line, and every example command pastes without an error."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from esplab.batch import run_text
from esplab.commands.session import Session

README = Path(__file__).resolve().parent.parent / "README.md"


def blocks() -> list[str]:
    """The README's plain code blocks (no language: REPL transcripts)."""
    return re.findall(r"^```\n(.*?)^```$", README.read_text(encoding="utf-8"), re.M | re.S)


def transcript(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(heading)
    return next(b for b in blocks() if text.index(b) > start)


def run_transcript(block: str) -> tuple[str, str]:
    """(what the block shows, what esplab prints for its commands), one command after
    another in one session, on a 100-column console without colour."""
    session = Session()
    out = StringIO()
    console = Console(file=out, width=100, color_system=None, soft_wrap=True)
    shown: list[str] = []
    command: list[str] = []
    for line in block.splitlines():
        if line.startswith("esplab> "):
            if command:
                run_text(session, "\n".join(command), console, console)
            command = [line.removeprefix("esplab> ")]
            out.write(line + "\n")
        elif command and command[0].startswith("decode") and re.match(r"[0-9a-f]{8}: ", line):
            command.append(line)  # a pasted dump goes with its decode
            out.write(line + "\n")
        shown.append(line)
    if command:
        run_text(session, "\n".join(command), console, console)
    printed = [line.rstrip() for line in out.getvalue().splitlines()]
    return "\n".join(shown), "\n".join(printed)


def test_the_first_session_is_what_esplab_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # capture export and wireshark-keys write here
    shown, printed = run_transcript(transcript("## A first session"))
    assert printed == shown
    assert (tmp_path / "run.pcapng").exists() and (tmp_path / "esp_sa").exists()


def test_the_decode_paste_is_whole_and_decodes_as_shown() -> None:
    paste = transcript("Type `decode sa`, paste")
    assert "..." not in paste.split()  # a full paste: every line of md.l 0x08000000 0x20
    assert len(paste.splitlines()) == 9
    _, printed = run_transcript(paste)
    assert "error" not in printed
    output = transcript("esplab prints each 32-bit word")
    assert printed.splitlines()[9:][: len(output.splitlines())] == output.splitlines()


def test_examples_give_udp_a_source_port() -> None:
    # Scapy's default UDP sport is 53, so Wireshark shows the packet as malformed DNS.
    text = README.read_text(encoding="utf-8")
    assert re.findall(r"UDP\((?![^)]*sport)[^)]*\)", text) == []


def test_the_readme_says_where_files_go() -> None:
    text = README.read_text(encoding="utf-8")
    assert "~/.local/state/esplab/history" in text and "esplab.log" in text
    assert "esplab wireshark-plugin --install" in text
    assert "Wireshark has no dissector" not in text


def test_send_and_let_examples_give_udp_a_source_port() -> None:
    registry = Session().registry
    for name in ("send", "let"):
        command = registry.get(name)
        assert command is not None and "UDP(sport=1234,dport=5201)" in command.example
