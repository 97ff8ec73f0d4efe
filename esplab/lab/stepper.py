"""Step mode's words, shared by ``esplab run --step`` and the REPL's ``lab`` verbs.

At the step prompt a student may type any command (it acts on the lab's
machines), or one of these words:

``hint``       the next hint of the pending task or question (one more each time)
``solution``   show the reference solution (nothing runs)
``solve``      run the reference solution (the step scores nothing)
``skip``       leave the step unanswered and go on
``reset``      restore the checkpoint: the state the pending step expects
``goto N``     go to step N, restoring its checkpoint; ``back``: the step before
``status``     where you are, and what you scored

A failed step does not end the lab: the student retries, asks for a hint, shows
or runs the solution, skips, or resets. Typing a ``run:`` step's own command is
accepted as doing the step ("done already"); a task is done as soon as its check
holds after a command; at a question, a line that is no command is the answer.
Progress is saved per lab after every step (:mod:`esplab.lab.progress`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esplab.errors import BadArgument
from esplab.lab.course import (
    accept_typed,
    answer,
    hints_of,
    record,
    restore,
    solution_of,
    task_failures,
)
from esplab.lab.progress import save_progress

if TYPE_CHECKING:
    from esplab.lab.runner import LabRun

__all__ = [
    "WORDS",
    "after_command",
    "announce",
    "answer_line",
    "check_task",
    "keep_trying",
    "meta",
    "status_lines",
]

WORDS = ("hint", "solution", "solve", "skip", "reset", "goto", "back", "status")


def announce(run: LabRun) -> list[str]:
    """What the student reads before the pending step."""
    step = run.pending
    if step is None:
        return status_lines(run)
    lines = [f"step {step.index + 1}/{len(run.lab.steps)}: {step.name}"]
    if step.explain.strip():
        lines.append(step.explain.strip())
    exercise = step.exercise
    if exercise is None:
        lines.append(f"  run: {step.run}")
        lines.append("Enter runs it (or type it yourself); other commands act on the lab first.")
    elif exercise.kind == "task":
        lines.append("TASK: " + exercise.text.strip())
        lines.append(
            "Type commands; the lab checks after each one. Enter checks now; "
            "'hint', 'solution', 'solve', 'skip', 'reset' help."
        )
    elif exercise.kind == "ask":
        lines.append("QUESTION: " + exercise.text.strip())
        lines += [f"  {n}. {choice}" for n, choice in enumerate(exercise.choices, 1)]
        lines.append("Type your answer (commands still work); 'hint' or 'skip' if stuck.")
    else:
        lines.append("Enter seeds a fault (the lab does not say which).")
    return lines


def status_lines(run: LabRun) -> list[str]:
    report = run.report()
    counts = report.counts()
    score = sum(run.course.scores.values())
    done = len(run.reports)
    return [
        f"lab '{run.lab.name}': step {min(done + 1, len(run.lab.steps))}/{len(run.lab.steps)}; "
        f"{counts['passed']} passed, {counts['skipped']} skipped; "
        f"{score:g} of {run.lab.points:g} points"
    ]


def _done(run: LabRun) -> list[str]:
    """After a step is recorded: progress saved; the status when the lab is over (the
    caller announces the next step)."""
    save_progress(run)
    return status_lines(run) if run.pending is None else []


def meta(run: LabRun, line: str) -> list[str] | None:
    """Handle a step-mode word; None when ``line`` is not one."""
    words = line.split()
    if not words or words[0] not in WORDS:
        return None
    word, args = words[0], words[1:]
    step = run.pending
    if word == "status":
        return status_lines(run)
    if word in ("goto", "back"):
        target = _target(run, word, args)
        restore(run, target)
        save_progress(run)
        return [f"restored the checkpoint of step {target + 1}"]
    if step is None:
        raise BadArgument("the lab is over", hint="goto N or back to go over a step again")
    if word == "reset":
        restore(run, step.index)
        return ["restored the checkpoint of this step"]
    if word == "skip":
        record(run, step, "skipped", note="skipped by the student")
        return _done(run)
    exercise = step.exercise
    if word == "hint":
        hints = hints_of(run, step) if exercise else ()
        shown = run.course.hints_shown.get(step.index, 0)
        if not hints:
            return ["no hint for this step"]
        run.course.hints_shown[step.index] = min(shown + 1, len(hints))
        return [
            f"hint {min(shown + 1, len(hints))}/{len(hints)}: {hints[min(shown, len(hints) - 1)]}"
        ]
    lines = _solution(run) if exercise is not None else (step.run,)
    if word == "solution":
        return ["the solution:", *(f"  {line}" for line in lines)]
    # solve
    if exercise is None or exercise.kind != "task":
        raise BadArgument("solve runs a task's solution", hint="at a run step, Enter runs it")
    for text in lines:
        run.session.execute(text)
    failures = task_failures(run, step)
    if failures:
        return ["the solution did not make the check hold:", *(f.line() for f in failures)]
    record(run, step, "passed", note="solved by the solution", score=0.0)
    return ["solved (no points)", *_done(run)]


def _solution(run: LabRun) -> tuple[str, ...]:
    step = run.pending
    assert step is not None and step.exercise is not None
    if step.exercise.kind == "ask":
        from esplab.lab.course import expected_answer

        return (str(expected_answer(run, step)),)
    return solution_of(run, step)


def _target(run: LabRun, word: str, args: list[str]) -> int:
    total = len(run.lab.steps)
    if word == "back":
        current = run.pending.index if run.pending is not None else total
        return max(current - 1, 0)
    if len(args) != 1 or not args[0].isdigit() or not 1 <= int(args[0]) <= total:
        raise BadArgument(
            f"goto needs a step number, got '{' '.join(args)}'", valid=f"1 to {total}"
        )
    return int(args[0]) - 1


def keep_trying(run: LabRun) -> list[str]:
    """After a step that failed in step mode: the lab does not end; the step stays
    pending so the student can retry it, or take a hint, the solution, skip or reset."""
    if not run.reports or run.reports[-1].status != "failed" or run.reports[-1].warned:
        return []
    failed = run.reports.pop()
    run.stopped = None
    return [
        f"step {failed.index + 1} '{failed.name}' failed; the lab goes on: retry, or "
        "'hint', 'solution', 'skip', 'reset' (the state this step expects)"
    ]


def after_command(run: LabRun, line: str, result: Any) -> list[str]:
    """After a command the student typed: a run step it does, or a task it completes."""
    step = run.pending
    if step is None:
        return []
    if step.exercise is None:
        outcome = accept_typed(run, line, result)
        if outcome is None:
            return []
        return [f"done already: step {step.index + 1} '{step.name}'", *_done(run)]
    if step.exercise.kind == "task" and not task_failures(run, step):
        record(run, step, "passed", summary="done by the student")
        return [f"task done: step {step.index + 1} '{step.name}'", *_done(run)]
    return []


def check_task(run: LabRun) -> list[str]:
    """Enter at a task: say what still fails."""
    step = run.pending
    assert step is not None
    failures = task_failures(run, step)
    if not failures:
        record(run, step, "passed", summary="done by the student")
        return [f"task done: step {step.index + 1} '{step.name}'", *_done(run)]
    return ["not yet:", *(f"  {f.line()}" for f in failures), "(retry, 'hint', 'solution', 'skip')"]


def answer_line(run: LabRun, text: str) -> list[str]:
    """A line typed at a question that is no command: the answer."""
    step = run.pending
    assert step is not None
    right, feedback = answer(run, step, text)
    if right:
        record(run, step, "passed", summary=f"answered {text.strip()}")
        return [feedback, *_done(run)]
    return [feedback]
