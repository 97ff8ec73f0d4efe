"""``ip route show``: its SELECTOR, parsed as iproute2 does, and the filter it applies.

The selector follows ip/iproute.c ``iproute_list_flush_or_save`` keyword by keyword,
with the names of lib/rt_names.c; the filter is ``filter_nlmsg``. The listing goes
through the one printer, ``net_show.route_line`` (``print_route``), fed the messages
the kernel would dump: main-table routes, the local table made for the addresses, or
the path-MTU exceptions of the route cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from esplab.commands.handlers.net_args import (
    FAMILIES,
    IpArgs,
    Prefix,
    decimal,
    get_prefix,
    matches,
)
from esplab.commands.handlers.net_show import (
    RtHide,
    RtMsg,
    cache_msgs,
    fib_order,
    local_table,
    main_msg,
    route_line,
)
from esplab.commands.result import Result, TextResult
from esplab.errors import BadArgument, NoSuchPort
from esplab.model.kernel.node import Node

__all__ = ["route_show"]


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


# -- the selector and the filter -------------------------------------------------------


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


def route_show(node: Node, args: IpArgs, family: int | None) -> Result:
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
