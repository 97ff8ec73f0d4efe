"""What every ``ip`` object handler shares: iproute2's global options (parsed in
esplab.model.tools.iproute2.options, named here for the handlers), a cursor over
the words after the object, keyword abbreviations (objects and verbs resolved as
iproute2 does), and the address and prefix arguments (lib/utils.c)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

from esplab.errors import BadArgument
from esplab.model.tools.iproute2.options import FAMILIES, IpOpts
from esplab.model.tools.iproute2.xfrm_words import matches

__all__ = [
    "FAMILIES",
    "FAMILY_NAME",
    "IpArgs",
    "IpOpts",
    "Keyword",
    "Prefix",
    "addr_arg",
    "decimal",
    "get_prefix",
    "matches",
    "resolve",
]


class IpArgs:
    """A cursor over iproute2-style words, with its error messages."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.i = 0

    def more(self) -> bool:
        return self.i < len(self.words)

    def peek(self) -> str:
        return self.words[self.i] if self.more() else ""

    def take(self, what: str) -> str:
        if not self.more():
            raise BadArgument(f"missing {what}")
        self.i += 1
        return self.words[self.i - 1]


def decimal(text: str) -> bool:
    """``text`` is a decimal number as iproute2's ``get_unsigned`` reads one: ASCII
    digits only (``str.isdigit`` also takes "²" and other scripts' digits)."""
    return text.isascii() and text.isdigit()


def addr_arg(text: str) -> IPv4Address | IPv6Address:
    try:
        return ip_address(text)
    except ValueError:
        raise BadArgument(f"'{text}' is not an IP address", valid="IPv4 or IPv6 address") from None


FAMILY_NAME = {None: "any valid", 4: "inet", 6: "inet6"}


@dataclass(frozen=True)
class Prefix:
    """iproute2's ``inet_prefix`` as ``get_prefix`` (lib/utils.c) fills it: the family
    (None for default/all/any without -4/-6), the address bits, the length and
    whether a length was given (PREFIXLEN_SPECIFIED; "default" sets it too)."""

    family: int | None
    addr: int
    bitlen: int
    specified: bool


@dataclass(frozen=True)
class Keyword:
    """One word iproute2 compares a command word with: ``name`` as its source spells
    it, what esplab makes of it (``means``; None for a word iproute2 has and esplab does
    not model), and whether it must be typed in full (``strcmp`` rather than
    ``matches``, as "chg")."""

    name: str
    means: str | None
    exact: bool = False


def resolve(
    word: str, table: Sequence[Keyword], valid: Sequence[str], kind: str, where: str = ""
) -> str:
    """What ``word`` means, read as iproute2 reads an object or a verb: the first entry
    of ``table`` (in iproute2's source order) that it abbreviates wins, so ``ip l s`` is
    set (ip/iplink.c tests "set" before "show") and ``ip a s`` is show (ip/ipaddress.c
    tests "show" before "save"). ``kind`` and ``where`` place the word in the error
    ('Command "x" is unknown for ip link'); ``valid`` lists what esplab accepts."""
    for key in table:
        if word == key.name if key.exact else matches(word, key.name):
            if key.means is None:
                named = "" if word == key.name else f" ({key.name})"
                raise BadArgument(f'{kind} "{word}"{named} is not modelled{where}', valid=valid)
            return key.means
    raise BadArgument(f'{kind} "{word}" is unknown{where}', valid=valid, value=word)


def get_prefix(word: str, family: int | None) -> Prefix:
    """lib/utils.c ``get_prefix``: default (length 0, PREFIXLEN_SPECIFIED), all or any
    (no length), or ADDR[/LEN] of ``family``; an address without a length is a host."""
    name, slash, length = word.partition("/")
    refuse = BadArgument(
        f'{FAMILY_NAME[family]} prefix is expected rather than "{word}"',
        valid="ADDR[/LEN], default, all or any" + ("" if family is None else f" (IPv{family})"),
        value=word,
    )
    if name in ("default", "all", "any"):
        if slash:
            raise refuse
        return Prefix(family, 0, 0, name == "default")
    try:
        addr = ip_address(name)
    except ValueError:
        raise refuse from None
    if family is not None and addr.version != family:
        raise refuse
    bitlen: int = addr.max_prefixlen
    if slash:
        try:
            bitlen = int(length) if decimal(length) else ip_network(f"0.0.0.0/{length}").prefixlen
        except ValueError:
            raise refuse from None
        if bitlen > addr.max_prefixlen:
            raise refuse
    return Prefix(addr.version, int(addr), bitlen, bool(slash))
