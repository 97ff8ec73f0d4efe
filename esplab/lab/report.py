"""Lab reports for people (rich text), for programs (JSON) and for CI (JUnit XML).

JSON (``esplab run --json``)::

    {"passed": true, "errors": [],
     "labs": [{"file": ..., "name": ..., "seed": 24301, "passed": true, "pcap": null,
               "counts": {"passed": 9, "failed": 0, "warnings": 0, "skipped": 0},
               "steps": [{"number": 1, "name": ..., "line": 12, "level": "error",
                          "status": "passed", "command": ..., "summary": ...,
                          "attempts": 1, "note": "",
                          "failures": [{"what": ..., "expected": ..., "actual": ...,
                                        "line": 15, "col": 7}]}]}]}

A step's ``line`` is where it starts; a failure's ``line`` and ``col`` are those of
the command in its ``run:`` value (the command failed; in a block scalar, the line
after ``|`` or ``>``) or of its ``expect:`` or ``error:`` key.

JUnit: one ``testsuite`` per lab, one ``testcase`` per step (``classname`` is the
lab file's stem, ``file`` and ``line`` locate the step); a failed step has a
``failure``, a skipped one ``skipped``, a failed warning step passes with the
failure in ``system-out``. No times are written, so reports are reproducible.

Control characters in names, commands and results (a YAML ``"\\x07"`` or ``"\\e"``)
are shown as ``\\xNN`` escapes, the same in the terminal and in JUnit XML, which
cannot hold them (XML 1.0 section 2.2): no report rings a bell or moves the cursor,
and every JUnit file is well-formed.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Group
from rich.text import Text

from esplab.lab.expect import Failure
from esplab.lab.runner import LabReport, StepReport

__all__ = [
    "failure_text",
    "junit_xml",
    "report_dict",
    "report_json",
    "report_text",
    "step_line",
    "totals_text",
    "visible",
]

_STATUS = {
    "passed": ("ok  ", "green"),
    "failed": ("FAIL", "bold red"),
    "skipped": ("skip", "dim"),
    "warning": ("warn", "yellow"),
}


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with each control character (C0, DEL, C1) except those in ``keep``, and
    each code point XML cannot hold (surrogates, U+FFFE, U+FFFF), shown as ``\\xNN``
    (``\\uNNNN``)."""
    return "".join(
        _escape(c)
        if c not in keep
        and (
            ord(c) < 0x20
            or 0x7F <= ord(c) <= 0x9F
            or 0xD800 <= ord(c) <= 0xDFFF
            or ord(c) in (0xFFFE, 0xFFFF)
        )
        else c
        for c in text
    )


def _text(text: str) -> str:
    """A multi-line text for the terminal or XML: newlines and tabs kept."""
    return visible(text, keep="\n\t")


def _status(step: StepReport) -> str:
    return "warning" if step.warned else step.status


def _where(file: str, at: tuple[int, int] | None, line: int) -> str:
    return f"{file}:{at[0]}:{at[1]}:" if at is not None else f"{file}:{line}:"


def failure_text(file: str, step: StepReport) -> list[str]:
    """The lines that explain a failed step: where it failed (its ``run:`` line for a
    command that failed, else the first ``expect:`` or ``error:`` key that did not
    hold), what it ran, then each failure at its own place, expected against actual."""
    first = step.failures[0].at if step.failures else None
    head = f"{_where(file, first, step.line)} step {step.index + 1} '{visible(step.name)}' failed"
    if step.level == "warning":
        head += " (a warning: the lab goes on)"
    lines = [head, f"  ran: {_text(step.command.rstrip())}"]  # a literal block ends in a newline
    lines += [f"  {_where(file, f.at, step.line)} {_text(f.line())}" for f in step.failures]
    if step.attempts > 1:
        lines.append(f"  (still failing after {step.attempts} attempts)")
    return lines


def step_line(step: StepReport, total: int) -> Text:
    """``ok    3/9  name``, coloured by status."""
    label, style = _STATUS[_status(step)]
    width = len(str(total))
    line = Text("  ")
    line.append(label, style=style)
    line.append(f"  {step.index + 1:>{width}}/{total}  {visible(step.name)}")
    return line


