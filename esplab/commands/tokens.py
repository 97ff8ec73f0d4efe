"""Splitting a command line into tokens, the same way for the REPL, labs and the CLI.

The grammar is shell-like with one addition: brackets group. Whitespace splits
tokens only outside quotes and outside ``()``/``[]``/``{}``, so a packet
expression such as ``IP(dst="192.0.2.2", ttl=3)/UDP()`` stays one token, and an
iproute2 algorithm name can be typed ``cbc(aes)`` or ``'cbc(aes)'``.

Quotes at bracket depth 0 are removed (``'cbc(aes)'`` -> ``cbc(aes)``); inside
brackets every character is kept verbatim, since it belongs to an expression.
Each token keeps its raw text and column, so errors can point at it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from esplab.errors import BadArgument, EsplabError, UsageError

__all__ = [
    "JSON_FLAG",
    "MAX_LINE",
    "Token",
    "check_text",
    "json_flag",
    "plain_tokens",
    "shown_text",
    "split_commands",
    "split_words",
    "tokenize",
]

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_WORD = re.compile(r"\S+")


#: The longest command line read, in characters: a pasted dump of the largest record or
#: packet a command takes (hexinput.MAX_PASTE_BYTES in ``hexdump -C`` form) fits many
#: times over, and reading one costs about a second.
MAX_LINE = 1 << 20

#: Lone UTF-16 surrogates: what Python makes of bytes that are not UTF-8 (U+DC80..U+DCFF
#: stand for the bytes 0x80..0xff under ``surrogateescape``, as in ``sys.argv``), or a
#: ``\\udXXX`` escape in a YAML or JSON string. No text can carry them out again.
_SURROGATE = re.compile("[\ud800-\udfff]")


def shown_text(text: str) -> str:
    """``text`` with each byte that was not UTF-8 written ``\\xNN`` and any other lone
    surrogate ``\\udXXX``: printable, whatever the terminal's encoding."""
    return _SURROGATE.sub(_escaped, text)


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def check_text(line: str) -> None:
    """A BadArgument when ``line`` holds a byte that was not UTF-8 (or a lone surrogate):
    no command can use it, and no output could print it. So is a line longer than
    :data:`MAX_LINE`."""
    if len(line) > MAX_LINE:
        raise BadArgument(
            f"the command line is {len(line):,} characters long (it starts "
            f"'{shown_text(line[:40])}...')",
            valid=f"up to {MAX_LINE:,} characters",
        )
    m = _SURROGATE.search(line)
    if m is None:
        return
    code = ord(m.group())
    what = (
        f"byte 0x{code - 0xDC00:02x} is not UTF-8"
        if 0xDC80 <= code <= 0xDCFF
        else f"character U+{code:04X} is a lone surrogate, not text"
    )
    around = line[max(0, m.start() - 30) : m.start() + 30]
    raise BadArgument(
        f"{what} (column {m.start() + 1}, in '{shown_text(around)}')",
        valid="UTF-8 text",
    )


@dataclass(frozen=True)
class Token:
    """One word of a command line: its value, raw text and 0-based column."""

    value: str
    raw: str
    col: int


def _scan(line: str, start: int) -> tuple[int, str]:
    """Scan one token from ``start``; return (end, unquoted value)."""
    value: list[str] = []
    stack: list[str] = []
    quote: str | None = None
    i = start
    n = len(line)
    while i < n:
        ch = line[i]
        if quote is not None:
            if ch == "\\" and quote == '"' and i + 1 < n and not stack:
                value.append(line[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
                if stack:
                    value.append(ch)
                i += 1
                continue
            value.append(ch)
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            if stack:
                value.append(ch)
            i += 1
            continue
        if ch in _OPEN:
            stack.append(_OPEN[ch])
            value.append(ch)
            i += 1
            continue
        if ch in _CLOSE:
            if not stack or stack[-1] != ch:
                raise UsageError(
                    f"unbalanced '{ch}' at column {i + 1}",
                    hint="brackets must pair up: ( ), [ ], { }",
                )
            stack.pop()
            value.append(ch)
            i += 1
            continue
        if not stack and (ch.isspace() or ch == ";"):
            break
        value.append(ch)
        i += 1
    if quote is not None:
        raise UsageError(
            f"unterminated {quote} quote starting in the word at column {start + 1}",
            hint=f"close it with {quote}",
        )
    if stack:
        raise UsageError(
            f"unclosed '{_CLOSE[stack[-1]]}' in the word at column {start + 1}",
            hint=f"close it with '{stack[-1]}'",
        )
    return i, "".join(value)


def tokenize(line: str) -> list[Token]:
    """Split one command into tokens. A ``#`` at the start of a word begins a comment."""
    tokens: list[Token] = []
    i = 0
    n = len(line)
    while i < n:
        if line[i].isspace():
            i += 1
            continue
        if line[i] == "#":
            break
        if line[i] == ";":
            raise UsageError(
                f"unexpected ';' at column {i + 1}",
                hint="one command here: give each its own line (a lab: its own step)",
            )
        end, value = _scan(line, i)
        tokens.append(Token(value, line[i:end], i))
        i = end
    return tokens


def plain_tokens(line: str) -> list[Token]:
    """``line`` split on whitespace alone, for commands whose words are data (a pasted
    dump): quotes, brackets, ``;`` and ``#`` are ordinary characters."""
    return [Token(m.group(), m.group(), m.start()) for m in _WORD.finditer(line)]


def split_commands(text: str) -> list[str]:
    """Split ``CMD; CMD`` (and newlines) into single command lines.

    Semicolons inside quotes or brackets do not split. Empty commands and
    comment-only lines are dropped.
    """
    commands: list[str] = []
    for raw_line in text.splitlines():
        i = 0
        seg_start = 0
        n = len(raw_line)
        while i < n:
            ch = raw_line[i]
            if ch.isspace():
                i += 1
                continue
            if ch == "#":
                n = i
                break
            if ch == ";":
                commands.append(raw_line[seg_start:i])
                i += 1
                seg_start = i
                continue
            end, _ = _scan(raw_line, i)
            i = end
        commands.append(raw_line[seg_start:n])
    return [c.strip() for c in commands if c.strip()]


def split_words(line: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` for each word of ``line``: kind is ``word``, ``sep``
    (a top-level ``;``) or ``comment``. Never fails on unfinished input."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch.isspace():
            i += 1
            continue
        if ch == ";":
            out.append((i, i + 1, "sep"))
            i += 1
            continue
        if ch == "#":
            out.append((i, n, "comment"))
            break
        start, depth, quote = i, 0, None
        while i < n:
            ch = line[i]
            if quote is not None:
                if ch == "\\" and quote == '"' and depth == 0:
                    i += 2  # an escaped character, as _scan reads it
                    continue
                quote = None if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth = max(0, depth - 1)
            elif depth == 0 and (ch.isspace() or ch == ";"):
                break
            i += 1
        out.append((start, min(i, n), "word"))
    return out


JSON_FLAG = "--json"


def json_flag(line: str) -> tuple[str, bool]:
    """``line`` without its unquoted ``--json`` words, and whether it had one. A line
    that does not split (an unbalanced quote) is left as it is: its command says why."""
    if JSON_FLAG not in line:
        return line, False
    try:
        tokens = tokenize(line)
    except EsplabError:
        return line, False
    found = [t for t in tokens if t.raw == JSON_FLAG]
    for token in reversed(found):
        line = (
            line[: token.col].rstrip() + " " + line[token.col + len(token.raw) :].lstrip()
        ).strip()
    return line, bool(found)
