"""What every ``ip`` object handler shares: iproute2's global options, a cursor over
the words after the object, the ``show`` verbs and the address argument."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address

from esplab.errors import BadArgument

__all__ = ["FAMILIES", "SHOW_VERBS", "IpArgs", "IpOpts", "addr_arg"]

FAMILIES = {"inet": 4, "inet6": 6}

# The verbs each object takes as "show".
SHOW_VERBS = ("show", "list", "sh", "ls", "lst")


@dataclass
class IpOpts:
    """iproute2's global options (ip/ip.c): -s counts, -4/-6/-f pick a family, -br."""

    stats: int = 0
    family: int | None = None
    brief: bool = False


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


def addr_arg(text: str) -> IPv4Address | IPv6Address:
    try:
        return ip_address(text)
    except ValueError:
        raise BadArgument(f"'{text}' is not an IP address", valid="IPv4 or IPv6 address") from None
