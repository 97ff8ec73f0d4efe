"""``esplab wireshark-plugin``: prints the shipped plugin's path, installs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from esplab.cli import main
from esplab.wireshark_lua import shipped_plugin


def test_without_options_it_prints_the_shipped_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wireshark-plugin"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == str(shipped_plugin())
    assert Path(printed).read_text(encoding="utf-8").startswith("-- esplab's records in Wireshark")


def test_dir_installs_a_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "plugins" / "new"
    assert main(["wireshark-plugin", "--dir", str(folder)]) == 0
    assert (folder / "esplab.lua").read_bytes() == shipped_plugin().read_bytes()
    assert f"installed {folder / 'esplab.lua'}" in capsys.readouterr().out
    # A second install replaces its own earlier copy.
    (folder / "esplab.lua").write_text("-- esplab's records in Wireshark (old)\n")
    assert main(["wireshark-plugin", "--install", "--dir", str(folder)]) == 0
    assert (folder / "esplab.lua").read_bytes() == shipped_plugin().read_bytes()


def test_install_defaults_to_the_personal_lua_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["wireshark-plugin", "--install"]) == 0
    installed = tmp_path / ".local" / "lib" / "wireshark" / "plugins" / "esplab.lua"
    assert installed.read_bytes() == shipped_plugin().read_bytes()


def test_a_foreign_file_is_replaced_only_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "esplab.lua").write_text("-- someone else's esplab.lua\n")
    assert main(["wireshark-plugin", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "esplab.lua exists and is not an esplab plugin; add --force to replace it" in err
    assert (tmp_path / "esplab.lua").read_text() == "-- someone else's esplab.lua\n"
    assert main(["wireshark-plugin", "--dir", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "esplab.lua").read_bytes() == shipped_plugin().read_bytes()


def test_a_file_where_the_folder_should_be_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plugins").write_text("")
    assert main(["wireshark-plugin", "--dir", str(tmp_path / "plugins")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a directory" in err[0]


def test_a_bad_option_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["wireshark-plugin", "--instal"]) == 2  # no abbreviations: nothing written
    assert not (tmp_path / ".local").exists()
    assert "unrecognized arguments: --instal" in capsys.readouterr().err
