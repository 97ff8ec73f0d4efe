"""Exercise steps: ``task:``, ``ask:`` and ``fault:``, and what a step is worth.

A lab step is one of four kinds, named by the key it has (exactly one of them):

``run:``
    A command line the lab runs (:mod:`esplab.lab.check`).
``task:``
    The student types the commands. ``check:`` (a probe ``{run: COMMAND, expect:
    {...}}`` or a list of them) decides when it is done: each probe's command runs
    in the lab's session and its result must meet the expectations. ``hint:`` lines
    are shown one at a time on request; ``solution:`` is the reference answer (the
    command lines ``esplab run --solutions`` runs). A task right after a ``fault:``
    step may leave ``solution:`` out: then the chosen fault's ``fix:`` is it.
``ask:``
    A question. ``answer:`` is a value (a number matches decimal and 0x-hex, text
    ignores case and the spaces at its ends, ``${NAME.PATH}`` reads a saved result)
    or ``{run: COMMAND, path: PATH}``, read from the model when the question is
    asked ("what pad length did the engine write?"). ``choices:`` makes it a
    multiple-choice question, answered with the choice or its number.
``fault:``
    A list of faults (``{name, run, fix, hint}``); one is chosen at random from the
    lab's seed and the student's name (so students sharing a room get different
    faults) and its commands run. The next task is finding and fixing it.

``points:`` is what a step is worth in a graded run: by default 1 for a task or
a question and 0 otherwise.

This module holds the typed parts (:class:`Exercise`), their meaning checks (run by
:mod:`esplab.lab.check`) and the pure parts of running them: choosing a fault,
judging an answer.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from esplab.lab.expect import Check
from esplab.lab.loader import Document, PathKey
from esplab.lab.paths import PathError, PathPart, as_number, parse_path

__all__ = [
    "KINDS",
    "Answer",
    "Exercise",
    "FaultChoice",
    "Probe",
    "ProbeExpectation",
    "build_exercise",
    "check_exercise",
    "choose_fault",
    "judge",
    "lines_of",
    "read_answer",
]

#: The keys that name a step's kind; a step has exactly one.
KINDS = ("run", "task", "ask", "fault")

#: The keys each kind may have besides name, explain and points.
_KEYS = {
    "run": ("expect", "error", "save", "wait", "level"),
    "task": ("check", "hint", "solution"),
    "ask": ("answer", "choices", "hint"),
    "fault": (),
}


def lines_of(value: Any) -> tuple[str, ...]:
    """A text-or-list value (``hint:``, ``solution:``, ``run:`` of a fault) as a tuple."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


@dataclass(frozen=True)
class ProbeExpectation:
    path: str
    parts: tuple[PathPart, ...]
    check: Check
    at: tuple[int, int]


@dataclass(frozen=True)
class Probe:
    """A command that looks at the model, and what its result must show."""

    run: str
    expect: tuple[ProbeExpectation, ...]
    at: tuple[int, int]


@dataclass(frozen=True)
class Answer:
    """The right answer: a ``value``, or the value at ``path`` in the result of ``run``."""

    value: Any = None
    run: str | None = None
    path: str | None = None
    at: tuple[int, int] = (1, 1)


@dataclass(frozen=True)
class FaultChoice:
    name: str
    run: tuple[str, ...]
    fix: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()


@dataclass(frozen=True)
class Exercise:
    """What a ``task``, ``ask`` or ``fault`` step holds (a ``run`` step has none)."""

    kind: str
    text: str = ""
    probes: tuple[Probe, ...] = ()
    hints: tuple[str, ...] = ()
    solution: tuple[str, ...] = ()
    answer: Answer | None = None
    choices: tuple[str, ...] = ()
    faults: tuple[FaultChoice, ...] = ()


def kind_of_step(step: Mapping[str, Any]) -> list[str]:
    return [k for k in KINDS if k in step]


def _at(doc: Document, path: PathKey, key: bool = False) -> tuple[int, int]:
    mark = doc.key_mark(path) if key else doc.mark(path)
    return mark.line, mark.col


