"""``esplab run`` and ``esplab check``.

``esplab check LAB...`` checks lab files (a directory stands for its ``*.yaml``)
and prints every error as ``file:line:col: message``, one per line, on stdout;
a one-line summary goes to stderr. Exit 0 when all are valid, 2 otherwise.

``esplab run LAB... [--step] [--pcap DIR] [--junit FILE] [--json] [-v]`` checks
every file first (any error: the errors on stderr, exit 2, nothing runs), then
runs each lab in a fresh session seeded with the lab's ``seed``. Exit 0 when
every step passed (failed warning steps allowed), 1 when one failed, 2 for a
bad file, bad usage, or an output that cannot be written.

* ``--step`` shows each step's explanation and command, then waits: Enter runs
  the step; any other line is a command run in the lab's session first (to look
  around); ``quit`` stops the lab. When stdin is not a terminal, commands are
  read from it up to an empty line before each step; at its end the remaining
  steps run without pausing.
* ``--pcap DIR`` exports every tap of each lab to ``DIR/<lab file stem>.pcapng``, and
  its SAs that Wireshark can decrypt to ``DIR/<lab file stem>.esp_sa`` beside it.
* ``--junit FILE`` writes JUnit XML; ``--json`` prints the results as JSON (and
  nothing else) on stdout; ``-v`` prints each step's output.
* ``--outdir DIR``: the only directory the labs' own commands write in (``capture
  export``, ``save``, ``wireshark-keys``); default the current directory.
* ``--force`` lets ``--junit`` and ``--pcap`` replace existing files; nothing ever
  replaces a lab file being run (esplab.files).
* ``--solutions`` runs every exercise's reference solution and proves it: a task's
  ``check:`` must fail before its solution and pass after it; a lab with a ``fault:``
  step runs once per fault, so every fault is proved fixable.
* ``--grade --student NAME --answers FILE`` runs the labs with the student's
  answers and writes ``grade-NAME.json``, ``.csv`` and ``.xml`` (``--outdir``); see
  :mod:`esplab.lab.grade`. Wrong answers are scores, not failures: exit 0 unless a
  lab itself broke.
* ``--student NAME`` also picks the student's faults (with the seed).
* ``--html DIR`` writes ``DIR/<lab file stem>.html``: the journeys as pictures
  (:mod:`esplab.picture`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.text import Text

from esplab.console import consoles
from esplab.errors import EsplabError, FileError, NotFound, UsageError
from esplab.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE, seed_arg
from esplab.files import FilePolicy, user_path
from esplab.lab.check import Lab, check_file
from esplab.lab.command import every_command
from esplab.lab.course import Course
from esplab.lab.loader import expand
from esplab.lab.report import (
    failure_text,
    junit_xml,
    report_json,
    report_text,
    step_line,
    totals_text,
    visible,
)
from esplab.lab.runner import LabReport, LabRun, StepOutcome

if TYPE_CHECKING:
    from esplab.picture.page import EspMemory

__all__ = ["expand", "main_check", "main_run", "quote", "run_lab"]

Reader = Callable[[str], "str | None"]


def quote(text: str) -> str:
    """``text`` as one word of a command line."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace | int:
    try:
        return parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE


def _check_all(files: Sequence[Path]) -> tuple[list[Lab], list[str], int]:
    labs: list[Lab] = []
    errors: list[str] = []
    bad = 0
    registry = every_command()  # run lines parse as `esplab run` runs them
    for path in files:
        lab, found = check_file(path, registry=registry)
        if lab is not None:
            labs.append(lab)
        else:
            bad += 1
        errors.extend(str(e) for e in found)
    return labs, errors, bad


def main_check(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="esplab check",
        description="Check lab files without running them: every error is printed as "
        "file:line:col: message. Exit 0 when all are valid, 2 otherwise.",
    )
    parser.add_argument("labs", nargs="+", metavar="LAB", help="lab files or directories")
    parser.add_argument("--quiet", "-q", action="store_true", help="no summary line")
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    files = expand(args.labs)
    if not files:
        print(f"esplab check: no lab files in {', '.join(args.labs)}", file=sys.stderr)
        return EXIT_USAGE
    _, errors, bad = _check_all(files)
    for line in errors:
        print(line)
    if not args.quiet:
        if bad:
            print(
                f"{bad} of {len(files)} lab file(s) invalid ({len(errors)} error(s))",
                file=sys.stderr,
            )
        else:
            print(f"{len(files)} lab file(s) valid", file=sys.stderr)
    return EXIT_USAGE if bad else EXIT_OK


def _editor_placeholder(prompt: str) -> str | None:
    """Stands for the REPL's editor until the lab's session exists (esplab.lab.stepcli)."""
    return None


_EDITOR: Reader = _editor_placeholder


def editor_reader(run_of: Callable[[], LabRun | None]) -> Reader:
    from esplab.lab.stepcli import editor_reader as build

    return build(run_of)


def _piped_reader(stdin: TextIO, out: Console) -> Reader:
    def read(prompt: str) -> str | None:
        line = stdin.readline()
        if not line:
            return None
        line = line.rstrip("\r\n")
        out.print(Text(prompt + line, style="dim"))
        return line

    return read


