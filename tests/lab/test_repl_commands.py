"""lab check/run/step/next/stop inside a session, as the REPL runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from esplab.commands.result import TableResult, TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, LabFileError
from tests.lab.support import BAD, LABS, repl_session, write_lab

STEPS = """\
  - name: add an SA
    explain: An SA on the ap.
    run: >-
      ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1
      mode transport enc aes 0x000102030405060708090a0b0c0d0e0f
    expect:
      states: ["0x00001000"]
  - name: count the SAs
    run: ip xfrm state
    expect:
      states: {len: 1}
"""


def _text(session: Session, line: str) -> TextResult:
    result = session.execute(line)
    assert isinstance(result, TextResult), result
    return result


def test_lab_check() -> None:
    session = repl_session()
    good = session.execute(f"lab check {LABS / '01-esp-basics.yaml'}")
    assert isinstance(good, TextResult) and good.data["valid"] is True
    bad = session.execute(f"lab check {BAD / 'wrong-types.yaml'}")
    assert bad.data["valid"] is False
    assert len(bad.data["errors"]) == len((BAD / "wrong-types.err").read_text().splitlines())


def test_lab_run_uses_its_own_session(tmp_path: Path) -> None:
    session = repl_session()
    result = session.execute(f"lab run {write_lab(tmp_path, STEPS)}")
    assert isinstance(result, TableResult)
    assert result.data["passed"] is True
    assert [row[2] for row in result.rows] == ["passed", "passed"]
    assert len(session.lab.node("ap").xfrm.states) == 0


def test_lab_run_of_a_directory_runs_each_lab(tmp_path: Path) -> None:
    # As esplab run DIR does: the directory's *.yaml files, a row a lab.
    write_lab(tmp_path, STEPS, name="a.yaml")
    write_lab(tmp_path, STEPS, name="b.yaml")
    (tmp_path / "bad.yaml").write_text("name: [1]\n", encoding="utf-8")
    session = repl_session()
    result = session.execute(f"lab run {tmp_path}")
    assert isinstance(result, TableResult)
    assert [(row[0], row[2]) for row in result.rows] == [
        ("a.yaml", "passed"),
        ("b.yaml", "passed"),
        ("bad.yaml", "invalid"),
    ]
    assert result.data == {"labs": 3, "passed": 2}
    assert len(session.lab.node("ap").xfrm.states) == 0
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadArgument, match="holds no lab file"):
        session.execute(f"lab run {tmp_path / 'empty'}")


def test_lab_run_of_a_bad_file_names_the_first_error() -> None:
    session = repl_session()
    with pytest.raises(LabFileError) as info:
        session.execute(f"lab run {BAD / 'wrong-types.yaml'}")
    assert "wrong-types.yaml:1:7: 'name' must be text" in str(info.value)
    assert "8 more error(s)" in str(info.value)


def test_stepping_in_the_session(tmp_path: Path) -> None:
    session = repl_session()
    session.execute(
        "ip xfrm state add src 192.0.2.9 dst 192.0.2.2 proto esp spi 0x9 reqid 9 "
        "mode transport enc aes 0x000102030405060708090a0b0c0d0e0f"
    )
    start = session.execute(f"lab step {write_lab(tmp_path, STEPS)}")
    assert isinstance(start, TextResult)
    assert "reset to seed 0x5eed" in start.text and "step 1/2: add an SA" in start.text
    assert len(session.lab.node("ap").xfrm.states) == 0  # the reset discarded the earlier SA
    first = _text(session, "lab next")
    assert first.data["status"] == "passed" and first.data["next"] == "count the SAs"
    assert "ap: state added" in first.text and "step 2/2: count the SAs" in first.text
    assert "step 2/2" in _text(session, "lab").text
    # A command typed between steps acts on the lab's machines and can break the next step.
    session.execute(
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x2 reqid 1 "
        "mode transport enc aes 0x000102030405060708090a0b0c0d0e0f"
    )
    second = _text(session, "lab next")
    assert second.data["status"] == "failed"
    assert "states: expected of length 1, got" in second.text
    # A failed step does not end the lab: it stays pending; reset restores what it expects.
    assert "failed; the lab goes on" in second.text and "step 2/2: count the SAs" in second.text
    assert "restored the checkpoint of this step" in _text(session, "lab reset").text
    third = _text(session, "lab next")
    assert third.data["status"] == "passed"
    assert "is over: 2 passed, 0 failed" in third.text
    with pytest.raises(BadArgument, match="not stepping through a lab"):
        session.execute("lab next")


def test_lab_stop_and_usage(tmp_path: Path) -> None:
    session = repl_session()
    assert session.execute("lab").data == {"lab": None}
    session.execute(f"lab step {write_lab(tmp_path, STEPS)}")
    stopped = session.execute("lab stop")
    assert "0 passed, 0 failed, 0 warnings, 2 skipped (stopped by the user)" in stopped.summary
    with pytest.raises(BadArgument, match="not stepping"):
        session.execute("lab stop")
    with pytest.raises(BadArgument, match="did you mean check"):
        session.execute("lab chek")
    with pytest.raises(BadArgument, match="needs one lab file"):
        session.execute("lab run")
    with pytest.raises(BadArgument, match="takes no argument"):
        session.execute("lab next now")


def test_completion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = repl_session()
    command = session.registry.lookup("lab")
    assert command.complete is not None
    assert list(command.complete(session, [])) == [
        "run",
        "step",
        "next",
        "stop",
        "check",
        "status",
        "hint",
        "solution",
        "solve",
        "skip",
        "reset",
        "goto",
        "back",
        "answer",
    ]
    monkeypatch.chdir(tmp_path)
    write_lab(tmp_path, STEPS, name="mine.yaml")
    assert list(command.complete(session, ["run"])) == ["mine.yaml"]
