"""Word-level pieces of iproute2's ``ip xfrm`` grammar (``ip/ipxfrm.c``, ``utils.c``).

A :class:`Cursor` walks the token list like iproute2's ``argc``/``argv`` with
``NEXT_ARG``/``PREV_ARG``. Errors are ``ToolUsageError`` in iproute2's words
(``argument "X" is wrong: ...``, ``argument "X" is required``) plus what is valid
and, for keywords and names, a did-you-mean. Numbers follow ``get_u32`` (C
``strtoul`` with base 0: decimal, ``0x`` hex, leading-0 octal).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from ipaddress import ip_interface

from esplab.errors import ToolUsageError, did_you_mean
from esplab.model.kernel.xfrm.objects import (
    MODES,
    XFRM_PROTOS,
    Address,
    LifetimeCfg,
    Prefix,
    Selector,
    XfrmMark,
    any_address,
    upper_proto_number,
)

__all__ = [
    "ID_WORDS",
    "LIMIT_FIELDS",
    "NOT_MODELLED",
    "SELECTOR_WORDS",
    "UPPER_PROTOS",
    "Cursor",
    "XfrmId",
    "bad",
    "matches",
    "parse_address",
    "parse_choice",
    "parse_flags",
    "parse_id",
    "parse_limit",
    "parse_mark",
    "parse_mode",
    "parse_prefix",
    "parse_selector",
    "parse_uint",
    "required",
    "unknown",
]

INCOMPLETE = 'Command line is not complete. Try option "help"'


def bad(
    arg: str,
    why: str,
    *,
    valid: Iterable[str] | str | None = None,
    hint: str | None = None,
    guess_from: Iterable[str] | None = None,
) -> ToolUsageError:
    """iproute2 ``invarg``: ``argument "ARG" is wrong: WHY`` (+ valid, did-you-mean)."""
    if hint is None and guess_from is not None:
        guess = did_you_mean(arg, guess_from)
        if guess is not None and guess != arg:
            hint = f"did you mean {guess}?"
    return ToolUsageError(f'argument "{arg}" is wrong: {why}', valid=valid, hint=hint)


def required(what: str, *, hint: str | None = None) -> ToolUsageError:
    """iproute2 ``missarg``."""
    return ToolUsageError(f'argument "{what}" is required', hint=hint)


def matches(word: str, pattern: str) -> bool:
    """iproute2 ``matches()``: ``word`` is a non-empty prefix of ``pattern``."""
    return bool(word) and pattern.startswith(word)


class Cursor:
    """A position in the token list."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self.tokens = list(tokens)
        self.i = 0

    def more(self) -> bool:
        return self.i < len(self.tokens)

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.more() else None

    def take(self) -> str:
        """The current word, then move on (the caller knows there is one)."""
        word = self.tokens[self.i]
        self.i += 1
        return word

    def value(self, after: str) -> str:
        """``NEXT_ARG``: the word after a keyword, or iproute2's "not complete" error."""
        if not self.more():
            raise ToolUsageError(INCOMPLETE, hint=f'"{after}" needs a value')
        return self.take()


def parse_uint(text: str, bits: int, what: str) -> int:
    """``get_u8``/``get_u16``/``get_u32``/``get_u64``: base 0, no sign, in range.

    ``what`` names the value in the error: ``argument "X" is wrong: WHAT is invalid``.
    """
    body = text
    base = 10
    if body[:2] in ("0x", "0X"):
        body, base = body[2:], 16
    elif len(body) > 1 and body.startswith("0"):
        body, base = body[1:], 8
    try:
        if not body or not body.isalnum() or not body.isascii():
            raise ValueError(text)
        value = int(body, base)
    except ValueError as exc:
        raise bad(text, f"{what} is invalid", valid=f"a number 0..{(1 << bits) - 1}") from exc
    if value >= 1 << bits:
        raise bad(text, f"{what} is invalid", valid=f"0..{(1 << bits) - 1}")
    return value


def parse_prefix(text: str, after: str, family: int = 0) -> Prefix:
    """``get_prefix``: ``ADDR[/PLEN]`` of IPv4 or IPv6 (``family`` 0: either)."""
    try:
        pfx = ip_interface(text)
    except ValueError as exc:
        raise bad(
            text,
            f'value after "{after}" has an unrecognized address family',
            valid="an IPv4 or IPv6 address, optionally /PLEN",
        ) from exc
    if family and pfx.version != family:
        raise bad(text, f'value after "{after}" is not an IPv{family} address')
    return pfx


def parse_address(text: str, after: str, family: int = 0) -> Address:
    """``get_addr``: a plain address."""
    if "/" in text:
        raise bad(text, f'value after "{after}" must be an address without /PLEN')
    return parse_prefix(text, after, family).ip


