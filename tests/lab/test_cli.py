"""esplab run / esplab check: exit codes, reports, JSON, JUnit, step mode."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from esplab.cli import main
from esplab.lab.cli import main_check, main_run
from tests.lab.support import BAD, LABS, write_lab

PASSING = """\
  - name: add an SA
    run: >-
      ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1
      mode transport enc aes 0x000102030405060708090a0b0c0d0e0f
    expect:
      states: ["0x00001000"]
  - name: a command that fails on purpose
    run: send ap wan UDP()
    error: is not an IP packet
"""

FAILING = """\
  - name: send in clear
    run: send ap wan IP(dst="192.0.2.2")/UDP(dport=9)
    expect:
      delivered: true
  - name: expects the wrong tap
    run: trace
    expect:
      stages[-1].tap: host.xfrm
      verdict: {contains: dropped}
  - name: never runs
    run: help
"""

WARNING = """\
  - name: a warning that fails
    run: help
    level: warning
    expect:
      commands: {len: 0}
  - name: still runs
    run: help
"""


@pytest.fixture
def passing(tmp_path: Path) -> Path:
    return write_lab(tmp_path, PASSING, name="passing.yaml")


@pytest.fixture
def failing(tmp_path: Path) -> Path:
    return write_lab(tmp_path, FAILING, name="failing.yaml")


def test_check_exit_codes(passing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_check([str(passing)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "1 lab file(s) valid\n"
    assert main_check([str(BAD / "tabs.yaml")]) == 2
    assert main_check([]) == 2  # argparse: LAB is required
    assert main_check([str(passing.parent / "empty-dir-does-not-exist.yaml")]) == 2


def test_check_a_directory(passing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_check([str(passing.parent)]) == 0
    assert main_check([str(LABS / "data")]) == 0
    empty = passing.parent / "nothing"
    empty.mkdir()
    assert main_check([str(empty)]) == 2
    assert "no lab files" in capsys.readouterr().err


def test_top_level_cli_dispatches(passing: Path, failing: Path) -> None:
    assert main(["check", str(passing)]) == 0
    assert main(["run", str(passing)]) == 0
    assert main(["run", str(failing)]) == 1
    assert main(["run", str(BAD / "tabs.yaml")]) == 2


def test_run_passing(passing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_run([str(passing)]) == 0
    out = capsys.readouterr().out
    assert "ok    1/2  add an SA" in out
    assert "2 steps: 2 passed, 0 failed, 0 warnings, 0 skipped" in out


def test_several_labs_end_with_a_total_that_names_the_failed(
    passing: Path, failing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_run([str(passing), str(failing)]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"2 labs, 5 steps: 1 passed, 1 failed ({failing})"
    assert main_run([str(passing)]) == 0
    assert "1 labs" not in capsys.readouterr().out  # one lab: its own line says it all


def test_a_failing_step_reports_name_line_expected_and_actual(
    failing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_run([str(failing)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  2/3  expects the wrong tap" in out
    # The step is reported at its first failed expect key; each failure at its own key.
    assert f"{failing}:11:7: step 2 'expects the wrong tap' failed" in out
    assert f'{failing}:11:7: stages[-1].tap: expected "host.xfrm", got "host.deliver"' in out
    assert f'{failing}:12:7: verdict: expected containing "dropped", got "delivered to host"' in out
    assert "skip  3/3  never runs" in out
    assert "(step 2 'expects the wrong tap' failed)" in out


def test_a_failed_command_is_reported_at_its_run_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = write_lab(
        tmp_path,
        """\
  - name: first
    run: help
  - name: no such device
    run: >-
      ip route add 10.0.0.0/8
      dev nope
""",
    )
    assert main_run([str(lab)]) == 1
    out = capsys.readouterr().out
    # Where the command starts, on the line after the block's indicator.
    assert f"{lab}:8:7: step 2 'no such device' failed" in out
    assert f"{lab}:8:7: the command: expected to succeed, got an error: ap has no device" in out


def test_a_failed_literal_block_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = write_lab(
        tmp_path,
        """\
  - name: quoted
    run: "ip route show table 7y"
    level: warning
  - name: literal
    run: |
      ip route show table 7x
