"""The iproute2 layout of a route (ip/iproute.c ``print_route``) and the route
messages ``ip route`` prints: what the kernel dumps for a main-table route
(``fib_dump_info``, net/ipv6/route.c ``rt6_fill_node``), for the local routes an
address brings (net/ipv4/fib_frontend.c ``fib_add_ifaddr``) and for a path-MTU
exception (the route cache), in the kernel's dump order."""

from __future__ import annotations

from dataclasses import dataclass, replace
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_network

from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.addr import IPAddress, IPNetwork
from esplab.model.kernel.stack.route import Route, route_metric

__all__ = [
    "RtHide",
    "RtMsg",
    "cache_msgs",
    "cached_msg",
    "fib_order",
    "local_table",
    "main_msg",
    "route_line",
]


@dataclass(frozen=True)
class RtMsg:
    """One route as the kernel answers it (an RTM_NEWROUTE message): what iproute2's
    ``print_route`` reads. ``dst`` carries rtm_dst_len; ``src`` is RTA_SRC ("from");
    ``cloned`` is RTM_F_CLONED (a route-cache answer: no proto or scope, and for IPv4
    a "cache" line with ``cache_flags``, the RTCF_* flags); ``mtu`` is the RTAX_MTU
    metric; ``pref`` is RTA_PREF (IPv6 only)."""

    dst: IPv4Network | IPv6Network
    dev: str
    type: str = "unicast"
    src: IPv4Address | IPv6Address | None = None
    via: IPv4Address | IPv6Address | None = None
    table: str = "main"
    proto: str = "boot"
    scope: str = "global"
    prefsrc: IPv4Address | IPv6Address | None = None
    metric: int | None = None
    uid: int | None = None
    cloned: bool = False
    cache_flags: tuple[str, ...] = ()
    mtu: int | None = None
    pref: str | None = None


@dataclass(frozen=True)
class RtHide:
    """What ``print_route`` leaves out because the selector pins it: the device
    (``filter.oifmask``), protocol, scope, a full-length via or src, the metric; the
    table is printed only when the selector names none (``!filter.tb``: ``ip route
    get``, which resets the filter)."""

    dev: bool = False
    proto: bool = False
    scope: bool = False
    via: bool = False
    prefsrc: bool = False
    metric: bool = False
    table: bool = True


def route_line(msg: RtMsg, hide: RtHide = RtHide()) -> str:
    """``print_route`` (iproute2 ip/iproute.c) for one message, without ``show_details``:
    each field is "name value " with its trailing space, in the order iproute2 prints
    them; the type only when not unicast; "default" for a zero-length destination (no
    RTA_DST) and the bare address for a host one; proto when not boot and scope when
    not universe ("global"), both only for an uncloned route; the IPv4 cache line
    (``print_cache_flags``) before the metrics; "pref X" last, without a space."""
    host = msg.dst.max_prefixlen
    out: list[str] = []
    if msg.type != "unicast":
        out.append(f"{msg.type} ")
    if msg.dst.prefixlen == 0:
        out.append("default ")
    elif msg.dst.prefixlen == host:
        out.append(f"{msg.dst.network_address} ")
    else:
        out.append(f"{msg.dst} ")
    if msg.src is not None:
        out.append(f"from {msg.src} ")
    if msg.via is not None and not hide.via:
        out.append(f"via {msg.via} ")
    if not hide.dev:
        out.append(f"dev {msg.dev} ")
    if msg.table != "main" and not hide.table:
        out.append(f"table {msg.table} ")
    if not msg.cloned:
        if msg.proto != "boot" and not hide.proto:
            out.append(f"proto {msg.proto} ")
        if msg.scope != "global" and not hide.scope:
            out.append(f"scope {msg.scope} ")
    if msg.prefsrc is not None and not hide.prefsrc:
        out.append(f"src {msg.prefsrc} ")
    if msg.metric is not None and not hide.metric:
        out.append(f"metric {msg.metric} ")
    if msg.uid is not None:
        out.append(f"uid {msg.uid} ")
    if msg.cloned and msg.dst.version == 4:
        out.append("\n    cache ")
        if msg.cache_flags:
            out.append("<" + ",".join(msg.cache_flags) + "> ")
    if msg.mtu is not None:
        out.append(f"mtu {msg.mtu} ")
    if msg.pref is not None:
        out.append(f"pref {msg.pref}")
    return "".join(out)


def main_msg(route: Route) -> RtMsg:
    """A main-table route as the kernel dumps it. IPv4 (net/ipv4/fib_semantics.c
    ``fib_dump_info``): a prefix route an address brings is proto kernel, scope link,
    with the address as preferred source (``fib_magic``); ``ip route add`` sends proto
    boot, and scope link when no gateway is given, universe otherwise (iproute2
    ``iproute_modify``); the metric only when not 0 (RTA_PRIORITY is dumped only
    then). IPv6 (``rt6_fill_node``): scope is always universe, no preferred source
    unless one was configured, the metric (``route_metric``), and RTA_PREF
    (medium)."""
    metric = route_metric(route)
    if route.dst.version == 4:
        scope = "link" if route.via is None else "global"
        return RtMsg(
            route.dst,
            route.dev,
            via=route.via,
            proto=route.proto,
            scope=scope,
            prefsrc=route.src,
            metric=metric or None,
        )
    return RtMsg(
        route.dst, route.dev, via=route.via, proto=route.proto, metric=metric, pref="medium"
    )


