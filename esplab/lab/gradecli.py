"""``esplab run --solutions`` and ``esplab run --grade`` (see :mod:`esplab.lab.cli`)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.text import Text

from esplab.errors import EsplabError
from esplab.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from esplab.files import FilePolicy
from esplab.lab.check import Lab
from esplab.lab.command import every_command
from esplab.lab.course import Course
from esplab.lab.grade import (
    LabGrade,
    answers_for,
    grade_csv,
    grade_json,
    grade_junit,
    grade_of,
    load_answers,
)
from esplab.lab.report import junit_xml, report_json, report_text, totals_text
from esplab.lab.runner import LabReport, LabRun

__all__ = ["fault_variants", "graded", "solve"]


def fault_variants(lab: Lab) -> int:
    """How many runs prove every fault of ``lab`` fixable (the most choices of a step)."""
    counts = [len(s.exercise.faults) for s in lab.steps if s.exercise and s.exercise.faults]
    return max(counts, default=1)


def solve(lab: Lab, outdir: Path | None = None) -> list[LabReport]:
    """Run ``lab``'s reference solutions, proved, once per fault variant."""
    reports = []
    variants = fault_variants(lab)
    for pick in range(variants):
        course = Course(prove=True, fault_pick=pick)
        run = LabRun(lab, outdir=outdir, course=course, registry=every_command())
        report = run.run_all()
        if variants > 1:
            chosen = sorted(run.course.faults.items())
            names = [
                lab.steps[i].exercise.faults[p].name  # type: ignore[union-attr]
                for i, p in chosen
            ]
            report = replace(report, name=f"{report.name} [fault: {', '.join(names)}]")
        reports.append(report)
    return reports


def graded(
    args: argparse.Namespace, labs: list[Lab], out: Console, err: Console, outdir: Path | None
) -> int:
    if args.solutions:
        reports = [r for lab in labs for r in solve(lab, outdir)]
        if args.json:
            print(report_json(reports))
        else:
            for report in reports:
                out.print(report_text(report, steps=args.verbose or not report.passed))
            out.print(totals_text(reports))
        if args.junit:
            FilePolicy().target(args.junit, "--junit file", force=args.force).write_bytes(
                junit_xml(reports)
            )
        return EXIT_OK if all(r.passed for r in reports) else EXIT_FAILED
    try:
        answers = load_answers(args.answers)
    except EsplabError as exc:
        err.print(f"esplab run: {exc}", markup=False)
        return EXIT_USAGE
    grades: list[LabGrade] = []
    broken = False
    for lab in labs:
        course = Course(student=args.student, answers=answers_for(answers, lab.stem, lab.name))
        run = LabRun(lab, outdir=outdir, course=course, registry=every_command())
        run.run_all()
        grade = grade_of(run)
        grades.append(grade)
        broken |= any(
            s.status == "failed" and lab.steps[s.index].kind in ("run", "fault")
            for s in grade.report.steps
        )
        out.print(Text(f"{lab.name}: {grade.score:g} of {grade.points:g} points", style="bold"))
        for index, kind, score, points, _ in grade.steps:
            step = grade.report.steps[index]
            style = "green" if score >= points else "yellow" if score else "red"
            out.print(Text(f"  {score:g}/{points:g}  {kind:5} {step.name}", style=style))
            for failure in step.failures[:3]:
                out.print(Text(f"        {failure.line()}", style="dim"))
    where = outdir or Path.cwd()
    stem = "grade-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in args.student)
    policy = FilePolicy()
    try:
        for ext, body in (
            ("json", grade_json(args.student, grades).encode()),
            ("csv", grade_csv(args.student, grades).encode()),
            ("xml", grade_junit(args.student, grades)),
        ):
            policy.target(where / f"{stem}.{ext}", "grade file", force=True).write_bytes(body)
    except (OSError, EsplabError) as exc:
        err.print(f"esplab run: cannot write the grades to {where}: {exc}", markup=False)
        return EXIT_USAGE
    total = sum(g.score for g in grades)
    out.print(
        Text(
            f"{args.student}: {total:g} of {sum(g.points for g in grades):g} points; "
            f"grades in {where / stem}.json, .csv, .xml",
            style="bold",
        )
    )
    return EXIT_FAILED if broken else EXIT_OK
