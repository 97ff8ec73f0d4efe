"""Running a checked lab: one session, one step at a time, each checked as it runs.

A :class:`LabRun` owns the session (a fresh one with the lab's seed unless one is
given, as the REPL's ``lab step`` does) and the values steps saved. The CLI,
``--step`` and the REPL drive it the same way: look at :attr:`LabRun.pending`,
call :meth:`LabRun.run_next`, and finally take :meth:`LabRun.report`.

What an expectation sees (:func:`result_view`) is the result's ``data``, plus
``summary`` (the one-line summary) and, for a result that carries a dissected
packet (``capture show TAP#N``, ``decode``), ``layers``: each layer's fields by
layer name (``layers.ESP.spi``; a second IP header is ``IP_2``), with bytes as
hex text. Keys already in ``data`` win.

After a failed step (``level: error``) the remaining steps are skipped: they
would run on a state the lab did not plan for. A failed ``level: warning`` step
is reported and the lab goes on.

A lab's commands write only under its output directory (``outdir``, by default the
current directory) and never over the lab file or a file the lab read
(:class:`esplab.files.FilePolicy`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from esplab.commands.base import Session, SessionOptions
from esplab.commands.handlers import step_registry
from esplab.commands.result import Result
from esplab.config import LOG, setup_logging
from esplab.errors import EsplabError
from esplab.lab.check import Lab, Step
from esplab.lab.course import Course, run_exercise
from esplab.lab.expect import Failure, evaluate
from esplab.lab.paths import PathError, resolve
from esplab.lab.refs import substitute
from esplab.render_json import packet_layers, result_view

if TYPE_CHECKING:
    from esplab.commands.registry import Registry

__all__ = [
    "LabReport",
    "LabRun",
    "StepOutcome",
    "StepReport",
    "packet_layers",
    "result_view",
    "session_for",
]


@dataclass
class StepReport:
    """How one step went. ``status`` is passed, failed or skipped."""

    index: int
    name: str
    line: int
    level: str = "error"
    status: str = "skipped"
    command: str = ""
    summary: str = ""
    failures: list[Failure] = field(default_factory=list)
    attempts: int = 0
    note: str = ""

    @property
    def warned(self) -> bool:
        """A failed warning step: reported, but the lab still passes."""
        return self.status == "failed" and self.level == "warning"

    @property
    def failed(self) -> bool:
        return self.status == "failed" and self.level != "warning"


@dataclass
class LabReport:
    """How a lab went: one report per step, in order."""

    file: str
    name: str
    seed: int
    steps: list[StepReport]
    stem: str = ""
    pcap: str | None = None

    @property
    def passed(self) -> bool:
        return all(s.status == "passed" or s.warned for s in self.steps)

    def counts(self) -> dict[str, int]:
        return {
            "passed": sum(s.status == "passed" for s in self.steps),
            "failed": sum(s.failed for s in self.steps),
            "warnings": sum(s.warned for s in self.steps),
            "skipped": sum(s.status == "skipped" for s in self.steps),
        }


@dataclass
class StepOutcome:
    """A step just run: its report, and the command's result (None if it failed)."""

    step: Step
    report: StepReport
    result: Result | None = None
    error: str | None = None


@dataclass
class _Attempt:
    command: str
    result: Result | None = None
    error: str | None = None
    failures: list[Failure] = field(default_factory=list)


def session_for(lab: Lab, registry: Registry | None = None) -> Session:
    """A fresh session over ``registry`` (default: a step's commands) with the lab's seed,
    and the real peers its ``peer:`` asks for (one that cannot start stays emulated: why
    is in ``session.notes``)."""
    from esplab.commands.peers import start_peers

    session = Session(registry or step_registry(), options=SessionOptions(seed=lab.seed))
    start_peers(session, lab.peers)
    return session


