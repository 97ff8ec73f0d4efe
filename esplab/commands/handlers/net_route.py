"""``ip route``: show (see ``net_route_show``), get, add, del, replace and flush cache
on a node's routing table.

Every listing goes through one printer, ``net_show.route_line`` (iproute2 ip/iproute.c
``print_route``), fed the message the kernel would dump: a main-table route
(``fib_dump_info``, net/ipv6/route.c ``rt6_fill_node``), a local-table route made for
an address (net/ipv4/fib_frontend.c ``fib_add_ifaddr``), a path-MTU exception (the
route cache) or the answer to ``ip route get``.
"""

from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Network, IPv6Address, IPv6Network, ip_network

from esplab.commands.base import Session
from esplab.commands.handlers.net_args import (
    IpArgs,
    IpOpts,
    Keyword,
    addr_arg,
    decimal,
    get_prefix,
    matches,
    resolve,
)
from esplab.commands.handlers.net_route_show import route_show
from esplab.commands.handlers.net_show import RtHide, RtMsg, cached_msg, main_msg, route_line
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.errors import BadArgument, KernelError
from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.addr import IPAddress, IPNetwork
from esplab.model.kernel.stack.route import Route, route_metric

__all__ = ["ip_route"]


# ip/iproute.c do_iproute tries these in order, so "s" is show, "g" get, "d" delete and
# "r" replace.
_ROUTE_VERBS = (
    Keyword("add", "add"),
    Keyword("change", None),
    Keyword("chg", None, exact=True),
    Keyword("replace", "replace"),
    Keyword("prepend", None),
    Keyword("append", None),
    Keyword("test", None),
    Keyword("delete", "delete"),
    Keyword("list", "show"),
    Keyword("show", "show"),
    Keyword("lst", "show"),
    Keyword("get", "get"),
    Keyword("flush", "flush"),
    Keyword("save", None),
    Keyword("restore", None),
    Keyword("showdump", None),
    Keyword("help", None),
)
_ROUTE_VALID = ("show", "get", "add", "del", "replace", "flush cache")


def ip_route(session: Session, node: Node, args: IpArgs, opts: IpOpts) -> Result:
    family = opts.family
    word = args.take("command") if args.more() else "show"
    verb = resolve(word, _ROUTE_VERBS, _ROUTE_VALID, "Command", " for ip route")
    if verb in ("show", "get"):
        shown = route_show(node, args, family) if verb == "show" else _route_get(node, args, family)
        if opts.oneline and isinstance(shown, TextResult):
            # -o: the cache line follows a backslash (_SL_) instead of a newline.
            shown.text = shown.text.replace("\n    cache", "\\    cache")
        return shown
    if verb == "flush":
        return _flush_cache(node, args, family)
    return _modify(node, verb, args, family)


# -- ip route add / del / replace -----------------------------------------------------------


def _modify(node: Node, verb: str, args: IpArgs, family: int | None) -> Result:
    dst_word = args.take("prefix")
    via: IPAddress | None = None
    dev_name = None
    metric: int | None = None
    while args.more():
        key = args.take("keyword")
        if key == "via":
            via = addr_arg(args.take("gateway"))
        elif key == "dev":
            dev_name = node.dev(args.take("device")).name
        elif matches(key, "metric") or matches(key, "priority") or key == "preference":
            # iproute_modify: get_u32 of the value, else invarg [C].
            value = args.take("metric")
            if not decimal(value) or int(value) > 0xFFFFFFFF:
                raise BadArgument(
                    f'argument "{value}" is wrong: "metric" value is invalid',
                    valid="0 to 4294967295",
                    value=value,
                )
            metric = int(value)
        else:
            raise BadArgument(
                f'unknown route keyword "{key}"', valid=["via", "dev", "metric N"], value=key
            )
    prefix = _route_prefix(dst_word, family, via)
    if verb == "delete":
        # fib_table_delete / fib6 delete one route: the first (lowest metric) to the
        # prefix that matches what is given (metric, gateway, device) [C].
        found = [
            r
            for r in node.routes
            if r.dst == prefix
            and (metric is None or route_metric(r) == metric)
            and (via is None or r.via == via)
            and (dev_name is None or r.dev == dev_name)
        ]
        if not found:
            raise KernelError("ESRCH", f"no route {prefix}" + _metric_text(metric))
        gone = min(found, key=route_metric)
        node.routes = [r for r in node.routes if r is not gone]
        node.invalidate()
        return MessageResult(summary=f"route {prefix}{_metric_text(metric)} deleted")
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
    # Routes to one prefix differ by metric; add refuses a second with the same one
    # (EEXIST) and replace takes its place (fib_table_insert, fib6_add_rt2node) [C].
    route = Route(prefix, dev_name, via=via, metric=metric)
    same = [r for r in node.routes if r.dst == prefix and route_metric(r) == route_metric(route)]
    if same and verb == "add":
        raise KernelError("EEXIST", f"route {prefix}" + _metric_text(metric))
    node.routes = [r for r in node.routes if r not in same]
    node.routes.append(route)
    node.invalidate()
    # The confirmation reads like the route's line in ip route.
    return MessageResult(summary="route " + route_line(main_msg(route)).rstrip())