def report_text(report: LabReport, *, steps: bool = True) -> Group:
    """A lab report for the terminal."""
    parts: list[Text] = [
        Text(
            f"lab: {visible(report.name)} ({visible(report.file)}, seed {report.seed:#x})",
            style="bold",
        )
    ]
    for step in report.steps if steps else ():
        parts.append(step_line(step, len(report.steps)))
        if step.status == "failed":
            parts.extend(
                Text("        " + line, style="red" if not step.warned else "yellow")
                for line in failure_text(report.file, step)
            )
    skipped = next((s for s in report.steps if s.status == "skipped" and s.note), None)
    counts = report.counts()
    tail = (
        f"  {len(report.steps)} steps: {counts['passed']} passed, {counts['failed']} "
        f"failed, {counts['warnings']} warnings, {counts['skipped']} skipped"
    )
    if skipped is not None and counts["skipped"]:
        tail += f" ({_text(skipped.note)})"
    if report.pcap:
        tail += f"; captures in {report.pcap}"
    parts.append(Text(tail, style="green" if report.passed else "red"))
    return Group(*parts)


def totals_text(reports: Sequence[LabReport]) -> Text:
    """One line for a run of several labs: how many passed, and the failed ones by file."""
    failed = [r.file for r in reports if not r.passed]
    steps = sum(len(r.steps) for r in reports)
    line = (
        f"{len(reports)} labs, {steps} steps: {len(reports) - len(failed)} passed, "
        f"{len(failed)} failed"
    )
    if failed:
        line += " (" + ", ".join(visible(f) for f in failed) + ")"
    return Text(line, style="bold red" if failed else "bold green")


def _step_dict(step: StepReport) -> dict[str, Any]:
    return {
        "number": step.index + 1,
        "name": step.name,
        "line": step.line,
        "level": step.level,
        "status": step.status,
        "command": step.command,
        "summary": step.summary,
        "attempts": step.attempts,
        "note": step.note,
        "failures": [_failure_dict(f) for f in step.failures],
    }


def _failure_dict(failure: Failure) -> dict[str, Any]:
    line, col = failure.at if failure.at is not None else (None, None)
    return {
        "what": failure.what,
        "expected": failure.expected,
        "actual": failure.actual,
        "line": line,
        "col": col,
    }


def report_dict(report: LabReport) -> dict[str, Any]:
    return {
        "file": report.file,
        "name": report.name,
        "seed": report.seed,
        "passed": report.passed,
        "pcap": report.pcap,
        "counts": report.counts(),
        "steps": [_step_dict(step) for step in report.steps],
    }


def report_json(reports: Sequence[LabReport], errors: Iterable[str] = ()) -> str:
    """The whole run as JSON (see the module docstring)."""
    problems = list(errors)
    document = {
        "passed": not problems and all(r.passed for r in reports),
        "errors": problems,
        "labs": [report_dict(r) for r in reports],
    }
    return json.dumps(document, indent=2, ensure_ascii=False)


def junit_xml(reports: Sequence[LabReport]) -> bytes:
    """JUnit XML: one testsuite per lab, one testcase per step."""
    root = ET.Element("testsuites", name="esplab")
    total = {"tests": 0, "failures": 0, "skipped": 0}
    for report in reports:
        counts = report.counts()
        suite = ET.SubElement(
            root,
            "testsuite",
            name=visible(report.name),
            tests=str(len(report.steps)),
            failures=str(counts["failed"]),
            errors="0",
            skipped=str(counts["skipped"]),
            file=visible(report.file),
        )
        total["tests"] += len(report.steps)
        total["failures"] += counts["failed"]
        total["skipped"] += counts["skipped"]
        for step in report.steps:
            case = ET.SubElement(
                suite,
                "testcase",
                name=visible(step.name),
                classname=visible(report.stem),
                file=visible(report.file),
                line=str(step.line),
            )
            if step.failed:
                details = failure_text(report.file, step)
                message = _text(step.failures[0].line()) if step.failures else details[0]
                failure = ET.SubElement(case, "failure", message=message, type="expectation")
                failure.text = "\n".join(details)
            elif step.warned:
                out = ET.SubElement(case, "system-out")
                out.text = "\n".join(failure_text(report.file, step))
            elif step.status == "skipped":
                ET.SubElement(case, "skipped", message=_text(step.note) or "not run")
    for key, value in total.items():
        root.set(key, str(value))
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return body + b"\n"
