"""A node of the lab (the ap or a peer): devices, addresses, routes, neighbours, flows.

Routing is longest-prefix match over the node's table; neighbours are static
(preset at boot, changeable with ``ip neigh``), so no ARP/ND exchange is needed to
reach a peer, which keeps journeys short and deterministic. Every modelled rule
here is ordinary Linux behaviour.

Route, neighbour and local-address lookups are remembered per node. Whoever
changes ``routes``, ``neigh`` or a device's ``addrs`` calls :meth:`Node.invalidate`
(replacing or resizing the route or neighbour list is noticed on its own).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import (
    IPv6Interface,
)
from typing import TYPE_CHECKING, Any

from esplab.errors import KernelError, NoSuchPort
from esplab.model.kernel.stack.addr import IPAddress
from esplab.model.kernel.stack.netdev import NetDev, eui64_link_local, is_link_local
from esplab.model.kernel.stack.pmtu_cache import TooBig, learn
from esplab.model.kernel.stack.route import (
    V6_LOOPBACK,
    Neighbour,
    Route,
    brings_prefix_route,
    connected_route,
    is_loopback,
    route_metric,
    short_route,
)

if TYPE_CHECKING:
    from esplab.model.kernel.xfrm.tables import FlowKey

__all__ = [
    "Flow",
    "FlowId",
    "Node",
]


_MEMO_MAX = 4096  # entries a lookup cache holds before it starts again
_MISS: Any = object()


@dataclass
class Flow:
    """What the sink of a node received for one flow: packets and IP bytes."""

    packets: int = 0
    bytes: int = 0


#: A flow as the sink counts it: (src, dst, proto, sport, dport); ports are 0 for a
#: protocol without them (ICMP, ESP...).
FlowId = tuple[IPAddress, IPAddress, int, int, int]


@dataclass
class Node:
    """One node: the ap or a peer."""

    name: str
    role: str
    devs: dict[str, NetDev] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)
    neigh: list[Neighbour] = field(default_factory=list)
    forwarding: bool = False
    flows: dict[FlowId, Flow] = field(default_factory=dict)
    # Path MTUs learned from ICMP, by destination (route exceptions; pmtu_cache), each
    # with the route it hangs off: an exception goes with its route (fnhe, rt6
    # exception table). Read them through learned_pmtus() / path_mtu(), which drop
    # stale ones.
    pmtu: dict[IPAddress, tuple[int, Route | None]] = field(default_factory=dict)
    xfrm: Any = None
    # Lookup caches (see invalidate): dst -> route, (addr, dev) -> neighbour, the
    # addresses the node owns, route -> its rendered text; and the lists they were
    # built from, with their lengths.
    _routes_for: dict[IPAddress, Route | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _routes_seen: tuple[list[Route] | None, int] = field(
        default=(None, 0), init=False, repr=False, compare=False
    )
    _neigh_for: dict[tuple[IPAddress, str], Neighbour | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _neigh_seen: tuple[list[Neighbour] | None, int] = field(
        default=(None, 0), init=False, repr=False, compare=False
    )
    _owned: frozenset[IPAddress] | None = field(default=None, init=False, repr=False, compare=False)
    _owned_raw: frozenset[bytes] | None = field(default=None, init=False, repr=False, compare=False)
    _conduits: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)

    def invalidate(self) -> None:
        """Forget the remembered lookups: call after changing routes, neighbours or
        the addresses of a device."""
        self._routes_for.clear()
        self._routes_seen = (None, 0)
        self._neigh_for.clear()
        self._neigh_seen = (None, 0)
        self._owned = None
        self._owned_raw = None

    def dev(self, name: str) -> NetDev:
        try:
            return self.devs[name]
        except KeyError:
            raise NoSuchPort(
                f"{self.name} has no device '{name}'", valid=list(self.devs), value=name
            ) from None

    def route(self, dst: IPAddress) -> Route | None:
        """Longest-prefix match; None when unreachable."""
        routes = self.routes
        seen = self._routes_seen
        memo = self._routes_for
        if seen[0] is not routes or seen[1] != len(routes):
            memo.clear()
            self._routes_seen = (routes, len(routes))
        else:
            hit: Route | None = memo.get(dst, _MISS)
            if hit is not _MISS:
                return hit
        best: Route | None = None
        for route in routes:
            if route.dst.version != dst.version or dst not in route.dst:
                continue
            if best is None or route.dst.prefixlen > best.dst.prefixlen:
                best = route
            elif (
                route.dst.prefixlen == best.dst.prefixlen
                and (route.metric is not None or best.metric is not None)
                and route_metric(route) < route_metric(best)
            ):
                # Among routes to one prefix the lowest priority wins (fib_table_lookup
                # walks the aliases in priority order; fib6 siblings by metric) [C].
                best = route
        if len(memo) >= _MEMO_MAX:
            memo.clear()
        memo[dst] = best
        return best

    def gateway_dev(self, via: IPAddress, dev: str | None) -> str:
        """The device a route ``via`` the gateway would use, or the kernel's refusal.

        IPv4, net/ipv4/fib_semantics.c ``fib_check_nh_v4_gw``: the gateway is looked up
        with scope link (``flowi4_scope = scope + 1``, at least RT_SCOPE_LINK), so only a
        connected (link-scope) route or a local address resolves it; ``dev`` restricts
        the lookup to that device (``flowi4_oif``). No match: "Nexthop has invalid
        gateway" with the lookup's ENETUNREACH; a match on a down device: ENETDOWN.
        IPv6, net/ipv6/route.c ``ip6_validate_gw``: a local address is refused (EINVAL,
        "Gateway can not be a local address"); otherwise ``ip6_route_check_nh`` takes
        the longest match (on ``dev`` if given) and refuses one that itself needs a
        gateway, or none, with EHOSTUNREACH."""
        if via.version == 4:
            if self.owns(via):  # its local route (scope host) answers the lookup
                owner = next(d for d in self.devs.values() if via in (i.ip for i in d.addrs))
                if dev is None or dev == owner.name:
                    if not owner.up:
                        raise KernelError("ENETDOWN", f"{owner.name} is down")
                    return owner.name
            best: Route | None = None
            for route in self.routes:
                if route.dst.version != 4 or route.via is not None or via not in route.dst:
                    continue
                if dev is not None and route.dev != dev:
                    continue
                if best is None or route.dst.prefixlen > best.dst.prefixlen:
                    best = route
            if best is None:
                on = f" on {dev}" if dev else ""
                raise KernelError(
                    "ENETUNREACH",
                    f"Nexthop has invalid gateway: {via} is on no connected subnet{on}",
                    hint="a gateway must be on a subnet of an address of the device (ip addr)",
                )
            if not self.dev(best.dev).up:
                raise KernelError("ENETDOWN", f"{best.dev} is down")
            return best.dev
        if self.owns(via):
            raise KernelError("EINVAL", f"Gateway can not be a local address: {via}")
        best = None
        for route in self.routes:
            if route.dst.version != 6 or via not in route.dst:
                continue
            if dev is not None and route.dev != dev:
                continue
            if best is None or route.dst.prefixlen > best.dst.prefixlen:
                best = route
        if best is None or best.via is not None:
            on = f" on {dev}" if dev else ""
            raise KernelError(
                "EHOSTUNREACH",
                f"gateway {via} is on no connected subnet{on}",
                hint="a gateway must be on a subnet of an address of the device (ip addr)",
            )
        return best.dev

    def link_down(self, dev: str) -> list[str]:
        """What IP loses when ``dev`` goes admin down (NETDEV_DOWN); one note per change.

        IPv4, net/ipv4/fib_frontend.c ``fib_netdev_event`` -> ``fib_disable_ip``:
        ``fib_sync_down_dev`` marks every nexthop on the device dead and ``fib_flush``
        deletes those routes, connected and static alike. The addresses stay.
        IPv6, net/ipv6/addrconf.c ``addrconf_ifdown``: with ``keep_addr_on_down`` at its
        default 0 the device's addresses are deleted (with their prefix routes), and
        ``rt6_sync_down_dev`` (route.c ``fib6_ifdown``) deletes every route via it."""
        gone = [r for r in self.routes if r.dev == dev]  # in table order, both families
        self.routes = [r for r in self.routes if r.dev != dev]
        netdev = self.dev(dev)
        if netdev.kind != "loopback":
            netdev.carrier_changes += 1  # the carrier goes with the device [U]
        return self.ipv6_off(dev, "keep_addr_on_down=0", gone)

    def ipv6_on(self, dev: str) -> IPv6Interface | None:
        """addrconf on NETDEV_UP (net/ipv6/addrconf.c ``addrconf_notify`` ->
        ``addrconf_dev_config``): an up Ethernet device whose MTU is at least
        IPV6_MIN_MTU gets its EUI-64 link-local address (:func:`eui64_link_local`)
        with the prefix route fe80::/64 (proto kernel, metric 256). NETDEV_CHANGEMTU
        back to 1280 or more does the same for a device that lost IPv6 [C; both
        checked against Linux 6.12]. The address is shown as settled: duplicate
        address detection, which keeps it "tentative" for a second or two, is not
        modelled [M]. Returns the address added, or None."""
        netdev = self.dev(dev)
        if netdev.kind == "loopback" or not netdev.up or netdev.mtu < 1280:
            return None
        ll = eui64_link_local(netdev.mac)
        if ll in netdev.addrs:
            return None
        netdev.addrs.append(ll)
        self.routes = [*self.routes, connected_route(ll, dev)]
        self.invalidate()
        return ll

    def ipv6_off(self, dev: str, why: str, gone: list[Route] | None = None) -> list[str]:
        """``addrconf_ifdown`` (net/ipv6/addrconf.c): the device's IPv6 addresses are
        deleted with their prefix routes, and ``rt6_sync_down_dev`` deletes every IPv6
        route via it. It runs on NETDEV_DOWN, and on NETDEV_CHANGEMTU below
        IPV6_MIN_MTU (1280). ``gone``: routes the caller already took away (they are
        named in the notes first). One note per change."""
        netdev = self.dev(dev)
        gone = [*(gone or []), *(r for r in self.routes if r.dev == dev and r.dst.version == 6)]
        self.routes = [r for r in self.routes if not (r.dev == dev and r.dst.version == 6)]
        lost6 = [a for a in netdev.addrs if a.version == 6]
        netdev.addrs = [a for a in netdev.addrs if a.version == 4]
        self.invalidate()
        notes: list[str] = []
        if gone:
            notes.append("flushed routes " + ", ".join(short_route(r) for r in gone))
        if lost6:
            deleted = ", ".join(map(str, lost6))
            notes.append(f"deleted IPv6 addresses {deleted} ({why})")
        return notes

    def disable_ip(self, dev: str) -> list[str]:
        """IPv4 stops on ``dev`` (net/ipv4/fib_frontend.c ``fib_disable_ip``):
        ``fib_sync_down_dev`` (force) marks every nexthop on it dead and ``fib_flush``
        deletes those routes, connected and static alike. ``fib_inetaddr_event`` runs
        it on NETDEV_DOWN of the device's last IPv4 address. One note for what went."""
        gone = [r for r in self.routes if r.dev == dev and r.dst.version == 4]
        if not gone:
            return []
        self.routes = [r for r in self.routes if r not in gone]
        self.invalidate()
        return [f"{dev}: flushed routes " + ", ".join(short_route(r) for r in gone)]

    def link_up(self, dev: str) -> list[str]:
        """What IP regains when ``dev`` comes up (NETDEV_UP): ``fib_netdev_event`` runs
        ``fib_add_ifaddr`` for each IPv4 address, which adds its prefix route again
        (net/ipv4/fib_frontend.c). Static routes flushed on the way down stay gone, and
        so do the IPv6 addresses ``addrconf_ifdown`` deleted."""
        back: list[Route] = []
        netdev = self.dev(dev)
        if netdev.kind != "loopback":
            netdev.carrier_changes += 1
        for iface in netdev.addrs:
            if iface.version != 4 or not brings_prefix_route(iface):
                continue
            route = connected_route(iface, dev)
            if not any(
                r.dst == route.dst and r.dev == dev and r.proto == "kernel" for r in self.routes
            ):
                back.append(route)
        self.routes = [*self.routes, *back]
        self.ipv6_on(dev)
        self.invalidate()
        if not back:
            return []
        return ["connected routes back " + ", ".join(short_route(r) for r in back)]

    @staticmethod
    def route_text(route: Route) -> str:
        """``route.render()``, kept by the route (:attr:`Route.text`)."""
        return route.text

    def owns(self, addr: IPAddress) -> bool:
        """``addr`` is local: one of the devices' addresses, or the loopback network
        lo holds (127.0.0.0/8, ::1; the local table routes all of 127/8 to lo)."""
        owned = self._owned
        if owned is None:
            owned = self._owned = frozenset(
                iface.ip for dev in self.devs.values() for iface in dev.addrs
            )
        return addr in owned or is_loopback(addr)

    def is_conduit(self, name: str) -> bool:
        """``name`` is a DSA conduit: a user port of the node names it (the node's
        devices are fixed when it is built)."""
        conduits = self._conduits
        if conduits is None:
            conduits = self._conduits = frozenset(
                d.conduit for d in self.devs.values() if d.conduit is not None
            )
        return name in conduits

    def owns_raw(self, raw: bytes) -> bool:
        """:meth:`owns` for an address as it stands in a header (4 or 16 bytes): the
        walk asks it of every packet, and bytes hash faster than address objects."""
        owned = self._owned_raw
        if owned is None:
            owned = self._owned_raw = frozenset(
                iface.ip.packed for dev in self.devs.values() for iface in dev.addrs
            )
        if raw in owned:
            return True
        return raw[0] == 127 if len(raw) == 4 else raw == V6_LOOPBACK  # raw_loopback

    def source_for(self, dev: str, version: int) -> IPAddress | None:
        """The first address of ``version`` on ``dev``; never a link-local one, which
        the kernel picks only for a link-local destination (RFC 6724 rule 2, scope)."""
        for iface in self.dev(dev).addrs:
            if iface.version == version and not is_link_local(iface):
                return iface.ip
        return None

    def lookup_neigh(self, addr: IPAddress, dev: str) -> Neighbour | None:
        neigh = self.neigh
        seen = self._neigh_seen
        memo = self._neigh_for
        key = (addr, dev)
        if seen[0] is not neigh or seen[1] != len(neigh):
            memo.clear()
            self._neigh_seen = (neigh, len(neigh))
        else:
            hit: Neighbour | None = memo.get(key, _MISS)
            if hit is not _MISS:
                return hit
        found = next((n for n in neigh if n.addr == addr and n.dev == dev), None)
        if len(memo) >= _MEMO_MAX:
            memo.clear()
        memo[key] = found
        return found

    def learn_pmtu(self, report: TooBig) -> tuple[int | None, int]:
        """ICMP too big for a packet this node sent: keep the MTU as an exception on
        the route to the destination when it lowers the path MTU (pmtu_cache.learn).
        Returns (the MTU kept or None, the path MTU before)."""
        route = self.route(report.dst)
        current = self.path_mtu(report.dst) or (self.dev(route.dev).mtu if route else 0xFFFF)
        mtu = learn(report, current)
        if mtu is not None:
            self.pmtu[report.dst] = (mtu, route)
        return mtu, current

    def path_mtu(self, dst: IPAddress) -> int | None:
        """The path MTU learned for ``dst``, while the route it was learned on stands."""
        entry = self.pmtu.get(dst)
        if entry is None:
            return None
        if self.route(dst) is not entry[1]:
            del self.pmtu[dst]  # the route went (down, deleted, replaced): so did it
            return None
        return entry[0]

    def flush_pmtus(self, version: int) -> int:
        """``ip [-6] route flush cache``: forget the path MTUs of one family; how many."""
        gone = [dst for dst in self.pmtu if dst.version == version]
        for dst in gone:
            del self.pmtu[dst]
        return len(gone)

    def learned_pmtus(self) -> dict[IPAddress, int]:
        """Every path MTU still learned, by destination (stale ones dropped)."""
        return {dst: mtu for dst in list(self.pmtu) if (mtu := self.path_mtu(dst)) is not None}

    def count_flow(self, key: FlowKey, size: int) -> None:
        """The sink received ``size`` bytes of the flow ``key`` (a policy lookup's flow
        key: its first five items name the flow, the device is left out)."""
        fid: FlowId = key[:5]  # the device (key[5]) is not part of the flow
        flow = self.flows.get(fid)
        if flow is None:
            flow = self.flows[fid] = Flow()
        flow.packets += 1
        flow.bytes += size
