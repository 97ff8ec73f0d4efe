"""The REPL's completer: candidates come from the registry and live session state."""

from __future__ import annotations

from collections.abc import Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from esplab.commands.complete import candidates, split_for_completion
from esplab.commands.session import Session

__all__ = ["EsplabCompleter"]


class EsplabCompleter(Completer):
    """Completes command names, sub-words, options and parameter values."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        # Only the command after the last top-level ';' is being typed.
        segment = text.rsplit(";", 1)[-1] if ";" in text else text
        split = split_for_completion(segment)
        if split is None:
            return
        current = split[1]
        for word in candidates(self.session, segment):
            yield Completion(word, start_position=-len(current))
