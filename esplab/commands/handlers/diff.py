"""diff A B [--ignore FIELD,...]: two packets compared field by field and byte by byte.

A and B are captured packets (``wan.wire#3``, or a tap for its last packet),
names given with ``let``, packet expressions, or hex. When a packet carries ESP
whose SPI belongs to a state on some node, the comparison goes through the
encryption: IV, padding, pad length, next header and ICV, then the inner layers
(:func:`esplab.diff.diff_packets`). ``compare`` builds on the same
:func:`esplab.commands.operands.build_diff`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from esplab.commands.base import Session
from esplab.commands.operands import build_diff, esp_details, esp_spi, operand_pair, session_sas
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param, StepCheck
from esplab.commands.result import ByteView, DiffResult, Result
from esplab.errors import BadArgument

if TYPE_CHECKING:
    pass

__all__ = [
    "COMMANDS",
    "ByteView",
    "DiffResult",
    "esp_details",
]


def _ignore_list(inv: Invocation) -> list[str]:
    """Every ``--ignore`` of the line (the parser keeps only the last), each a comma list."""
    words = inv.tokens[1:]
    texts = [words[i + 1].value for i, tok in enumerate(words[:-1]) if tok.raw == "--ignore"]
    if not texts and inv.args.get("ignore") is not None:
        texts = [inv.args["ignore"]]
    items = [t.strip() for text in texts for t in text.split(",") if t.strip()]
    if texts and not items:
        raise BadArgument(
            "--ignore needs field names",
            valid="FIELD, LAYER.FIELD or LAYER, comma separated (ttl,IP.chksum)",
        )
    return items


def _check_ignore(items: list[str], known: dict[str, list[str]]) -> None:
    """Refuse a name that is no layer or field of either packet, naming it and the
    valid ones (case-insensitive; ``inner `` and ``[N]`` as :class:`IgnoreRules` take
    them)."""
    import re

    layers = {name.lower(): name for name in known}
    every = "; ".join(f"{layer} ({', '.join(fields)})" for layer, fields in known.items())
    for item in items:
        layer, dot, name = item.rpartition(".")
        base = re.sub(r"\[\d+\]$", "", layer.strip().lower().removeprefix("inner "))
        if not dot:
            anywhere = {f.lower() for fs in known.values() for f in fs}
            if item.lower() in layers or item.lower() in anywhere:
                continue
            raise BadArgument(
                f"--ignore '{item}' is no layer or field of either packet",
                valid=every,
            )
        if base not in layers:
            raise BadArgument(
                f"--ignore '{item}': neither packet has a layer '{layer}'", valid=every
            )
        fields = known[layers[base]]
        if name in ("", "*") or name.lower() in {f.lower() for f in fields}:
            continue
        raise BadArgument(
            f"--ignore '{item}': {layers[base]} has no field '{name}'",
            valid=[f"{layers[base]}.{f}" for f in fields],
            value=item,
        )


def _diff(session: Session, inv: Invocation) -> Result:
    from esplab.diff import ignorable_fields

    ignore = _ignore_list(inv)
    a, b = operand_pair(session, inv.args["left"], inv.args["right"])
    spis = {s for s in (esp_spi(a.packet), esp_spi(b.packet)) if s is not None}
    sas = session_sas(session, spis) if spis else {}
    if ignore:
        _check_ignore(ignore, ignorable_fields(a.packet, b.packet, sa=sas))
    return build_diff(a, b, ignore=ignore, sas=sas)


def _complete(session: Session, words: list[str]) -> list[str]:
    positional = [w for w in words if not w.startswith("--")]
    if words and words[-1] == "--ignore":
        return ["ttl", "chksum", "id", "IP.chksum", "Ether", "ESPTrailer.icv"]
    if len(positional) >= 2:
        return ["--ignore"]
    refs = [
        f"{tap}#{len(session.lab.captures.get(tap))}"
        for tap in session.lab.captures.taps()
        if session.lab.captures.get(tap)
    ]
    return [*session.named, *session.lab.captures.taps(), *refs]


def _diff_check(check: StepCheck, inv: Invocation) -> None:
    """``esplab check``: an operand that is a packet expression."""
    for key, token in zip(("left", "right"), inv.tokens[1:3], strict=False):
        text = str(inv.args[key])
        if (
            text in check.named
            or "#" in text
            or text in check.session.lab.captures.known
            or ("(" not in text and "/" not in text)
        ):
            continue  # a capture, a name or hex: which it is shows only at run time
        check.packet(text, token.col)


def _operand_at(session: Session, args: list[str]) -> str:
    return "maybe" if len(args) < 2 else ""


COMMANDS = (
    Command(
        name="diff",
        nodeless="it compares captures and packets of the whole lab",
        summary="compare two packets field by field and byte by byte (through ESP when an "
        "SA is known)",
        handler=_diff,
        check=_diff_check,
        packet_at=_operand_at,
        params=(
            Param("left", metavar="A", help="TAP#N, a name from let, a packet expression or hex"),
            Param("right", metavar="B", help="the packet to compare A with"),
            Param(
                "ignore",
                kind="option",
                metavar="FIELD,...",
                help="fields to leave out: FIELD, LAYER.FIELD or LAYER (comma separated; "
                "--ignore may be repeated)",
            ),
        ),
        example="diff wan.wire#1 wan.wire#2 --ignore IP.id,IP.chksum",
        details="A packet whose ESP SPI belongs to a state on any node is compared "
        "through the encryption: IV, ESPTrailer padding, pad_len, nh, icv and icv_ok, then "
        "the inner layers (named 'inner IP', ...). Hex takes the other side's layer class.",
        complete=_complete,
    ),
)
