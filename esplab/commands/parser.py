"""Pure parsing: a command line becomes an ``Invocation``, or a ``UsageError``.

Nothing here touches the model. Parameter values of kind ``int`` accept decimal
and ``0x`` hex; ``choices`` are checked with a did-you-mean. The tail of ``send``
and ``compare`` (a packet expression, then ``seq N``, ``iv HEX``...) is split and
checked here too.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from esplab.commands.tokens import Token, check_text, plain_tokens, tokenize
from esplab.errors import BadArgument, UnknownCommand, UsageError

if TYPE_CHECKING:
    from esplab.commands.base import Session
    from esplab.commands.registry import Command, Param, Registry

__all__ = [
    "SEQ_MAX",
    "Invocation",
    "iv_sizes",
    "packet_options",
    "parse",
    "parse_int",
    "parse_iv",
    "parse_seq",
    "ring_size",
]


@dataclass
class Invocation:
    """A parsed command line: which command, on which node, with which arguments."""

    command: Command
    args: dict[str, Any] = field(default_factory=dict)
    tokens: list[Token] = field(default_factory=list)
    line: str = ""
    node: str | None = None
    rest_raw: str = ""


_DIGITS = frozenset("0123456789abcdef_")


def parse_int(text: str, what: str) -> int:
    """Decimal or 0x-hex integer of at most 64 bits (the widest number the model
    holds: an ESN sequence number), or a BadArgument naming ``what``; each command
    then checks its own range."""
    from esplab.errors import shorten

    digits = text.strip().lstrip("+-").lower().removeprefix("0x").lstrip("0_")
    # Past 64 bits whatever the base (int() of it may be refused); a long word that is
    # no number at all is said to be one below.
    if len(digits) > 24 and set(digits) <= _DIGITS:
        raise BadArgument(
            f"{what} {shorten(text, 40)} is out of range",
            valid="a number of at most 64 bits, decimal (4096) or hex with 0x (0x1000)",
        )
    try:
        value = int(text, 0)
    except ValueError:
        raise BadArgument(
            f"{what} must be a number, got '{shorten(text, 40)}'",
            valid="decimal (4096) or hex with 0x (0x1000)",
        ) from None
    if abs(value) >= 1 << 64:
        raise BadArgument(
            f"{what} {text} is out of range",
            valid="a number of at most 64 bits (up to 0xffffffffffffffff)",
        )
    return value


def _usage_hint(command: Command) -> str:
    return f"usage: {command.usage}"


def _option_at(
    tok: Token, spelled: dict[str, Param], short: bool
) -> tuple[Param | None, str | None] | None:
    """Whether ``tok`` is an option, and which: (param or None if unknown, attached
    value). None when it is no option (a word, a negative number...)."""
    raw = tok.raw
    if raw.startswith("--") and len(raw) > 2:
        return spelled.get(tok.value), None
    if not short or not raw.startswith("-") or len(raw) < 2 or not raw[1].isalpha():
        return None
    if tok.value in spelled:
        return spelled[tok.value], None
    attached = spelled.get(tok.value[:2])
    if attached is not None and attached.kind == "option":
        return attached, tok.value[2:]  # iputils: -c3
    return None, None


def _take_options(
    command: Command, tokens: list[Token], session: Session | None
) -> tuple[dict[str, Any], list[Token]]:
    """Pull ``--flag``, ``--option VALUE`` (and the short spellings a parameter
    declares, ``-c N`` or ``-cN``) out of the token list."""
    named = {p.name: p for p in command.params if p.kind in ("flag", "option")}
    spelled = {s: p for p in named.values() for s in p.spellings}
    short = any(p.short for p in named.values())
    args: dict[str, Any] = {p.name: False if p.kind == "flag" else None for p in named.values()}
    rest: list[Token] = []
    # A command that takes only the rest of the line (ip, ethtool) reads its own
    # options, long ones included: nothing is taken from it here.
    rest_started = (
        not named
        and any(p.kind == "rest" for p in command.params)
        and (_positional_count(command) == 0)
    )
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        found = None if rest_started else _option_at(tok, spelled, short)
        if found is not None:
            param, attached = found
            if param is None:
                # A long spelling is met with the long ones, a short one with all.
                long = tok.raw.startswith("--")
                valid = [s for s in spelled if s.startswith("--") or not long]
                raise BadArgument(
                    f"unknown option '{tok.value}' for {command.name}",
                    valid=valid or "no options",
                    value=tok.value,
                    hint=None if named else _usage_hint(command),
                )
            if param.kind == "flag":
                args[param.name] = True
            elif attached is not None:
                args[param.name] = _convert(param, attached, session)
            else:
                if i + 1 >= len(tokens):
                    raise BadArgument(
                        f"option '{tok.value}' needs a value", hint=_usage_hint(command)
                    )
                args[param.name] = _convert(param, tokens[i + 1].value, session)
                i += 1
            i += 1
            continue
        if any(p.kind == "rest" for p in command.params) and len(rest) >= _positional_count(
            command
        ):
            rest_started = True
        rest.append(tok)
        i += 1
    return args, rest


def _positional_count(command: Command) -> int:
    return sum(1 for p in command.params if p.kind in ("word", "int"))


def _convert(param: Param, text: str, session: Session | None) -> Any:
    if param.kind == "int":
        return parse_int(text, param.metavar or param.name)
    choices = param.choice_list(session)
    if choices and param.validate_choices:
        lowered = {c.lower(): c for c in choices}
        if text.lower() not in lowered:
            raise BadArgument(
                f"unknown {param.metavar or param.name} '{text}'",
                valid=choices,
                value=text,
            )
        return lowered[text.lower()]
    return text


def _unknown_word(word: str, nodes: list[str], registry: Registry) -> UnknownCommand:
    """The first word of a line of several words that is neither a command nor a node."""
    pool = {name.lower(): name for name in [*nodes, *registry.names(aliases=True)]}
    close = difflib.get_close_matches(word.lower(), list(pool), n=2, cutoff=0.6)
    ratios = [difflib.SequenceMatcher(None, word.lower(), c).ratio() for c in close]
    # pc9 is as close to pc1 as to pc4: no guess then.
    guess = pool[close[0]] if close and (len(close) == 1 or ratios[0] > ratios[1]) else None
    return UnknownCommand(
        f"unknown command or node '{word}'; nodes: {', '.join(nodes)}",
        hint=f"did you mean {guess}?" if guess else "help lists the commands",
    )


def _raw(line: str, registry: Registry, nodes: set[str]) -> bool:
    """Whether the line's command (after an optional node name) may take its words as
    plain whitespace-separated text when they do not tokenize."""
    words = line.split(None, 2)
    if len(words) > 1 and words[0] in nodes and registry.get(words[0]) is None:
        words = words[1:]
    command = registry.get(words[0]) if words else None
    return command is not None and command.raw_rest


def parse(
    line: str,
    registry: Registry,
    *,
    session: Session | None = None,
    nodes: Iterable[str] = (),
) -> Invocation:
    """Parse one command line. An empty line is a UsageError, and so is one holding
    bytes that were not UTF-8 (:func:`check_text`)."""
    check_text(line)
    ordered_nodes = list(nodes)
    node_names = set(ordered_nodes)
    try:
        tokens = tokenize(line)
    except UsageError:
        if not _raw(line, registry, node_names):
            raise
        tokens = plain_tokens(line)  # a quote or bracket in a pasted dump's ASCII column
    if not tokens:
        raise UsageError("empty command", hint="type 'help' for the list of commands")
    node: str | None = None
    first = tokens[0].value
    if len(tokens) > 1 and first in node_names and first not in registry:
        node = first
        tokens = tokens[1:]
    elif len(tokens) > 1 and ordered_nodes and first not in registry:
        raise _unknown_word(first, ordered_nodes, registry)
    elif first in node_names and first not in registry:
        # A node name alone: the command that should follow it is missing.
        raise UsageError(f"{first}: which command? e.g. {first} ip addr")
    command = registry.lookup(tokens[0].value)
    if node is not None and command.nodeless:
        raise UsageError(
            f"{command.name} takes no node prefix ('{node}'): {command.nodeless}",
            hint=f"type it without '{node}'",
        )
    args, remaining = _take_options(command, tokens[1:], session)
    positional = [p for p in command.params if p.kind in ("word", "int", "rest")]
    rest_raw = ""
    idx = 0
    for param in positional:
        if param.kind == "rest":
            taken = remaining[idx:]
            if not taken and not param.optional:
                raise BadArgument(
                    f"{command.name} needs {param.display}", hint=_usage_hint(command)
                )
            args[param.name] = [t.value for t in taken]
            if taken:
                rest_raw = line[taken[0].col :].strip()
            idx = len(remaining)
            break
        if idx >= len(remaining):
            if param.optional:
                args[param.name] = None
                continue
            raise BadArgument(f"{command.name} needs {param.display}", hint=_usage_hint(command))
        args[param.name] = _convert(param, remaining[idx].value, session)
        idx += 1
    if idx < len(remaining):
        extra = remaining[idx]
        raise BadArgument(
            f"unexpected argument '{extra.value}' at column {extra.col + 1}",
            hint=_usage_hint(command),
        )
    return Invocation(
        command=command, args=args, tokens=tokens, line=line, node=node, rest_raw=rest_raw
    )


# ----------------------------------------------- a packet expression and its options

_VALUES = {"count": "N", "seq": "N", "iv": "HEX"}

# A word that may be an option key, and the endings of a token that join the next
# token to the expression (an operator, an open bracket or a comma).
_BARE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_JOINERS = ("/", "*", "+", "-", "(", "[", ",")

#: The largest sequence number a packet may pin: ESN numbers are 64 bits (RFC 4303
#: 2.2.1). Whether a number fits a given SA (32 bits without ESN) is the datapath's
#: to judge, and counts as XfrmOutStateSeqError there.
SEQ_MAX = (1 << 64) - 1


def _option_start(tokens: list[Token], allowed: tuple[str, ...]) -> int:
    """Where a packet expression's options begin: at a known key, or at a bare word that
    no operator joins to the expression before it (Python never juxtaposes two operands,
    so ``IP(dst="192.0.2.2") frobnicate 3`` is the expression, then an option)."""
    for i, tok in enumerate(tokens):
        if tok.value in allowed:
            return i
        if i and _BARE_WORD.fullmatch(tok.raw) and not tokens[i - 1].raw.endswith(_JOINERS):
            return i
    return len(tokens)


def packet_options(
    line: str, tokens: list[Token], allowed: tuple[str, ...], command: str
) -> tuple[str, dict[str, str]]:
    """A packet expression, as typed, then ``KEY VALUE`` options from ``allowed``:
    ``send``'s and ``compare``'s tail. The options begin at the first key or bare word
    after the expression (:func:`_option_start`); an unknown key is refused by name."""
    cut = _option_start(tokens, allowed)
    expr_tokens, opt_tokens = tokens[:cut], tokens[cut:]
    if not expr_tokens:
        raise BadArgument(
            f"{command} needs a packet",
            valid='a packet expression such as IP(dst="192.0.2.2")/UDP() or a name given with let',
        )
    start = expr_tokens[0].col
    end = expr_tokens[-1].col + len(expr_tokens[-1].raw)
    options: dict[str, str] = {}
    for i in range(0, len(opt_tokens), 2):
        key = opt_tokens[i].value
        if key not in allowed:
            raise BadArgument(f"unknown option '{key}'", valid=list(allowed), value=key)
        if key in options:
            raise BadArgument(f"option '{key}' given twice", hint="give each option once")
        if i + 1 >= len(opt_tokens):
            raise BadArgument(
                f"'{key}' needs a value", valid=", ".join(f"{k} {_VALUES[k]}" for k in allowed)
            )
        options[key] = opt_tokens[i + 1].value
    return line[start:end], options


def parse_seq(text: str) -> int:
    """An ESP sequence number to pin: 0 to 2**64-1 (64 bits with ESN)."""
    seq = parse_int(text, "seq")
    if not 0 <= seq <= SEQ_MAX:
        raise BadArgument(
            f"seq {text} is out of range",
            valid=f"0 to {SEQ_MAX:#x} (64 bits with ESN; 0xffffffff without)",
        )
    return seq


def iv_sizes() -> list[int]:
    """The IV sizes, in bytes, of the ciphers the ESP datapath models: 16 for cbc(aes)
    (RFC 3602 3), 8 for GCM and CTR (RFC 4106 3.1, RFC 3686 3.1) and the DES ciphers."""
    from esplab.model.kernel.esp.algos import AEAD_ALGOS, ENC_ALGOS

    return sorted({a.iv_size for a in (*ENC_ALGOS.values(), *AEAD_ALGOS.values()) if a.iv_size})


def parse_iv(text: str, sizes: list[int] | None = None) -> bytes:
    """An IV typed as hex (``0x`` allowed), of one of ``sizes`` bytes: by default any
    size a modelled cipher uses, whether it fits the SA being the datapath's to judge."""
    if sizes is None:
        sizes = iv_sizes()
    example = bytes(range(max(sizes))).hex()
    valid = " or ".join(str(n) for n in sizes) + f" bytes of hex, e.g. 0x{example}"
    digits = text[2:] if text[:2].lower() == "0x" else text
    if not digits:
        raise BadArgument(f"iv '{text}' has no hex digits", valid=valid)
    if any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise BadArgument(f"iv '{text}' is not hex", valid=valid)
    if len(digits) % 2:
        raise BadArgument(
            f"iv '{text}' has an odd number of hex digits ({len(digits)})", valid=valid
        )
    iv = bytes.fromhex(digits)
    if len(iv) not in sizes:
        raise BadArgument(f"iv of {len(iv)} bytes ('{text}')", valid=valid)
    return iv


# What the model can hold: a journey keeps its stages' snapshots, some 10 kB for a
# send (100,000 sends took 990 MB), so 10,000 journeys stay near 100 MB; a captured
# packet is its bytes and a few fields, so 100,000 a tap.
RING_MAX = {"journey": 10_000, "capture": 100_000}


def ring_size(name: str, text: str) -> int:
    """A journey or capture ring size from ``text``, or the error naming the range."""
    size = parse_int(text, f"{name} ring size")
    high = RING_MAX[name]
    if not 1 <= size <= high:
        raise BadArgument(f"{name} ring size {size}", valid=f"1 to {high}")
    return size