class LabRun:
    """A lab being run in a session, step by step."""

    def __init__(
        self,
        lab: Lab,
        session: Session | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        outdir: Path | None = None,
        course: Course | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.lab = lab
        # How exercises are answered, and what they scored (esplab.lab.course).
        self.course = course if course is not None else Course()
        # A session of its own runs the commands of ``registry`` (default: a step's).
        self.session = session if session is not None else session_for(lab, registry)
        # The lab's commands write only under outdir (default: the current directory),
        # never over the lab file itself (esplab.files).
        self.outdir = outdir
        self.session.files.reading(lab.path, "the lab file being run")
        self.saved: dict[str, Any] = {"lab": lab.builtins()}
        self.reports: list[StepReport] = []
        self.stopped: str | None = None
        self._sleep = sleep

    @property
    def pending(self) -> Step | None:
        """The next step to run, or None when the lab is over."""
        if self.stopped is not None or len(self.reports) >= len(self.lab.steps):
            return None
        return self.lab.steps[len(self.reports)]

    def stop(self, reason: str) -> None:
        """End the lab here; the steps not run are reported as skipped with ``reason``."""
        if self.stopped is None:
            self.stopped = reason

    def run_next(self) -> StepOutcome:
        """Run the pending step (again while ``wait:`` allows and it fails)."""
        step = self.pending
        if step is None:
            raise EsplabError("the lab has no more steps")
        if step.exercise is not None:  # a task, a question or a fault (esplab.lab.course)
            return run_exercise(self, step)
        attempt = _Attempt(step.run)
        count = 0
        for count in range(1, step.attempts + 1):
            if count > 1 and step.interval:
                self._sleep(step.interval)
            attempt = self._attempt(step)
            if not attempt.failures:
                break
        report = StepReport(
            index=step.index,
            name=step.name,
            line=step.line,
            level=step.level,
            status="failed" if attempt.failures else "passed",
            command=attempt.command,
            summary=attempt.result.summary if attempt.result is not None else attempt.error or "",
            failures=attempt.failures,
            attempts=count,
        )
        if report.status == "passed" and step.save and attempt.result is not None:
            self.saved[step.save] = result_view(attempt.result)
        self.reports.append(report)
        if report.failed:
            self.stop(f"step {step.index + 1} '{step.name}' failed")
        return StepOutcome(step, report, attempt.result, attempt.error)

    def run_all(self) -> LabReport:
        while self.pending is not None:
            self.run_next()
        return self.report()

    def report(self) -> LabReport:
        """The report so far; steps not run are skipped (with the reason when stopped)."""
        reports = list(self.reports)
        for step in self.lab.steps[len(reports) :]:
            reports.append(
                StepReport(
                    step.index, step.name, step.line, step.level, note=self.stopped or "not run yet"
                )
            )
        return LabReport(self.lab.file, self.lab.name, self.lab.seed, reports, stem=self.lab.stem)

    def _attempt(self, step: Step) -> _Attempt:
        run_at = step.run_at
        try:
            line = substitute(step.run, self.saved)
        except PathError as exc:
            failure = Failure("run", "usable references", str(exc), run_at)
            return _Attempt(step.run, failures=[failure])
        attempt = _Attempt(line)
        try:
            with self.session.files.lab(self.outdir):
                attempt.result = self.session.execute(line)
        except EsplabError as exc:
            attempt.error = str(exc)
        except Exception as exc:  # a bug: one line in the report, the traceback in the log
            setup_logging()
            LOG.exception("internal error in lab %s step %r", self.lab.file, line)
            attempt.error = f"internal error: {type(exc).__name__}: {exc}"
            attempt.failures.append(Failure("the command", "to run", attempt.error, run_at))
            return attempt
        if step.error is not None:
            if attempt.error is None:
                summary = attempt.result.summary if attempt.result is not None else ""
                attempt.failures.append(
                    Failure(
                        "error",
                        step.error.describe(),
                        f"no error; the command gave: {summary}",
                        step.error_at,
                    )
                )
            else:
                message = attempt.error
                missed = evaluate(step.error, "error", lambda: message, self.saved)
                if missed is not None:
                    attempt.failures.append(replace(missed, at=step.error_at))
            return attempt
        if attempt.error is not None or attempt.result is None:
            attempt.failures.append(
                Failure("the command", "to succeed", f"an error: {attempt.error}", run_at)
            )
            return attempt
        view = result_view(attempt.result)
        for expectation in step.expect:
            missed = evaluate(
                expectation.check,
                expectation.path,
                partial(resolve, view, list(expectation.parts)),
                self.saved,
            )
            if missed is not None:
                at = (expectation.line, expectation.col)
                attempt.failures.append(replace(missed, at=at))
        return attempt