def _probes(doc: Document, base: PathKey, raw: Any) -> tuple[Probe, ...]:
    items = [raw] if isinstance(raw, dict) else list(raw or ())
    path_of = (
        (lambda i: (*base, "check")) if isinstance(raw, dict) else (lambda i: (*base, "check", i))
    )
    probes = []
    for i, item in enumerate(items):
        here = path_of(i)
        expect = tuple(
            ProbeExpectation(
                key, tuple(parse_path(key)), Check.of(spec), _at(doc, (*here, "expect", key), True)
            )
            for key, spec in item["expect"].items()
        )
        at = doc.offset_mark((*here, "run"), 0)
        probes.append(Probe(item["run"], expect, (at.line, at.col)))
    return tuple(probes)


def build_exercise(doc: Document, base: PathKey, raw: Mapping[str, Any]) -> Exercise | None:
    """The exercise of a checked step, or None for a ``run:`` step."""
    kind = kind_of_step(raw)[0]
    if kind == "run":
        return None
    if kind == "fault":
        faults = tuple(
            FaultChoice(
                f["name"], lines_of(f["run"]), lines_of(f.get("fix")), lines_of(f.get("hint"))
            )
            for f in raw["fault"]
        )
        return Exercise("fault", faults=faults)
    answer = None
    if "answer" in raw:
        spec = raw["answer"]
        at = _at(doc, (*base, "answer"), True)
        answer = (
            Answer(run=spec["run"], path=spec["path"], at=at)
            if isinstance(spec, dict)
            else Answer(value=spec, at=at)
        )
    return Exercise(
        kind,
        text=str(raw[kind]),
        probes=_probes(doc, base, raw.get("check")),
        hints=lines_of(raw.get("hint")),
        solution=lines_of(raw.get("solution")),
        answer=answer,
        choices=lines_of(raw.get("choices")),
    )


class _Meaning(Protocol):
    """The part of :class:`esplab.lab.check._Meaning` an exercise check uses."""

    doc: Document
    bad: set[PathKey]

    def fail(self, path: PathKey, what: str, *, key: bool = False, **kw: Any) -> None: ...
    def ok(self, path: PathKey, kind: type) -> bool: ...
    def refs(self, path: PathKey, text: str) -> bool: ...
    def command(self, path: PathKey, line: str, error: Any) -> None: ...
    def expectations(self, path: PathKey, expect: dict[str, Any]) -> None: ...


def check_exercise(
    m: _Meaning, base: PathKey, step: Mapping[str, Any], previous: Mapping[str, Any] | None
) -> None:
    """The meaning checks of a step's kind (``previous``: the step before it)."""
    kinds = kind_of_step(step)
    if len(kinds) != 1:
        if not kinds:
            m.fail(
                base,
                f"step {int(base[-1]) + 1} is missing 'run'",
                hint="an exercise gives task:, ask: or fault: instead",
            )
        else:
            m.fail(
                (*base, kinds[1]),
                f"a step has one of {', '.join(KINDS)}, not both '{kinds[0]}' and '{kinds[1]}'",
                key=True,
                hint="make them two steps",
            )
        return
    kind = kinds[0]
    for key in step:
        other = next((k for k, keys in _KEYS.items() if key in keys and k != kind), None)
        if other is not None and key not in _KEYS[kind]:
            m.fail(
                (*base, key),
                f"'{key}' belongs to {_a(other)} step, not {_a(kind)} step",
                key=True,
                valid=[*_KEYS[kind], "name", "explain", "points"],
            )
    if kind == "task":
        _task(m, base, step, previous)
    elif kind == "ask":
        _ask(m, base, step)
    elif kind == "fault" and m.ok((*base, "fault"), list):
        for i, choice in enumerate(step["fault"]):
            for key in ("run", "fix"):
                for j, line in enumerate(lines_of(choice.get(key))):
                    where = (
                        (*base, "fault", i, key)
                        if isinstance(choice.get(key), str)
                        else (*base, "fault", i, key, j)
                    )
                    m.command(where, line, None)


