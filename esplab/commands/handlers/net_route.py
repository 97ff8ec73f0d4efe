"""``ip route``: show (with iproute2's selectors), get, add, del, replace and flush
cache on a node's routing table.

Every listing goes through one printer, ``net_show.route_line`` (iproute2 ip/iproute.c
``print_route``), fed the message the kernel would dump: a main-table route
(``fib_dump_info``, net/ipv6/route.c ``rt6_fill_node``), a local-table route made for
an address (net/ipv4/fib_frontend.c ``fib_add_ifaddr``), a path-MTU exception (the
route cache) or the answer to ``ip route get``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from ipaddress import IPv4Network, IPv6Address, IPv6Network, ip_network

from esplab.commands.base import Session
from esplab.commands.handlers.net_args import (
    FAMILIES,
    IpArgs,
    IpOpts,
    Keyword,
    Prefix,
    addr_arg,
    decimal,
    get_prefix,
    matches,
    resolve,
)
from esplab.commands.handlers.net_show import (
    RtHide,
    RtMsg,
    cache_msgs,
    cached_msg,
    fib_order,
    local_table,
    main_msg,
    route_line,
)
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.errors import BadArgument, KernelError, NoSuchPort
from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.addr import IPAddress, IPNetwork
from esplab.model.kernel.stack.route import Route, route_metric

__all__ = ["ip_route"]


# Names iproute2 reads for a table, protocol, scope and route type (lib/rt_names.c and
# its /etc/iproute2/rt_tables and rt_protos; rtnl_rtntype_a2n), with their numbers.
_TABLES = {"unspec": 0, "default": 253, "main": 254, "local": 255}
_PROTOS = {
    "unspec": 0,
    "redirect": 1,
    "kernel": 2,
    "boot": 3,
    "static": 4,
    "gated": 8,
    "ra": 9,
    "mrt": 10,
    "zebra": 11,
    "bird": 12,
    "dnrouted": 13,
    "xorp": 14,
    "ntk": 15,
    "dhcp": 16,
}
_SCOPES = {"global": 0, "site": 200, "link": 253, "host": 254, "nowhere": 255}
_TYPES = {
    "unicast": 1,
    "local": 2,
    "broadcast": 3,
    "brd": 3,
    "anycast": 4,
    "multicast": 5,
    "blackhole": 6,
    "unreachable": 7,
    "prohibit": 8,
    "throw": 9,
    "nat": 10,
    "xresolve": 11,
}
_SELECTORS = [
    "dev|oif DEVICE",
    "[to] [root|match|exact] PREFIX",
    "proto RTPROTO",
    "scope SCOPE",
    "type TYPE",
    "via [inet|inet6] PREFIX",
    "src PREFIX",
    "metric N",
    "table main|local|default|NUMBER",
    "cache",
]


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
        shown = _show(node, args, family) if verb == "show" else _route_get(node, args, family)
        if opts.oneline and isinstance(shown, TextResult):
            # -o: the cache line follows a backslash (_SL_) instead of a newline.
            shown.text = shown.text.replace("\n    cache", "\\    cache")
        return shown
    if verb == "flush":
        return _flush_cache(node, args, family)
    return _modify(node, verb, args, family)


# -- ip route show ---------------------------------------------------------------------


@dataclass
class _Selector:
    """The SELECTOR of ``ip route show`` (iproute_list_flush_or_save's ``filter``)."""

    table: int = _TABLES["main"]
    cloned: bool = False
    proto: int | None = None
    scope: int | None = None
    type: int | None = None
    dev: str | None = None
    metric: int | None = None
    via: Prefix | None = None
    prefsrc: Prefix | None = None
    rdst: Prefix | None = None
    mdst: Prefix | None = None


def _named(word: str, names: dict[str, int], what: str) -> int:
    """A name of ``names`` or a number up to 255 (lib/rt_names.c ``*_a2n``), else
    iproute2's ``invarg`` line."""
    if word in names:
        return names[word]
    if decimal(word) and int(word) <= 255:
        return int(word)
    raise BadArgument(f'argument "{word}" is wrong: {what}', valid=[*names, "NUMBER"], value=word)


def _not_modelled(word: str) -> BadArgument:
    return BadArgument(f'"{word}" is not modelled by ip route show', valid=_SELECTORS, value=word)


def _selector(node: Node, args: IpArgs, family: int | None) -> _Selector:
    """Parse the selector as iproute2's ``iproute_list_flush_or_save`` does, keyword by
    keyword in its order; a word that is no keyword is a prefix (exact match)."""
    sel = _Selector()
    while args.more():
        word = args.take("selector")
        if matches(word, "table"):
            name = args.take("table id after 'table'")
            if name == "cache":
                sel.cloned = True
                continue
            number = decimal(name) and int(name) <= 0xFFFFFFFF  # get_unsigned: a u32
            if name not in _TABLES and not number and name != "all":
                raise BadArgument(
                    f'argument "{name}" is wrong: table id value is invalid',
                    valid="main, local, default, all, cache or a number 0 to 4294967295",
                    value=name,
                )
            sel.table = int(name) if number else _TABLES.get(name, 0)
            if sel.table == 0:  # all (filter.tb 0): every table, IPv6 local included
                raise BadArgument(
                    f"table {name} (every table at once) is not modelled",
                    valid="table main, local, default or NUMBER",
                )
        elif matches(word, "cached") or matches(word, "cloned"):
            sel.cloned = True
        elif matches(word, "protocol"):
            name = args.take("protocol after 'proto'")
            if name != "all":
                sel.proto = _named(name, _PROTOS, 'invalid "protocol"')
        elif matches(word, "scope"):
            name = args.take("scope after 'scope'")
            if name != "all":
                sel.scope = _named(name, _SCOPES, 'invalid "scope"')
        elif matches(word, "type"):
            sel.type = _named(args.take("type after 'type'"), _TYPES, "node type value is invalid")
        elif word in ("dev", "oif"):
            sel.dev = args.take(f"device after '{word}'")
        elif matches(word, "metric") or matches(word, "priority") or word == "preference":
            value = args.take("metric")
            if not decimal(value) or int(value) > 0xFFFFFFFF:
                raise BadArgument(
                    f'argument "{value}" is wrong: "metric" value is invalid',
                    valid="0 to 4294967295",
                    value=value,
                )
            sel.metric = int(value)
        elif word == "via":
            value = args.take("gateway after 'via'")
            fam = FAMILIES.get(value, family)
            if value in ("inet", "inet6"):
                value = args.take(f"gateway after 'via {value}'")
            sel.via = get_prefix(value, fam)
        elif word == "src":
            sel.prefsrc = get_prefix(args.take("address after 'src'"), family)
        elif word in ("tos", "iif", "mark") or any(
            matches(word, k) for k in ("vrf", "dsfield", "realms", "from")
        ):
            raise _not_modelled(word)
        else:
            if matches(word, "to"):
                word = args.take(f"prefix after '{word}'")
            if matches(word, "root"):
                sel.rdst = get_prefix(args.take("prefix after 'root'"), family)
            elif matches(word, "match"):
                sel.mdst = get_prefix(args.take("prefix after 'match'"), family)
            else:
                if matches(word, "exact"):
                    word = args.take("prefix after 'exact'")
                sel.mdst = sel.rdst = get_prefix(word, family)
    if sel.dev is not None and sel.dev not in node.devs and sel.dev != "lo":
        # ll_name_to_index fails: nodev() (lib/utils.c).
        raise NoSuchPort(f'Cannot find device "{sel.dev}"', valid=[*node.devs, "lo"], value=sel.dev)
    return sel


def _bits_match(a: int, b: int, bits: int, width: int) -> bool:
    """iproute2 ``inet_addr_match``: the first ``bits`` bits of ``a`` and ``b`` agree."""
    return bits <= 0 or (a >> (width - bits)) == (b >> (width - bits))


def _selected(msg: RtMsg, sel: _Selector) -> bool:
    """iproute2 ``filter_nlmsg``: ``root`` keeps routes inside the prefix (at least as
    long), ``match`` routes that hold it (at most as long, covering its address); a
    bare prefix sets both, so only that prefix passes. ``via``/``src`` compare the
    gateway/preferred source (0 when absent) with their prefix; ``dev`` the device."""
    fam, width, plen = msg.dst.version, msg.dst.max_prefixlen, msg.dst.prefixlen
    dst = int(msg.dst.network_address)
    if sel.proto is not None and _PROTOS[msg.proto] != sel.proto:
        return False
    if sel.scope is not None and _SCOPES[msg.scope] != sel.scope:
        return False
    if sel.type is not None and _TYPES[msg.type] != sel.type:
        return False
    root = sel.rdst
    if root is not None and (root.family or root.specified):
        if (root.family and fam != root.family) or root.bitlen > plen:
            return False
        if not _bits_match(dst, root.addr, root.bitlen, width):
            return False
    match = sel.mdst
    if match is not None and (match.family or match.specified):
        if (match.family and fam != match.family) or match.bitlen < plen:
            return False
        if not _bits_match(dst, match.addr, plen, width):
            return False
    for want, have in ((sel.via, msg.via), (sel.prefsrc, msg.prefsrc)):
        if want is not None and want.family:
            if fam != want.family:
                return False
            if not _bits_match(int(have) if have else 0, want.addr, want.bitlen, width):
                return False
    if sel.dev is not None and msg.dev != sel.dev:
        return False
    return sel.metric is None or (msg.metric or 0) == sel.metric


def _hide(sel: _Selector, msg: RtMsg) -> RtHide:
    host = msg.dst.max_prefixlen
    return RtHide(
        dev=sel.dev is not None,
        proto=sel.proto is not None,
        scope=sel.scope is not None,
        via=sel.via is not None and sel.via.bitlen == host,
        prefsrc=sel.prefsrc is not None and sel.prefsrc.bitlen == host,
        metric=sel.metric is not None,
    )


def _show(node: Node, args: IpArgs, family: int | None) -> Result:
    """``ip route show [SELECTOR]``: without -4/-6 the dump is IPv4 (a table is always
    selected: ``dump_family`` becomes AF_INET); the main table unless ``table`` says
    otherwise; ``cache`` lists the path-MTU exceptions instead of routes (the kernel
    dumps them for RTM_F_CLONED, ``fib_dump_info_fnhe``), those hanging off routes of
    the selected table. Other tables hold nothing here: the lab adds routes to main
    only."""
    sel = _selector(node, args, family)
    dump = family or 4
    msgs: list[RtMsg] = []
    if sel.cloned:
        if sel.table == _TABLES["main"]:
            msgs = cache_msgs(node, dump)
    elif sel.table == _TABLES["main"]:
        msgs = sorted((main_msg(r) for r in node.routes if r.dst.version == dump), key=fib_order)
    elif sel.table == _TABLES["local"]:
        if dump == 6:
            raise BadArgument(
                "the IPv6 local table is not modelled",
                valid="ip -6 route show (the main table) or ip -4 route show table local",
            )
        msgs = local_table(node)
    lines = [route_line(m, _hide(sel, m)) for m in msgs if _selected(m, sel)]
    return TextResult(
        summary=f"{len(lines)} route(s)",
        text="\n".join(lines),
        data={"routes": [line.rstrip() for line in lines]},
    )


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
