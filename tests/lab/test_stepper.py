"""Step mode a student can live in: retry, hint, solution, skip, reset, goto, back,
answers as feedback, a typed step done already, progress saved per lab."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from esplab.commands.result import TextResult
from esplab.commands.session import Session
from esplab.lab.cli import main_run
from tests.lab.support import LABS, repl_session

TUNNEL = LABS / "11-tunnel-mode.yaml"
IN_POLICY = (
    "host ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir in "
    "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 3 mode tunnel"
)


def _step(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    status: int = 1,
) -> str:
    """Step through the tunnel lab with ``text`` as the student's lines; a lab left
    unfinished or with a skipped step has not passed (exit 1), wrong answers aside."""
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main_run(["--step", "--no-color", str(TUNNEL)]) == status
    return capsys.readouterr().out


def test_a_student_session_through_the_tunnel_lab(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = ["", "", "", "", "", "hint", "hint", IN_POLICY, "5", "4", "back", "skip", "2"]
    out = _step(monkeypatch, capsys, "\n".join(lines) + "\n")
    assert "You will learn to:" in out
    assert "TASK: The host decrypted the packet but dropped it" in out
    assert "not yet:\n  delivered: expected true, got false" in out  # Enter checks the task
    assert "hint 1/3: trace shows where it was dropped" in out
    assert "hint 2/3: the ap's policy is 'dir out'" in out
    assert "task done: step 5 'let the host accept the tunnel'" in out
    assert "'5' is not right; try again, ask for a hint, or skip" in out  # feedback, exit 0
    assert "right: 4" in out
    assert "restored the checkpoint of step 6" in out
    assert 'right: "192.0.2.1 (the ap)"' in out
    assert "What you saw:" in out
    assert "7 steps: 6 passed, 0 failed, 0 warnings, 1 skipped (skipped by the student)" in out
    saved = Path(os.environ["XDG_STATE_HOME"]) / "esplab" / "progress" / "11-tunnel-mode.json"
    progress = json.loads(saved.read_text(encoding="utf-8"))
    assert progress["next"] == 8 and progress["score"] == 4 and progress["points"] == 5
    assert [d["status"] for d in progress["done"]].count("skipped") == 1


def test_typing_the_step_yourself_is_done_already(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = (
        "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x3000 reqid 3 "
        "mode tunnel auth-trunc 'hmac(sha256)' "
        "0x404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f 128 "
        "enc 'cbc(aes)' 0x202122232425262728292a2b2c2d2e2f"
    )
    out = _step(monkeypatch, capsys, first + "\nquit\n")
    assert "done already: step 1 'the ap's tunnel SA'" in out
    assert "step 2/7: the ap's policy for the two networks" in out


def test_a_failed_step_does_not_end_the_lab(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The student adds the ap's policy before its step: the step then fails (EEXIST),
    # the lab stays on it, and 'reset' restores the state it expects.
    policy = (
        "ip xfrm policy add src 198.51.100.0/24 dst 203.0.113.0/24 dir out "
        "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 3 mode tunnel"
    )
    wrong = policy.replace("reqid 3", "reqid 9")
    out = _step(monkeypatch, capsys, f"\n{wrong}\n\nreset\n\nquit\n")
    assert "failed; the lab goes on: retry, or 'hint', 'solution', 'skip', 'reset'" in out
    assert "restored the checkpoint of this step" in out
    assert "ok    2/7  the ap's policy for the two networks" in out


def _text(session: Session, line: str) -> TextResult:
    result = session.execute(line)
    assert isinstance(result, TextResult)
    return result


def test_repl_lab_verbs() -> None:
    session = repl_session()
    session.execute(f"lab step {LABS / '12-ipv6.yaml'}")
    session.execute("lab next")
    session.execute("lab next")
    checked = session.execute("lab next")  # at a task, lab next checks it
    assert checked.summary == "not yet:"
    assert "hint 1/2" in session.execute("lab hint").summary
    assert "host ip -6 xfrm state add" in _text(session, "lab solution").text
    session.execute("lab solve")
    wrong = session.execute("lab answer 51")
    assert wrong.summary == "'51' is not right; try again, ask for a hint, or skip"
    session.execute("lab answer 50")
    status = _text(session, "lab status")
    assert "step 5/5" in status.text
    back = _text(session, "lab goto 3")
    assert "restored the checkpoint of step 3" in back.text
    assert session.execute("host ip xfrm state").data["states"] == []
    from esplab.errors import BadArgument

    with pytest.raises(BadArgument, match="goto needs a step number"):
        session.execute("lab goto 9")
