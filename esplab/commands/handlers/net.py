"""ip link/addr/route/neigh, ethtool and node: the network side of a node, as on a board.

``ip xfrm ...`` is handed to the XFRM model; everything else here works on the
node's devices, addresses, routes and neighbours. Output follows iproute2's and
ethtool's layouts so it reads like a board's console.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from ipaddress import (
    IPv4Address,
    IPv4Interface,
    IPv4Network,
    IPv6Address,
    IPv6Interface,
    IPv6Network,
    ip_address,
    ip_interface,
    ip_network,
)

from esplab.commands.parser import Invocation, parse_int
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, EsplabError, KernelError, NoSuchPort
from esplab.model.l2 import parse_mac
from esplab.model.netdev import ETHTOOL_FEATURES, NetDev
from esplab.model.node import Neighbour, Node, Route, connected_route
from esplab.model.topology import DSA_TAG_LEN

__all__ = ["COMMANDS", "OBJECTS"]

# iproute2 object names and the abbreviations it accepts (ip/ip.c: matches()).
OBJECTS = ("link", "address", "route", "neighbour", "xfrm")


def _object(word: str) -> str:
    for obj in OBJECTS:
        if obj.startswith(word) and word:
            return obj
    if word == "neigh":
        return "neighbour"
    raise BadArgument(f'Object "{word}" is unknown', valid=OBJECTS, value=word)


def _flags(dev: NetDev) -> str:
    up = dev.up
    flags = ["BROADCAST", "MULTICAST"] + (["UP", "LOWER_UP"] if up else [])
    return "<" + ",".join(flags) + ">"


def _ifname(dev: NetDev) -> str:
    return f"{dev.name}@{dev.conduit}" if dev.conduit else dev.name


def _state(dev: NetDev) -> str:
    return "UP" if dev.up else "DOWN"


def _qdisc(dev: NetDev) -> str:
    return "noqueue" if dev.kind == "dsa-user" else "mq"


def link_text(node: Node, devs: Iterable[NetDev], stats: bool, brief: bool = False) -> str:
    """``ip link`` (iproute2 ip/ipaddress.c ``print_linkinfo``); ``brief`` is
    ``print_linkinfo_brief``: name ("%-16s "), operstate ("%-14s "), MAC, flags."""
    lines: list[str] = []
    for dev in devs:
        if brief:
            lines.append(f"{_ifname(dev):<16} {_state(dev):<14} {dev.mac} {_flags(dev)} ")
            continue
        lines.append(
            f"{dev.ifindex}: {_ifname(dev)}: {_flags(dev)} mtu {dev.mtu} qdisc {_qdisc(dev)} "
            f"state {_state(dev)} mode DEFAULT group default qlen 1000"
        )
        lines.append(f"    link/ether {dev.mac} brd ff:ff:ff:ff:ff:ff")
        if stats:
            c = dev.counters
            lines.append("    RX:  bytes packets errors dropped  missed   mcast")
            lines.append(
                f"    {c.rx_bytes:>10} {c.rx_packets:>7} {c.rx_errors:>6} {c.rx_dropped:>7}"
                f" {0:>7} {0:>7}"
            )
            lines.append("    TX:  bytes packets errors dropped carrier collsns")
            lines.append(
                f"    {c.tx_bytes:>10} {c.tx_packets:>7} {c.tx_errors:>6} {c.tx_dropped:>7}"
                f" {0:>7} {0:>7}"
            )
    return "\n".join(lines)


def _addrs(dev: NetDev, family: int | None) -> list[IPv4Interface | IPv6Interface]:
    # The kernel dumps AF_INET before AF_INET6 (rtnl_dump_all walks families in order).
    return sorted(
        (a for a in dev.addrs if family is None or a.version == family), key=lambda a: a.version
    )


def addr_text(
    node: Node, devs: Iterable[NetDev], family: int | None = None, brief: bool = False
) -> str:
    """``ip addr`` (iproute2 ip/ipaddress.c ``ipaddr_list_flush_or_save``). With a family
    (-4/-6) only devices holding an address of it are listed (``ipaddr_filter``) and
    the link/ether line is left out (``print_linkinfo`` prints it only without one).
    Each address is permanent, so its lifetimes print as forever (IFA_CACHEINFO); IPv4
    addresses carry their device as label, IPv6 ones none. ``brief``: name, operstate,
    then each ADDR/PLEN."""
    lines: list[str] = []
    for dev in devs:
        addrs = _addrs(dev, family)
        if family is not None and not addrs:
            continue
        if brief:
            lines.append(f"{_ifname(dev):<16} {_state(dev):<14} " + "".join(f"{a} " for a in addrs))
            continue
        lines.append(
            f"{dev.ifindex}: {_ifname(dev)}: {_flags(dev)} mtu {dev.mtu} qdisc {_qdisc(dev)} "
            f"state {_state(dev)} group default qlen 1000"
        )
        if family is None:
            lines.append(f"    link/ether {dev.mac} brd ff:ff:ff:ff:ff:ff")
        for iface in addrs:
            if iface.version == 4:
                brd = iface.network.broadcast_address
                lines.append(f"    inet {iface} brd {brd} scope global {dev.name}")
            else:
                lines.append(f"    inet6 {iface} scope global ")
            lines.append("       valid_lft forever preferred_lft forever")
    return "\n".join(lines)


_FAMILIES = {"inet": 4, "inet6": 6}


@dataclass
class _Opts:
    """iproute2's global options (ip/ip.c): -s counts, -4/-6/-f pick a family, -br."""

    stats: int = 0
    family: int | None = None
    brief: bool = False


