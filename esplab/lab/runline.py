"""A step's ``run:`` line, parsed the way the runner will parse it, without running it.

``esplab run`` hands a step's line to ``Session.execute``: the session's parser looks
up the command (after an optional node name) and reads its options and arguments,
then the command's handler reads its own words and does its work. :class:`RunLines`
does the first part with the same parser, and of the handlers' part what parses
without the model's state: each command declares that check itself
(``Command.check`` in the registry, over :class:`~esplab.commands.registry.StepCheck`,
which this class is), with the functions its handler calls. So ``ip`` reads its
global options and object and ``ip xfrm`` as a whole; ``send``, ``compare``, ``let``
and ``diff`` their node, device, options and packet expression, through the
whitelist parser (:meth:`RunLines.packet`: the text is parsed with ``ast.parse`` and
only whitelisted layers are built; nothing is evaluated); ``node NAME`` that the node
exists (later lines act on it); ``xdp`` and ``xsk`` their subcommand.

Nothing is executed, and the session is only read (node and device names): ``node
NAME`` makes NAME the current node of the lines after it here, as the run makes it the
session's. What depends on what earlier steps did (an SA to compare with, a capture to
diff, a packet named by a ``let`` whose expression has references) is left to run time.
The parsers refuse a line with an :class:`EsplabError`; any other exception is a bug
and propagates.

A ``${...}`` reference has its value only at run time: here each stands in as ``0``,
and a problem found in a word (or a part of a packet expression) that holds a stand-in
is left to run time, since the real value may well be fine. A problem comes with the
offset, in the line as written, of the word it is about.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from esplab.commands.base import Session
from esplab.commands.handlers import step_registry
from esplab.commands.parser import Invocation
from esplab.commands.registry import NOT_LAB_STEPS
from esplab.commands.tokens import Token, plain_tokens, tokenize
from esplab.errors import (
    EsplabError,
    PacketExpressionError,
    UnknownCommand,
    UsageError,
    did_you_mean,
)
from esplab.lab.refs import REF

if TYPE_CHECKING:
    from scapy.packet import Packet

__all__ = ["STAND_IN", "RunLines", "RunProblem", "stand_in"]

#: What a ``${...}`` reference stands in as while checking.
STAND_IN = "0"

_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")
_COLUMN = re.compile(r"\bat column (\d+)\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class RunProblem:
    """A run line the runner would refuse: the message, and where in the line it points
    (a 0-based offset into the line as written)."""

    what: str
    offset: int
    valid: list[str] | str | None = None
    hint: str | None = None
    #: The error as the run would print it (what ``error:`` is matched against).
    runtime: str = ""


@dataclass(frozen=True)
class StoodIn:
    """A line with every reference replaced by :data:`STAND_IN`."""

    text: str
    origin: tuple[int, ...]  # for each offset of ``text`` (and its end), the written one
    spans: tuple[tuple[int, int], ...]  # where the stand-ins are in ``text``

    def written(self, offset: int) -> int:
        return self.origin[max(0, min(offset, len(self.origin) - 1))]

    def holds_stand_in(self, start: int, end: int) -> bool:
        return any(s < max(end, start + 1) and start < e for s, e in self.spans)


def stand_in(line: str) -> StoodIn:
    """``line`` as checked: each ``${...}`` becomes ``0``, and ``$${`` the ``${`` it means."""
    text: list[str] = []
    origin: list[int] = []
    spans: list[tuple[int, int]] = []
    at = 0
    for m in REF.finditer(line):
        text.append(line[at : m.start()])
        origin.extend(range(at, m.start()))
        here = len(origin)
        value = "${" if m.group(1) is None else STAND_IN
        text.append(value)
        origin.extend([m.start()] * len(value))
        if m.group(1) is not None:
            spans.append((here, here + len(value)))
        at = m.end()
    text.append(line[at:])
    origin.extend(range(at, len(line) + 1))
    return StoodIn("".join(text), tuple(origin), tuple(spans))


class _Found(Exception):
    """A problem inside a handler's words: the error and the part of the line it is about
    (None: find the word the message names)."""

    def __init__(self, error: EsplabError, span: tuple[int, int] | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.span = span


def _span(token: Token) -> tuple[int, int]:
    return token.col, token.col + len(token.raw)


def _locate(exc: EsplabError, text: str, tokens: list[Token], first: int) -> tuple[int, int] | None:
    """The word a message is about: at the column it gives (the tokenizer's and the
    parser's count in the line), else the first word after the command it quotes."""
    column = _COLUMN.search(exc.what)
    if column is not None and not isinstance(exc, PacketExpressionError):
        at = int(column.group(1)) - 1
        if 0 <= at < len(text):
            word = next((t for t in tokens if t.col <= at < t.col + len(t.raw)), None)
            return at, max(at + 1, word.col + len(word.raw)) if word is not None else at + 1
    for m in _QUOTED.finditer(exc.what):
        quoted = m.group(1) or m.group(2)
        for token in tokens[first + 1 :]:
            if quoted in (token.value, token.raw):
                return _span(token)
    return None


def _tokens(text: str) -> list[Token]:
    try:
        return tokenize(text)
    except UsageError:
        return plain_tokens(text)


def _failing_part(expr: str, exc: PacketExpressionError) -> tuple[int, int, bool]:
    """The part of a packet expression ``exc`` is about, from the column it gives (as
    ``build_packet`` counts it, 1-based): the largest node starting there; and whether
    that is a keyword argument (``dst="192.0.2.2"``). The whole expression without one."""
    column = _COLUMN.search(exc.what)
    if column is None or "\n" in expr:
        return 0, len(expr), False
    at = int(column.group(1)) - 1
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return at, at + 1, False
    found = [
        node
        for node in ast.walk(tree)
        if getattr(node, "lineno", 0) == 1 and getattr(node, "col_offset", -1) == at
    ]
    end = max((getattr(n, "end_col_offset", None) or at + 1 for n in found), default=at + 1)
    return at, end, any(isinstance(n, ast.keyword) for n in found)


def _blank(expr: str, start: int, end: int) -> str:
    """``expr`` with ``expr[start:end]`` (a keyword argument) and a comma after it made
    spaces: the same length, so columns stay, and still Python."""
    rest = expr[end:]
    if rest.lstrip(" ").startswith(","):
        end += len(rest) - len(rest.lstrip(" ")) + 1
    return expr[:start] + " " * (end - start) + expr[end:]


class RunLines:
    """Checks the run lines of a lab in order, keeping what parsing them needs: the
    current node and the packets named with ``let``."""

    def __init__(self, session: Session | None = None) -> None:
        self.session = session if session is not None else Session(step_registry())
        self.current: str | None = self.session.lab.current
        self.named: dict[str, Packet] = {}
        # Names a let gives a packet known only at run time (its expression has references).
        self.unknown: set[str] = set()
        self._stood = stand_in("")
        self._line = ""
        #: What the last line's command hands on to the tool it models (Command.check).
        self.handed_on: list[str] | None = None

    def check(self, line: str) -> tuple[Invocation | None, RunProblem | None]:
        """The line's invocation (None if it does not parse) and its problem, if any.

        With references, the invocation is of the line with stand-ins; both are None
        when the line can be judged only at run time.
        """
        stood = self._stood = stand_in(line)
        self._line = line
        text = stood.text
        tokens = _tokens(text)
        nodes = self.session.node_names()
        first = 1 if len(tokens) > 1 and tokens[0].value in nodes else 0
        word = tokens[first] if first < len(tokens) else None
        if word is not None and stood.holds_stand_in(word.col, word.col + len(word.raw)):
            return None, None  # the command itself is a reference
        if word is not None and word.value in NOT_LAB_STEPS:
            problem = RunProblem(
                f"'{word.value}' cannot be a step: {NOT_LAB_STEPS[word.value]}",
                stood.written(word.col),
            )
            return None, problem
        try:
            invocation = self.session.parse(text)
        except UnknownCommand as exc:
            name, col = (word.value, word.col) if word is not None else ("", 0)
            guess = did_you_mean(name, self.session.registry.names(aliases=True))
            problem = RunProblem(
                f"'run': unknown command '{name}'",
                stood.written(col),
                hint=f"did you mean {guess}?" if guess else "'help' lists the commands",
                runtime=str(exc),
            )
            return None, problem
        except EsplabError as exc:
            return None, self._problem(exc, None, tokens, first)
        self.handed_on = None
        deep = invocation.command.check
        if deep is None:
            return invocation, None
        try:
            self.handed_on = deep(self, invocation)
        except _Found as found:
            return invocation, self._problem(found.error, found.span, tokens, first)
        except EsplabError as exc:
            return invocation, self._problem(exc, None, tokens, first)
        return invocation, None

    # -- where a problem is ------------------------------------------------------

    def _problem(
        self, exc: EsplabError, span: tuple[int, int] | None, tokens: list[Token], first: int
    ) -> RunProblem | None:
        """``exc`` as a problem at ``span`` (None: the word its message names, else the
        command); None when it may be about a reference's value."""
        stood = self._stood
        if span is None:
            span = _locate(exc, stood.text, tokens, first)
        if stood.spans and (span is None or stood.holds_stand_in(*span)):
            return None  # about a reference's value, which only the run knows
        if span is None:
            span = _span(tokens[first]) if first < len(tokens) else (0, 0)
        # Words the parser or a handler's grammar refuses do not parse; anything else
        # (a packet expression, a node or device that does not exist) is said as is.
        how = "'run' does not parse: " if isinstance(exc, UsageError) else "'run': "
        return RunProblem(how + exc.what, stood.written(span[0]), exc.valid, exc.hint, str(exc))

    # -- what commands' own checks read (esplab.commands.registry.StepCheck) ----------

    def refuse(self, error: EsplabError, token: Token) -> NoReturn:
        raise _Found(error, _span(token))

    def holds_reference(self, start: int, end: int) -> bool:
        return self._stood.holds_stand_in(start, end)

    def packet(self, expr: str, start: int) -> Packet | None:
        """Check the packet expression at ``start`` as ``send`` reads it; the packet."""
        from esplab.commands.packetexpr import build_packet

        if expr in self.named:
            return self.named[expr]
        if self.unknown & set(_WORD.findall(expr)):
            return None  # names a packet known only at run time
        stood = self._stood
        written = self._line[stood.written(start) : stood.written(start + len(expr))]
        text = expr
        while True:
            try:
                packet = build_packet(text, self.named)
            except PacketExpressionError as exc:
                lo, hi, keyword = _failing_part(text, exc)
                if keyword and stood.holds_stand_in(start + lo, start + hi):
                    # A field whose value is a reference can be checked only at run
                    # time; the rest of the expression is checked without it.
                    text = _blank(text, lo, hi)
                    continue
                if text != written:  # the expression as written, references and all
                    exc = PacketExpressionError(
                        self._as_written(exc.what, text, written, start),
                        valid=exc.valid,
                        hint=exc.hint,
                    )
                raise _Found(exc, (start + lo, start + hi)) from None
            return (
                packet
                if text == expr and not stood.holds_stand_in(start, start + len(expr))
                else None
            )

    def _as_written(self, what: str, text: str, written: str, start: int) -> str:
        """A message about the checked expression ``text``, about ``written`` instead."""

        def column(m: re.Match[str]) -> str:
            at = self._stood.written(start + int(m.group(1)) - 1) - self._stood.written(start)
            return f"at column {at + 1}"

        return _COLUMN.sub(column, what).replace(f"'{text.strip()}'", f"'{written.strip()}'")

    def as_run(self) -> Session:
        """The session as the run would have it for this line: the current node is the
        checker's (what a bare ``send DEV`` reads). A shallow copy when they differ, so
        the session's own lab is left as it is."""
        lab = self.session.lab
        if self.current is None or self.current == lab.current:
            return self.session
        view = copy.copy(self.session)
        view.lab = copy.copy(lab)
        view.lab.current = self.current
        return view
