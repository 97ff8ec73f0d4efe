"""Progress of a long run (``send ... count N``, ``esplab decode``, ``kernel-check``).

The command core never prints, so a long command reports its progress through a
:data:`Progress` function its caller gives it: :func:`silent` by default (a pipe, a
lab, a test), :func:`bar` for a terminal, a rich progress bar on standard error that
disappears when the run ends. A run asks for one with :func:`for_console`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["MIN_TOTAL", "Progress", "Tick", "bar", "for_console", "silent"]

#: A tick: ``tick(n)`` says ``n`` more items are done.
Tick = Callable[[int], None]
#: A progress reporter: ``with progress(label, total) as tick: ...``.
Progress = Callable[[str, int], AbstractContextManager[Tick]]
#: Runs shorter than this show no bar (it would only flicker).
MIN_TOTAL = 1000


def _nothing(n: int) -> None:
    return None


@contextmanager
def silent(label: str, total: int) -> Iterator[Tick]:
    """No progress shown."""
    yield _nothing


def bar(console: Console, minimum: int = MIN_TOTAL) -> Progress:
    """Progress as a transient rich bar on ``console`` (a terminal's), for runs of at
    least ``minimum`` items."""

    @contextmanager
    def show(label: str, total: int) -> Iterator[Tick]:
        if total < minimum:
            yield _nothing
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        ) as shown:
            task = shown.add_task(label, total=total)

            def tick(n: int) -> None:
                shown.advance(task, n)

            yield tick

    return show


def for_console(console: Console, minimum: int = MIN_TOTAL) -> Progress:
    """A bar when ``console`` is a terminal, else nothing."""
    return bar(console, minimum) if console.is_terminal else silent