""",
    )
    assert main_run([str(lab)]) == 1
    out = capsys.readouterr().out.splitlines()
    # A quoted value: its command starts after the quote.
    assert f"        {lab}:5:11: step 1 'quoted' failed (a warning: the lab goes on)" in out
    at = out.index(f"        {lab}:9:7: step 2 'literal' failed")
    assert out[at + 1] == "          ran: ip route show table 7x"  # no blank line after it
    assert out[at + 2].startswith(f"          {lab}:9:7: the command: expected to succeed")


def test_a_failed_warning_does_not_fail_the_lab(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = write_lab(tmp_path, WARNING)
    assert main_run([str(lab)]) == 0
    out = capsys.readouterr().out
    assert "warn  1/2  a warning that fails" in out and "(a warning: the lab goes on)" in out
    assert "ok    2/2  still runs" in out


def test_bad_files_stop_everything_with_exit_2(
    passing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_run([str(passing), str(BAD / "wrong-types.yaml")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "wrong-types.yaml:3:7: 'seed' must be a whole number" in captured.err


@pytest.mark.parametrize("argv", [[], ["--json", "--step", "x.yaml"], ["--bogus", "x.yaml"]])
def test_usage_errors(argv: list[str]) -> None:
    assert main_run(argv) == 2


def test_json_output(passing: Path, failing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_run(["--json", str(passing), str(failing)]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["passed"] is False and document["errors"] == []
    first, second = document["labs"]
    assert first["passed"] is True and first["seed"] == 0x5EED
    assert first["counts"] == {"passed": 2, "failed": 0, "warnings": 0, "skipped": 0}
    step = second["steps"][1]
    assert step["status"] == "failed" and step["line"] == 8 and step["number"] == 2
    assert step["failures"][0] == {
        "what": "stages[-1].tap",
        "expected": '"host.xfrm"',
        "actual": '"host.deliver"',
        "line": 11,
        "col": 7,
    }
    assert second["steps"][2]["status"] == "skipped"


def test_json_output_of_bad_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main_run(["--json", str(BAD / "tabs.yaml")]) == 2
    document = json.loads(capsys.readouterr().out)
    assert document["passed"] is False and document["labs"] == []
    assert document["errors"][0].startswith(str(BAD / "tabs.yaml") + ":4:1: tab character")


def test_junit_output(tmp_path: Path, passing: Path, failing: Path) -> None:
    warning = write_lab(tmp_path, WARNING, name="warning.yaml")
    junit = tmp_path / "out" / "junit.xml"
    junit.parent.mkdir()
    assert main_run(["--junit", str(junit), str(passing), str(failing), str(warning)]) == 1
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("7", "1", "1")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["a lab"] * 3
    cases = suites[1].findall("testcase")
    assert [c.get("name") for c in cases] == [
        "send in clear",
        "expects the wrong tap",
        "never runs",
    ]
    assert cases[1].get("line") == "8" and cases[1].get("classname") == "failing"
    failure = cases[1].find("failure")
    assert failure is not None
    assert failure.get("message") == 'stages[-1].tap: expected "host.xfrm", got "host.deliver"'
    assert cases[2].find("skipped") is not None
    warned = suites[2].findall("testcase")[0]
    assert warned.find("failure") is None and warned.find("system-out") is not None


def test_junit_to_an_unwritable_place(tmp_path: Path, passing: Path) -> None:
    assert main_run(["--junit", str(tmp_path / "no" / "such" / "dir.xml"), str(passing)]) == 2


def test_step_mode_with_piped_input(
    passing: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("capture list\nnode\n\n\n"))
    assert main_run(["--step", str(passing)]) == 0
    out = capsys.readouterr().out
    assert "step 1/2: add an SA" in out
    assert "  run: ip xfrm state add" in out
    assert "lab> capture list" in out and "lab> node" in out
    assert "current node: ap" in out
    assert out.index("lab> node") < out.index("ap: state added")
    assert "step 2/2: a command that fails on purpose" in out
    assert "2 steps: 2 passed" in out


def test_step_mode_runs_the_rest_at_end_of_input(
    passing: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main_run(["--step", str(passing)]) == 0
    assert "2 steps: 2 passed" in capsys.readouterr().out


def test_step_mode_quit_stops_the_lab(
    passing: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("\nquit\n"))
    assert main_run(["--step", str(passing)]) == 1
    out = capsys.readouterr().out
    assert "1 passed, 0 failed, 0 warnings, 1 skipped (stopped by the user)" in out


def test_step_mode_commands_act_on_the_lab_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = write_lab(
        tmp_path,
        """\
  - name: no SA yet
    run: ip xfrm state
    expect:
      states: {len: 1}
""",
    )
    command = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1 reqid 1 "
        "mode transport enc aes 0x000102030405060708090a0b0c0d0e0f"
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(command + "\n\n"))
    assert main_run(["--step", str(lab)]) == 0
    capsys.readouterr()


def test_verbose_prints_each_output(passing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_run(["-v", str(passing)]) == 0
    out = capsys.readouterr().out
    assert "ap: state added" in out and "is not an IP packet" in out


def test_pcap_names_per_lab(
    tmp_path: Path, passing: Path, failing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    twin = write_lab(other, FAILING, name="failing.yaml")
    out = tmp_path / "pcaps"
    assert main_run(["--pcap", str(out), str(passing), str(failing), str(twin)]) == 1
    assert sorted(p.name for p in out.iterdir()) == [
        "failing-2.pcapng",
        "failing.pcapng",
        "passing.esp_sa",  # the lab adds an SA: Wireshark's SA table beside its capture
        "passing.pcapng",
    ]
