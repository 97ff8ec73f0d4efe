"""Completion candidates from the registry and the session's live state (pure).

The REPL's completer wraps these in prompt-toolkit Completions; nothing here
depends on a terminal.
"""

from __future__ import annotations

from collections.abc import Iterable

from esplab.commands.registry import Param
from esplab.commands.session import Session
from esplab.commands.tokens import tokenize
from esplab.errors import EsplabError

__all__ = ["candidates", "split_for_completion"]


def split_for_completion(text: str) -> tuple[list[str], str] | None:
    """(finished words, word being typed) for the text before the cursor; None if unparsable."""
    segment = text
    try:
        tokens = tokenize(segment)
    except EsplabError:
        return None
    if not tokens or segment[-1:].isspace():
        return [t.value for t in tokens], ""
    return [t.value for t in tokens[:-1]], tokens[-1].raw


def _filter(options: Iterable[str], prefix: str) -> list[str]:
    low = prefix.lower()
    seen: dict[str, None] = {}
    for option in options:
        if option.lower().startswith(low):
            seen.setdefault(option, None)
    return list(seen)


def candidates(session: Session, text: str) -> list[str]:
    """Words that may complete ``text`` at its end."""
    split = split_for_completion(text)
    if split is None:
        return []
    words, current = split
    nodes = session.node_names()
    if words and words[0] in nodes and words[0] not in session.registry:
        words = words[1:]
    if not words:
        first = session.registry.names(aliases=True) + nodes
        return _filter(first, current)
    command = session.registry.get(words[0])
    if command is None:
        return []
    if command.complete is not None:
        return _filter(command.complete(session, words[1:]), current)
    named = [p for p in command.params if p.kind in ("flag", "option")]
    if current.startswith("-"):
        return _filter((f"--{p.name}" for p in named), current)
    positional: list[Param] = [p for p in command.params if p.kind in ("word", "int", "rest")]
    count = 0
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
            continue
        option = next((p for p in named if f"--{p.name}" == word), None)
        if option is not None:
            skip = option.kind == "option"
            continue
        count += 1
    if count >= len(positional):
        if positional and positional[-1].kind == "rest":
            param = positional[-1]
        else:
            return []
    else:
        param = positional[count]
    return _filter(param.choice_list(session), current)