class _Args:
    """A cursor over iproute2-style words, with its error messages."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.i = 0

    def more(self) -> bool:
        return self.i < len(self.words)

    def peek(self) -> str:
        return self.words[self.i] if self.more() else ""

    def take(self, what: str) -> str:
        if not self.more():
            raise BadArgument(f"missing {what}")
        self.i += 1
        return self.words[self.i - 1]


def _ip(session: Session, inv: Invocation) -> Result:
    node = session.lab.node(inv.node)
    words = list(inv.args["args"])
    at = 0
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in ("-f", "-family") else 1  # -f takes a value
    if at < len(words) and "xfrm".startswith(words[at]):
        # ip xfrm reads its own options (-s repeated, -4/-6, -f FAMILY): its grammar's.
        from esplab.commands.handlers.xfrm import run_ip_xfrm

        result: Result = run_ip_xfrm(session, node, words)
        return result
    opts = _Opts()
    while words and words[0].startswith("-"):
        opt = words.pop(0)
        opt = opt[1:] if opt.startswith("--") else opt  # ip/ip.c reads "--x" as "-x"
        if opt in ("-s", "-stats", "-statistics"):
            opts.stats += 1
        elif opt in ("-4", "-6"):
            opts.family = int(opt[1])
        elif opt in ("-f", "-family"):
            name = words.pop(0) if words else ""
            if name not in _FAMILIES:
                raise BadArgument(
                    f'invalid address family "{name}"', valid=list(_FAMILIES), value=name
                )
            opts.family = _FAMILIES[name]
        elif opt in ("-br", "-brief"):
            opts.brief = True
        else:
            raise BadArgument(
                f'Option "{opt}" is unknown',
                valid=["-s", "-4", "-6", "-f inet|inet6", "-br"],
                value=opt,
            )
    if not words:
        raise BadArgument("ip needs an object", valid=OBJECTS)
    obj = _object(words.pop(0))
    handler = _IP_OBJECTS[obj]
    return handler(session, node, _Args(words), opts)


_SHOW = ("show", "list", "sh", "ls", "lst")


def _show_devs(node: Node, args: _Args) -> list[NetDev]:
    """The device filter of ``ip link|addr show`` (iproute2 ip/ipaddress.c
    ``ipaddr_list_flush_or_save``): ``up`` keeps devices that are up; ``dev NAME`` or
    a bare NAME picks one device, and a second name is refused with iproute2's
    'either "dev" is duplicate, or "WORD" is a garbage' (``duparg2``)."""
    name: str | None = None
    up_only = False
    while args.more():
        word = args.take("filter")
        if word == "up":
            up_only = True
            continue
        if word == "dev":
            word = args.take("device name after 'dev'")
        if name is not None:
            raise BadArgument(
                f'either "dev" is duplicate, or "{word}" is a garbage',
                valid=["dev DEVICE", "up"],
            )
        name = word
    devs = list(node.devs.values())
    if name is not None:
        if name not in node.devs:
            raise NoSuchPort(f'Device "{name}" does not exist', valid=list(node.devs), value=name)
        devs = [node.devs[name]]
    return [d for d in devs if d.up or not up_only]


def _link(session: Session, node: Node, args: _Args, opts: _Opts) -> Result:
    verb = args.take("command") if args.more() else "show"
    if verb in _SHOW:
        devs = _show_devs(node, args)
        return TextResult(
            summary=f"{len(devs)} device(s)",
            text=link_text(node, devs, opts.stats > 0, opts.brief),
            data={d.name: {"up": d.up, "mtu": d.mtu, **d.counters.as_dict()} for d in devs},
        )
    if verb != "set":
        raise BadArgument(f'Command "{verb}" is unknown for ip link', valid=["show", "set"])
    if args.peek() == "dev":
        args.take("dev")
    dev = node.dev(args.take("device"))
    changes: list[Callable[[list[str]], str]] = []
    while args.more():
        word = args.take("setting")
        if word in ("up", "down"):
            changes.append(partial(_set_updown, session, node, dev, word == "up"))
        elif word == "mtu":
            mtu = parse_int(args.take("mtu value"), "mtu")
            _check_mtu(node, dev, mtu)
            changes.append(partial(_set_mtu, node, dev, mtu))
        else:
            raise BadArgument(
                f'unknown ip link setting "{word}"', valid=["up", "down", "mtu N"], value=word
            )
    if not changes:
        raise BadArgument("ip link set needs a setting", valid=["up", "down", "mtu N"])
    notes: list[str] = []
    done = [change(notes) for change in changes]
    # One line for the changes, then one per device on what IP lost or regained.
    return MessageResult(
        summary="\n".join(["; ".join(done), *notes]),
        data={"dev": dev.name, "up": dev.up, "mtu": dev.mtu},
    )


def _set_updown(session: Session, node: Node, dev: NetDev, up: bool, notes: list[str]) -> str:
    lines, more = session.lab.set_link(node.name, dev.name, up)
    notes += more
    return "; ".join(lines)


def _check_mtu(node: Node, dev: NetDev, mtu: int) -> None:
    dev.check_mtu(mtu)
    if dev.conduit is not None:
        conduit = node.dev(dev.conduit)
        # DSA: user MTU + tag must fit the conduit and the switch (1.3) [C].
        limit = min(conduit.max_mtu, dev.max_mtu + DSA_TAG_LEN)
        if mtu + DSA_TAG_LEN > limit:
            raise KernelError("ERANGE", f"{dev.name} mtu {mtu} + 4-byte tag > {limit}")


def _set_mtu(node: Node, dev: NetDev, mtu: int, notes: list[str] | None = None) -> str:
    """``dev_set_mtu`` (net/core/dev.c) returns early when the MTU does not change.

    A DSA user port's change sets the conduit to the largest user MTU + the tag,
    down or up ports alike (net/dsa/user.c ``dsa_user_change_mtu``). A conduit's own
    change is not vetoed: net/dsa registers no NETDEV_PRECHANGEMTU handler and
    ``airoha_dev_change_mtu`` always succeeds, so a conduit MTU below what its user
    ports need is accepted, and said so, until the next user-port change resets it.
    ``notes`` is the list ``ip link set`` collects from its changes; MTU adds none."""
    if mtu == dev.mtu:
        return f"{dev.name} mtu {mtu} (unchanged)"
    dev.mtu = mtu
    if dev.conduit is None:
        users = [d for d in node.devs.values() if d.conduit == dev.name]
        if not users:
            return f"{dev.name} mtu {mtu}"
        widest = max(users, key=lambda d: d.mtu)
        need = widest.mtu + DSA_TAG_LEN
        if mtu >= need:
            return f"{dev.name} mtu {mtu}"
        return (
            f"{dev.name} mtu {mtu}, below the {need} its user ports need ({widest.name} mtu "
            f"{widest.mtu} + {DSA_TAG_LEN}-byte tag): Linux accepts this (no NETDEV_PRECHANGEMTU "
            f"veto in net/dsa), and the next user-port MTU change sets {dev.name} to the "
            f"largest user MTU + {DSA_TAG_LEN} again (dsa_user_change_mtu)"
        )
    conduit = node.dev(dev.conduit)
    want = max(d.mtu for d in node.devs.values() if d.conduit == conduit.name) + DSA_TAG_LEN
    if want == conduit.mtu:
        return f"{dev.name} mtu {mtu}"
    old, conduit.mtu = conduit.mtu, want
    return (
        f"{dev.name} mtu {mtu}; {conduit.name} mtu {old} -> {want} "
        f"(largest user MTU + {DSA_TAG_LEN}-byte tag)"
    )


def _addr(session: Session, node: Node, args: _Args, opts: _Opts) -> Result:
    verb = args.take("command") if args.more() else "show"
    if verb in _SHOW:
        fam = opts.family
        devs = [d for d in _show_devs(node, args) if fam is None or _addrs(d, fam)]
        return TextResult(
            summary="addresses",
            text=addr_text(node, devs, fam, opts.brief),
            data={d.name: [str(a) for a in _addrs(d, fam)] for d in devs},
        )
    if verb not in ("add", "del", "delete"):
        raise BadArgument(f'Command "{verb}" is unknown for ip addr', valid=["show", "add", "del"])
    try:
        iface = ip_interface(args.take("address"))
    except ValueError as exc:
        raise BadArgument(f"bad address: {exc}", valid="ADDR/PLEN, e.g. 192.0.2.9/24") from None
    if args.take("dev") != "dev":
        raise BadArgument("expected 'dev DEVICE'")
    dev = node.dev(args.take("device"))
    if verb == "add":
        if iface in dev.addrs:
            raise KernelError("EEXIST", f"{iface} on {dev.name}")
        dev.addrs.append(iface)
        # net/ipv4/fib_frontend.c fib_add_ifaddr adds the prefix route only while the
        # device is up (NETDEV_UP adds it later); inet6_addr_add adds it regardless.
        if dev.up or iface.version == 6:
            node.routes.append(connected_route(iface, dev.name))
        node.invalidate()
        later = "" if dev.up or iface.version == 6 else " (its route comes when it is up)"
        return MessageResult(summary=f"{iface} added to {dev.name}{later}")
    if iface not in dev.addrs:
        raise KernelError("EADDRNOTAVAIL", f"{iface} not on {dev.name}")
    dev.addrs.remove(iface)
    # Only the connected route this address made: its prefix on its device.
    node.routes = [
        r
        for r in node.routes
        if not (
            r.proto == "kernel"
            and r.src == iface.ip
            and r.dev == dev.name
            and r.dst == iface.network
        )
    ]
    node.invalidate()
    return MessageResult(summary=f"{iface} removed from {dev.name}")


def _route(session: Session, node: Node, args: _Args, opts: _Opts) -> Result:
    family = opts.family
    verb = args.take("command") if args.more() else "show"
    if verb in _SHOW:
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
    if verb not in ("add", "del", "delete", "replace"):
        raise BadArgument(
            f'Command "{verb}" is unknown for ip route',
            valid=["show", "get", "add", "del", "replace"],
        )
    dst_word = args.take("prefix")
    via: IPv4Address | IPv6Address | None = None
    dev_name = None
    while args.more():
        key = args.take("keyword")
        if key == "via":
            via = _addr_arg(args.take("gateway"))
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


def _route_get(node: Node, args: _Args, family: int | None) -> Result:
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
    dst = _addr_arg(word)
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
    if dst.version == 4:
        text = " ".join([*parts, "uid 0"]) + " \n    cache "
    else:
        metric = 256 if route.proto == "kernel" else 1024
        text = " ".join([*parts, f"metric {metric}", "pref medium"])
    return TextResult(
        summary=text.splitlines()[0].strip(),
        text=text,
        data={"dev": route.dev, "via": str(route.via or ""), "src": str(src or "")},
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


def _addr_arg(text: str) -> IPv4Address | IPv6Address:
    try:
        return ip_address(text)
    except ValueError:
        raise BadArgument(f"'{text}' is not an IP address", valid="IPv4 or IPv6 address") from None


def _neigh(session: Session, node: Node, args: _Args, opts: _Opts) -> Result:
    verb = args.take("command") if args.more() else "show"
    if verb in _SHOW:
        return _neigh_show(node, args, opts.family)
    if verb not in ("add", "replace", "del", "delete"):
        raise BadArgument(
            f'Command "{verb}" is unknown for ip neigh', valid=["show", "add", "replace", "del"]
        )
    addr = _addr_arg(args.take("address"))
    mac = None
    dev_name = None
    while args.more():
        key = args.take("keyword")
        if key == "lladdr":
            mac = parse_mac(args.take("mac"))
        elif key == "dev":
            dev_name = node.dev(args.take("device")).name
        elif key == "nud":
            args.take("state")
        else:
            raise BadArgument(f'unknown neigh keyword "{key}"', valid=["lladdr", "dev", "nud"])
    if dev_name is None:
        raise BadArgument("ip neigh needs 'dev DEVICE'")
    current = node.lookup_neigh(addr, dev_name)
    if verb in ("del", "delete"):
        if current is None:
            raise KernelError("ENOENT", f"no neighbour {addr} on {dev_name}")
        node.neigh.remove(current)
        node.invalidate()
        return MessageResult(summary=f"neighbour {addr} deleted")
    if mac is None:
        raise BadArgument("ip neigh add needs 'lladdr MAC'")
    if current is not None and verb == "add":
        raise KernelError("EEXIST", f"neighbour {addr} on {dev_name}")
    if current is not None:
        node.neigh.remove(current)
    node.neigh.append(Neighbour(addr, dev_name, mac))
    node.invalidate()
    return MessageResult(summary=f"neighbour {addr} lladdr {mac} dev {dev_name}")


def _neigh_show(node: Node, args: _Args, family: int | None) -> Result:
    """``ip neigh show [dev DEV] [[to] PREFIX]`` (iproute2 ip/ipneigh.c
    ``do_show_or_flush``, ``print_neigh``): -4/-6 and the prefix filter by family and
    address; with ``dev`` the device is not repeated on each line."""
    dev_name: str | None = None
    prefix: IPv4Network | IPv6Network | None = None
    while args.more():
        word = args.take("filter")
        if word == "dev":
            dev_name = node.dev(args.take("device name after 'dev'")).name
            continue
        if word == "to":
            word = args.take("prefix after 'to'")
        try:
            prefix = ip_network(word, strict=False)
        except ValueError:
            raise BadArgument(
                f'"{word}" is neither a filter nor a prefix',
                valid=["dev DEVICE", "[to] PREFIX"],
            ) from None
    if prefix is not None and family is None:
        family = prefix.version
    shown = [
        n
        for n in node.neigh
        if (family is None or n.addr.version == family)
        and (dev_name is None or n.dev == dev_name)
        and (prefix is None or (n.addr.version == prefix.version and n.addr in prefix))
    ]
    if dev_name is None:
        lines = [n.render() for n in shown]
    else:
        lines = [f"{n.addr} lladdr {n.mac} {n.state}" for n in shown]
    return TextResult(
        summary=f"{len(shown)} neighbour(s)",
        text="\n".join(lines),
        data={"neigh": [n.render() for n in shown]},
    )


_IP_OBJECTS: dict[str, Callable[[Session, Node, _Args, _Opts], Result]] = {
    "link": _link,
    "address": _addr,
    "route": _route,
    "neighbour": _neigh,
}


def _ethtool(session: Session, inv: Invocation) -> Result:
    node = session.lab.node(inv.node)
    words = list(inv.args["args"])
    if not words:
        raise BadArgument(
            "ethtool needs a device or an option", valid=["-k DEV", "-K DEV ...", "-S DEV", "DEV"]
        )
    opt = words.pop(0) if words[0].startswith("-") else ""
    if not words:
        raise BadArgument(f"ethtool {opt} needs a device", valid=list(node.devs))
    dev = node.dev(words.pop(0))
    if opt in ("-k", "--show-features", "--show-offload"):
        lines = [f"Features for {dev.name}:"]
        for name in ETHTOOL_FEATURES:
            if name in dev.features:
                fixed_esp = not dev.xfrmdev_ops and "esp" in name
                fixed = " [fixed]" if name in dev.fixed or fixed_esp else ""
                lines.append(f"{name}: {'on' if dev.features[name] else 'off'}{fixed}")
        return TextResult(
            summary=f"features of {dev.name}", text="\n".join(lines), data=dict(dev.features)
        )
    if opt in ("-K", "--features", "--offload"):
        if not words or len(words) % 2:
            raise BadArgument("ethtool -K DEV FEATURE on|off [FEATURE on|off ...]")
        pairs = list(zip(words[::2], words[1::2], strict=True))
        for name, value in pairs:
            if value not in ("on", "off"):
                raise BadArgument(f"'{value}' for {name}", valid=["on", "off"])
        offloaded = session.lab.offloaded_count(node.name, dev.name)
        saved = dict(dev.features)
        try:
            for name, value in pairs:
                dev.set_feature(name, value == "on", offloaded_states=offloaded)
        except EsplabError:
            dev.features = saved
            raise
        return MessageResult(
            summary=", ".join(f"{n} {v}" for n, v in pairs), data=dict(dev.features)
        )
    if opt in ("-S", "--statistics"):
        stats = {**dev.counters.as_dict(), **dev.stats}
        text = "NIC statistics:\n" + "\n".join(f"     {k}: {v}" for k, v in stats.items())
        return TextResult(summary=f"statistics of {dev.name}", text=text, data=stats)
    if opt == "":
        text = f"Settings for {dev.name}:\n\tLink detected: {'yes' if dev.up else 'no'}"
        return TextResult(summary=dev.name, text=text, data={"up": dev.up})
    raise BadArgument(f"unknown ethtool option '{opt}'", valid=["-k", "-K", "-S"], value=opt)


def _node(session: Session, inv: Invocation) -> Result:
    name = inv.args["name"]
    if name is None:
        return MessageResult(
            summary=f"current node: {session.lab.current}", data={"node": session.lab.current}
        )
    session.lab.node(name)
    session.lab.current = name
    return MessageResult(summary=f"current node: {name}", data={"node": name})


def _ip_complete(session: Session, words: list[str]) -> list[str]:
    words = [w for w in words if not w.startswith("-")]
    if not words:
        return [*OBJECTS, "-s", "-4", "-6", "-br"]
    obj = next((o for o in OBJECTS if words[0] and o.startswith(words[0])), None)
    if len(words) == 1:
        return {
            "link": ["show", "set"],
            "address": ["show", "add", "del"],
            "route": ["show", "get", "add", "del", "replace"],
            "neighbour": ["show", "add", "replace", "del"],
            "xfrm": ["state", "policy"],
        }.get(obj or "", [])
    if obj in ("link", "address", "neighbour") and words[-1] == "dev":
        return list(session.lab.node().devs)
    if obj == "link" and len(words) == 2:
        return list(session.lab.node().devs)
    if obj == "xfrm":
        from esplab.commands.handlers.xfrm import xfrm_completions

        completions: list[str] = xfrm_completions(session, words[1:])
        return completions
    return []


def _ethtool_complete(session: Session, words: list[str]) -> list[str]:
    if not words:
        return ["-k", "-K", "-S", *session.lab.node().devs]
    if len(words) == 1 and words[0].startswith("-"):
        return list(session.lab.node().devs)
    if words[0] == "-K" and len(words) >= 2:
        return ["on", "off"] if len(words) % 2 == 1 else list(ETHTOOL_FEATURES)
    return []


COMMANDS = (
    Command(
        name="ip",
        summary="iproute2 on the current node: link, addr, route, neigh, xfrm",
        handler=_ip,
        params=(Param("args", kind="rest", metavar="OBJECT"),),
        usage_text="[NODE] ip [-s] [-4|-6] [-br] link|addr|route|neigh|xfrm ...",
        example="host ip -s link show eth0",
        details="ip link set DEV up|down|mtu N; ip addr add|del ADDR/PLEN dev DEV; "
        "ip route add|del|get ...; ip neigh add ADDR lladdr MAC dev DEV; ip xfrm state|policy ...",
        complete=_ip_complete,
    ),
    Command(
        name="ethtool",
        summary="device features (-k/-K), statistics (-S) and link state",
        handler=_ethtool,
        params=(Param("args", kind="rest", metavar="ARGS"),),
        usage_text="[NODE] ethtool [-k|-K|-S] DEV [FEATURE on|off ...]",
        example="ethtool -K wan esp-hw-offload off",
        complete=_ethtool_complete,
    ),
    Command(
        name="node",
        summary="show or change the current node (commands act on it by default)",
        handler=_node,
        params=(
            Param(
                "name", optional=True, choices=lambda s: list(s.lab.nodes), validate_choices=False
            ),
        ),
        example="node host",
    ),
)
