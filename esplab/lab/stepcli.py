"""``esplab run --step``: the step prompt (see :mod:`esplab.lab.stepper` for its words).

On a terminal the prompt is the REPL's own editor (:func:`esplab.repl.app.build_prompt_session`):
history, completion, highlighting, and a toolbar naming the lab and ``step 4/23``;
Ctrl-C drops the line, Ctrl-D or ``quit`` leaves. Piped input is read line by line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from esplab.errors import EsplabError
from esplab.lab.report import visible
from esplab.lab.stepper import after_command, announce, answer_line, check_task, meta

if TYPE_CHECKING:
    from prompt_toolkit.formatted_text import FormattedText

    from esplab.lab.runner import LabRun

__all__ = ["RUN", "STOP", "editor_reader", "pause"]

RUN, STOP, MOVED = "run", "stop", "moved"
Reader = Callable[[str], "str | None"]


def toolbar(run: LabRun) -> Callable[[], FormattedText]:
    """The step prompt's toolbar: the lab's name and where the student is."""
    from prompt_toolkit.formatted_text import FormattedText

    def parts() -> FormattedText:
        step = run.pending
        where = f"step {step.index + 1}/{len(run.lab.steps)}" if step else "done"
        kind = f" ({step.kind})" if step is not None and step.kind != "run" else ""
        return FormattedText(
            [
                ("", " lab "),
                ("class:bottom-toolbar.key", run.lab.name[:40]),
                ("", "  "),
                ("class:bottom-toolbar.step", where + kind),
                ("", "  hint, solution, skip, reset, goto N, back; Ctrl-D quits"),
            ]
        )

    return parts


def editor_reader(run_of: Callable[[], LabRun | None]) -> Reader:
    """A reader built on the REPL's PromptSession, for the lab ``run_of()`` returns."""
    from esplab.repl.app import build_prompt_session

    sessions: dict[int, object] = {}

    def read(prompt: str) -> str | None:
        run = run_of()
        if run is None:
            return None
        key = id(run)
        if key not in sessions:
            sessions.clear()
            sessions[key] = build_prompt_session(run.session, toolbar=toolbar(run))  # type: ignore[arg-type]
        editor = sessions[key]
        while True:
            try:
                return str(editor.prompt(prompt))  # type: ignore[attr-defined]
            except KeyboardInterrupt:  # Ctrl-C drops the line
                continue
            except EOFError:  # Ctrl-D leaves
                return "quit"

    return read


def _print(out: Console, lines: list[str], style: str = "") -> None:
    for line in lines:
        out.print(Text(visible(line, keep="\n\t"), style=style))


def _is_command(run: LabRun, line: str) -> bool:
    first = line.split()[0] if line.split() else ""
    return first in run.session.registry.names(aliases=True) or first in run.session.node_names()


def pause(run: LabRun, out: Console, err: Console, read: Reader) -> str:
    """Show the pending step and take lines until it is done: RUN (run it now), STOP,
    or MOVED (the student did it, skipped it or moved elsewhere)."""
    from esplab.batch import run_text
    from esplab.commands.result import QuitResult

    step = run.pending
    assert step is not None
    out.print()
    _print(out, announce(run)[:1], "bold")
    _print(out, announce(run)[1:])
    while True:
        line = read("lab> ")
        if line is None:
            return RUN
        if not line.strip():
            if step.kind == "task":
                lines = check_task(run)
                _print(out, lines, "green" if run.pending is not step else "yellow")
                if run.pending is not step:
                    return MOVED
                continue
            if step.kind == "ask":
                _print(out, ["type your answer, or 'hint', 'solution', 'skip'"], "dim")
                continue
            return RUN
        if line.strip() == "quit":
            return STOP
        try:
            said = meta(run, line)
        except EsplabError as exc:
            _print(err, [str(exc)], "red")
            continue
        if said is not None:
            _print(out, said)
            if run.pending is not step:
                return MOVED
            continue
        if step.kind == "ask" and not _is_command(run, line):
            _print(out, answer_line(run, line))
            if run.pending is not step:
                return MOVED
            continue
        outcomes = run_text(run.session, line, out, err)
        if any(isinstance(o.result, QuitResult) for o in outcomes):
            return STOP
        for outcome in outcomes:
            if outcome.result is not None:
                said = after_command(run, outcome.line, outcome.result)
                if said:
                    _print(out, said, "green")
                    return MOVED
