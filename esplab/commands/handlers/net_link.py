"""``ip link`` and ``ip addr``: a node's devices (up/down, MTU) and their addresses."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from ipaddress import IPv4Address, IPv4Interface, IPv6Interface, ip_interface

from esplab.commands.base import Session
from esplab.commands.handlers.net_args import IpArgs, IpOpts, Keyword, resolve
from esplab.commands.handlers.net_dev_show import (
    addr_text,
    dev_addrs,
    is_secondary,
    link_text,
    show_devs,
)
from esplab.commands.parser import parse_int
from esplab.commands.result import MessageResult, Result, TextResult
from esplab.errors import BadArgument, KernelError
from esplab.model.hw.switch import DSA_TAG_LEN
from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.netdev import NetDev
from esplab.model.kernel.stack.pmtu_cache import IPV6_MIN_MTU
from esplab.model.kernel.stack.route import brings_prefix_route, connected_route

__all__ = ["ip_addr", "ip_link"]

# ip/iplink.c do_iplink tries these in order, so "s" is set and "sh" show; change is set.
_LINK_VERBS = (
    Keyword("add", None),
    Keyword("set", "set"),
    Keyword("change", "set"),
    Keyword("replace", None),
    Keyword("delete", None),
    Keyword("show", "show"),
    Keyword("lst", "show"),
    Keyword("list", "show"),
    Keyword("xstats", None),
    Keyword("afstats", None),
    Keyword("property", None),
    Keyword("help", None),
)

# ip/ipaddress.c do_ipaddr tries these in order, so "s" is show ("save" comes later).
_ADDR_VERBS = (
    Keyword("add", "add"),
    Keyword("change", None),
    Keyword("chg", None, exact=True),
    Keyword("replace", None),
    Keyword("delete", "delete"),
    Keyword("list", "show"),
    Keyword("show", "show"),
    Keyword("lst", "show"),
    Keyword("flush", None),
    Keyword("save", None),
    Keyword("restore", None),
    Keyword("showdump", None),
    Keyword("help", None),
)


def ip_link(session: Session, node: Node, args: IpArgs, opts: IpOpts) -> Result:
    word = args.take("command") if args.more() else "show"
    verb = resolve(word, _LINK_VERBS, ["show", "set"], "Command", " for ip link")
    if verb == "show":
        devs, _ = show_devs(node, args)
        text = link_text(
            node, devs, opts.stats, opts.brief, details=opts.details > 0, one=opts.oneline
        )
        return TextResult(
            summary=f"{len(devs)} device(s)",
            text=text,
            data={d.name: {"up": d.up, "mtu": d.mtu, **d.counters.as_dict()} for d in devs},
        )
    if args.peek() == "dev":
        args.take("dev")
    dev = node.dev(args.take("device"))
    changes: list[Callable[[list[str]], str]] = []
    mtu_given = False
    while args.more():
        word = args.take("setting")
        if word in ("up", "down"):
            changes.append(partial(_set_updown, session, node, dev, word == "up"))
        elif word == "mtu":
            value = args.take("mtu value")
            if mtu_given:  # iproute2 ip/iplink.c: if (mtu != -1) duparg("mtu", *argv)
                raise BadArgument(
                    f'duplicate "mtu": "{value}" is the second value', valid="one mtu N"
                )
            mtu_given = True
            mtu = parse_int(value, "mtu")
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
        data={
            "dev": dev.name,
            "up": dev.up,
            "mtu": dev.mtu,
            # Every device of the node after the change: a conduit going down closes
            # its user ports, a user port opening opens the conduit.
            "devs": {d.name: {"up": d.up, "mtu": d.mtu} for d in node.devs.values()},
        },
    )


def _addr_args(
    node: Node, args: IpArgs, iface: IPv4Interface | IPv6Interface
) -> tuple[NetDev, IPv4Address | None]:
    """``dev DEVICE`` and, for IPv4, ``brd|broadcast ADDR|+|-`` after ``ip addr add|del
    ADDR``: iproute2 sends a broadcast only when told (ip/ipaddress.c
    ``ipaddr_modify``): "+" is the subnet's broadcast for a prefix up to /30 (none
    for /31 and /32), "-" its network address [C]."""
    dev: NetDev | None = None
    brd: IPv4Address | None = None
    while args.more():
        word = args.take("keyword")
        if word == "dev":
            dev = node.dev(args.take("device"))
        elif word in ("brd", "broadcast") and isinstance(iface, IPv4Interface):
            value = args.take(f"address after '{word}'")
            net = iface.network
            if value == "+":
                brd = net.broadcast_address if net.prefixlen <= 30 else None
            elif value == "-":
                brd = net.network_address if net.prefixlen <= 30 else None
            else:
                try:
                    brd = IPv4Address(value)
                except ValueError:
                    raise BadArgument(
                        f'invalid broadcast "{value}"', valid="ADDR, + or -", value=value
                    ) from None
        else:
            raise BadArgument(
                f'unknown ip addr keyword "{word}"', valid=["dev DEVICE", "brd ADDR|+|-"]
            )
    if dev is None:
        raise BadArgument("expected 'dev DEVICE'")
    return dev, brd


def _set_updown(session: Session, node: Node, dev: NetDev, up: bool, notes: list[str]) -> str:
    lines, more = session.lab.set_link(node.name, dev.name, up)
    notes += more
    return "; ".join(lines)


def _check_mtu(node: Node, dev: NetDev, mtu: int) -> None:
    if dev.conduit is None:
        dev.check_mtu(mtu)
        return
    # A DSA user port: the core's range check against the switch's maximum (EINVAL),
    # then dsa_user_change_mtu's: user MTU + tag must fit the conduit (ERANGE) (1.3) [C].
    conduit = node.dev(dev.conduit)
    limit = min(conduit.max_mtu, dev.max_mtu + DSA_TAG_LEN)
    valid = (
        f"valid: {dev.min_mtu}..{limit - DSA_TAG_LEN} ({conduit.name}'s maximum "
        f"{conduit.max_mtu} less the 4-byte tag)"
    )
    dev.check_mtu(mtu, hint=valid)
    if mtu + DSA_TAG_LEN > limit:
        raise KernelError("ERANGE", f"{dev.name} mtu {mtu} + 4-byte tag > {limit}", hint=valid)


def _ipv6_floor(node: Node, dev: NetDev, notes: list[str]) -> None:
    """Below IPV6_MIN_MTU (1280) a device loses IPv6: NETDEV_CHANGEMTU runs
    ``addrconf_ifdown`` (net/ipv6/addrconf.c ``addrconf_notify``), and raising the MTU
    again does not bring static addresses back [C]."""
    if dev.mtu < IPV6_MIN_MTU:
        lost = node.ipv6_off(dev.name, f"mtu {dev.mtu} < {IPV6_MIN_MTU}, the IPv6 minimum")
        notes += [f"{dev.name}: {note}" for note in lost]


def _set_mtu(node: Node, dev: NetDev, mtu: int, notes: list[str]) -> str:
    """``dev_set_mtu`` (net/core/dev.c) returns early when the MTU does not change.

    A DSA user port's change sets the conduit to the largest user MTU + the tag,
    down or up ports alike (net/dsa/user.c ``dsa_user_change_mtu``). A conduit's own
    change is not vetoed: net/dsa registers no NETDEV_PRECHANGEMTU handler and
    ``airoha_dev_change_mtu`` always succeeds, so a conduit MTU below what its user
    ports need is accepted, and said so, until the next user-port change resets it.
    Each device whose MTU changes, the conduit included, may lose IPv6
    (:func:`_ipv6_floor`). ``notes`` is the list ``ip link set`` collects from its
    changes: what IP lost."""
    if mtu == dev.mtu:
        return f"{dev.name} mtu {mtu} (unchanged)"
    dev.mtu = mtu
    _ipv6_floor(node, dev, notes)
    node.ipv6_on(dev.name)  # back to 1280 or more: addrconf runs again
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
    _ipv6_floor(node, conduit, notes)
    node.ipv6_on(conduit.name)
    return (
        f"{dev.name} mtu {mtu}; {conduit.name} mtu {old} -> {want} "
        f"(largest user MTU + {DSA_TAG_LEN}-byte tag)"
    )


def ip_addr(session: Session, node: Node, args: IpArgs, opts: IpOpts) -> Result:
    word = args.take("command") if args.more() else "show"
    verb = resolve(word, _ADDR_VERBS, ["show", "add", "del"], "Command", " for ip addr")
    if verb == "show":
        fam = opts.family
        shown, named = show_devs(node, args)
        devs = [d for d in shown if fam is None or dev_addrs(d, fam)]
        text = addr_text(
            node,
            devs,
            fam,
            opts.brief,
            details=opts.details > 0,
            one=opts.oneline,
            filtered=named,
        )
        return TextResult(
            summary="addresses",
            text=text,
            data={d.name: [str(a) for a in dev_addrs(d, fam)] for d in devs},
        )
    try:
        iface = ip_interface(args.take("address"))
    except ValueError as exc:
        raise BadArgument(f"bad address: {exc}", valid="ADDR/PLEN, e.g. 192.0.2.9/24") from None
    dev, brd = _addr_args(node, args, iface)
    if verb == "add":
        if iface in dev.addrs:
            raise KernelError("EEXIST", f"{iface} on {dev.name}")
        dev.addrs.append(iface)
        if isinstance(iface, IPv4Interface) and brd is not None:
            dev.brd[iface] = brd
        # net/ipv4/fib_frontend.c fib_add_ifaddr adds the prefix route only while the
        # device is up (NETDEV_UP adds it later), and none for a /32; inet6_addr_add
        # adds it regardless (brings_prefix_route).
        # A secondary address brings no prefix route: its primary's stands (the
        # IFA_F_SECONDARY test in fib_add_ifaddr) [C].
        routed = brings_prefix_route(iface) and not is_secondary(dev, iface)
        if routed and (dev.up or iface.version == 6):
            node.routes.append(connected_route(iface, dev.name))
        node.invalidate()
        later = (
            "" if dev.up or iface.version == 6 or not routed else " (its route comes when it is up)"
        )
        return MessageResult(summary=f"{iface} added to {dev.name}{later}")
    if iface not in dev.addrs:
        raise KernelError("EADDRNOTAVAIL", f"{iface} not on {dev.name}")
    # Deleting a primary IPv4 address deletes its secondaries too: promote_secondaries
    # is 0 by default (net/ipv4/devinet.c __inet_del_ifa) [C].
    gone = [iface]
    if not is_secondary(dev, iface):
        gone += [
            a
            for a in dev.addrs
            if a != iface and is_secondary(dev, a) and a.network == iface.network
        ]
    for addr in gone:
        dev.addrs.remove(addr)
        if isinstance(addr, IPv4Interface):
            dev.brd.pop(addr, None)
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
    notes: list[str] = []
    if len(gone) > 1:
        notes.append(f"secondary {', '.join(map(str, gone[1:]))} removed with it")
    if iface.version == 4 and not any(a.version == 4 for a in dev.addrs):
        # net/ipv4/fib_frontend.c fib_inetaddr_event, NETDEV_DOWN of the last address:
        # "Disable IP", fib_disable_ip flushes every IPv4 route through the device.
        notes += node.disable_ip(dev.name)
    return MessageResult(summary="\n".join([f"{iface} removed from {dev.name}", *notes]))
