"""File arguments complete as paths: absolute, relative and ``~``; directories end
with ``/``; each command offers the files it reads (labs, captures) or any path."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from esplab.commands.complete import FilePaths, complete
from esplab.commands.session import Session
from esplab.lab.command import every_command
from esplab.repl.completer import EsplabCompleter


@pytest.fixture(scope="module")
def session() -> Session:
    return Session(registry=every_command())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in ("a.pcap", "b.pcapng", "e.txt", "lab.yaml", "old.yml", ".hidden.pcap"):
        (tmp_path / name).write_text("", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    return tmp_path


def words(session: Session, text: str) -> list[str]:
    return complete(session, text).words


def test_capture_import_offers_captures_and_directories(session: Session, tree: Path) -> None:
    d = f"{tree}/"
    assert words(session, f"capture import {d}") == [f"{d}a.pcap", f"{d}b.pcapng", f"{d}sub/"]
    assert words(session, f"capture import {d}a") == [f"{d}a.pcap"]
    assert complete(session, f"capture import {d}a").replace == len(f"{d}a")


def test_any_path_for_files_written_or_read(session: Session, tree: Path) -> None:
    d = f"{tree}/"
    every = [f"{d}{n}" for n in ("a.pcap", "b.pcapng", "e.txt", "lab.yaml", "old.yml", "sub/")]
    for command in ("capture export", "save", "wireshark-keys", "load", "host load"):
        assert words(session, f"{command} {d}") == every, command
    assert words(session, f"wireshark-keys {d}e") == [f"{d}e.txt"]
    # wireshark-keys' second file is the capture tshark reads.
    assert words(session, f"wireshark-keys esp_sa {d}") == [
        f"{d}a.pcap",
        f"{d}b.pcapng",
        f"{d}sub/",
    ]
    # export's taps still follow the file.
    taps = session.lab.captures.taps()
    assert words(session, f"capture export {d}a.pcap ") == taps


def test_lab_files_anywhere(session: Session, tree: Path) -> None:
    d = f"{tree}/"
    for verb in ("run", "step", "check"):
        assert words(session, f"lab {verb} {d}") == [f"{d}lab.yaml", f"{d}old.yml", f"{d}sub/"]
    labs = Path(__file__).resolve().parents[2] / "labs"
    found = words(session, f"lab run {labs}/0")
    assert f"{labs}/01-esp-basics.yaml" in found
    assert all(w.startswith(f"{labs}/0") for w in found)


def test_relative_paths_from_any_directory(
    session: Session, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    assert words(session, "lab run ") == ["lab.yaml", "old.yml", "sub/"]
    assert words(session, "capture import ") == ["a.pcap", "b.pcapng", "sub/"]
    (tree / "sub" / "in.pcap").write_text("", encoding="utf-8")
    assert words(session, "capture import sub/") == ["sub/in.pcap"]
    assert words(session, "capture import ./s") == ["./sub/"]


def test_home_paths_keep_the_tilde(
    session: Session, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tree))
    assert words(session, "lab run ~") == ["~/"]
    assert words(session, "lab run ~/") == ["~/lab.yaml", "~/old.yml", "~/sub/"]
    assert words(session, "save ~/e") == ["~/e.txt"]


def test_hidden_files_only_when_asked(session: Session, tree: Path) -> None:
    assert words(session, f"capture import {tree}/.") == [f"{tree}/.hidden.pcap"]


def test_missing_directory_gives_nothing(session: Session, tree: Path) -> None:
    assert words(session, f"load {tree}/nowhere/") == []


def test_menu_shows_the_last_part(session: Session, tree: Path) -> None:
    text = f"capture import {tree}/"
    doc = Document(text, cursor_position=len(text))
    found = list(EsplabCompleter(session).get_completions(doc, CompleteEvent()))
    assert [c.display_text for c in found] == ["a.pcap", "b.pcapng", "sub/"]
    assert [c.text for c in found] == [f"{tree}/a.pcap", f"{tree}/b.pcapng", f"{tree}/sub/"]


def test_file_paths_iterate_the_current_directory(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    assert list(FilePaths(("*.yaml",))) == ["lab.yaml", "sub/"]
