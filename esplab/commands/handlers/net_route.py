"""``ip route``: show, get, add, del and replace on a node's routing table."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, ip_network

from esplab.commands.handlers.net_args import SHOW_VERBS, IpArgs, IpOpts, addr_arg
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, KernelError
from esplab.model.node import Node, Route

__all__ = ["ip_route"]


def ip_route(session: Session, node: Node, args: IpArgs, opts: IpOpts) -> Result:
    family = opts.family
    verb = args.take("command") if args.more() else "show"
    if verb in SHOW_VERBS:
        routes = [r for r in node.routes if family is None or r.dst.version == family]
        if family is None:
            routes = [r for r in routes if r.dst.version == 4]
        return TextResult(
            summary=f"{len(routes)} route(s)",
            text="\n".join(r.render() for r in routes),
            data={"routes": [r.render() for r in routes]},
        )
    if verb == "get":
        return _route_get(node, args, family)
    if verb == "flush":
        return _flush_cache(node, args, family)
    if verb not in ("add", "del", "delete", "replace"):
        raise BadArgument(
            f'Command "{verb}" is unknown for ip route',
            valid=["show", "get", "add", "del", "replace", "flush cache"],
        )
    dst_word = args.take("prefix")
    via: IPv4Address | IPv6Address | None = None
    dev_name = None
    while args.more():
        key = args.take("keyword")
        if key == "via":
            via = addr_arg(args.take("gateway"))
        elif key == "dev":
            dev_name = node.dev(args.take("device")).name
        else:
            raise BadArgument(f'unknown route keyword "{key}"', valid=["via", "dev"], value=key)
    if dst_word == "default":  # the family comes from -4/-6 or the gateway (ip/iproute.c)
        version = family or (via.version if via is not None else 4)
        dst_word = "0.0.0.0/0" if version == 4 else "::/0"
    try:
        prefix = ip_network(dst_word, strict=False)
    except ValueError as exc:
        raise BadArgument(f"bad prefix: {exc}", valid="PREFIX/LEN or default") from None
    if verb in ("del", "delete"):
        before = len(node.routes)
        node.routes = [r for r in node.routes if r.dst != prefix]
        node.invalidate()
        if len(node.routes) == before:
            raise KernelError("ESRCH", f"no route {prefix}")
        return MessageResult(summary=f"route {prefix} deleted")
    if via is not None:
        if via.version != prefix.version:
            raise BadArgument(
                f"gateway {via} is not of the family of {prefix}: a gateway of the other "
                "family (RTA_VIA) is not modelled",
                valid=f"an IPv{prefix.version} gateway",
            )
        dev_name = node.gateway_dev(via, dev_name)
    elif dev_name is None:
        raise BadArgument("a route needs 'via GATEWAY' or 'dev DEVICE'")
    elif not node.dev(dev_name).up:
        # fib_check_nh_nongw / fib6_nh_init: a device route needs its device up.
        raise KernelError("ENETDOWN", f"Device for nexthop is not up: {dev_name}")
    existing = [r for r in node.routes if r.dst == prefix]
    if existing and verb == "add":
        raise KernelError("EEXIST", f"route {prefix}")
    node.routes = [r for r in node.routes if r.dst != prefix]
    node.routes.append(Route(prefix, dev_name, via=via))
    node.invalidate()
    return MessageResult(summary=f"route {prefix} via {via or '-'} dev {dev_name}")


def _route_get(node: Node, args: IpArgs, family: int | None) -> Result:
    """``ip route get [to] ADDR``: the RTM_GETROUTE answer as iproute2's ``print_route``
    prints it (ip/iproute.c). The kernel answers for the address itself, never the
    matched prefix. IPv4 (net/ipv4/route.c ``rt_fill_info``): a cloned route, so no
    proto/scope; the gateway, device, preferred source and the asker's uid (0: lab
    commands run as root, a design choice), then "cache" on a second line. IPv6
    (net/ipv6/route.c ``rt6_fill_node``): "from ::" (the unset source), proto unless
    boot, source, metric (256 for a prefix route, IP6_RT_PRIO_ADDRCONF; 1024 for a
    user route, IP6_RT_PRIO_USER) and "pref medium". A local address is answered
    from the local table through lo ([D] from the same printers)."""
    word = args.take("address")
    if word == "to":
        word = args.take("address after 'to'")
    dst = addr_arg(word)
    if args.more():
        raise BadArgument(
            f'"{args.peek()}" after the address is not modelled', valid="[to] ADDRESS"
        )
    if family is not None and dst.version != family:
        name = "inet" if family == 4 else "inet6"
        raise BadArgument(f'{name} prefix is expected rather than "{word}"', value=word)
    if node.owns(dst):
        if dst.version == 4:
            text = f"local {dst} dev lo table local src {dst} uid 0 \n    cache <local> "
        else:
            text = (
                f"local {dst} from :: dev lo table local proto kernel src {dst} "
                "metric 0 pref medium"
            )
        return TextResult(
            summary=text.splitlines()[0].strip(),
            text=text,
            data={"dev": "lo", "via": "", "src": str(dst)},
        )
    route = node.route(dst)
    if route is None:
        raise KernelError("ENETUNREACH", f"no route to {dst}")
    src = route.src if route.src is not None else _source(node, route.dev, route.via or dst)
    parts = [str(dst)] + (["from ::"] if dst.version == 6 else [])
    parts += [f"via {route.via}"] if route.via is not None else []
    parts.append(f"dev {route.dev}")
    if dst.version == 6 and route.proto == "kernel":
        parts.append("proto kernel")
    parts += [f"src {src}"] if src is not None else []
    # A path MTU learned from ICMP is the route exception's metric (RTAX_MTU); the lab
    # does not age it, so no "expires" is shown (esplab.model.pmtu_cache) [M].
    pmtu = node.pmtu.get(dst)
    if dst.version == 4:
        text = " ".join([*parts, "uid 0"]) + " \n    cache " + (f"mtu {pmtu} " if pmtu else "")
    else:
        metric = 256 if route.proto == "kernel" else 1024
        mtu = [f"mtu {pmtu}"] if pmtu else []
        text = " ".join([*parts, f"metric {metric}", *mtu, "pref medium"])
    return TextResult(
        summary=text.splitlines()[0].strip(),
        text=text,
        data={
            "dev": route.dev,
            "via": str(route.via or ""),
            "src": str(src or ""),
            "mtu": pmtu or node.dev(route.dev).mtu,
        },
    )


def _flush_cache(node: Node, args: IpArgs, family: int | None) -> Result:
    """``ip route flush cache``: the kernel forgets its cached routes, and with them
    the path MTUs learned from ICMP (rt_cache_flush: an exception of an older
    generation is stale) [C]. Flushing routes themselves is not modelled."""
    what = args.take("'cache'") if args.more() else ""
    if what != "cache":
        raise BadArgument(
            f"ip route flush {what}".strip() + ": only the cache is flushed here",
            valid="ip route flush cache",
        )
    if args.more():
        raise BadArgument(
            f'"{args.peek()}" after ip route flush cache', valid="ip route flush cache"
        )
    gone = [d for d in node.pmtu if family is None or d.version == family]
    for dst in gone:
        del node.pmtu[dst]
    return MessageResult(
        summary=f"{node.name}: route cache flushed ({len(gone)} path MTU(s) forgotten)",
        data={"forgotten": len(gone)},
    )


def _source(
    node: Node, dev: str, toward: IPv4Address | IPv6Address
) -> IPv4Address | IPv6Address | None:
    """The preferred source on ``dev``: an address whose subnet holds the next hop,
    else its first of the family (``inet_select_addr``; for IPv6 a simplification of
    RFC 6724 source selection)."""
    addrs = [a for a in node.dev(dev).addrs if a.version == toward.version]
    near = [a for a in addrs if toward in a.network]
    return (near or addrs)[0].ip if (near or addrs) else None