def _metric_text(metric: int | None) -> str:
    return "" if metric is None else f" metric {metric}"


def _route_prefix(word: str, family: int | None, via: IPAddress | None) -> IPNetwork:
    """The destination of ``ip route add|del|replace``: ``get_prefix`` of the word;
    default (or all/any) takes its family from -4/-6 or the gateway (ip/iproute.c).
    IPv4 refuses address bits beyond the length (net/ipv4/fib_trie.c
    ``fib_valid_key_len``, from ``fib_table_insert`` and ``fib_table_delete``:
    EINVAL, "Invalid prefix for given prefix length"); IPv6 masks them off
    (net/ipv6/route.c ``ip6_route_info_create``: ``ipv6_addr_prefix``)."""
    parsed = get_prefix(word, family)
    version = parsed.family or family or (via.version if via is not None else 4)
    width: int = 32 if version == 4 else 128
    bits = parsed.addr & (((1 << parsed.bitlen) - 1) << (width - parsed.bitlen))
    if bits != parsed.addr and version == 4:
        raise KernelError("EINVAL", "Invalid prefix for given prefix length")
    if version == 4:
        return IPv4Network((bits, parsed.bitlen))
    return IPv6Network((bits, parsed.bitlen))


# -- ip route get / flush cache ---------------------------------------------------------------


def _route_get(node: Node, args: IpArgs, family: int | None) -> Result:
    """``ip route get [to] ADDR``: the RTM_GETROUTE answer, printed by ``route_line``.
    The kernel answers for the address itself, never the matched prefix. IPv4
    (net/ipv4/route.c ``rt_fill_info``): a cloned route, so no proto/scope; the
    gateway, device, preferred source and the asker's uid (0: lab commands run as root,
    a design choice), then "cache" on a second line, with a path MTU learned from ICMP
    as its RTAX_MTU metric. IPv6 (``rt6_fill_node``): "from ::" (the unset source),
    proto unless boot, source, metric and "pref medium"; an exception (a learned path
    MTU) is RTM_F_CLONED, so no proto. A local address is answered from the local table
    through lo ([D] from the same printers)."""
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
    get = RtHide(table=False)
    if node.owns(dst):
        host = ip_network(dst)
        if dst.version == 4:
            # No "table local": Linux 6.12 answers an IPv4 local address without it
            # (checked: "local 192.0.2.2 dev lo src 192.0.2.2 uid 0"); IPv6 names it.
            local = RtMsg(
                host,
                "lo",
                type="local",
                prefsrc=dst,
                uid=0,
                cloned=True,
                cache_flags=("local",),
            )
        else:
            local = RtMsg(
                host,
                "lo",
                type="local",
                src=IPv6Address(0),
                table="local",
                proto="kernel",
                prefsrc=dst,
                metric=0,
                pref="medium",
            )
        text = route_line(local, get)
        return TextResult(
            summary=text.splitlines()[0].strip(),
            text=text,
            data={"dev": "lo", "via": "", "src": str(dst)},
        )
    route = node.route(dst)
    if route is None:
        raise KernelError("ENETUNREACH", f"no route to {dst}")
    src = route.src if route.src is not None else _source(node, route.dev, route.via or dst)
    pmtu = node.path_mtu(dst)
    answer = cached_msg(node, dst, pmtu)
    assert answer is not None  # node.route(dst) found the route
    if dst.version == 4:
        answer = replace(answer, prefsrc=src, uid=0)
    else:
        answer = replace(answer, src=IPv6Address(0), prefsrc=src)
    text = route_line(answer, get)
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
    """``ip [-4|-6] route flush cache``: the kernel forgets its cached routes, and with
    them the path MTUs learned from ICMP (rt_cache_flush: an exception of an older
    generation is stale) [C]. Without -6 it is IPv4's cache alone: iproute2's
    ``iproute_list_flush_or_save`` takes AF_UNSPEC as AF_INET for a flush [C].
    Flushing routes themselves is not modelled."""
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
    gone = node.flush_pmtus(family or 4)
    return MessageResult(
        summary=f"{node.name}: IPv{family or 4} route cache flushed ({gone} path MTU(s) forgotten)",
        data={"forgotten": gone},
    )


def _source(node: Node, dev: str, toward: IPAddress) -> IPAddress | None:
    """The preferred source on ``dev``: an address whose subnet holds the next hop,
    else its first of the family (``inet_select_addr``; for IPv6 a simplification of
    RFC 6724 source selection)."""
    addrs = [a for a in node.dev(dev).addrs if a.version == toward.version]
    near = [a for a in addrs if toward in a.network]
    return (near or addrs)[0].ip if (near or addrs) else None
