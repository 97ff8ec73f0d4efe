"""What the ``xdp``, ``xdpsock`` and ``xsk`` commands read their words with: a
subcommand, ``key N`` options and flags, the node and its devices; and a handler
whose XDP state made on first use is gone again when it fails."""

from __future__ import annotations

import functools

from esplab.commands.base import Session
from esplab.commands.parser import Invocation, parse_int
from esplab.commands.registry import Handler
from esplab.commands.result import Result
from esplab.errors import BadArgument
from esplab.model.journey.xdp import undone_on_failure

__all__ = [
    "need_words",
    "node_devices",
    "subcommand",
    "target_node",
    "undone_on_failure_handler",
    "word_options",
]


def word_options(
    words: list[str], usage: str, ints: tuple[str, ...] = (), flags: tuple[str, ...] = ()
) -> tuple[dict[str, int], set[str]]:
    """``key N`` pairs and bare flags after the positional words."""
    values: dict[str, int] = {}
    seen: set[str] = set()
    i = 0
    while i < len(words):
        word = words[i]
        if word in flags:
            seen.add(word)
            i += 1
        elif word in ints:
            if i + 1 >= len(words):
                raise BadArgument(f"'{word}' needs a number", hint=f"usage: {usage}")
            values[word] = parse_int(words[i + 1], word)
            i += 2
        else:
            raise BadArgument(
                f"unexpected '{word}'",
                valid=[*ints, *flags] or "nothing more",
                value=word,
                hint=f"usage: {usage}",
            )
    return values, seen


def need_words(words: list[str], count: int, what: str, usage: str) -> None:
    if len(words) < count:
        raise BadArgument(f"missing {what}", hint=f"usage: {usage}")


def subcommand(words: list[str], valid: tuple[str, ...], cmd: str, usage: str) -> str:
    if not words:
        raise BadArgument(f"{cmd} needs a subcommand", valid=valid, hint=f"usage: {usage}")
    if words[0] not in valid:
        raise BadArgument(f"unknown {cmd} subcommand '{words[0]}'", valid=valid, value=words[0])
    return words[0]


def undone_on_failure_handler(handler: Handler) -> Handler:
    """``handler`` run so that XDP state it makes on first use is gone again when it
    fails (:func:`~esplab.model.journey.xdp.undone_on_failure`)."""

    @functools.wraps(handler)
    def run(session: Session, inv: Invocation) -> Result:
        with undone_on_failure(session.lab):
            return handler(session, inv)

    return run


def target_node(session: Session, inv: Invocation) -> str:
    return session.lab.node(inv.node).name


def node_devices(session: Session) -> list[str]:
    return list(session.lab.node().devs)