@dataclass(frozen=True)
class XfrmId:
    """``ID := [src ADDR] [dst ADDR] [proto XFRM-PROTO] [spi SPI]`` as parsed."""

    src: Prefix | None = None
    dst: Prefix | None = None
    proto: int | None = None
    spi: int | None = None

    @property
    def family(self) -> int:
        for p in (self.src, self.dst):
            if p is not None:
                return p.version
        return 0

    def addresses(self, default_family: int) -> tuple[Address, Address]:
        fam = self.family or default_family or 4
        src = self.src.ip if self.src else any_address(fam)
        dst = self.dst.ip if self.dst else any_address(fam)
        return src, dst


ID_WORDS = ("src", "dst", "proto", "spi")


def parse_id(cur: Cursor, *, loose: bool, family: int = 0) -> XfrmId:
    """``xfrm_id_parse``: consecutive src/dst/proto/spi words. Without ``loose`` the
    protocol is required (``argument "XFRM-PROTO" is required``)."""
    src = dst = None
    proto = spi = None
    start = cur.i
    while (word := cur.peek()) in ID_WORDS:
        cur.take()
        val = cur.value(word)
        if word == "src":
            src = parse_prefix(val, "src", family)
        elif word == "dst":
            dst = parse_prefix(val, "dst", family)
        elif word == "proto":
            if val not in XFRM_PROTOS and val != "ipsec-any":
                raise bad(
                    val, "XFRM-PROTO value is invalid", valid=XFRM_PROTOS, guess_from=XFRM_PROTOS
                )
            proto = 255 if val == "ipsec-any" else XFRM_PROTOS[val]
        else:
            spi = parse_uint(val, 32, "SPI value")
    if src is not None and dst is not None and src.version != dst.version:
        raise bad(
            str(dst.ip), 'the same address family is required between values after "src" and "dst"'
        )
    if not loose and proto is None:
        raise required("XFRM-PROTO", hint="add proto esp (or ah, comp)")
    if cur.i == start:
        raise required("ID")
    return XfrmId(src, dst, proto, spi)


def parse_mark(cur: Cursor, word: str = "mark") -> XfrmMark:
    """``xfrm_parse_mark``: ``mark MARK [mask MASK]`` (after the ``mark`` word, or
    ``output-mark``); the mask defaults to 0xffffffff."""
    value = parse_uint(cur.value(word), 32, f"{word.upper()} value")
    if cur.peek() == "mask":
        cur.take()
        return XfrmMark(value, parse_uint(cur.value("mask"), 32, "MASK value"))
    return XfrmMark(value)


LIMIT_FIELDS = {
    "time-soft": "soft_add_expires_seconds",
    "time-hard": "hard_add_expires_seconds",
    "time-use-soft": "soft_use_expires_seconds",
    "time-use-hard": "hard_use_expires_seconds",
    "byte-soft": "soft_byte_limit",
    "byte-hard": "hard_byte_limit",
    "packet-soft": "soft_packet_limit",
    "packet-hard": "hard_packet_limit",
}


def parse_limit(cur: Cursor, lft: LifetimeCfg) -> LifetimeCfg:
    """``xfrm_lifetime_cfg_parse``: exactly one ``LIMIT`` pair after ``limit``."""
    word = cur.value("limit")
    if word not in LIMIT_FIELDS:
        raise bad(word, '"LIMIT" is invalid', valid=LIMIT_FIELDS, guess_from=LIMIT_FIELDS)
    value = parse_uint(cur.value(word), 64, f'"{word}" value')
    return replace(lft, **{LIMIT_FIELDS[word]: value})


_PORT_PROTOS = (6, 17, 132, 33, 0)  # tcp udp sctp dccp, and any (newest iproute2)
_TYPE_PROTOS = (1, 58, 135)  # icmp ipv6-icmp mobility-header
UPSPEC_WORDS = ("proto", "sport", "dport", "type", "code", "key")
SELECTOR_WORDS = ("src", "dst", "dev", *UPSPEC_WORDS)
# The PROTO names a selector takes (a number works too).
UPPER_PROTOS = ("any", "tcp", "udp", "icmp", "ipv6-icmp", "sctp", "dccp", "gre", "mobility-header")


