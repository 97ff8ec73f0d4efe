"""lab run|step|next|stop|check: lab files inside the REPL.

* ``lab check FILE`` lists every error of a lab file (``file:line:col: message``).
* ``lab run FILE`` runs the lab in a fresh session of its own (the REPL's session
  is not touched) and shows one line per step.
* ``lab step FILE`` follows the lab in this session, so everything typed between
  steps acts on the lab's machines: the session is first reset to a fresh one
  with the lab's seed (what was set up before is discarded), then the first
  step's explanation and command are shown. ``lab next`` runs that step, shows
  its output and verdict and the next step; ``lab`` says where you are; ``lab
  stop`` leaves the lab.

:func:`every_command` is the registry of the front ends (the REPL, ``esplab -c``,
``esplab run``, the grader): every command of the core, which a lab step may run
(:func:`esplab.commands.handlers.all_commands`), and ``lab``. The command core knows
no ``lab``: this module sits over the core and the lab runner, and the lab runner's
modules are imported only when a lab command runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from io import StringIO
from typing import TYPE_CHECKING, Any

from esplab.commands.base import Session
from esplab.commands.handlers import all_commands
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param, Registry
from esplab.commands.result import MessageResult, Result, TableResult, TextResult
from esplab.errors import BadArgument, LabFileError

if TYPE_CHECKING:
    from esplab.lab.check import Lab, Step
    from esplab.lab.runner import LabRun, StepOutcome

__all__ = ["COMMANDS", "every_command"]

_VERBS = (
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
)


def _walk(session: Session) -> LabRun | None:
    from esplab.lab.runner import LabRun

    value = session.lab_walk
    return value if isinstance(value, LabRun) else None


def _set_walk(session: Session, run: LabRun | None) -> None:
    session.lab_walk = run


def _load(words: list[str], verb: str, registry: Registry) -> Lab:
    """The checked lab named by ``words``; the first error (with a count) if invalid."""
    from esplab.lab.check import check_file

    if len(words) != 1:
        raise BadArgument(
            f"lab {verb} needs one lab file", hint=f"lab {verb} labs/01-esp-basics.yaml"
        )
    lab, errors = check_file(words[0], registry=registry)
    if lab is not None:
        return lab
    first = errors[0]
    more = f"{len(errors) - 1} more error(s); 'lab check {words[0]}' lists them all"
    raise LabFileError(
        first.file,
        first.line,
        first.col,
        first.what,
        valid=first.valid,
        hint=f"{first.hint}; {more}"
        if first.hint and len(errors) > 1
        else more
        if len(errors) > 1
        else first.hint,
    )


def _check(words: list[str], registry: Registry) -> Result:
    from esplab.lab.check import check_file

    if len(words) != 1:
        raise BadArgument("lab check needs one lab file", hint="lab check labs/01-esp-basics.yaml")
    lab, errors = check_file(words[0], registry=registry)
    lines = [str(e) for e in errors]
    if lab is not None:
        text = f"{words[0]}: valid, {len(lab.steps)} step(s)"
        return TextResult(
            summary=text, text=text, data={"file": words[0], "valid": True, "errors": []}
        )
    return TextResult(
        summary=f"{words[0]}: {len(lines)} error(s)",
        text="\n".join(lines),
        data={"file": words[0], "valid": False, "errors": lines},
    )


def _run_dir(directory: str, registry: Registry) -> Result:
    """``lab run DIR``: every lab of the directory (its ``*.yaml`` files, as ``esplab
    run DIR`` takes them), each in a session of its own; a row a lab."""
    from esplab.lab.loader import expand
    from esplab.lab.runner import LabRun

    files = expand([directory])
    if not files:
        raise BadArgument(f"{directory} holds no lab file", valid="a directory of *.yaml labs")
    rows = []
    passed = 0
    for path in files:
        try:
            lab = _load([str(path)], "run", registry)
        except LabFileError as exc:
            rows.append((path.name, "-", "invalid", str(exc)))
            continue
        report = LabRun(lab, registry=registry).run_all()
        passed += report.passed
        counts = report.counts()
        rows.append(
            (
                path.name,
                lab.name,
                "passed" if report.passed else "FAILED",
                f"{counts['passed']} passed, {counts['failed']} failed, "
                f"{counts['warnings']} warnings, {counts['skipped']} skipped",
            )
        )
    return TableResult(
        summary=f"{len(files)} lab(s) in {directory}: {passed} passed, {len(files) - passed} not",
        title=f"labs in {directory}",
        columns=("file", "lab", "status", "steps"),
        rows=rows,
        data={"labs": len(files), "passed": passed},
    )


def _run(words: list[str], registry: Registry) -> Result:
    from pathlib import Path

    from esplab.lab.report import report_dict
    from esplab.lab.runner import LabRun

    if len(words) == 1 and Path(words[0]).is_dir():
        return _run_dir(words[0], registry)
    lab = _load(words, "run", registry)
    report = LabRun(lab, registry=registry).run_all()
    rows = []
    for step in report.steps:
        status = "warning" if step.warned else step.status
        detail = step.failures[0].line() if step.failures else step.note or step.summary
        rows.append((str(step.index + 1), step.name, status, detail))
    counts = report.counts()
    summary = (
        f"lab '{lab.name}': {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['warnings']} warnings, {counts['skipped']} skipped"
    )
    return TableResult(
        summary=summary,
        title=f"{lab.name} ({lab.file}) - " + ("passed" if report.passed else "FAILED"),
        columns=("#", "step", "status", "details"),
        rows=rows,
        data=report_dict(report),
    )


def _announce(run: LabRun, step: Step | None) -> list[str]:
    if step is None:
        report = run.report()
        counts = report.counts()
        return [
            f"lab '{run.lab.name}' is over: {counts['passed']} passed, "
            f"{counts['failed']} failed, {counts['warnings']} warnings, "
            f"{counts['skipped']} skipped" + (f" ({run.stopped})" if run.stopped else "")
        ]
    lines = [f"step {step.index + 1}/{len(run.lab.steps)}: {step.name}"]
    if step.explain.strip():
        lines.append(step.explain.strip())
    lines.append(f"  run: {step.run}")
    lines.append("'lab next' runs it; other commands act on the lab first; 'lab stop' ends it.")
    return lines


def _step(session: Session, words: list[str]) -> Result:
    from esplab.lab.course import Course
    from esplab.lab.runner import LabRun

    lab = _load(words, "step", session.registry)
    session.reset(lab.seed)  # a fresh model and random source from the lab's seed
    run = LabRun(lab, session, course=Course(interactive=True))
    _set_walk(session, run)
    lines = [
        f"lab '{lab.name}' ({lab.file}): {len(lab.steps)} step(s); the session was "
        f"reset to seed {lab.seed:#x}",
        "",
        lab.description.strip(),
        "",
    ]
    lines += _announce(run, run.pending)
    return TextResult(
        summary=f"stepping through lab '{lab.name}'",
        text="\n".join(lines),
        data={"lab": lab.name, "file": lab.file, "steps": len(lab.steps)},
    )


def _rendered(outcome: StepOutcome) -> str:
    from rich.console import Console

    from esplab.render import render

    if outcome.result is None:
        return outcome.error or ""
    buffer = StringIO()
    console = Console(file=buffer, width=100, color_system=None, highlight=False)
    console.print(render(outcome.result))
    return buffer.getvalue().rstrip("\n")


def _next(session: Session) -> Result:
    from esplab.lab.report import failure_text
    from esplab.lab.runner import result_view

    run = _walk(session)
    if run is None or run.pending is None:
        _set_walk(session, None)
        raise BadArgument("not stepping through a lab", hint="start with: lab step FILE")
    pending = run.pending
    if pending.kind in ("task", "ask"):  # the student answers; lab next checks a task
        from esplab.lab.stepper import announce, check_task

        if pending.kind == "ask":
            raise BadArgument("this step asks a question", hint="lab answer TEXT (or lab hint)")
        lines = check_task(run)
        if run.pending is not pending:
            lines += ["", *announce(run)]
        if run.pending is None:
            _set_walk(session, None)
        return TextResult(summary=lines[0], text="\n".join(lines), data={"lab": run.lab.name})
    outcome = run.run_next()
    report = outcome.report
    status = "warning" if report.warned else report.status
    lines = [
        _rendered(outcome),
        "",
        f"{'ok' if status == 'passed' else status.upper()}: step {report.index + 1} "
        f"'{report.name}'",
    ]
    if report.status == "failed":
        from esplab.lab.stepper import keep_trying

        lines += failure_text(run.lab.file, report)
        lines += keep_trying(run)
    lines.append("")
    lines += _announce(run, run.pending)
    if run.pending is None:
        _set_walk(session, None)
    data: dict[str, Any] = {
        "step": report.index + 1,
        "name": report.name,
        "status": status,
        "failures": [f.line() for f in report.failures],
        "result": result_view(outcome.result) if outcome.result is not None else None,
        "next": run.pending.name if run.pending is not None else None,
    }
    return TextResult(
        summary=f"step {report.index + 1} '{report.name}': {status}",
        text="\n".join(lines),
        data=data,
    )


def _status(session: Session) -> Result:
    run = _walk(session)
    if run is None:
        return MessageResult(
            summary="not stepping through a lab; lab step FILE starts one", data={"lab": None}
        )
    step = run.pending
    text = "\n".join(_announce(run, step))
    return TextResult(
        summary=f"lab '{run.lab.name}'",
        text=text,
        data={"lab": run.lab.name, "next": step.name if step else None},
    )


def _stop(session: Session) -> Result:
    run = _walk(session)
    if run is None:
        raise BadArgument("not stepping through a lab", hint="start with: lab step FILE")
    run.stop("stopped by the user")
    _set_walk(session, None)
    return MessageResult(summary=_announce(run, None)[0], data={"lab": run.lab.name})


def _walk_word(session: Session, verb: str, words: list[str]) -> Result:
    """``lab hint|solution|solve|skip|reset|goto N|back|answer TEXT|status``
    (esplab.lab.stepper); ``lab status`` also lists the saved progress of every lab."""
    from esplab.lab.stepper import announce, answer_line, meta

    run = _walk(session)
    if verb == "status" and run is None:
        from esplab.lab.progress import load_progress

        rows = [
            (
                p.get("lab", "?"),
                f"{p.get('next', 1)}/{p.get('steps', '?')}",
                f"{p.get('score', 0):g}/{p.get('points', 0):g}",
                p.get("file", ""),
            )
            for p in load_progress()
        ]
        return TableResult(
            summary=f"not stepping through a lab; {len(rows)} lab(s) with saved progress",
            title="saved progress (lab step FILE goes on)",
            columns=("lab", "next step", "points", "file"),
            rows=rows,
            data={"lab": None, "progress": load_progress()},
        )
    if run is None:
        raise BadArgument("not stepping through a lab", hint="start with: lab step FILE")
    if verb == "answer":
        if run.pending is None or run.pending.kind != "ask":
            raise BadArgument("the pending step asks no question")
        lines = answer_line(run, " ".join(words))
    else:
        said = meta(run, " ".join([verb, *words]))
        lines = list(said or [])
    before = lines[-1] if lines else ""
    lines += ["", *announce(run)] if run.pending is not None or verb != "status" else []
    if run.pending is None:
        _set_walk(session, None)
    return TextResult(
        summary=before or f"lab {verb}",
        text="\n".join(lines),
        data={"lab": run.lab.name, "next": run.pending.name if run.pending else None},
    )


def _lab(session: Session, inv: Invocation) -> Result:
    words = list(inv.args["args"])
    if not words:
        return _status(session)
    verb = words.pop(0)
    if verb == "run":
        return _run(words, session.registry)
    if verb == "check":
        return _check(words, session.registry)
    if verb == "step":
        return _step(session, words)
    if verb in ("status", "hint", "solution", "solve", "skip", "reset", "goto", "back", "answer"):
        return _walk_word(session, verb, words)
    if words:
        raise BadArgument(f"lab {verb} takes no argument, got '{words[0]}'")
    if verb == "next":
        return _next(session)
    if verb == "stop":
        return _stop(session)
    raise BadArgument(f"unknown lab command '{verb}'", valid=list(_VERBS), value=verb)


def _complete(session: Session, words: list[str]) -> Iterable[str]:
    from esplab.commands.complete import FilePaths

    if not words:
        return list(_VERBS)
    if words[0] in ("run", "step", "check") and len(words) == 1:
        return FilePaths(("*.yaml", "*.yml"))
    return []


COMMANDS = (
    Command(
        name="lab",
        nodeless="a lab runs on the lab's own machines",
        summary="run, step through or check a lab file",
        handler=_lab,
        params=(Param("args", kind="rest", optional=True, metavar="ARGS"),),
        usage_text="lab run FILE|DIR | step FILE | next | stop | check FILE | status | hint | "
        "solution | solve | skip | reset | goto N | back | answer TEXT",
        example="lab step labs/01-esp-basics.yaml",
        details="lab step resets the session to the lab's seed and follows the lab here: "
        "'lab next' runs one step; any other command acts on the lab's machines in between. "
        "lab run uses a session of its own; given a directory it runs each of its labs.",
        complete=_complete,
    ),
)


def every_command() -> Registry:
    """A registry of every command: a lab step's, then ``lab``."""
    return Registry([*all_commands(), *COMMANDS])
