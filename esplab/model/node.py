"""A node of the lab (the ap or a peer): devices, addresses, routes, neighbours, flows.

Routing is longest-prefix match over the node's table; neighbours are static
(preset at boot, changeable with ``ip neigh``), so no ARP/ND exchange is needed to
reach a peer, which keeps journeys short and deterministic. Every modelled rule
here is ordinary Linux behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_address,
)
from typing import Any

from esplab.errors import NoSuchPort
from esplab.model.netdev import NetDev

__all__ = ["Flow", "Neighbour", "Node", "Route"]

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network


@dataclass
class Route:
    dst: IPNetwork
    dev: str
    via: IPAddress | None = None
    src: IPAddress | None = None
    proto: str = "static"

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


@dataclass
class Neighbour:
    addr: IPAddress
    dev: str
    mac: str
    state: str = "PERMANENT"

    def render(self) -> str:
        return f"{self.addr} dev {self.dev} lladdr {self.mac} {self.state}"


@dataclass
class Flow:
    """What the sink of a node received for one (proto, src, dst, sport, dport)."""

    packets: int = 0
    bytes: int = 0


@dataclass
class Node:
    """One node: the ap or a peer."""

    name: str
    role: str
    devs: dict[str, NetDev] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)
    neigh: list[Neighbour] = field(default_factory=list)
    forwarding: bool = False
    flows: dict[tuple[Any, ...], Flow] = field(default_factory=dict)
    xfrm: Any = None
    ip_id: int = 0

    def dev(self, name: str) -> NetDev:
        try:
            return self.devs[name]
        except KeyError:
            raise NoSuchPort(
                f"{self.name} has no device '{name}'", valid=list(self.devs), value=name
            ) from None

    def route(self, dst: IPAddress) -> Route | None:
        """Longest-prefix match; None when unreachable."""
        best: Route | None = None
        for route in self.routes:
            if route.dst.version != dst.version or dst not in route.dst:
                continue
            if best is None or route.dst.prefixlen > best.dst.prefixlen:
                best = route
        return best

    def owns(self, addr: IPAddress) -> bool:
        return any(iface.ip == addr for dev in self.devs.values() for iface in dev.addrs)

    def source_for(self, dev: str, version: int) -> IPAddress | None:
        for iface in self.dev(dev).addrs:
            if iface.version == version:
                return iface.ip
        return None

    def lookup_neigh(self, addr: IPAddress, dev: str) -> Neighbour | None:
        return next((n for n in self.neigh if n.addr == addr and n.dev == dev), None)

    def next_ip_id(self) -> int:
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        return self.ip_id

    def count_flow(self, key: tuple[Any, ...], size: int) -> None:
        flow = self.flows.setdefault(key, Flow())
        flow.packets += 1
        flow.bytes += size


def parse_addr(text: str) -> IPAddress:
    return ip_address(text)