def _show_outcome(outcome: StepOutcome, run: LabRun, out: Console, verbose: bool) -> None:
    from esplab.batch import emit

    if verbose:
        if outcome.result is not None:
            emit(out, outcome.result)
        elif outcome.error:
            out.print(Text(visible(outcome.error, keep="\n\t"), style="red"))
    out.print(step_line(outcome.report, len(run.lab.steps)))
    if outcome.report.status == "failed":
        style = "yellow" if outcome.report.warned else "red"
        for line in failure_text(run.lab.file, outcome.report):
            out.print(Text("        " + line, style=style))


def run_lab(
    lab: Lab,
    out: Console,
    err: Console,
    *,
    step_mode: bool = False,
    verbose: bool = False,
    read: Reader | None = None,
    outdir: Path | None = None,
    course: Course | None = None,
    after_step: Callable[[LabRun], None] | None = None,
) -> LabRun:
    """Run one lab, printing as it goes when stepping or verbose; ``report()`` tells how.
    ``after_step`` is called after each step (the --html page remembers ESP layouts)."""
    run = LabRun(lab, outdir=outdir, course=course, registry=every_command())
    for note in run.session.notes:
        err.print(Text(visible(note), style="yellow"))
    run.session.notes.clear()
    if step_mode:
        out.print(Text(f"lab: {visible(lab.name)} ({visible(lab.file)})", style="bold"))
        out.print(Text(visible(lab.description.strip(), keep="\n\t")))
        if lab.objectives:
            out.print(Text("You will learn to:", style="bold"))
            for line in lab.objectives:
                out.print(Text("  - " + visible(line)))
    while run.pending is not None:
        if step_mode and read is not None:
            from esplab.lab.stepcli import MOVED, STOP, pause

            if read is _EDITOR:
                read = editor_reader(lambda: run)
            verdict = pause(run, out, err, read)
            if verdict == STOP:
                run.stop("stopped by the user")
                break
            if verdict == MOVED:
                continue
        outcome = run.run_next()
        if after_step is not None:
            after_step(run)
        if step_mode or verbose:
            _show_outcome(outcome, run, out, verbose=True)
        if step_mode and read is not None:
            from esplab.lab.stepper import keep_trying

            for line in keep_trying(run):
                out.print(Text(line, style="yellow"))
    if step_mode and run.pending is None and lab.summary.strip():
        out.print(Text("What you saw:", style="bold"))
        out.print(Text(visible(lab.summary.strip(), keep="\n\t")))
    run.session.close_peers()  # a real peer's guest ends with its lab
    return run


def _export(run: LabRun, directory: Path, used: set[str], policy: FilePolicy, force: bool) -> str:
    """Export every tap of the lab's session to ``directory``; the file written."""

    name = run.lab.stem or "lab"
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{name}-{n}"
    used.add(candidate)
    try:
        target = policy.target(directory / f"{candidate}.pcapng", "--pcap file", force=force)
        run.session.execute(f"capture export --force {quote(str(target))}")
        # Beside it, Wireshark's SA table, so the wire taps decrypt there.
        keys = policy.target(directory / f"{candidate}.esp_sa", "--pcap SA file", force=force)
        with contextlib.suppress(NotFound, UsageError):  # no SA Wireshark can decrypt
            run.session.execute(f"wireshark-keys --force {quote(str(keys))} {quote(str(target))}")
    except EsplabError as exc:
        raise OSError(str(exc)) from exc
    return str(target)


def _course_usage(args: argparse.Namespace) -> str | None:
    """What is wrong with the grading options together, or None."""
    if args.grade and (not args.student or not args.answers):
        return "--grade needs --student NAME and --answers FILE"
    if args.answers and not args.grade:
        return "--answers goes with --grade (--grade --student NAME --answers FILE)"
    for a, b in (("grade", "solutions"), ("grade", "step"), ("solutions", "step")):
        if getattr(args, a) and getattr(args, b):
            return f"--{a} and --{b} exclude each other"
    return None


def _memory() -> EspMemory:
    from esplab.picture.page import EspMemory

    return EspMemory()


def _html(run: LabRun, directory: str, err: Console, memory: EspMemory | None) -> int:
    """Write the lab's journeys as DIR/STEM.html; EXIT_USAGE if it cannot be written."""
    from esplab.picture.page import write_lab_page

    try:
        write_lab_page(run, Path(directory), memory)
    except (OSError, EsplabError) as exc:
        err.print(f"esplab run: cannot write --html {directory}: {exc}", markup=False)
        return EXIT_USAGE
    return EXIT_OK


