"""Running exercise steps (:mod:`esplab.lab.exercise`) on a :class:`~esplab.lab.runner.LabRun`.

One runner runs every lab; this module is the part of it that knows exercises.
How a ``task`` or an ``ask`` is answered depends on the run's :class:`Course`:

* no student (``esplab run``, ``--solutions``, CI): the reference answers; a task
  runs its ``solution:`` (or the chosen fault's ``fix:``) and must then pass its
  ``check:``; with ``prove`` (``--solutions``) its check must also fail *before*
  the solution, so no exercise is done before the student starts;
* ``answers`` (``--grade``): the student's commands and answers from a file; a
  wrong one scores 0 and the lab goes on from the checkpoint (the state the next
  step expects: the steps so far replayed with the reference answers);
* ``interactive`` (step mode): :func:`run_exercise` is not called; the step UI
  calls :func:`task_failures`, :func:`answer`, :func:`record` and :func:`restore`.

Scores go into :attr:`Course.scores` (step index -> points earned).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from esplab.errors import EsplabError
from esplab.lab.exercise import Exercise, choose_fault, judge, read_answer
from esplab.lab.expect import Failure, evaluate
from esplab.lab.paths import PathError, resolve, show
from esplab.lab.refs import substitute

if TYPE_CHECKING:
    from esplab.lab.check import Step
    from esplab.lab.runner import LabRun, StepOutcome

__all__ = [
    "Course",
    "accept_typed",
    "answer",
    "expected_answer",
    "fault_of",
    "hints_of",
    "record",
    "restore",
    "run_exercise",
    "solution_of",
    "task_failures",
]


@dataclass
class Course:
    """How a run answers exercises, and what it scored."""

    student: str = ""
    answers: Mapping[str, Any] | None = None
    prove: bool = False
    interactive: bool = False
    fault_pick: int | None = None
    faults: dict[int, int] = field(default_factory=dict)
    scores: dict[int, float] = field(default_factory=dict)
    hints_shown: dict[int, int] = field(default_factory=dict)


def _exercise(step: Step) -> Exercise:
    assert step.exercise is not None
    return step.exercise


def fault_of(run: LabRun, step: Step) -> int:
    """The fault this run seeds at ``step`` (chosen once, then kept)."""
    course = run.course
    if step.index not in course.faults:
        faults = _exercise(step).faults
        pick = course.fault_pick
        course.faults[step.index] = (
            pick % len(faults)
            if pick is not None
            else choose_fault(faults, run.lab.seed, course.student, step.name)
        )
    return course.faults[step.index]


def _fault_step(run: LabRun, step: Step) -> Step | None:
    previous = run.lab.steps[step.index - 1] if step.index else None
    return previous if previous is not None and previous.kind == "fault" else None


def solution_of(run: LabRun, step: Step) -> tuple[str, ...]:
    """The reference commands of a task: its solution, else the seeded fault's fix."""
    exercise = _exercise(step)
    if exercise.solution:
        return exercise.solution
    fault = _fault_step(run, step)
    if fault is None:
        return ()
    return _exercise(fault).faults[fault_of(run, fault)].fix


def hints_of(run: LabRun, step: Step) -> tuple[str, ...]:
    """The hints of a task or question: its own, then the seeded fault's."""
    hints = _exercise(step).hints
    fault = _fault_step(run, step)
    if fault is not None and fault.index in run.course.faults:
        hints += _exercise(fault).faults[run.course.faults[fault.index]].hints
    return hints


def _execute(run: LabRun, line: str) -> Any:
    with run.session.files.lab(run.outdir):
        return run.session.execute(substitute(line, run.saved))


def _run_lines(run: LabRun, lines: tuple[str, ...], at: tuple[int, int] | None) -> list[Failure]:
    for line in lines:
        try:
            _execute(run, line)
        except (EsplabError, PathError) as exc:
            return [Failure(f"'{line}'", "to succeed", f"an error: {exc}", at)]
    return []


def task_failures(run: LabRun, step: Step) -> list[Failure]:
    """Run the task's probes now: every expectation that does not hold (none: done)."""
    from esplab.lab.runner import result_view

    failures: list[Failure] = []
    for probe in _exercise(step).probes:
        try:
            view = result_view(_execute(run, probe.run))
        except (EsplabError, PathError) as exc:
            failures.append(Failure(f"'{probe.run}'", "to succeed", f"an error: {exc}", probe.at))
            continue
        for exp in probe.expect:
            missed = evaluate(
                exp.check, exp.path, partial(resolve, view, list(exp.parts)), run.saved
            )
            if missed is not None:
                failures.append(Failure(missed.what, missed.expected, missed.actual, exp.at))
    return failures


def expected_answer(run: LabRun, step: Step) -> Any:
    """The right answer of an ``ask`` now; PathError when its path names nothing."""
    from esplab.lab.runner import result_view

    exercise = _exercise(step)
    assert exercise.answer is not None
    return read_answer(exercise.answer, run.saved, lambda line: result_view(_execute(run, line)))


def answer(run: LabRun, step: Step, given: str) -> tuple[bool, str]:
    """Judge the student's answer: (right, feedback). A wrong answer is feedback."""
    exercise = _exercise(step)
    try:
        want = expected_answer(run, step)
    except (EsplabError, PathError) as exc:
        return False, f"the lab cannot read its own answer: {exc}"
    if judge(want, given, exercise.choices):
        shown = want
        if exercise.choices and isinstance(want, int) and 1 <= want <= len(exercise.choices):
            shown = exercise.choices[want - 1]
        return True, f"right: {show(shown)}"
    return False, f"'{given.strip()}' is not right; try again, ask for a hint, or skip"


