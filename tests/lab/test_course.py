"""Exercise steps (task, ask, fault), --solutions, --grade and checkpoints."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from esplab.lab.check import Lab, check_file
from esplab.lab.cli import main_run
from esplab.lab.course import Course, accept_typed, answer, restore, task_failures
from esplab.lab.exercise import FaultChoice, choose_fault, judge
from esplab.lab.gradecli import solve
from esplab.lab.runner import LabRun
from tests.lab.support import LABS, SHIPPED, write_lab

SA = (
    "ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 "
    "mode transport auth-trunc 'hmac(sha256)' "
    "0x404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f 128 "
    "enc 'cbc(aes)' 0x202122232425262728292a2b2c2d2e2f"
)
POLICY = (
    "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 proto udp dir out "
    "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport"
)
SEND = 'send ap wan IP(dst="192.0.2.2")/UDP(sport=1,dport=2)/Raw(b"x"*20)'

STEPS = f"""\
  - name: the ap's SA
    run: "{SA}"
  - name: the ap's policy
    run: "{POLICY}"
  - name: give the host the SA
    task: Give the host the same SA.
    check:
      run: host ip xfrm state
      expect: {{states: ["0x00001000"]}}
    hint: [host ip xfrm state add, the same keys]
    solution: "host {SA}"
    points: 2
  - name: send one
    run: '{SEND}'
    expect: {{delivered: true}}
  - name: the pad length
    ask: What pad length did the host read?
    answer: {{run: "capture show host.xfrm#1", path: "summary"}}
  - name: which mode
    ask: Which mode does the SA use?
    choices: [tunnel, transport, beet]
    answer: transport