def fib_order(msg: RtMsg) -> tuple[int, str, int]:
    """Where the kernel's dump puts a route. IPv4 walks the fib trie by key (the
    prefix's address) and, within a key, by suffix length, longer prefixes first
    (net/ipv4/fib_trie.c ``leaf_walk_rcu``, ``fib_insert_alias``): the default route
    comes first. IPv6 walks its radix tree children first, the 0 branch before the
    1 branch (net/ipv6/ip6_fib.c ``fib6_walk_continue``): a more specific route comes
    before the route it is inside, and the default route last. Routes to one prefix
    come by metric, lowest first (``fib_insert_alias``, ``fib6_add_rt2node``), and
    in the order they came within a metric [C]."""
    net = msg.dst
    metric = msg.metric or 0
    if net.version == 4:
        return int(net.network_address), f"{32 - net.prefixlen:03}", metric
    bits = format(int(net.network_address), "0128b")[: net.prefixlen]
    # "2" sorts after both branches: the node after its children
    return 0, bits + "2", metric


def local_table(node: Node) -> list[RtMsg]:
    """The IPv4 local table (net/ipv4/fib_frontend.c ``fib_add_ifaddr``): for each
    address a local route to itself (scope host), kept while its device is down (its
    nexthop scope is RT_SCOPE_NOWHERE, which ``fib_sync_down_dev`` spares on
    NETDEV_DOWN); while the device is up, for a prefix shorter than /31 the network
    broadcast route (Linux 5.14 and later add no broadcast route for the network
    address itself). The preferred source is the subnet's primary address, the first
    of the device's addresses in it (net/ipv4/devinet.c ``__inet_insert_ifa`` marks
    the later ones secondary). lo carries 127.0.0.1/8 on every node: its prefix route
    is of type local (IFF_LOOPBACK), so it lands in this table too."""
    lo = IPv4Address("127.0.0.1")
    msgs = [
        _local(ip_network("127.0.0.0/8"), "lo", lo),
        _local(ip_network("127.0.0.1/32"), "lo", lo),
        _local(ip_network("127.255.255.255/32"), "lo", lo, "broadcast"),
    ]
    for dev in node.devs.values():
        v4 = [a for a in dev.addrs if a.version == 4]
        for iface in v4:
            prim = next(p for p in v4 if p.network == iface.network)
            msgs.append(_local(ip_network(iface.ip), dev.name, prim.ip))
            if not dev.up:
                continue
            given = dev.brd.get(iface)  # IFA_BROADCAST, when the address has one
            if given is not None and int(given) != 0xFFFFFFFF:
                msgs.append(_local(ip_network(given), dev.name, prim.ip, "broadcast"))
            if prim == iface and iface.network.prefixlen < 31:
                brd = ip_network(iface.network.broadcast_address)
                msgs.append(_local(brd, dev.name, prim.ip, "broadcast"))
    seen: set[tuple[IPNetwork, str, str]] = set()
    unique = []
    for msg in msgs:  # an explicit broadcast and the network's are one route
        if (msg.dst, msg.dev, msg.type) not in seen:
            seen.add((msg.dst, msg.dev, msg.type))
            unique.append(msg)
    return sorted(unique, key=fib_order)


def _local(dst: IPNetwork, dev: str, src: IPAddress, kind: str = "local") -> RtMsg:
    scope = "host" if kind == "local" else "link"
    return RtMsg(dst, dev, type=kind, table="local", proto="kernel", scope=scope, prefsrc=src)


def cached_msg(node: Node, dst: IPAddress, mtu: int | None) -> RtMsg | None:
    """A route-cache answer for ``dst``: the route to it, cloned, carrying the path
    MTU learned for it (``mtu``; None when none is). IPv4 (net/ipv4/route.c
    ``rt_fill_info``): the destination, device and gateway, no proto or scope, then
    the "cache" line. IPv6 (``rt6_fill_node``): an RTF_CACHE route (an exception) is
    RTM_F_CLONED too, with its route's metric. The lab does not age exceptions, so no
    "expires" is shown (esplab.model.kernel.stack.pmtu_cache) [M]."""
    route = node.route(dst)
    if route is None:
        return None
    host = ip_network(dst)
    if dst.version == 4:
        return RtMsg(host, route.dev, via=route.via, cloned=True, mtu=mtu)
    base = main_msg(route)
    return replace(base, dst=host, cloned=mtu is not None, mtu=mtu)


def cache_msgs(node: Node, family: int) -> list[RtMsg]:
    """The path-MTU exceptions of ``family`` (``Node.learned_pmtus``: those whose route
    still stands), in the order the kernel dumps them: with the route each hangs off
    (``fib_dump_info_fnhe`` from ``fn_trie_dump_leaf``), in the table's order."""
    found: list[tuple[tuple[int, str, int], int, RtMsg]] = []
    for dst, mtu in node.learned_pmtus().items():
        route = node.route(dst)
        msg = cached_msg(node, dst, mtu)
        if dst.version == family and route is not None and msg is not None:
            found.append((fib_order(main_msg(route)), int(dst), msg))
    return [msg for *_, msg in sorted(found, key=lambda f: (f[0], f[1]))]
