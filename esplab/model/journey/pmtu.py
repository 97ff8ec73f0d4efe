"""Path MTU on the way out: a packet too big for its device, and the tunnel-mode check.

A packet that does not fit the device's MTU is dropped; when it may not be
fragmented (IPv4 DF, or any IPv6 packet) its sender gets ICMP fragmentation needed
or packet too big with the MTU (RFC 1191, RFC 8201). In tunnel mode the check is
made before ESP, against the ESP packet's size, and the ICMP carries the MTU less
the ESP overhead (airoha-dsa-xfrm.md 3.4 check 5, 3.7). A forwarded packet's ICMP
travels back to its sender as a journey of its own.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from esplab.model.journey.walk import Walk, addrs, icmp_too_big, no_icmp, quoted
from esplab.model.kernel.esp.ip import IpInfo, parse_ip
from esplab.model.kernel.esp.tfc import state_mtu as esp_state_mtu

if TYPE_CHECKING:
    from esplab.model.journey.datapath import Datapath
    from esplab.model.kernel.esp.sa import EspSA
    from esplab.model.kernel.node import Node
    from esplab.model.kernel.xfrm.objects import XfrmState

__all__ = ["state_mtu", "too_big", "tunnel_too_big"]


def too_big(
    datapath: Datapath,
    walk: Walk,
    node: Node,
    dev_name: str,
    packet: bytes,
    mtu: int,
    learned: bool = False,
) -> None:
    """``packet`` does not fit ``dev_name`` (MTU ``mtu``, or the path MTU the node
    ``learned`` from ICMP): ICMP to its sender when it may not be fragmented, else a
    drop (IPv4 fragmentation is not modelled) [C]/[M]."""
    v6 = packet[0] >> 4 == 6
    df = v6 or bool(struct.unpack("!H", packet[6:8])[0] & 0x4000)
    what = "packet too big" if v6 else "fragmentation needed"
    fits = f"the path MTU {mtu} learned from ICMP" if learned else dev_name
    if df:
        icmp = icmp_too_big(node, dev_name, quoted(walk, packet), mtu)
        walk.drop(
            f"{node.name}.pmtu",
            node.name,
            f"{len(packet)} > {'path ' if learned else ''}mtu {mtu}: "
            + (f"ICMP {what}" if icmp is not None else f"dropped, {no_icmp(packet, too_big=True)}"),
            "FragFails" if not v6 else "Ip6FragFails",  # /proc/net/snmp, snmp6
            f"the packet does not fit {fits} and may not be fragmented, so the "
            + (
                f"sender gets ICMP {what} with mtu {mtu} (RFC 1191, RFC 8201); the "
                "snapshot is that ICMP message"
                if icmp is not None
                else f"packet is dropped; {no_icmp(packet, too_big=True)}"
            ),
            data=icmp,
        )
        src = addrs(packet)[0]
        if icmp is not None and not node.owns(src):
            # A forwarded packet: the ICMP error travels back as a journey of its own.
            datapath.send(node.name, None, icmp)
    else:
        walk.drop(
            f"{node.name}.pmtu",
            node.name,
            f"{len(packet)} > mtu {mtu}: IPv4 fragmentation is not modelled",
            None,
            "without DF Linux would fragment the packet (ip_fragment; OutFragOKs, "
            "FragCreates); the lab does not model fragmentation, so it stops here",
            "M",
        )


def state_mtu(state: XfrmState, sa: EspSA, mtu: int) -> int:
    """The largest packet ``state`` can protect within ``mtu`` (``xfrm_state_mtu``,
    net/xfrm/xfrm_state.c) [C]: the device MTU less the SA's header length (outer IP
    header in tunnel mode, UDP encapsulation, ESP header, IV) and its ICV, rounded down
    to the cipher's alignment, less the pad length and next header bytes; transport
    mode keeps the IP header (``net_adj``) out of the rounding."""
    return esp_state_mtu(sa, mtu, state.dst.version)


def tunnel_too_big(
    datapath: Datapath,
    walk: Walk,
    node: Node,
    state: XfrmState,
    sa: EspSA,
    packet: bytes,
    dev_name: str,
    info: IpInfo | None,
    forwarded: bool = False,
) -> bool:
    """The xfrm tunnel size check (airoha-dsa-xfrm.md 3.4 check 5, 3.7) [C]: a DF (or
    IPv6) inner packet longer than the bundle's MTU (:func:`state_mtu` of the device's)
    gets ICMP with that MTU, and is refused. A forwarded packet meets it in
    ``ip_forward`` (the route is the xfrm bundle, ``ip_exceeds_mtu``): FragFails. The
    node's own packet meets it in ``xfrm4_tunnel_check_size``: -EMSGSIZE,
    XfrmOutStateModeError on the software path (crypto offload of an over-size packet
    takes it too), XfrmOutError under packet offload (no software fallback)."""
    if info is None:
        info = parse_ip(packet)
    v6 = packet[0] >> 4 == 6
    if not (v6 or info.df):
        return False
    out_dev = node.dev(dev_name)
    mtu = state_mtu(state, sa, out_dev.mtu)
    if v6:  # ip6_forward, xfrm6_tunnel_check_size: never below the IPv6 minimum
        mtu = max(mtu, 1280)
    if len(packet) <= mtu:
        return False
    packet_offload = state.offload is not None and state.offload.type == "packet"
    if forwarded:
        counter = "Ip6FragFails" if v6 else "FragFails"
        where = "ip_forward: the bundle's MTU"
    else:
        counter = "XfrmOutError" if packet_offload else "XfrmOutStateModeError"
        node.xfrm.mib.bump(counter)
        where = "xfrm tunnel check: the bundle's MTU"
    # A forwarded packet meets the bundle's MTU in ip_forward, before ip_decrease_ttl,
    # so the ICMP quotes it as it arrived [D].
    icmp = icmp_too_big(node, dev_name, quoted(walk, packet), mtu)
    walk.drop(
        f"{node.name}.xfrm.state",
        node.name,
        f"{len(packet)} > mtu {mtu} of the tunnel over {dev_name}: "
        + (
            f"ICMP with mtu {mtu}"
            if icmp is not None
            else f"dropped, {no_icmp(packet, too_big=True)}"
        ),
        counter,
        f"{where} is {dev_name}'s {out_dev.mtu} less the SA's overhead "
        f"({out_dev.mtu - mtu} bytes, xfrm_state_mtu); the inner packet may not be "
        "fragmented, so "
        + (
            "its sender learns that MTU; the snapshot is the ICMP message"
            if icmp is not None
            else f"it is dropped; {no_icmp(packet, too_big=True)}"
        ),
        data=icmp,
    )
    if icmp is not None and not node.owns(addrs(packet)[0]):
        datapath.send(node.name, None, icmp)  # a forwarded packet: back to its sender
    return True