def _task(m: _Meaning, base: PathKey, step: Mapping[str, Any], previous: Any) -> None:
    if "check" not in step:
        m.fail(
            (*base, "task"),
            "a task needs 'check:' to know when it is done",
            key=True,
            hint="add check: [{run: COMMAND, expect: {PATH: VALUE}}]",
        )
    elif (*base, "check") not in m.bad:
        raw = step["check"]
        items = (
            [((*base, "check"), raw)]
            if isinstance(raw, dict)
            else [
                ((*base, "check", i), p) for i, p in enumerate(raw if isinstance(raw, list) else [])
            ]
        )
        for here, probe in items:
            if not isinstance(probe, dict) or any(b[: len(here)] == here for b in m.bad):
                continue
            m.command((*here, "run"), probe["run"], None)
            m.expectations((*here, "expect"), probe["expect"])
    fixes = (
        isinstance(previous, dict)
        and isinstance(previous.get("fault"), list)
        and all(isinstance(f, dict) and "fix" in f for f in previous["fault"])
    )
    if "solution" not in step and not fixes:
        m.fail(
            (*base, "task"),
            "a task needs 'solution:' (the commands that do it)",
            key=True,
            hint="esplab run --solutions runs it to prove the task can be done; after a "
            "fault: step, give each fault a fix: instead",
        )
    elif "solution" in step:
        raw = step["solution"]
        for j, line in enumerate(lines_of(raw)):
            m.command(
                (*base, "solution") if isinstance(raw, str) else (*base, "solution", j), line, None
            )


def _ask(m: _Meaning, base: PathKey, step: Mapping[str, Any]) -> None:
    if "answer" not in step:
        m.fail(
            (*base, "ask"),
            "a question needs 'answer:'",
            key=True,
            hint="a value, or {run: COMMAND, path: PATH} to read it from the model",
        )
        return
    spec = step["answer"]
    here = (*base, "answer")
    if any(b[: len(here)] == here for b in m.bad):
        return
    if isinstance(spec, dict):
        m.command((*here, "run"), spec["run"], None)
        try:
            parse_path(spec["path"])
        except PathError as exc:
            m.fail((*here, "path"), f"the answer's path names nothing: {exc}")
    elif isinstance(spec, str):
        m.refs(here, spec)
    choices = step.get("choices")
    if isinstance(choices, list) and not isinstance(spec, (dict, bool)) and "${" not in str(spec):
        numbered = isinstance(spec, int) and 1 <= spec <= len(choices)
        if not numbered and not any(judge(spec, str(c), ()) for c in choices):
            m.fail(
                here,
                f"the answer {spec!r} is not one of the choices",
                valid=[str(c) for c in choices],
            )


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def choose_fault(faults: Sequence[FaultChoice], seed: int, student: str, step: str) -> int:
    """Which fault a student gets: a pure function of the seed, the student and the step."""
    key = zlib.crc32(f"{seed:#x}/{student}/{step}".encode())
    return random.Random(key).randrange(len(faults))


def _norm(value: Any) -> str:
    return " ".join(str(value).split()).casefold()


def judge(expected: Any, given: str, choices: Sequence[str]) -> bool:
    """Whether the student's ``given`` text is the ``expected`` answer. A number
    matches decimal or 0x-hex; with ``choices``, the choice's number counts too."""
    text = given.strip()
    if choices:
        number = as_number(text)
        if isinstance(number, int) and 1 <= number <= len(choices):
            text = choices[number - 1]
        numbered = isinstance(expected, int) and not isinstance(expected, bool)
        if numbered and 1 <= expected <= len(choices):
            return _norm(text) == _norm(choices[expected - 1])
    if isinstance(expected, bool):
        return _norm(text) in (("true", "yes", "y") if expected else ("false", "no", "n"))
    want, got = as_number(expected), as_number(text)
    if want is not None and got is not None and not isinstance(expected, str):
        return bool(want == got)
    if isinstance(expected, str) and want is not None and got is not None:
        return bool(want == got)
    return _norm(text) == _norm(expected)


def read_answer(answer: Answer, saved: Mapping[str, Any], view_of: Callable[[str], Any]) -> Any:
    """The right answer now: its value (references replaced), or the value its path
    finds in the result of its command (``view_of(line)``); PathError if it names
    nothing."""
    from esplab.lab.paths import resolve
    from esplab.lab.refs import substitute, substitute_value

    if answer.run is None:
        return substitute_value(answer.value, saved)
    view = view_of(substitute(answer.run, saved))
    return resolve(view, parse_path(answer.path or ""))
