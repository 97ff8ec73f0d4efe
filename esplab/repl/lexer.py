"""Syntax highlighting of the input line: command, options, numbers, strings, expressions."""

from __future__ import annotations

import re
from collections.abc import Callable

from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.lexers import Lexer

from esplab.commands.session import Session

__all__ = ["CommandLexer"]

_WORD = re.compile(r"""'[^']*'?|"[^"]*"?|\S+""")
_NUMBER = re.compile(r"^(0x[0-9a-fA-F]+|\d+)$")


class CommandLexer(Lexer):
    """Colours the first word by whether it is a command, then options, numbers, strings."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def _style(self, word: str, first: bool) -> str:
        if first:
            known = word in self.session.registry or word in self.session.node_names()
            return "class:command" if known else "class:unknown"
        if word.startswith("--"):
            return "class:option"
        if _NUMBER.match(word):
            return "class:number"
        if word[:1] in "'\"":
            return "class:string"
        if "(" in word:
            return "class:expression"
        return ""

    def lex_document(self, document: Document) -> Callable[[int], StyleAndTextTuples]:
        def get_line(lineno: int) -> StyleAndTextTuples:
            line = document.lines[lineno]
            out: StyleAndTextTuples = []
            pos = 0
            first = True
            for m in _WORD.finditer(line):
                if m.start() > pos:
                    out.append(("", line[pos : m.start()]))
                word = m.group(0)
                out.append((self._style(word, first), word))
                first = word == ";" or (first and word in self.session.node_names())
                pos = m.end()
            if pos < len(line):
                out.append(("", line[pos:]))
            return out

        return get_line
