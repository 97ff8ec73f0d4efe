"""Checking a lab file: structure against the schema, then meaning; the typed lab.

:func:`check_file` loads a file, validates its structure (:mod:`esplab.lab.schema`)
and then what the schema cannot know:

* every ``run:`` line parses as the run will parse it (:mod:`esplab.lab.runline`:
  the command, a leading node name, options and arguments, the words of ``ip``
  and ``ip xfrm``, packet expressions through the whitelist parser), without
  running anything; it is not a ``lab`` or ``quit`` command. A reference stands
  in as ``0``, and a problem in a word holding one is left to run time. A step
  whose ``error:`` expects the very error may refuse to parse. Each problem points
  at the word it is about;
* every ``${NAME...}`` names ``lab`` or the ``save:`` of an earlier step, and
  its path parses; ``save:`` does not take the reserved name ``lab``;
* every ``expect:`` path parses and every ``matches:`` compiles; numbers given
  as text to ``gt``/``ge``/``lt``/``le`` are numbers or references;
* step names are unique; ``wait:`` comes with ``expect:`` or ``error:``; ``error:``
  comes without ``expect:`` and ``save:``;
* an ``ip xfrm state add`` does not add an SA (node, dst, proto, SPI) that an
  earlier step added and did not delete, unless the step expects the error;
* no plain scalar is one YAML 1.1 reads as an octal or base-60 number by
  surprise (``00001000`` is 512; quote it).

All errors are collected, sorted by position and returned as LabFileErrors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from esplab.commands.base import DEFAULT_SEED, Session
from esplab.commands.handlers import step_registry
from esplab.commands.registry import Registry
from esplab.errors import LabFileError, did_you_mean
from esplab.lab.exercise import Exercise, build_exercise, check_exercise
from esplab.lab.expect import Check, evaluate
from esplab.lab.loader import Document, PathKey, describe_value, load_document
from esplab.lab.paths import PathError, PathPart, as_number, parse_path, path_text
from esplab.lab.pattern import PatternError, compile_pattern
from esplab.lab.refs import references
from esplab.lab.runline import RunLines, RunProblem
from esplab.lab.schema import Issue, json_type, validate

__all__ = [
    "BUILTINS",
    "Expectation",
    "Lab",
    "Step",
    "check_document",
    "check_file",
]

#: The values ``${lab.KEY}`` gives.
BUILTINS = ("dir", "file", "name", "seed")

_OCTAL = re.compile(r"[-+]?0[0-9_]+")
_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")


@dataclass(frozen=True)
class Expectation:
    """``PATH: CHECK`` in a step's ``expect:``."""

    path: str
    parts: tuple[PathPart, ...]
    check: Check
    line: int
    col: int


@dataclass(frozen=True)
class Step:
    """One checked step; ``line`` is where it starts, ``run_at`` and ``error_at`` the
    line and column of the command in its ``run:`` value and of its ``error:`` key."""

    index: int
    name: str
    run: str
    line: int
    explain: str = ""
    expect: tuple[Expectation, ...] = ()
    error: Check | None = None
    save: str | None = None
    attempts: int = 1
    interval: float = 0.0
    level: str = "error"
    run_at: tuple[int, int] | None = None
    error_at: tuple[int, int] | None = None
    exercise: Exercise | None = None
    points: float = 0.0

    @property
    def warning(self) -> bool:
        return self.level == "warning"

    @property
    def kind(self) -> str:
        """run, task, ask or fault (:mod:`esplab.lab.exercise`)."""
        return "run" if self.exercise is None else self.exercise.kind


@dataclass(frozen=True)
class Lab:
    """A checked lab file, ready to run."""

    file: str
    path: Path
    name: str
    description: str
    steps: tuple[Step, ...]
    seed: int = DEFAULT_SEED
    device: str = "en7581"
    objectives: tuple[str, ...] = ()
    summary: str = ""
    # (node, "kernel" | "netns"): peers a real kernel plays (the file's peer:).
    peers: tuple[tuple[str, str], ...] = ()

    @property
    def points(self) -> float:
        """What the whole lab is worth in a graded run."""
        return sum(step.points for step in self.steps)

    @property
    def stem(self) -> str:
        return self.path.stem

    def builtins(self) -> dict[str, Any]:
        """What ``${lab.KEY}`` refers to."""
        return {
            "dir": str(self.path.resolve().parent),
            "file": self.file,
            "name": self.name,
            "seed": self.seed,
        }