def main_run(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="esplab run",
        description="Run lab files, each in a fresh session seeded with its seed. Exit 0 "
        "when every step passed, 1 when a step failed, 2 for a bad file or usage.",
    )
    parser.add_argument("labs", nargs="+", metavar="LAB", help="lab files or directories")
    parser.add_argument(
        "--step",
        action="store_true",
        help="pause before each step: show its explanation, take commands",
    )
    parser.add_argument(
        "--pcap", metavar="DIR", help="export every tap to DIR/LAB.pcapng, its SAs to LAB.esp_sa"
    )
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE")
    parser.add_argument(
        "--outdir",
        metavar="DIR",
        help="the directory the labs' commands write in (default: the current directory)",
    )
    parser.add_argument(
        "--force", action="store_true", help="let --junit and --pcap replace existing files"
    )
    parser.add_argument(
        "--seed",
        type=seed_arg,
        metavar="N",
        help="run every lab with this seed instead of its own seed: (esplab --seed N run too)",
    )
    parser.add_argument(
        "--solutions",
        action="store_true",
        help="run and prove every exercise's reference solution (each fault once)",
    )
    parser.add_argument(
        "--grade", action="store_true", help="grade a student's --answers: grade-NAME.json/csv/xml"
    )
    parser.add_argument("--student", metavar="NAME", help="the student (picks their faults)")
    parser.add_argument("--answers", metavar="FILE", help="the student's answers (YAML)")
    parser.add_argument("--html", metavar="DIR", help="write DIR/LAB.html: the journeys drawn")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each step's output")
    parser.add_argument("--no-color", action="store_true", help="plain output")
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    out, err = consoles(args.no_color)
    if args.json and args.step:
        err.print("esplab run: --json and --step exclude each other", markup=False)
        return EXIT_USAGE
    problem = _course_usage(args)
    if problem:
        err.print(f"esplab run: {problem}", markup=False)
        return EXIT_USAGE
    files = expand(args.labs)
    if not files:
        err.print(f"esplab run: no lab files in {', '.join(args.labs)}", markup=False)
        return EXIT_USAGE
    labs, errors, _ = _check_all(files)
    if errors:
        for line in errors:
            err.print(line, markup=False)
        if args.json:
            print(report_json([], errors))
        return EXIT_USAGE
    if args.seed is not None:
        labs = [replace(lab, seed=args.seed) for lab in labs]
    policy = FilePolicy()
    for lab in labs:
        policy.reading(lab.path, "a lab file being run")
    outdir: Path | None = None
    try:
        if args.outdir:
            outdir = user_path(args.outdir, "--outdir directory")
            if not outdir.is_dir():
                raise FileError(
                    f"--outdir {args.outdir} is not a directory", valid="an existing directory"
                )
        if args.junit:
            policy.target(args.junit, "--junit file", force=args.force)
        if args.pcap:
            user_path(args.pcap, "--pcap directory")
    except EsplabError as exc:
        err.print(f"esplab run: {exc}", markup=False)
        return EXIT_USAGE
    if args.pcap:  # before any lab runs: a path that cannot hold the captures is usage
        pcaps = Path(args.pcap)
        if pcaps.exists() and not pcaps.is_dir():
            err.print(
                f"esplab run: --pcap {args.pcap} is not a directory; give a directory "
                "(made if missing) for the LAB.pcapng files",
                markup=False,
            )
            return EXIT_USAGE
        try:
            pcaps.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            err.print(
                f"esplab run: cannot make the --pcap directory {args.pcap}: {exc.strerror or exc}",
                markup=False,
            )
            return EXIT_USAGE
    read: Reader | None = None
    if args.step:
        read = _EDITOR if sys.stdin.isatty() else _piped_reader(sys.stdin, out)
    if args.grade or args.solutions:
        from esplab.lab.gradecli import graded

        return graded(args, labs, out, err, outdir)
    reports: list[LabReport] = []
    status = EXIT_OK
    used: set[str] = set()
    for lab in labs:
        memory = _memory() if args.html else None
        run = run_lab(
            lab,
            out,
            err,
            step_mode=args.step,
            verbose=args.verbose and not args.json,
            read=read,
            outdir=outdir,
            course=Course(student=args.student or ""),
            after_step=memory.remember if memory is not None else None,
        )
        report = run.report()
        if args.html:
            status = max(status, _html(run, args.html, err, memory))
        if args.pcap:
            try:
                directory = Path(args.pcap)
                directory.mkdir(parents=True, exist_ok=True)
                report.pcap = _export(run, directory, used, policy, args.force)
            except OSError as exc:
                err.print(
                    f"esplab run: cannot write captures to {args.pcap}: {exc.strerror or exc}",
                    markup=False,
                )
                status = EXIT_USAGE
        reports.append(report)
        if not args.json:
            out.print(report_text(report, steps=not args.step))
    if args.junit:
        try:
            policy.target(args.junit, "--junit file", force=args.force).write_bytes(
                junit_xml(reports)
            )
        except EsplabError as exc:
            err.print(f"esplab run: {exc}", markup=False)
            status = EXIT_USAGE
        except OSError as exc:
            err.print(f"esplab run: cannot write {args.junit}: {exc.strerror or exc}", markup=False)
            status = EXIT_USAGE
    if args.json:
        print(report_json(reports))
    elif len(reports) > 1:
        out.print(totals_text(reports))
    if status == EXIT_OK and not all(r.passed for r in reports):
        status = EXIT_FAILED
    return status
