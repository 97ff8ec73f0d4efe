"""Completion candidates from the registry and the session's live state (pure).

The REPL's completer wraps these in prompt-toolkit Completions; nothing here
depends on a terminal. Besides what each command declares, values follow the
keyword before them wherever they appear (``dev`` a device of the addressed
node, ``spi`` and ``reqid`` its SAs, ``enc``/``auth``/``aead``/``comp`` the
algorithms, kernel names and the short names the parser takes), and packet
expressions complete inside: layer names at the start and after ``/``, ``field=``
inside a layer's brackets. A tap reference ``TAP#`` completes to its record numbers
wherever the tap is offered. Files complete as paths (absolute, relative or ``~``):
a parameter named ``file`` takes any path, and a command's own completion returns
:class:`FilePaths` where it wants one.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from esplab.commands.base import Session
from esplab.commands.registry import Param
from esplab.commands.tokens import split_words, tokenize
from esplab.errors import EsplabError

__all__ = [
    "PCAP_FILES",
    "Completions",
    "FilePaths",
    "candidates",
    "complete",
    "expression_completions",
    "split_for_completion",
]

_IDENT_END = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_ALGO_KINDS = {"enc": "enc", "auth": "auth", "auth-trunc": "auth", "aead": "aead", "comp": "comp"}


@dataclass(frozen=True)
class Completions:
    """Words that may replace the last ``replace`` characters before the cursor.

    ``meta`` gives a short description for some words (a field's type), ``display``
    what the menu shows instead of the word (a path's last part).
    """

    words: list[str] = field(default_factory=list)
    replace: int = 0
    meta: dict[str, str] = field(default_factory=dict)
    display: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FilePaths:
    """A file argument: directories (ending in ``/``) and the files matching
    ``patterns`` (any file if there are none), completing the path being typed.

    Iterating gives those of the current directory; :meth:`matching` those that
    complete a partial path.
    """

    patterns: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[str]:
        return iter(self.matching(""))

    def matching(self, partial: str) -> list[str]:
        """Paths starting with ``partial`` (as typed: ``~`` stays ``~``)."""
        if partial == "~":
            return ["~/"]
        head, tail = partial[: partial.rfind("/") + 1], partial[partial.rfind("/") + 1 :]
        try:
            with os.scandir(os.path.expanduser(head) if head else ".") as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError:
            return []
        out: list[str] = []
        for entry in entries:
            name = entry.name
            if not name.startswith(tail) or (name.startswith(".") and not tail.startswith(".")):
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                out.append(f"{head}{name}/")
            elif not self.patterns or any(fnmatchcase(name.lower(), p) for p in self.patterns):
                out.append(head + name)
        return out


#: Capture files (``capture import``, what tshark reads).
PCAP_FILES = FilePaths(("*.pcap", "*.pcapng"))
#: Parameters whose value is a file, by name.
_FILE_PARAMS = {"file": FilePaths(), "capture": PCAP_FILES}


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


def _lenient_split(text: str) -> tuple[list[str], str] | None:
    """Like split_for_completion, but the word being typed may leave brackets or a
    quote open (``IP(dst="192.0.2.2", tt``)."""
    words = [w for w in split_words(text) if w[2] != "comment"]
    start = len(text)
    if words and words[-1][1] == len(text) and words[-1][2] == "word":
        start = words[-1][0]
    try:
        done = tokenize(text[:start])
    except EsplabError:
        return None
    return [t.value for t in done], text[start:]


def _filter(options: Iterable[str], prefix: str) -> list[str]:
    low = prefix.lower()
    seen: dict[str, None] = {}
    for option in options:
        if option.lower().startswith(low):
            seen.setdefault(option, None)
    return list(seen)


# --------------------------------------------------------------------------- expressions


def _open_call(fragment: str) -> tuple[str | None, int, bool]:
    """(layer whose brackets the end of ``fragment`` is in, where its arguments start,
    whether the end is inside a string)."""
    stack: list[tuple[str | None, int]] = []
    quote: str | None = None
    for i, ch in enumerate(fragment):
        if quote is not None:
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            caller = _IDENT_END.search(fragment[:i]) if ch == "(" else None
            stack.append((caller.group(0) if caller else None, i + 1))
        elif ch in ")]}" and stack:
            stack.pop()
    if not stack:
        return None, 0, quote is not None
    layer, start = stack[-1]
    return layer, start, quote is not None


def expression_completions(fragment: str, named: Iterable[str] = ()) -> Completions:
    """Completions at the end of a packet expression being typed.

    At the start and after ``/``: layer names and packet names from ``let``.
    Right after ``(`` or ``,`` inside a layer's brackets: its fields as ``name=``
    (those not given yet), with the field's type as ``meta``. Nothing inside
    strings or after ``=``.
    """
    from esplab.commands.packetexpr import layer_whitelist

    layer, args_start, in_string = _open_call(fragment)
    if in_string:
        return Completions()
    match = _IDENT_END.search(fragment)
    partial = match.group(0) if match else ""
    before = fragment[: len(fragment) - len(partial)].rstrip()
    prev = before[-1:] if before else ""
    layers = layer_whitelist()
    if layer is None:
        if prev in ("", "/"):
            words = _filter([*named, *layers], partial)
            return Completions(words, len(partial))
        return Completions()
    cls = layers.get(layer)
    if cls is None or prev not in ("(", ","):
        return Completions()
    given = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*=", fragment[args_start:]))
    fields = [f for f in cls.fields_desc if f.name not in given]
    words = _filter([f"{f.name}=" for f in fields], partial)
    meta = {f"{f.name}=": type(f).__name__ for f in fields}
    return Completions(words, len(partial), {w: meta[w] for w in words})


# --------------------------------------------------------------------------- live values


def _node_of(session: Session, first: str | None) -> str:
    return first if first is not None else session.lab.current


def _as_seen(session: Session, node: str) -> Session:
    """The session as a line on ``node`` (``NODE COMMAND ...``) sees it: a shallow copy
    whose current node is ``node`` when it is not the current one already."""
    if node == session.lab.current or node not in session.lab.nodes:
        return session
    view = copy.copy(session)
    view.lab = copy.copy(session.lab)
    view.lab.current = node
    return view


def _keyword_values(session: Session, node: str, keyword: str) -> list[str] | None:
    """Values that follow ``keyword`` on any command line, or None if it takes none."""
    the_node = session.lab.nodes.get(node)
    if the_node is None:
        return None
    if keyword == "dev":
        return list(the_node.devs)
    if keyword == "spi":
        return sorted({f"{x.spi:#x}" for x in the_node.xfrm.states})
    if keyword == "reqid":
        reqids = {x.reqid for x in the_node.xfrm.states}
        reqids |= {t.reqid for p in the_node.xfrm.policies for t in p.templates}
        return [str(r) for r in sorted(reqids)]
    if keyword in _ALGO_KINDS:
        from esplab.model.kernel.xfrm.algos import ALGORITHMS

        # The parser takes the kernel's name or its compat alias (lookup_algo): both.
        kind = _ALGO_KINDS[keyword]
        return [n for a in ALGORITHMS if a.kind == kind for n in (a.name, *a.aliases)]
    return None


def _tap_records(session: Session, options: list[str], current: str) -> list[str] | None:
    """``TAP#1`` ... ``TAP#N`` when ``current`` is ``TAP#...`` and TAP is offered."""
    tap = current.partition("#")[0]
    if "#" not in current or not any(o == tap or o.startswith(f"{tap}#") for o in options):
        return None
    if tap not in session.lab.captures.known:
        return None
    count = len(session.lab.captures.get(tap))
    return [f"{tap}#{n}" for n in range(1, count + 1)]


def _paths(paths: FilePaths, current: str) -> Completions:
    words = paths.matching(current)
    shown = {w: w.rstrip("/").rsplit("/", 1)[-1] + ("/" if w.endswith("/") else "") for w in words}
    return Completions(words, len(current), display={w: s for w, s in shown.items() if s != w})


# --------------------------------------------------------------------------- entry


def _positional_param(command_params: tuple[Param, ...], words: list[str]) -> Param | None:
    named = [p for p in command_params if p.kind in ("flag", "option")]
    positional = [p for p in command_params if p.kind in ("word", "int", "rest")]
    count = 0
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        option = next((p for p in named if word in p.spellings), None)
        if option is not None:
            skip = option.kind == "option"
            continue
        count += 1
    if count < len(positional):
        return positional[count]
    if positional and positional[-1].kind == "rest":
        return positional[-1]
    return None


def complete(session: Session, text: str) -> Completions:
    """Completions for the end of ``text`` (one command line, cursor at its end)."""
    split = split_for_completion(text)
    if split is None:
        split = _lenient_split(text)
        if split is None:
            return Completions()
    words, current = split
    nodes = session.node_names()
    node: str | None = None
    if words and words[0] in nodes and words[0] not in session.registry:
        node, words = words[0], words[1:]
    if not words:
        first = session.registry.names(aliases=True) + ([] if node else nodes)
        return Completions(_filter(first, current), len(current))
    command = session.registry.get(words[0])
    if command is None:
        return Completions()
    args = words[1:]
    where = _node_of(session, node)
    # The command says where a packet expression goes: "packet" (only one goes there),
    # "maybe" (one, or a name or capture: an expression once the word looks like one).
    packet_at = command.packet_at(session, args) if command.packet_at is not None else ""
    if packet_at == "packet" or (
        packet_at == "maybe" and (current[:1].isupper() or any(c in current for c in "(/"))
    ):
        return expression_completions(current, session.named)
    # After proto the next word is a protocol (proto comp), not the keyword it spells.
    if args and args[-2:-1] != ["proto"]:
        values = _keyword_values(session, where, args[-1])
        if values is not None:
            return Completions(_filter(values, current), len(current))
    options: list[str]
    if command.complete is not None:
        seen = _as_seen(session, where) if command.complete_on_node else session
        found = command.complete(seen, args)
        if isinstance(found, FilePaths):
            return _paths(found, current)
        options = list(found)
    elif current.startswith("-"):
        # The flags and options not given yet (each is read once).
        options = [
            s
            for p in command.params
            if p.kind in ("flag", "option") and not any(w in p.spellings for w in args)
            for s in p.spellings
        ]
    else:
        param = _positional_param(command.params, args)
        if param is not None and param.name in _FILE_PARAMS and not param.choices:
            return _paths(_FILE_PARAMS[param.name], current)
        options = param.choice_list(session) if param is not None else []
    options = _tap_records(session, options, current) or options
    return Completions(_filter(options, current), len(current))


def candidates(session: Session, text: str) -> list[str]:
    """Words that may complete ``text`` at its end."""
    return complete(session, text).words
