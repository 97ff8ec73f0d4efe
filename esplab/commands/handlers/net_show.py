"""The iproute2 layouts of ``ip link`` and ``ip addr`` (ip/ipaddress.c), and the device
filter their ``show`` shares."""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Interface, IPv6Interface

from esplab.commands.handlers.net_args import IpArgs
from esplab.errors import BadArgument, NoSuchPort
from esplab.model.netdev import NetDev
from esplab.model.node import Node

__all__ = ["addr_text", "dev_addrs", "link_text", "show_devs"]


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


def dev_addrs(dev: NetDev, family: int | None) -> list[IPv4Interface | IPv6Interface]:
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
        addrs = dev_addrs(dev, family)
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


def show_devs(node: Node, args: IpArgs) -> list[NetDev]:
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
