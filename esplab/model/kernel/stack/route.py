"""Routes and neighbours as a node's stack keeps them, and the address tests the walk
asks at every hop (loopback, a connected prefix). Ordinary Linux behaviour
(``ip route``/``ip neigh`` print forms from iproute2's ip/iproute.c and ip/ipneigh.c).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from ipaddress import IPv4Interface, IPv6Interface

from esplab.model.kernel.stack.addr import IPAddress, IPNetwork

__all__ = [
    "V6_LOOPBACK",
    "Neighbour",
    "Route",
    "brings_prefix_route",
    "connected_route",
    "is_loopback",
    "raw_loopback",
    "route_metric",
    "short_route",
]


@dataclass
class Route:
    dst: IPNetwork
    dev: str
    via: IPAddress | None = None
    src: IPAddress | None = None
    # rtm_protocol: "kernel" for a prefix route an address brings, "boot" (RTPROT_BOOT)
    # for one ip route add makes (iproute2 iproute_modify) or the boot config sets up.
    proto: str = "boot"
    # The route's priority ("metric N"); None for the default (see route_metric).
    metric: int | None = None

    def render(self) -> str:
        default = self.dst.prefixlen == 0
        head = "default" if default else str(self.dst)
        text = head
        if self.via is not None:
            text += f" via {self.via}"
        text += f" dev {self.dev}"
        if self.proto == "kernel":
            text += " proto kernel scope link"
        if self.src is not None:
            text += f" src {self.src}"
        return text

    @cached_property
    def text(self) -> str:
        """:meth:`render`, once: a route is never changed in place (``ip route``
        replaces a route with a new one)."""
        return self.render()


# IPv6 route metrics: IP6_RT_PRIO_ADDRCONF for a prefix route an address brings,
# IP6_RT_PRIO_USER for one ip route add makes without a metric (include/net/ip6_route.h).
IP6_RT_PRIO_ADDRCONF = 256
IP6_RT_PRIO_USER = 1024


def route_metric(route: Route) -> int:
    """The route's priority as the kernel keeps it: the metric given, else 0 for IPv4
    (fib_create_info: fc_priority) and, for IPv6, 256 for a prefix route an address
    brings and 1024 for one added without a metric (net/ipv6/route.c
    ``ip6_route_info_create``) [C]."""
    if route.metric is not None:
        return route.metric
    if route.dst.version == 4:
        return 0
    return IP6_RT_PRIO_ADDRCONF if route.proto == "kernel" else IP6_RT_PRIO_USER


def connected_route(iface: IPv4Interface | IPv6Interface, dev: str) -> Route:
    """The prefix route an address brings (``fib_add_ifaddr`` / ``addrconf_prefix_route``):
    proto kernel, scope link, the address as preferred source."""
    return Route(iface.network, dev, src=iface.ip, proto="kernel")


def brings_prefix_route(iface: IPv4Interface | IPv6Interface) -> bool:
    """Whether an address brings a prefix route. IPv4 (net/ipv4/fib_frontend.c
    ``fib_add_ifaddr``): not a /32, whose prefix is the address itself, nor one whose
    prefix is in 0.0.0.0/8 (``ipv4_is_zeronet``). IPv6 (net/ipv6/addrconf.c
    ``inet6_addr_add`` -> ``addrconf_prefix_route``): every one, a /128 too."""
    if iface.version == 6:
        return True
    return iface.network.prefixlen < 32 and int(iface.network.network_address) >> 24 != 0


def short_route(route: Route) -> str:
    """A route in a few words: its prefix ("default") and gateway."""
    head = "default" if route.dst.prefixlen == 0 else str(route.dst)
    return f"{head} via {route.via}" if route.via is not None else head


@dataclass
class Neighbour:
    addr: IPAddress
    dev: str
    mac: str
    state: str = "PERMANENT"

    def render(self) -> str:
        """The neighbour as ``ip neigh`` prints it (ip/ipneigh.c ``print_neigh``): the
        state followed by a blank."""
        return f"{self.addr} dev {self.dev} lladdr {self.mac} {self.state} "


def is_loopback(addr: IPAddress) -> bool:
    """``addr.is_loopback`` (127.0.0.0/8, ::1) without ipaddress's network arithmetic:
    the walk asks it at every hop."""
    n = int(addr)
    return n >> 24 == 127 if addr.version == 4 else n == 1


V6_LOOPBACK = bytes(15) + b"\x01"


def raw_loopback(raw: bytes) -> bool:
    """:func:`is_loopback` of an address as it stands in a header (4 or 16 bytes)."""
    return raw[0] == 127 if len(raw) == 4 else raw == V6_LOOPBACK
