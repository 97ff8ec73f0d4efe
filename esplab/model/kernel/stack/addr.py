"""The address types of the stack: an IPv4 or IPv6 address, and a prefix of either."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import TypeAlias

__all__ = ["IPAddress", "IPNetwork"]

IPAddress: TypeAlias = IPv4Address | IPv6Address
IPNetwork: TypeAlias = IPv4Network | IPv6Network
