"""Commands are declared once: name, aliases, parameters, help and handler.

Help text, usage lines, argument checking and completion all come from these
declarations, so the REPL, the lab runner and ``esplab -c`` cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NoReturn, Protocol

from esplab.errors import UnknownCommand

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.commands.base import Session
    from esplab.commands.parser import Invocation
    from esplab.commands.result import Result
    from esplab.commands.tokens import Token
    from esplab.errors import EsplabError

__all__ = ["NOT_LAB_STEPS", "Command", "Param", "Registry", "StepCheck"]

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


class StepCheck(Protocol):
    """What ``esplab check`` (:class:`esplab.lab.runline.RunLines`) offers a command's
    own check of a lab step's line: the line's words are read as the handler reads
    them, nothing runs, and the session is only read. A ``${...}`` reference stands in
    as ``0`` until run time, so a problem in a word that holds one is left to the run."""

    #: The checker's session: node and device names, the registry.
    session: Session
    #: Packets named by the ``let`` lines before this one; names known only at run time.
    named: dict[str, Packet]
    unknown: set[str]
    #: The node a line without a node acts on (None: known only at run time).
    current: str | None

    def packet(self, expr: str, start: int) -> Packet | None:
        """The packet expression at offset ``start`` checked as ``send`` builds it;
        the packet, or None when it is known only at run time."""
        ...

    def refuse(self, error: EsplabError, token: Token) -> NoReturn:
        """The line is refused with ``error``, about the word ``token``."""
        ...

    def holds_reference(self, start: int, end: int) -> bool:
        """Whether the line's text from ``start`` to ``end`` holds a reference."""
        ...

    def as_run(self) -> Session:
        """The session as the run would have it for this line (its current node)."""
        ...


#: A command's own check of a lab step (see :class:`StepCheck`): raises an EsplabError
#: (or calls ``refuse``) for words its handler would refuse without the model's state.
#: It returns the words the command hands on to the tool it models (``ip``: from the
#: object on), or None.
Check = Callable[[StepCheck, "Invocation"], "list[str] | None"]


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
    #: Whether ``complete`` sees the node a line names (``NODE COMMAND ...``) as the
    #: session's current one; otherwise it sees the session as it is.
    complete_on_node: bool = False
    #: A line that does not tokenize (an unbalanced quote or bracket, as a pasted memory
    #: dump's ASCII column may hold) is split on whitespace alone instead.
    raw_rest: bool = False
    #: Why a node prefix means nothing to this command (it acts on the lab as a whole,
    #: or on one device); empty when the command acts on the node it is given.
    nodeless: str = ""
    #: What ``esplab check`` verifies of a lab step beyond the parameters (see Check).
    check: Check | None = None
    #: Whether the word after ``words`` is a packet expression: "packet" (always: it
    #: completes as one), "maybe" (or something else: a capture, a name, hex), "".
    packet_at: Callable[[Session, list[str]], str] | None = None

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