"""


def _lab(tmp_path: Path, steps: str = STEPS) -> Lab:
    lab, errors = check_file(write_lab(tmp_path, steps))
    assert errors == [], [str(e) for e in errors]
    assert lab is not None
    return lab


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_solution_is_proved(path: Path, tmp_path: Path) -> None:
    lab, errors = check_file(path)
    assert errors == [] and lab is not None
    for report in solve(lab, tmp_path):
        bad = [(s.name, [f.line() for f in s.failures]) for s in report.steps if s.failed]
        assert report.passed, bad


def test_solutions_cli_over_labs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_run(["--solutions", "--json", "--outdir", str(tmp_path), str(LABS)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["passed"] is True
    assert len(document["labs"]) >= len(SHIPPED)


def test_reference_run_scores_full_points(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    assert lab.points == 4  # task 2, two questions 1 each
    run = LabRun(lab)
    report = run.run_all()
    assert report.passed, [f.line() for s in report.steps for f in s.failures]
    assert run.course.scores == {2: 2.0, 4: 1.0, 5: 1.0}


def test_a_task_that_is_done_before_its_solution_fails_the_proof(tmp_path: Path) -> None:
    steps = STEPS.replace("host ip xfrm state\n", "ip xfrm state\n", 1)
    lab = _lab(tmp_path, steps)
    report = LabRun(lab, course=Course(prove=True)).run_all()
    step = report.steps[2]
    assert step.status == "failed"
    assert (
        step.failures[0].line()
        == "check: expected to fail before the solution, got it passes already"
    )


def _grade(tmp_path: Path, answers: dict[str, object]) -> tuple[int, dict[str, object]]:
    _lab(tmp_path)
    (tmp_path / "answers.yaml").write_text(json.dumps({"lab": answers}), encoding="utf-8")
    status = main_run(
        [
            "--grade",
            "--student",
            "ada",
            "--answers",
            str(tmp_path / "answers.yaml"),
            "--outdir",
            str(tmp_path),
            str(tmp_path / "lab.yaml"),
        ]
    )
    return status, json.loads((tmp_path / "grade-ada.json").read_text(encoding="utf-8"))


def test_grade_right_answers(tmp_path: Path) -> None:
    status, grade = _grade(
        tmp_path,
        {
            "give the host the SA": [f"host {SA}"],
            "which mode": 2,  # the second choice
        },
    )
    assert status == 0
    assert grade["student"] == "ada"
    assert grade["points"] == 4
    assert grade["score"] == 3  # the pad length question was not answered
    steps = {s["name"]: s for s in grade["labs"][0]["steps"]}  # type: ignore[index]
    assert steps["give the host the SA"]["score"] == 2
    assert steps["the pad length"]["status"] == "failed"
    assert steps["the pad length"]["note"] == "not answered"
    text = (tmp_path / "grade-ada.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(text.splitlines()))
    assert rows[0] == ["student", "lab", "step", "kind", "status", "score", "points"]
    assert rows[-1] == ["ada", "lab", "", "lab", "", "3.0", "4.0"]
    suite = ET.parse(tmp_path / "grade-ada.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"


def test_grade_wrong_answers_are_feedback_and_the_lab_goes_on(tmp_path: Path) -> None:
    wrong_sa = SA.replace("spi 0x1000", "spi 0x1001")
    status, grade = _grade(
        tmp_path,
        {"give the host the SA": [f"host {wrong_sa}"], "which mode": "tunnel"},
    )
    assert status == 0  # a wrong answer is never an error exit
    steps = {s["name"]: s for s in grade["labs"][0]["steps"]}  # type: ignore[index]
    task = steps["give the host the SA"]
    assert task["score"] == 0 and task["status"] == "failed"
    assert task["feedback"] == ['states: expected ["0x00001000"], got ["0x00001001"]']
    assert task["note"] == "checkpoint restored for the next step"
    assert steps["which mode"]["score"] == 0
    report = grade["labs"][0]  # type: ignore[index]
    assert report["score"] == 0


def test_grade_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = write_lab(tmp_path, STEPS)
    assert main_run(["--grade", str(lab)]) == 2
    assert "--grade needs --student NAME and --answers FILE" in capsys.readouterr().err
    (tmp_path / "a.yaml").write_text("[1, 2]", encoding="utf-8")
    assert (
        main_run(["--grade", "--student", "x", "--answers", str(tmp_path / "a.yaml"), str(lab)])
        == 2
    )
    assert "must map each lab to its answers" in capsys.readouterr().err


def test_interactive_task_and_answers(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    run = LabRun(lab, course=Course(interactive=True))
    run.run_next()
    run.run_next()
    step = run.pending
    assert step is not None and step.kind == "task"
    assert [f.line() for f in task_failures(run, step)] == [
        'states: expected ["0x00001000"], got []'
    ]
    run.session.execute(f"host {SA}")  # what the student types
    assert task_failures(run, step) == []
    ask = lab.steps[5]
    assert answer(run, ask, "beet") == (
        False,
        "'beet' is not right; try again, ask for a hint, or skip",
    )
    assert answer(run, ask, " Transport ") == (True, 'right: "transport"')
    assert answer(run, ask, "2") == (True, 'right: "transport"')


def test_a_step_typed_by_the_student_is_done_already(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    run = LabRun(lab, course=Course(interactive=True))
    result = run.session.execute(SA)
    outcome = accept_typed(run, "  " + SA.replace(" mode", "   mode"), result)
    assert outcome is not None
    assert outcome.report.status == "passed" and outcome.report.note == "done already"
    assert run.pending is not None and run.pending.name == "the ap's policy"
    assert accept_typed(run, "ip xfrm state", run.session.execute("ip xfrm state")) is None


def test_restore_replays_the_reference_up_to_a_step(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    run = LabRun(lab, course=Course(interactive=True))
    run.session.execute(
        "host ip xfrm state add src 9.9.9.9 dst 9.9.9.8 proto esp spi 7 enc aes 0x" + "00" * 16
    )
    restore(run, 3)  # the state step 4 expects: the SA, the policy, the host's SA
    assert [r.note for r in run.reports] == ["restored from the checkpoint"] * 3
    states = run.session.execute("host ip xfrm state").data["states"]
    assert states == ["0x00001000"]
    assert run.pending is not None and run.pending.name == "send one"
    assert run.run_next().report.status == "passed"


def test_fault_choice_depends_on_seed_and_student() -> None:
    faults = tuple(FaultChoice(f"f{i}", ("ip xfrm state",)) for i in range(4))
    picks = {choose_fault(faults, 0x5EED, f"student{i}", "break it") for i in range(20)}
    assert len(picks) > 1  # students in one room get different faults
    assert choose_fault(faults, 0x5EED, "ada", "x") == choose_fault(faults, 0x5EED, "ada", "x")


@pytest.mark.parametrize(
    ("expected", "given", "choices", "right"),
    [
        (4096, "0x1000", (), True),
        (4096, "4096", (), True),
        ("0x00001000", "4096", (), True),
        (3, "4", (), False),
        ("Transport", " transport ", (), True),
        ("transport", "2", ("tunnel", "transport"), True),
        ("transport", "1", ("tunnel", "transport"), False),
        (2, "transport", ("tunnel", "transport"), True),
        (True, "yes", (), True),
        (False, "yes", (), False),
    ],
)
def test_judge(expected: object, given: str, choices: tuple[str, ...], right: bool) -> None:
    assert judge(expected, given, choices) is right


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_lab_opens_with_objectives_and_closes_with_a_summary(path: Path) -> None:
    lab, _ = check_file(path)
    assert lab is not None
    assert len(lab.objectives) >= 2
    assert len(lab.summary.split()) >= 25


def test_the_course_has_exercises_of_every_kind() -> None:
    kinds: dict[str, int] = {}
    for path in SHIPPED:
        lab, _ = check_file(path)
        assert lab is not None
        for step in lab.steps:
            kinds[step.kind] = kinds.get(step.kind, 0) + 1
    assert kinds["task"] >= 8 and kinds["ask"] >= 15 and kinds["fault"] >= 3


def test_lab_15_capture_through_the_command_line_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from esplab.cli import main

    path = LABS / "15-decode-and-diagnose.yaml"
    assert main_run(["--outdir", str(tmp_path), str(path)]) == 0
    capsys.readouterr()
    capture, sas = str(tmp_path / "lab15.pcapng"), str(tmp_path / "lab15.esp_sa")
    main(["decode", capture, "--sa-file", sas, "--no-color"])
    decoded = capsys.readouterr().out
    assert "3 frame(s): 3 ESP (3 icv-bad)" in decoded  # the answer of "how many fail"
    main(["diagnose", capture, "--sa-file", sas, "--no-color"])
    diagnosed = capsys.readouterr().out
    # the answer of "which mistake": choice 2, the digest byte order
    assert "with the inner and outer HMAC digest words byte-swapped per 32-bit word" in diagnosed


def test_students_in_one_room_get_different_faults() -> None:
    lab, _ = check_file(LABS / "17-break-fix-config.yaml")
    assert lab is not None
    fault = next(s for s in lab.steps if s.kind == "fault")
    assert fault.exercise is not None
    names = {
        fault.exercise.faults[
            choose_fault(fault.exercise.faults, lab.seed, f"student{i}", fault.name)
        ].name
        for i in range(12)
    }
    assert len(names) >= 3
