"""Path MTU learned from ICMP: the route exceptions a node keeps per destination.

When ICMP fragmentation needed (IPv4, type 3 code 4) or packet too big (ICMPv6
type 2) reaches the node that sent the packet, the error handler of the socket that
sent it records the MTU as an exception on the route to the packet's destination
(``ipv4_sk_update_pmtu`` -> ``__ip_rt_update_pmtu``; ``rt6_do_update_pmtu``) [C];
the lab has no sockets, and its sender stands for one [D]. Later packets the node
sends to that destination are measured against it (forwarded ones are not) and
``ip route get`` shows it (``cache ... mtu N``) [C]. A report only lowers the MTU,
and is raised to the protocol's floor first: ``ip_rt_min_pmtu`` (552) for IPv4,
``IPV6_MIN_MTU`` (1280) for IPv6 [C]. An exception goes with its route (a device
going down, the route deleted or replaced) [C]. The kernel forgets one after
``ip_rt_mtu_expires`` (10 minutes); the lab clock does not run that long, so here it
lasts until ``ip route flush cache``, its route goes, or a reset [M].
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address
from typing import NamedTuple

from esplab.model.kernel.stack.addr import IPAddress

__all__ = ["IPV4_MIN_PMTU", "IPV6_MIN_MTU", "TooBig", "learn", "too_big_report"]

IPV4_MIN_PMTU = 552  # net.ipv4.route.min_pmtu
IPV6_MIN_MTU = 1280  # RFC 8200 5


class TooBig(NamedTuple):
    """An ICMP too-big report: the destination of the packet that did not fit, and
    the MTU the router gave."""

    dst: IPAddress
    mtu: int


def too_big_report(packet: bytes, hlen: int, proto: int) -> TooBig | None:
    """The report an ICMP message (IP header of ``hlen`` bytes, protocol ``proto``)
    carries, or None when it is not fragmentation needed / packet too big with the
    offending packet's header inside."""
    icmp = packet[hlen:]
    if proto == 1 and len(icmp) >= 8 + 20 and icmp[0] == 3 and icmp[1] == 4:
        inner = icmp[8:]
        if inner[0] >> 4 == 4:
            return TooBig(IPv4Address(inner[16:20]), int.from_bytes(icmp[6:8], "big"))
    if proto == 58 and len(icmp) >= 8 + 40 and icmp[0] == 2 and icmp[1] == 0:
        inner = icmp[8:]
        if inner[0] >> 4 == 6:
            return TooBig(IPv6Address(inner[24:40]), int.from_bytes(icmp[4:8], "big"))
    return None


def learn(report: TooBig, current: int) -> int | None:
    """The path MTU ``report`` teaches when it lowers ``current`` (the route's or an
    earlier exception's), raised to the family's floor first; None when it does not."""
    floor = IPV4_MIN_PMTU if report.dst.version == 4 else IPV6_MIN_MTU
    mtu = max(report.mtu, floor)
    return mtu if mtu < current else None
