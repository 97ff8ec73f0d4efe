"""Syntax highlighting of the input line.

Words split the way the command grammar splits them (quotes and brackets keep a
packet expression in one word, ``;`` separates commands, ``#`` at the start of a
word begins a comment), and unfinished input never breaks the colouring. The
first word of each command is a known command (or node), or marked unknown;
then options, numbers and strings; inside packet expressions, layer names,
``field=`` names, strings, numbers and ``/`` each have their own class.
Nothing here imports Scapy, so typing stays instant.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.lexers import Lexer

from esplab.commands.base import Session
from esplab.commands.tokens import split_words

__all__ = ["CommandLexer"]

_NUMBER = re.compile(r"^(0x[0-9a-fA-F]+|-?\d+)$")
_EXPR_TOKEN = re.compile(
    r"""(?P<string>[bB]?'[^']*'?|[bB]?"[^"]*"?)"""
    r"""|(?P<field>[A-Za-z_][A-Za-z0-9_]*(?=\s*=))"""
    r"""|(?P<layer>[A-Za-z_][A-Za-z0-9_]*(?=\s*\())"""
    r"""|(?P<number>0x[0-9a-fA-F]+|\d+)"""
    r"""|(?P<operator>[/*+=])"""
    r"""|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"""
    r"""|(?P<other>.)""",
    re.DOTALL,
)


def _expression(word: str) -> StyleAndTextTuples:
    out: StyleAndTextTuples = []
    for m in _EXPR_TOKEN.finditer(word):
        kind = m.lastgroup or "other"
        style = {
            "string": "class:string",
            "field": "class:field",
            "layer": "class:layer",
            "number": "class:number",
            "operator": "class:operator",
            "name": "class:name",
        }.get(kind, "")
        out.append((style, m.group(0)))
    return out


class CommandLexer(Lexer):
    """Colours each command's first word by whether it is a command, then the rest."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def _first(self, word: str) -> str:
        known = word in self.session.registry or word in self.session.node_names()
        return "class:command" if known else "class:unknown"

    def _style(self, word: str) -> StyleAndTextTuples:
        if word.startswith("--"):
            return [("class:option", word)]
        if _NUMBER.match(word):
            return [("class:number", word)]
        if word[:1] in "'\"":
            return [("class:string", word)]
        if "(" in word or ("/" in word and word[:1].isupper()):
            return _expression(word)
        return [("", word)]

    def lex_document(self, document: Document) -> Callable[[int], StyleAndTextTuples]:
        nodes = set(self.session.node_names())

        def get_line(lineno: int) -> StyleAndTextTuples:
            line = document.lines[lineno]
            out: StyleAndTextTuples = []
            pos = 0
            first = True
            for start, end, kind in split_words(line):
                if start > pos:
                    out.append(("", line[pos:start]))
                word = line[start:end]
                if kind == "comment":
                    out.append(("class:comment", word))
                elif kind == "sep":
                    out.append(("", word))
                    first = True
                elif first:
                    out.append((self._first(word), word))
                    first = word in nodes and word not in self.session.registry
                else:
                    out.extend(self._style(word))
                pos = end
            if pos < len(line):
                out.append(("", line[pos:]))
            return out

        return get_line
