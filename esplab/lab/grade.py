"""Grading: a student's answers file, and scores as JSON, CSV and JUnit XML.

``esplab run --grade LAB... --student NAME --answers FILE`` runs each lab with the
student's answers (:class:`esplab.lab.course.Course`) and writes
``grade-NAME.json``, ``grade-NAME.csv`` and ``grade-NAME.xml`` (in ``--outdir``).

The answers file is YAML (or JSON): for each lab, by its file's stem or its name,
the answer of each exercise by step name. A task's answer is the command lines the
student typed; a question's answer is a value::

    11-tunnel-mode:
      give the host its SA: ["host ip xfrm state add ...", "host ip xfrm policy add ..."]
      how long is the outer header?: 20

A step not in the file scores 0. A wrong answer is feedback (it scores 0 or part of
the step's points), never an error: the run exits 0 unless a lab itself broke.

JSON::

    {"student": "alice", "score": 7.5, "points": 10,
     "labs": [{"file": ..., "name": ..., "seed": ..., "score": 7.5, "points": 10,
               "steps": [{"number": 2, "name": ..., "kind": "task", "status": "failed",
                          "score": 0.5, "points": 1, "fault": null, "feedback": [...]}]}]}

CSV: one row per exercise step (``student,lab,step,kind,status,score,points``) and
one per lab (``step`` empty). JUnit: a testsuite per lab, a testcase per exercise
step with its score in a ``score`` property; a step that scored less than its
points has a ``failure``.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from esplab.errors import FileError
from esplab.lab.report import visible
from esplab.lab.runner import LabReport, LabRun

__all__ = ["LabGrade", "grade_csv", "grade_dict", "grade_junit", "grade_of", "load_answers"]


@dataclass(frozen=True)
class LabGrade:
    """A graded lab: its report and, per step index, (score, points, kind, fault)."""

    report: LabReport
    steps: tuple[tuple[int, str, float, float, str | None], ...]

    @property
    def score(self) -> float:
        return sum(s[2] for s in self.steps)

    @property
    def points(self) -> float:
        return sum(s[3] for s in self.steps)


def grade_of(run: LabRun) -> LabGrade:
    """The scores of a finished run (exercise steps, and any step worth points)."""
    rows = []
    for step in run.lab.steps:
        if step.kind in ("run", "fault") and not step.points:
            continue
        fault = None
        before = run.lab.steps[step.index - 1] if step.index else None
        if before is not None and before.kind == "fault" and before.exercise is not None:
            pick = run.course.faults.get(before.index)
            fault = before.exercise.faults[pick].name if pick is not None else None
        score = run.course.scores.get(step.index, 0.0)
        if step.kind == "run" and run.reports[step.index : step.index + 1]:
            score = step.points if run.reports[step.index].status == "passed" else 0.0
        rows.append((step.index, step.kind, score, step.points, fault))
    return LabGrade(run.report(), tuple(rows))


def load_answers(path: str) -> dict[str, Any]:
    """The answers file: lab (stem or name) -> step name -> answer."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise FileError(f"cannot read the answers file {path}: {exc.strerror or exc}") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise FileError(f"the answers file {path} is not YAML: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise FileError(
            f"the answers file {path} must map each lab to its answers",
            valid="LAB: {STEP NAME: ANSWER}, e.g. 11-tunnel-mode: {the outer header: 20}",
        )
    return {str(k): v for k, v in data.items()}


def answers_for(answers: Mapping[str, Any], stem: str, name: str) -> dict[str, Any]:
    found = answers.get(stem, answers.get(name, {}))
    return {str(k): v for k, v in found.items()}


def _step_rows(grade: LabGrade) -> list[dict[str, Any]]:
    rows = []
    for index, kind, score, points, fault in grade.steps:
        step = grade.report.steps[index]
        rows.append(
            {
                "number": index + 1,
                "name": step.name,
                "kind": kind,
                "status": step.status,
                "score": round(score, 3),
                "points": points,
                "fault": fault,
                "feedback": [f.line() for f in step.failures],
                "note": step.note,
            }
        )
    return rows


def grade_dict(student: str, grades: Sequence[LabGrade]) -> dict[str, Any]:
    return {
        "student": student,
        "score": round(sum(g.score for g in grades), 3),
        "points": sum(g.points for g in grades),
        "labs": [
            {
                "file": g.report.file,
                "name": g.report.name,
                "seed": g.report.seed,
                "score": round(g.score, 3),
                "points": g.points,
                "steps": _step_rows(g),
            }
            for g in grades
        ],
    }


def grade_json(student: str, grades: Sequence[LabGrade]) -> str:
    return json.dumps(grade_dict(student, grades), indent=2, ensure_ascii=False) + "\n"


def grade_csv(student: str, grades: Sequence[LabGrade]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", "lab", "step", "kind", "status", "score", "points"])
    for g in grades:
        for row in _step_rows(g):
            writer.writerow(
                [
                    student,
                    g.report.stem,
                    row["name"],
                    row["kind"],
                    row["status"],
                    row["score"],
                    row["points"],
                ]
            )
        writer.writerow([student, g.report.stem, "", "lab", "", round(g.score, 3), g.points])
    return out.getvalue()


def grade_junit(student: str, grades: Sequence[LabGrade]) -> bytes:
    root = ET.Element("testsuites", name=f"esplab grade {visible(student)}")
    for g in grades:
        rows = _step_rows(g)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=visible(g.report.name),
            tests=str(len(rows)),
            failures=str(sum(r["score"] < r["points"] for r in rows)),
            file=visible(g.report.file),
        )
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="student", value=visible(student))
        ET.SubElement(props, "property", name="score", value=f"{g.score:g}/{g.points:g}")
        for row in rows:
            case = ET.SubElement(
                suite, "testcase", name=visible(row["name"]), classname=visible(g.report.stem)
            )
            cprops = ET.SubElement(case, "properties")
            ET.SubElement(cprops, "property", name="score", value=f"{row['score']:g}")
            ET.SubElement(cprops, "property", name="points", value=f"{row['points']:g}")
            if row["score"] < row["points"]:
                failure = ET.SubElement(
                    case, "failure", message=f"scored {row['score']:g} of {row['points']:g}"
                )
                failure.text = visible("\n".join(row["feedback"]) or row["note"], keep="\n")
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return body + b"\n"