def _issue_error(doc: Document, issue: Issue) -> LabFileError:
    mark = doc.key_mark(issue.path) if issue.at_key else doc.mark(issue.path)
    hint = issue.hint
    if issue.value is not None and isinstance(issue.valid, list):
        guess = did_you_mean(issue.value, issue.valid)
        if guess is not None and guess != issue.value:
            hint = f"did you mean {guess}?"
    return LabFileError(doc.file, mark.line, mark.col, issue.what, valid=issue.valid, hint=hint)


class _Meaning:
    """The second phase, over data whose structure may be partly wrong."""

    def __init__(self, doc: Document, structure: list[Issue], registry: Registry) -> None:
        self.doc = doc
        self.errors: list[LabFileError] = []
        self.bad = {issue.path for issue in structure}
        self.lines = RunLines(Session(registry))
        self.bad_error = False
        self.saved: set[str] = set()
        self.names: dict[str, int] = {}
        self.sas: dict[tuple[str, str, str, int], int] = {}

    def fail(self, path: PathKey, what: str, *, key: bool = False, **kw: Any) -> None:
        mark = self.doc.key_mark(path) if key else self.doc.mark(path)
        self.errors.append(self.doc.error(mark, what, **kw))

    def ok(self, path: PathKey, kind: type) -> bool:
        """Whether ``path`` exists, has the right type and no structure error."""
        value = self.value(path)
        return (
            value is not None
            and isinstance(value, kind)
            and not any(bad[: len(path)] == path for bad in self.bad)
        )

    def value(self, path: PathKey) -> Any:
        node: Any = self.doc.data
        for part in path:
            if isinstance(part, int):
                if not isinstance(node, list) or part >= len(node):
                    return None
            elif not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def run(self) -> list[LabFileError]:
        self.surprising_numbers()
        steps = self.doc.data.get("steps")
        if isinstance(steps, list):
            for index, step in enumerate(steps):
                if isinstance(step, dict):
                    self.step(index, step)
                    previous = steps[index - 1] if index else None
                    check_exercise(self, ("steps", index), step, previous)
        return self.errors

    def surprising_numbers(self) -> None:
        for path, mark in self.doc.marks.items():
            if mark.style is not None or mark.text is None:
                continue
            value = self.value(path)
            if not isinstance(value, int) or isinstance(value, bool):
                continue
            if _OCTAL.fullmatch(mark.text) and mark.text.strip("+-") != "0":
                self.fail(
                    path,
                    f"YAML reads {mark.text} as the octal number {value}",
                    hint=f"write '{mark.text}' in quotes for text, or {value} for the number",
                )
            elif _BASE60.fullmatch(mark.text):
                self.fail(
                    path,
                    f"YAML reads {mark.text} as the base-60 number {value}",
                    hint=f"write '{mark.text}' in quotes for text",
                )

    def step(self, index: int, step: dict[str, Any]) -> None:
        base: PathKey = ("steps", index)
        if self.ok((*base, "name"), str):
            name = step["name"]
            if name in self.names:
                self.fail(
                    (*base, "name"),
                    f"duplicate step name '{name}' (first at line {self.names[name]})",
                    hint="give each step its own name",
                )
            else:
                self.names[name] = self.doc.mark((*base, "name")).line
        if "error" in step and "expect" in step:
            self.fail(
                (*base, "error"),
                "a step cannot have both 'error' and 'expect'",
                key=True,
                hint="a step either fails with an error or gives a result",
            )
        if "error" in step and "save" in step:
            self.fail((*base, "save"), "a step with 'error' has no result to save", key=True)
        if (
            "wait" in step
            and "expect" not in step
            and "error" not in step
            and (*base, "wait") not in self.bad
        ):
            self.fail(
                (*base, "wait"), "'wait' needs 'expect' or 'error' to know when to stop", key=True
            )
        self.bad_error = any(b[:3] == (*base, "error") for b in self.bad)
        if self.ok((*base, "run"), str):
            self.command((*base, "run"), step["run"], step.get("error"))
        if isinstance(step.get("expect"), dict):
            self.expectations((*base, "expect"), step["expect"])
        if "error" in step and not any(b[:3] == (*base, "error") for b in self.bad):
            self.operands((*base, "error"), step["error"])
        if self.ok((*base, "save"), str):
            if step["save"] == "lab":
                self.fail(
                    (*base, "save"),
                    "'lab' is reserved for ${lab.dir} and friends",
                    hint="choose another name",
                )
            else:
                self.saved.add(step["save"])

    def refs(self, path: PathKey, text: str) -> bool:
        """Check the references in ``text``; False if one is unusable."""
        try:
            found = references(text)
        except PathError as exc:
            self.fail(path, f"bad reference: {exc}")
            return False
        good = True
        for name, parts in found:
            if name == "lab":
                key = parts[1] if len(parts) > 1 else None
                if key is None or getattr(key, "key", None) not in BUILTINS:
                    shown = "lab" if key is None else f"lab.{path_text(parts[1:2])}"
                    self.fail(
                        path,
                        f"unknown built-in '${{{shown}}}'",
                        valid=[f"lab.{b}" for b in BUILTINS],
                        value=shown,
                    )
                    good = False
            elif name not in self.saved:
                self.fail(
                    path,
                    f"'{name}' is not saved by an earlier step",
                    valid=sorted(self.saved) or "no step before this one saves a value",
                    value=name,
                )
                good = False
        return good

    def command(self, path: PathKey, line: str, error: Any) -> None:
        """Parse ``line`` as the run will (:mod:`esplab.lab.runline`); ``error`` is the
        step's ``error:``, or None."""
        if not self.refs(path, line):
            return
        invocation, problem = self.lines.check(line)
        if problem is not None and not self.expected(problem, error):
            mark = self.doc.offset_mark(path, problem.offset)
            self.errors.append(
                self.doc.error(mark, problem.what, valid=problem.valid, hint=problem.hint)
            )
        words = self.lines.handed_on  # what the command hands on to its tool (ip)
        if invocation and problem is None and words is not None and "${" not in line:
            node = invocation.node or self.lines.current
            if node is not None and error is None:
                self.xfrm(path, node, words)

    def expected(self, problem: RunProblem, error: Any) -> bool:
        """Whether the step's ``error:`` expects the error the run would give; one with
        references is judged only at run time, so it counts as expecting it."""
        if error is None or self.bad_error:
            return False
        if "${" in repr(error):
            return True
        check = Check.of(error if isinstance(error, dict) else {"contains": error})
        message = problem.runtime
        return evaluate(check, "error", lambda: message, {}) is None

    def xfrm(self, path: PathKey, node: str, words: list[str]) -> None:
        """An ``ip xfrm state`` line that parsed (``words`` from the object on): its SAs."""
        if (
            len(words) < 3
            or not "xfrm".startswith(words[0])
            or not "state".startswith(words[1])
            or not words[1]
        ):
            return
        verb = words[2]
        if verb in ("flush", "deleteall"):
            self.sas = {k: v for k, v in self.sas.items() if k[0] != node}
            return
        args: dict[str, str] = {}
        for word in ("dst", "proto", "spi"):
            if word in words[3:-1]:
                args[word] = words[words.index(word, 3) + 1]
        try:
            key = (node, args.get("dst", ""), args.get("proto", "esp"), int(args["spi"], 0))
        except (KeyError, ValueError):
            return
        if verb in ("delete", "del"):
            self.sas.pop(key, None)
        elif verb == "add":
            if key in self.sas:
                self.fail(
                    path,
                    f"{node} already has the SA dst {key[1]} proto {key[2]} spi "
                    f"{key[3]:#x} (added at line {self.sas[key]})",
                    hint="the kernel refuses it with EEXIST: delete it first, use "
                    "'ip xfrm state update', or expect the failure with error:",
                )
            else:
                self.sas[key] = self.doc.mark(path).line

    def expectations(self, path: PathKey, expect: dict[str, Any]) -> None:
        for key, spec in expect.items():
            try:
                parse_path(key)
            except PathError as exc:
                self.fail((*path, key), str(exc), key=True)
            if not any(b[: len(path) + 1] == (*path, key) for b in self.bad):
                self.operands((*path, key), spec)

    def operands(self, path: PathKey, spec: Any) -> None:
        ops = spec.items() if isinstance(spec, dict) else [("eq", spec)]
        for op, arg in ops:
            where = (*path, op) if isinstance(spec, dict) else path
            self.json_only(where, arg)
            if isinstance(arg, str):
                self.refs(where, arg)
            if op == "matches" and isinstance(arg, str) and "${" not in arg:
                try:
                    compile_pattern(arg)
                except PatternError as exc:
                    self.fail(where, f"'matches' is not a regular expression: {exc}")
            if (
                op in ("gt", "ge", "lt", "le")
                and isinstance(arg, str)
                and "${" not in arg
                and as_number(arg) is None
                and where not in self.bad  # the schema's pattern said it already
            ):  # read as the run reads it
                self.fail(where, f"'{op}' needs a number, got text '{arg}'")

    def json_only(self, path: PathKey, value: Any) -> None:
        if json_type(value) is None:
            self.fail(
                path, f"{describe_value(value)} cannot be compared", hint="quote it to make it text"
            )
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self.json_only((*path, i), item)
        elif isinstance(value, dict):
            for key, item in value.items():
                self.json_only((*path, key), item)


