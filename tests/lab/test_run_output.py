"""esplab run: control characters in names shown as escapes (terminal and JUnit), and
a --pcap path checked before any lab runs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from esplab.lab.cli import main_run
from esplab.lab.report import visible
from tests.lab.support import write_lab

HEAD = 'name: "bell\\x07 lab \\e[31mred"\ndescription: control characters\n'
STEPS = """\
  - name: "step\\x01one \\e[2J"
    run: capture list
  - name: "fails\\x07"
    run: capture show nope
"""


def test_visible_escapes_controls_and_what_xml_cannot_hold() -> None:
    assert visible("a\x07b\x1b[0m\x7f\x85\ufffe") == "a\\x07b\\x1b[0m\\x7f\\x85\\ufffe"
    assert visible("a\nb\tc", keep="\n\t") == "a\nb\tc"
    assert visible("ok é ✓") == "ok é ✓"


def test_control_characters_in_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = write_lab(tmp_path, STEPS, head=HEAD)
    junit = tmp_path / "junit.xml"
    assert main_run(["--no-color", "--junit", str(junit), str(lab)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\x01" not in out
    assert "lab: bell\\x07 lab \\x1b[31mred" in out
    assert "1/2  step\\x01one \\x1b[2J" in out
    assert "step 2 'fails\\x07' failed" in out
    root = ET.parse(junit).getroot()  # well-formed
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "bell\\x07 lab \\x1b[31mred"
    names = [case.get("name") for case in root.iter("testcase")]
    assert names == ["step\\x01one \\x1b[2J", "fails\\x07"]


def test_pcap_must_be_a_directory_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = write_lab(tmp_path, STEPS)
    existing = tmp_path / "captures"
    existing.write_text("not a directory")
    assert main_run(["--no-color", "--pcap", str(existing), str(lab)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        f"esplab run: --pcap {existing} is not a directory; give a directory "
        "(made if missing) for the LAB.pcapng files"
    )
    assert "lab:" not in captured.out  # no lab ran


def test_a_directory_names_its_lab_files(tmp_path: Path) -> None:
    from esplab.errors import LabFileError
    from esplab.lab.loader import load_document

    write_lab(tmp_path, STEPS, name="a.yaml")
    write_lab(tmp_path, STEPS, name="b.yaml")
    with pytest.raises(LabFileError) as caught:
        load_document(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path}:1:1: is a directory, not a lab file; valid: {tmp_path / 'a.yaml'}, "
        f"{tmp_path / 'b.yaml'}; esplab run {tmp_path} runs every lab in it"
    )
