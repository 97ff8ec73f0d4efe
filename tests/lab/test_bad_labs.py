"""Every tests/labs/bad/*.yaml has a golden .err: exactly what ``esplab check`` prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from esplab.lab.cli import main_check
from esplab.lab.loader import MAX_BYTES
from tests.lab.support import BAD, BAD_LABS


@pytest.mark.parametrize("path", BAD_LABS, ids=lambda p: p.name)
def test_golden_errors(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = path.with_suffix(".err")
    assert golden.exists(), f"{path.name} has no golden {golden.name}"
    monkeypatch.chdir(BAD)
    assert main_check(["--quiet", path.name]) == 2
    out = capsys.readouterr().out
    assert out == golden.read_text(encoding="utf-8")
    assert out.strip(), "a bad lab must produce at least one error"
    for line in out.splitlines():
        assert line.startswith(f"{path.name}:"), line
        _, line_no, col, message = line.split(":", 3)
        assert line_no.isdigit() and col.isdigit() and message.startswith(" ")


def test_every_golden_file_has_its_lab() -> None:
    orphans = [p.name for p in BAD.glob("*.err") if not p.with_suffix(".yaml").exists()]
    assert orphans == []


def test_a_ten_megabyte_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "huge.yaml"
    with big.open("wb") as fh:
        fh.write(b"name: huge\ndescription: |\n")
        line = b"  " + b"x" * 1022 + b"\n"
        for _ in range(10 * 1024):
            fh.write(line)
    size = big.stat().st_size
    assert size > 10 * MAX_BYTES
    monkeypatch.chdir(tmp_path)
    assert main_check(["-q", "huge.yaml"]) == 2
    assert capsys.readouterr().out == (
        f"huge.yaml:1:1: the file is too big ({size} bytes); "
        f"valid: at most {MAX_BYTES} bytes (1 MiB)\n"
    )


def test_all_errors_of_all_files_at_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(BAD)
    names = ["wrong-types.yaml", "unknown-keys.yaml"]
    assert main_check(names) == 2
    captured = capsys.readouterr()
    expected = "".join((BAD / n).with_suffix(".err").read_text(encoding="utf-8") for n in names)
    assert captured.out == expected
    assert captured.err == f"2 of 2 lab file(s) invalid ({expected.count(chr(10))} error(s))\n"