def _build(doc: Document) -> Lab:
    data = doc.data
    steps = []
    for index, raw in enumerate(data["steps"]):
        base: PathKey = ("steps", index)
        expect = tuple(
            Expectation(
                key,
                tuple(parse_path(key)),
                Check.of(spec),
                doc.key_mark((*base, "expect", key)).line,
                doc.key_mark((*base, "expect", key)).col,
            )
            for key, spec in raw.get("expect", {}).items()
        )
        error = raw.get("error")
        run_at = doc.offset_mark((*base, "run"), 0)  # the command, not a block's | or >
        error_at = doc.key_mark((*base, "error"))
        exercise = build_exercise(doc, base, raw)
        wait = raw.get("wait", 1)
        attempts, interval = (
            (wait, 0.0)
            if not isinstance(wait, dict)
            else (int(wait["attempts"]), float(wait.get("interval", 0)))
        )
        steps.append(
            Step(
                index=index,
                name=raw["name"],
                run=raw.get("run", ""),
                line=doc.mark(base).line,
                explain=raw.get("explain", ""),
                expect=expect,
                error=None
                if error is None
                else Check.of(error if isinstance(error, dict) else {"contains": error}),
                save=raw.get("save"),
                attempts=int(attempts),
                interval=interval,
                level=raw.get("level", "error"),
                run_at=(run_at.line, run_at.col),
                error_at=None if error is None else (error_at.line, error_at.col),
                exercise=exercise,
                points=float(
                    raw.get("points", 1 if exercise and exercise.kind in ("task", "ask") else 0)
                ),
            )
        )
    return Lab(
        doc.file,
        doc.path,
        data["name"],
        data["description"],
        tuple(steps),
        seed=int(data.get("seed", DEFAULT_SEED)),
        device=data.get("device", "en7581"),
        objectives=tuple(data.get("objectives", ())),
        summary=data.get("summary", ""),
        peers=tuple((n, w) for n, w in data.get("peer", {}).items() if w != "emulated"),
    )


def _position(error: LabFileError) -> tuple[int, int]:
    return error.line, error.col


def check_document(
    doc: Document, registry: Registry | None = None
) -> tuple[Lab | None, list[LabFileError]]:
    """Both phases over a loaded document (run lines parse over ``registry``, default a
    step's commands): the lab when it is valid, and every error."""
    issues = validate(doc.data)
    errors = [_issue_error(doc, issue) for issue in issues]
    errors.extend(_Meaning(doc, issues, registry or step_registry()).run())
    errors.sort(key=_position)
    if errors:
        return None, errors
    return _build(doc), []


def check_file(
    path: str | Path, file: str | None = None, registry: Registry | None = None
) -> tuple[Lab | None, list[LabFileError]]:
    """Load and check one lab file; ``file`` is the name used in messages."""
    try:
        doc = load_document(path, file)
    except LabFileError as exc:
        return None, [exc]
    return check_document(doc, registry)