def parse_selector(cur: Cursor, family: int = 0) -> Selector:
    """``xfrm_selector_parse`` + ``xfrm_selector_upspec_parse``.

    Consumes src/dst/dev and the upper-layer words, stops at anything else. The
    family stays 0 when no address is given; the caller fills it in.
    """
    src: Prefix | None = None
    dst: Prefix | None = None
    dev: str | None = None
    proto = sport = sport_mask = dport = dport_mask = 0
    used: set[str] = set()
    start = cur.i
    while (word := cur.peek()) in SELECTOR_WORDS:
        cur.take()
        val = cur.value(word)
        used.add(word)
        if word == "src":
            src = parse_prefix(val, word, family)
        elif word == "dst":
            dst = parse_prefix(val, word, family)
        elif word == "dev":
            dev = None if val == "none" else val
        elif word == "proto":
            proto = _upper_proto(val)
        elif word == "sport":
            sport = parse_uint(val, 16, 'value after "sport"')
            sport_mask = 0xFFFF if sport else 0
        elif word == "dport":
            dport = parse_uint(val, 16, 'value after "dport"')
            dport_mask = 0xFFFF if dport else 0
        elif word == "type":
            sport, sport_mask = parse_uint(val, 8, 'value after "type"'), 0xFFFF
        elif word == "code":
            dport, dport_mask = parse_uint(val, 8, 'value after "code"'), 0xFFFF
        else:
            key = _gre_key(val)
            sport, dport, sport_mask, dport_mask = key >> 16, key & 0xFFFF, 0xFFFF, 0xFFFF
    if cur.i == start:
        raise required("SELECTOR")
    if src is not None and dst is not None and src.version != dst.version:
        raise bad(
            str(dst), 'the same address family is required between values after "src" and "dst"'
        )
    _check_upspec(used, proto)
    fam = src.version if src is not None else dst.version if dst is not None else 0
    any_pfx = ip_interface("::/0" if fam == 6 else "0.0.0.0/0")
    return Selector(
        src=src or any_pfx,
        dst=dst or any_pfx,
        proto=proto,
        sport=sport,
        sport_mask=sport_mask,
        dport=dport,
        dport_mask=dport_mask,
        dev=dev,
        family=fam,
    )


def _upper_proto(val: str) -> int:
    if val == "any":
        return 0
    number = upper_proto_number(val)
    if number is not None:
        return number
    if val[:1].isdigit():
        return parse_uint(val, 8, "PROTO value")
    raise bad(val, "PROTO value is invalid", valid=UPPER_PROTOS, guess_from=UPPER_PROTOS)


def _gre_key(val: str) -> int:
    if "." in val:
        try:
            return int(ip_interface(val).ip)
        except ValueError as exc:
            raise bad(val, 'value after "key" is invalid') from exc
    return parse_uint(val, 32, 'value after "key"')


def _check_upspec(used: set[str], proto: int) -> None:
    """The upper-layer word / protocol combinations iproute2 refuses."""
    name = str(proto)
    if used & {"sport", "dport"} and proto not in _PORT_PROTOS:
        raise ToolUsageError(
            f'"sport" and "dport" are invalid with PROTO value "{name}"',
            valid="proto tcp, udp, sctp or dccp",
        )
    if used & {"type", "code"} and proto not in _TYPE_PROTOS:
        raise ToolUsageError(
            f'"type" and "code" are invalid with PROTO value "{name}"',
            valid="proto icmp, ipv6-icmp or mobility-header",
        )
    if "key" in used and proto != 47:
        raise ToolUsageError(f'"key" is invalid with PROTO value "{name}"', valid="proto gre")


# Keywords of iproute2's grammar that the lab does not model (care-of addresses,
# security contexts, per-CPU SAs).
NOT_MODELLED = ("coa", "ctx", "cpu", "pcpu-num")


def unknown(word: str, words: Sequence[str], hint: str | None = None) -> ToolUsageError:
    """An unexpected word: ``argument "X" is wrong: unknown`` with a did-you-mean."""
    if word in NOT_MODELLED:
        return bad(word, "not modelled by esplab", hint="leave it out")
    return bad(word, "unknown", valid=words, hint=hint, guess_from=words)


def parse_mode(word: str) -> str:
    """``xfrm_mode_parse`` (prefix matches, in iproute2's order)."""
    for mode in ("transport", "tunnel", "ro", "in_trigger", "beet"):
        if matches(word, mode):
            return mode
    raise bad(word, "MODE value is invalid", valid=MODES, guess_from=MODES)


def parse_choice(word: str, valid: tuple[str, ...], what: str) -> str:
    """One of a few fixed words (``DIR``, ``PTYPE``, ``ACTION``, ``LEVEL``...)."""
    if word not in valid:
        raise bad(word, f"{what} value is invalid", valid=valid, guess_from=valid)
    return word


def parse_flags(cur: Cursor, table: Mapping[str, int], after: str) -> frozenset[str]:
    """``flag`` / ``extra-flag``: names until another word, or one ``0x`` value."""
    word = cur.value(after)
    if len(word) > 2 and word.startswith("0x"):
        bits = parse_uint(word, 8 if after == "flag" else 32, "FLAG value")
        names = frozenset(n for n, b in table.items() if bits & b)
        if sum(table[n] for n in names) != bits:
            raise bad(word, "FLAG value has bits esplab does not model", valid=table)
        return names
    if word not in table:
        raise bad(word, "FLAG value is invalid", valid=table, guess_from=table)
    chosen = {word}
    while (nxt := cur.peek()) is not None and nxt in table:
        chosen.add(cur.take())
    return frozenset(chosen)
