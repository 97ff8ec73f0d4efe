"""The REPL's completer: candidates come from the registry and live session state."""

from __future__ import annotations

from collections.abc import Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from esplab.commands.base import Session
from esplab.commands.complete import complete
from esplab.commands.tokens import split_commands
from esplab.errors import EsplabError

__all__ = ["EsplabCompleter", "last_command"]


def last_command(text: str) -> str:
    """The command being typed: the text after the last ``;`` outside quotes and brackets."""
    if ";" not in text:
        return text
    try:
        parts = split_commands(text + "\x00")
    except EsplabError:
        return text.rsplit(";", 1)[-1]
    if not parts:
        return ""
    tail = parts[-1]
    return tail[:-1] if tail.endswith("\x00") else ""


class EsplabCompleter(Completer):
    """Completes command names, sub-words, options, parameter values, live names
    (nodes, devices, taps, SPIs, reqids, algorithms), file paths and packet expressions."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        segment = last_command(document.text_before_cursor)
        found = complete(self.session, segment)
        for word in found.words:
            yield Completion(
                word,
                start_position=-found.replace,
                display=found.display.get(word),
                display_meta=found.meta.get(word, ""),
            )
