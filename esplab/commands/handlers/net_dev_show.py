"""The iproute2 layouts of ``ip link`` and ``ip addr`` (ip/ipaddress.c
``print_linkinfo``, ``print_addrinfo``, ``print_stats64``), and the device filter
``ip link|addr show`` share.

Each device (and, for ``ip -o addr``, each address) is a record of lines; ``-o``
(oneline) joins a record's lines with a backslash, as iproute2 prints ``_SL_``
instead of a newline. The layouts, trailing blanks included, are checked against
iproute2 6.15 on Linux 6.12 [C].
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Interface, IPv6Interface

from esplab.commands.handlers.net_args import IpArgs
from esplab.errors import BadArgument, NoSuchPort
from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.netdev import NetDev, is_link_local

__all__ = [
    "addr_text",
    "dev_addrs",
    "link_text",
    "oneline",
    "show_devs",
    "stats_lines",
]


def oneline(records: Iterable[list[str]], one: bool) -> str:
    """The records' lines: one per line, or with ``one`` (``ip -o``) each record on
    one line, its lines joined by a backslash (iproute2's ``_SL_``)."""
    return "\n".join(("\\" if one else "\n").join(lines) for lines in records)


def _flags(dev: NetDev) -> str:
    up = dev.up
    kind = ["LOOPBACK"] if dev.kind == "loopback" else ["BROADCAST", "MULTICAST"]
    return "<" + ",".join(kind + (["UP", "LOWER_UP"] if up else [])) + ">"


def _link_line(dev: NetDev) -> str:
    """The link/ether (or, for lo, link/loopback) line of ``print_linkinfo``."""
    if dev.kind == "loopback":
        return f"    link/loopback {dev.mac} brd 00:00:00:00:00:00"
    return f"    link/ether {dev.mac} brd ff:ff:ff:ff:ff:ff"


def _ifname(dev: NetDev) -> str:
    return f"{dev.name}@{dev.conduit}" if dev.conduit else dev.name


def _state(dev: NetDev) -> str:
    if dev.kind == "loopback" and dev.up:
        return "UNKNOWN"  # lo has no carrier to report (operstate IF_OPER_UNKNOWN)
    return "UP" if dev.up else "DOWN"


def _qdisc(dev: NetDev) -> str:
    return "noqueue" if dev.kind in ("dsa-user", "loopback") else "mq"


def _cols(cols: list[int], *values: int) -> None:
    """iproute2 ``size_columns``: widen a column to fit its value's digits."""
    for at, value in enumerate(values):
        cols[at] = max(cols[at], len(str(value)))


def stats_lines(dev: NetDev, level: int) -> list[str]:
    """``print_stats64`` (ip/ipaddress.c) without -h: the RX and TX blocks, each
    header padded to its columns (so it ends in blanks) and each number followed by
    a blank; with ``-s -s`` (``level`` 2) the RX and TX error blocks, RX's with
    "nohandler" and "otherhost" columns when those counters are not 0, TX's with
    the carrier changes ("transns": the kernel always sends IFLA_CARRIER_CHANGES).
    Counters the model has no cause for (missed, multicast, carrier, collisions and
    the error kinds) read 0 [M]."""
    c = dev.counters
    # "*X errors:", packets, errors, dropped, heartbt, overrun, compressed, otherhost
    cols = [10, 7, 6, 7, 7, 7, 10, 9]
    _cols(cols, c.rx_bytes, c.rx_packets, c.rx_errors, c.rx_dropped, 0, 0, 0, 0)
    if level > 1:
        _cols(cols, 0, 0, 0, 0, 0, 0, c.rx_nohandler, c.rx_otherhost_dropped)
    _cols(cols, c.tx_bytes, c.tx_packets, c.tx_errors, c.tx_dropped, 0, 0, 0, 0)
    if level > 1:
        _cols(cols, 0, 0, 0, 0, 0, 0, dev.carrier_changes, 0)

    def nums(*values: int) -> str:
        return "".join(f"{v:>{cols[at + 1]}} " for at, v in enumerate(values))

    lines = [
        f"    RX: {'bytes':>{cols[0] - 4}} {'packets':>{cols[1]}} {'errors':>{cols[2]}} "
        f"{'dropped':>{cols[3]}} {'missed':>{cols[4]}} {'mcast':>{cols[5]}} {'':>{cols[6]}}",
        f"    {c.rx_bytes:>{cols[0]}} " + nums(c.rx_packets, c.rx_errors, c.rx_dropped, 0, 0),
    ]
    if level > 1:
        head = (
            f"    RX errors:{'':>{cols[0] - 10}} {'length':>{cols[1]}} {'crc':>{cols[2]}} "
            f"{'frame':>{cols[3]}} {'fifo':>{cols[4]}} {'overrun':>{cols[5]}}"
        )
        row = " " * (cols[0] + 5) + nums(0, 0, 0, 0, 0)
        if c.rx_nohandler:
            head += f"{' nohandler':>{cols[6] + 1}}"
            row += f"{c.rx_nohandler:>{cols[6]}} "
        if c.rx_otherhost_dropped:
            head += f"{' otherhost':>{cols[7] + 1}}"
            row += f"{c.rx_otherhost_dropped:>{cols[7]}} "
        lines += [head, row]
    lines += [
        f"    TX: {'bytes':>{cols[0] - 4}} {'packets':>{cols[1]}} {'errors':>{cols[2]}} "
        f"{'dropped':>{cols[3]}} {'carrier':>{cols[4]}} {'collsns':>{cols[5]}} {'':>{cols[6]}}",
        f"    {c.tx_bytes:>{cols[0]}} " + nums(c.tx_packets, c.tx_errors, c.tx_dropped, 0, 0),
    ]
    if level > 1:
        lines += [
            f"    TX errors:{'':>{cols[0] - 10}} {'aborted':>{cols[1]}} {'fifo':>{cols[2]}} "
            f"{'window':>{cols[3]}} {'heartbt':>{cols[4]}} {'transns':>{cols[5]}}",
            " " * (cols[0] + 5) + nums(0, 0, 0, 0, dev.carrier_changes),
        ]
    return lines


#: ``ip -d``: what each kind of device reports (IFLA_LINKINFO kind and options,
#: queues, min/max MTU come from the device). lo as Linux 6.12 prints it [C]; the
#: GDM ports are airoha_eth's ``alloc_etherdev_mqs(.., AIROHA_NUM_NETDEV_TX_RINGS (32
#: TX rings + 4 QoS channels), AIROHA_NUM_RX_RING (32))`` with no linkinfo kind [C];
#: a DSA user port has kind "dsa" with its conduit (iproute2 ip/iplink_dsa.c) and
#: one queue each way (``dsa_user_create``: ds->num_tx_queues, 1) [C]; the peers are
#: the veth and dummy devices the real-kernel peer creates (esplab.peer) [D], veth
#: with one queue pair [U: Linux gives it one per possible CPU]. The GSO/TSO/GRO
#: sizes are the core's defaults (GSO_LEGACY_MAX_SIZE 65536, GSO_MAX_SEGS 65535),
#: 524280 (GSO_MAX_SIZE) for tso_max_size where lo and veth raise it [C]. The
#: platform parent ("parentbus platform parentdev ...") of the GDM ports is not
#: shown [U: its device-tree name was not confirmed].
def _details(dev: NetDev) -> tuple[str | None, int, int, int]:
    """(kind line or None, numtxqueues, numrxqueues, tso_max_size) for ``dev``."""
    if dev.kind == "loopback":
        return None, 1, 1, 524280
    if dev.kind == "gdm":
        return None, 36, 32, 65536
    if dev.kind == "dsa-user":
        return f"dsa conduit {dev.conduit} ", 1, 1, 65536
    if dev.name == "eth0":
        return "veth ", 1, 1, 524280
    return "dummy ", 1, 1, 65536


def _detail_lines(dev: NetDev, link: bool) -> list[str]:
    """``print_linkinfo`` with ``-d``: promiscuity, allmulti and the MTU range on the
    link line; the kind (if any) starts a line of its own; then, for ``ip link`` only,
    the IPv6 address generation mode (IFLA_AF_SPEC, which the address dump does not
    carry), and the queues and offload sizes."""
    kind, txq, rxq, tso = _details(dev)
    lo = dev.kind == "loopback"
    lo_mtu = "minmtu 0 maxmtu 0" if lo else f"minmtu {dev.min_mtu} maxmtu {dev.max_mtu}"
    first = f"{_link_line(dev)} promiscuity 0 allmulti 0 {lo_mtu} "
    rest = ("addrgenmode eui64 " if link else "") + (
        f"numtxqueues {txq} numrxqueues {rxq} gso_max_size 65536 gso_max_segs 65535 "
        f"tso_max_size {tso} tso_max_segs 65535 gro_max_size 65536 "
        "gso_ipv4_max_size 65536 gro_ipv4_max_size 65536 "
    )
    if kind is None:
        return [first + rest]
    return [first, f"    {kind}{rest}"]


def link_text(
    node: Node,
    devs: Iterable[NetDev],
    stats: int,
    brief: bool = False,
    *,
    details: bool = False,
    one: bool = False,
) -> str:
    """``ip link`` (iproute2 ip/ipaddress.c ``print_linkinfo``); ``brief`` is
    ``print_linkinfo_brief``: name ("%-16s "), operstate ("%-14s "), MAC, flags.
    ``stats`` counts -s, ``details`` is -d and ``one`` -o."""
    records: list[list[str]] = []
    for dev in devs:
        if brief:
            records.append([f"{_ifname(dev):<16} {_state(dev):<14} {dev.mac} {_flags(dev)} "])
            continue
        lines = [
            f"{dev.ifindex}: {_ifname(dev)}: {_flags(dev)} mtu {dev.mtu} qdisc {_qdisc(dev)} "
            f"state {_state(dev)} mode DEFAULT group default qlen 1000"
        ]
        lines += _detail_lines(dev, link=True) if details else [_link_line(dev)]
        if stats:
            lines += stats_lines(dev, stats)
        records.append(lines)
    return oneline(records, one)


def _v6_order(iface: IPv4Interface | IPv6Interface) -> int:
    """Where the kernel lists an IPv6 address (net/ipv6/addrconf.c
    ``ipv6_link_dev_addr``): by scope, widest first (global, then link-local, then
    host: ::1), each new address before the older ones of its scope [C]."""
    if iface.ip.is_loopback:
        return 2
    return 1 if is_link_local(iface) else 0


def dev_addrs(dev: NetDev, family: int | None) -> list[IPv4Interface | IPv6Interface]:
    """The device's addresses of ``family`` in the kernel's dump order: AF_INET before
    AF_INET6 (rtnl_dump_all walks families in order). IPv4 (net/ipv4/devinet.c
    ``__inet_insert_ifa``): primaries in the order they came, then the secondaries (an
    address in the subnet of an earlier one). IPv6: by scope, newest first
    (:func:`_v6_order`). The model keeps ``dev.addrs`` oldest first."""
    v4: list[IPv4Interface | IPv6Interface] = [a for a in dev.addrs if a.version == 4]
    primary = [a for a in v4 if not is_secondary(dev, a)]
    v6 = [a for a in reversed(dev.addrs) if a.version == 6]
    ordered = [*primary, *(a for a in v4 if a not in primary), *sorted(v6, key=_v6_order)]
    return [a for a in ordered if family is None or a.version == family]


def is_secondary(dev: NetDev, iface: IPv4Interface | IPv6Interface) -> bool:
    """An IPv4 address is secondary when an earlier address of the device has the same
    subnet and prefix length (net/ipv4/devinet.c ``__inet_insert_ifa``: IFA_F_SECONDARY)."""
    if iface.version != 4:
        return False
    for other in dev.addrs:
        if other == iface:
            return False
        if other.version == 4 and other.network == iface.network:
            return True
    return False


def _addr_lines(dev: NetDev, iface: IPv4Interface | IPv6Interface) -> list[str]:
    """``print_addrinfo`` for one address: scope host on lo, link for fe80::/10,
    global otherwise; "secondary"; the IPv4 label (the device name); IFA_PROTO as
    "proto kernel_ll" (a link-local addrconf made) and "proto kernel_lo" (lo's ::1);
    the broadcast only when the address has one (``NetDev.brd``); each address is
    permanent, so its lifetimes print as forever (IFA_CACHEINFO)."""
    lo = dev.kind == "loopback"
    life = "       valid_lft forever preferred_lft forever"
    if isinstance(iface, IPv4Interface):
        brd = dev.brd.get(iface)
        shown = f" brd {brd}" if brd is not None else ""
        second = " secondary" if is_secondary(dev, iface) else ""
        scope = "host" if lo else "global"
        return [f"    inet {iface}{shown} scope {scope}{second} {dev.name}", life]
    if lo:
        return [f"    inet6 {iface} scope host proto kernel_lo ", life]
    if is_link_local(iface):
        return [f"    inet6 {iface} scope link proto kernel_ll ", life]
    return [f"    inet6 {iface} scope global ", life]


def addr_text(
    node: Node,
    devs: Iterable[NetDev],
    family: int | None = None,
    brief: bool = False,
    *,
    details: bool = False,
    one: bool = False,
    filtered: bool = False,
) -> str:
    """``ip addr`` (iproute2 ip/ipaddress.c ``ipaddr_list_flush_or_save``). With a family
    (-4/-6) only devices holding an address of it are listed (``ipaddr_filter``) and
    the link/ether line is left out (``print_linkinfo`` prints it only without one).
    ``ip -6 addr`` of every device gets its links from the IPv6 link dump
    (``inet6_dump_ifinfo``), which carries no qdisc and no group: its header lacks
    them; with a device named (``filtered``) the link comes whole. ``brief``: name,
    operstate, then each ADDR/PLEN. ``one`` (-o): a line per address, "N: NAME" and
    the address's lines joined by a backslash."""
    records: list[list[str]] = []
    for dev in devs:
        addrs = dev_addrs(dev, family)
        if family is not None and not addrs:
            continue
        if brief:
            records.append(
                [f"{_ifname(dev):<16} {_state(dev):<14} " + "".join(f"{a} " for a in addrs)]
            )
            continue
        if one:
            records += [
                [f"{dev.ifindex}: {dev.name}{first}", *more]
                for first, *more in (_addr_lines(dev, a) for a in addrs)
            ]
            continue
        if family == 6 and not filtered:
            head = f"mtu {dev.mtu} state {_state(dev)} qlen 1000"
        else:
            head = f"mtu {dev.mtu} qdisc {_qdisc(dev)} state {_state(dev)} group default qlen 1000"
        lines = [f"{dev.ifindex}: {_ifname(dev)}: {_flags(dev)} {head}"]
        if family is None:
            lines += _detail_lines(dev, link=False) if details else [_link_line(dev)]
        for iface in addrs:
            lines += _addr_lines(dev, iface)
        records.append(lines)
    return oneline(records, one)


def show_devs(node: Node, args: IpArgs) -> tuple[list[NetDev], bool]:
    """The device filter of ``ip link|addr show`` (iproute2 ip/ipaddress.c
    ``ipaddr_list_flush_or_save``): ``up`` keeps devices that are up; ``dev NAME`` or
    a bare NAME picks one device, and a second name is refused with iproute2's
    'either "dev" is duplicate, or "WORD" is a garbage' (``duparg2``). Returns the
    devices and whether one was named."""
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
    return [d for d in devs if d.up or not up_only], name is not None
