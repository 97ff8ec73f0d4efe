"""Commands are declared once: name, aliases, parameters, help and handler.

Help text, usage lines, argument checking and completion all come from these
declarations, so the REPL, the lab runner and ``esplab -c`` cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from esplab.errors import UnknownCommand

if TYPE_CHECKING:
    from esplab.commands.parser import Invocation
    from esplab.commands.result import Result
    from esplab.commands.session import Session

__all__ = ["NOT_LAB_STEPS", "Command", "Param", "Registry"]

Kind = Literal["word", "int", "rest", "flag", "option"]

#: Commands that cannot be a lab step, and why: ``save`` leaves them out of the lab it
#: writes, ``esplab check`` refuses them.
NOT_LAB_STEPS = {
    "lab": "a lab cannot run labs",
    "quit": "a lab ends after its last step",
    "exit": "a lab ends after its last step",
}
Choices = Callable[["Session"], Iterable[str]]
Handler = Callable[["Session", "Invocation"], "Result"]


@dataclass(frozen=True)
class Param:
    """One parameter of a command.

    ``word``/``int`` are positional; ``rest`` takes every remaining token (and its
    raw text); ``flag`` is ``--name``; ``option`` is ``--name VALUE``. ``choices``
    (a tuple or a function of the session) both validates and completes. ``short``
    adds the spellings of the tool the command mirrors (iputils ``ping -c N``); a
    one-letter ``option`` also takes its value attached (``-c3``).
    """

    name: str
    kind: Kind = "word"
    help: str = ""
    optional: bool = False
    choices: tuple[str, ...] | Choices | None = None
    validate_choices: bool = True
    metavar: str | None = None
    short: tuple[str, ...] = ()

    @property
    def spellings(self) -> tuple[str, ...]:
        """How a flag or option may be written: ``--name`` and the ``short`` ones."""
        return (f"--{self.name}", *self.short)

    def choice_list(self, session: Session | None) -> list[str]:
        if self.choices is None:
            return []
        if isinstance(self.choices, tuple):
            return list(self.choices)
        if session is None:
            return []
        return list(self.choices(session))

    @property
    def display(self) -> str:
        meta = self.metavar or self.name.upper()
        if self.kind == "flag":
            text = "|".join(self.spellings)
        elif self.kind == "option":
            text = "|".join(f"{s} {meta}" for s in self.spellings)
        elif self.kind == "rest":
            text = f"{meta}..."
        else:
            text = meta
        return f"[{text}]" if self.optional or self.kind in ("flag", "option") else text


@dataclass(frozen=True)
class Command:
    """A command: what it is called, what it takes, what it does."""

    name: str
    summary: str
    handler: Handler
    params: tuple[Param, ...] = ()
    aliases: tuple[str, ...] = ()
    example: str = ""
    details: str = ""
    usage_text: str | None = None
    complete: Callable[[Session, list[str]], Iterable[str]] | None = None
    #: A line that does not tokenize (an unbalanced quote or bracket, as a pasted memory
    #: dump's ASCII column may hold) is split on whitespace alone instead.
    raw_rest: bool = False
    #: Why a node prefix means nothing to this command (it acts on the lab as a whole,
    #: or on one device); empty when the command acts on the node it is given.
    nodeless: str = ""

    @property
    def usage(self) -> str:
        if self.usage_text is not None:
            return self.usage_text
        return " ".join([self.name, *(p.display for p in self.params)])


class Registry:
    """All commands of a session, by name and alias."""

    def __init__(self, commands: Iterable[Command] = ()) -> None:
        self._by_name: dict[str, Command] = {}
        self._order: list[Command] = []
        for command in commands:
            self.register(command)

    def register(self, command: Command) -> None:
        for key in (command.name, *command.aliases):
            if key in self._by_name:
                raise ValueError(f"command name {key!r} registered twice")
            self._by_name[key] = command
        self._order.append(command)

    def lookup(self, name: str) -> Command:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownCommand(
                f"unknown command '{name}'",
                valid=self.names(),
                value=name,
            ) from None

    def get(self, name: str) -> Command | None:
        return self._by_name.get(name)

    def names(self, *, aliases: bool = False) -> list[str]:
        if aliases:
            return sorted(self._by_name)
        return [c.name for c in self._order]

    def __iter__(self) -> Iterator[Command]:
        return iter(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name