def record(
    run: LabRun,
    step: Step,
    status: str,
    *,
    summary: str = "",
    failures: list[Failure] | None = None,
    note: str = "",
    score: float | None = None,
) -> StepOutcome:
    """Record the pending exercise step as ``status`` (passed, failed, skipped)."""
    from esplab.lab.runner import StepOutcome, StepReport

    report = StepReport(
        index=step.index,
        name=step.name,
        line=step.line,
        level=step.level,
        status=status,
        command=step.run or step.name,
        summary=summary,
        failures=failures or [],
        attempts=1,
        note=note,
    )
    earned = step.points if status == "passed" else 0.0
    run.course.scores[step.index] = earned if score is None else score
    run.reports.append(report)
    if report.failed and run.course.answers is None:
        run.stop(f"step {step.index + 1} '{step.name}' failed")
    return StepOutcome(step, report)


def run_exercise(run: LabRun, step: Step) -> StepOutcome:
    """Run the pending exercise step without a student at the keyboard."""
    exercise = _exercise(step)
    first = (step.line, 1)
    if exercise.kind == "fault":
        choice = exercise.faults[fault_of(run, step)]
        failures = _run_lines(run, choice.run, first)
        return record(
            run,
            step,
            "failed" if failures else "passed",
            failures=failures,
            summary=f"fault seeded: {choice.name}",
        )
    given = run.course.answers.get(step.name) if run.course.answers is not None else None
    if exercise.kind == "ask":
        return _ask(run, step, given)
    if run.course.answers is not None:
        return _graded_task(run, step, given)
    if run.course.prove and not task_failures(run, step):
        return record(
            run,
            step,
            "failed",
            failures=[Failure("check", "to fail before the solution", "it passes already", first)],
        )
    failures = _run_lines(run, solution_of(run, step), first) or task_failures(run, step)
    return record(
        run,
        step,
        "failed" if failures else "passed",
        failures=failures,
        summary="solved by the reference solution",
    )


def _ask(run: LabRun, step: Step, given: Any) -> StepOutcome:
    exercise = _exercise(step)
    assert exercise.answer is not None
    try:
        want = expected_answer(run, step)
    except (EsplabError, PathError) as exc:
        at = exercise.answer.at
        return record(
            run,
            step,
            "failed",
            failures=[Failure("answer", "a value the model holds", f"nothing ({exc})", at)],
        )
    if run.course.answers is None:
        return record(run, step, "passed", summary=f"answer: {show(want)}")
    if given is None:
        return record(run, step, "failed", note="not answered", summary="not answered")
    right = judge(want, str(given), exercise.choices)
    return record(
        run,
        step,
        "passed" if right else "failed",
        summary=f"answered {show(given)}",
        failures=[] if right else [Failure("answer", "the right answer", show(given))],
    )


def _graded_task(run: LabRun, step: Step, given: Any) -> StepOutcome:
    lines = (given,) if isinstance(given, str) else tuple(str(g) for g in given or ())
    failures = _run_lines(run, lines, None) if lines else []
    if not failures:
        failures = task_failures(run, step)
    probes = max(len(_exercise(step).probes), 1)
    held = probes - len({f.at for f in failures}) if lines else 0
    score = step.points * max(held, 0) / probes
    if not lines:
        failures = [Failure("task", "the student's commands", "none")]
    outcome = record(
        run,
        step,
        "passed" if not failures else "failed",
        failures=failures,
        score=score if failures else step.points,
        note="" if not failures else "checkpoint restored for the next step",
    )
    if failures:
        restore(run, step.index + 1)
    return outcome


def restore(run: LabRun, upto: int) -> None:
    """The checkpoint before step ``upto``: the session made fresh from the lab's seed and
    steps ``0..upto-1`` replayed with the reference answers (the same faults). Reports
    of steps not run yet say they were restored; later reports are dropped."""
    from esplab.lab.runner import LabRun, StepReport

    walk = run.session.lab_walk
    run.session.reset(run.lab.seed)
    run.session.lab_walk = walk
    course = Course(student=run.course.student, faults=dict(run.course.faults))
    replay = LabRun(run.lab, run.session, outdir=run.outdir, course=course)
    for _ in range(upto):
        if replay.pending is None:
            break
        replay.run_next()
    run.saved = replay.saved
    kept = run.reports[:upto]
    for step in run.lab.steps[len(kept) : upto]:
        kept.append(
            StepReport(
                step.index, step.name, step.line, step.level, note="restored from the checkpoint"
            )
        )
    run.reports = kept
    run.course.faults.update(course.faults)
    for index in list(run.course.scores):
        if index >= upto:
            del run.course.scores[index]
    run.stopped = None


def accept_typed(run: LabRun, line: str, result: Any) -> StepOutcome | None:
    """A student typed the pending ``run:`` step's command and it worked: when its
    expectations hold on that result, the step is done already (passed)."""
    from esplab.lab.runner import result_view

    step = run.pending
    if step is None or step.kind != "run" or step.error is not None:
        return None
    try:
        wanted = substitute(step.run, run.saved)
    except PathError:
        return None
    if " ".join(wanted.split()) != " ".join(line.split()):
        return None
    view = result_view(result)
    for exp in step.expect:
        if evaluate(exp.check, exp.path, partial(resolve, view, list(exp.parts)), run.saved):
            return None
    if step.save:
        run.saved[step.save] = view
    return record(run, step, "passed", summary=result.summary, note="done already")
