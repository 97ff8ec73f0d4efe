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

from esplab.model.esp_ip import IpInfo, parse_ip
from esplab.model.offload_rules import esp_length
from esplab.model.walk import Walk, addrs, icmp_too_big

if TYPE_CHECKING:
    from esplab.model.datapath import Datapath
    from esplab.model.esp_sa import EspSA
    from esplab.model.node import Node
    from esplab.model.xfrm.objects import XfrmState

__all__ = ["too_big", "tunnel_too_big"]


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
        icmp = icmp_too_big(node, dev_name, packet, mtu)
        walk.drop(
            f"{node.name}.pmtu",
            node.name,
            f"{len(packet)} > {'path ' if learned else ''}mtu {mtu}: ICMP {what}",
            "OutFragFails" if not v6 else "Ip6OutFragFails",
            f"the packet does not fit {fits} and may not be fragmented, so the "
            f"sender gets ICMP {what} with mtu {mtu} (RFC 1191, RFC 8201); the "
            "snapshot is that ICMP message",
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


def tunnel_too_big(
    datapath: Datapath,
    walk: Walk,
    node: Node,
    state: XfrmState,
    sa: EspSA,
    packet: bytes,
    dev_name: str,
    info: IpInfo | None,
) -> bool:
    """The xfrm tunnel size check (airoha-dsa-xfrm.md 3.4 check 5, 3.7) [C]: a DF (or
    IPv6) inner packet whose ESP packet would not fit the device gets ICMP with the
    MTU less the ESP overhead, and is refused: -EMSGSIZE, XfrmOutStateModeError on
    the software path (crypto offload of an over-size packet takes it too),
    XfrmOutError under packet offload (no software fallback)."""
    if info is None:
        info = parse_ip(packet)
    if not (packet[0] >> 4 == 6 or info.df):
        return False
    out_dev = node.dev(dev_name)
    outer = (20 if state.dst.version == 4 else 40) + (8 if state.encap is not None else 0)
    size = esp_length(len(packet), info.hlen, sa.iv_size, sa.align, sa.icv_len, outer)
    if size <= out_dev.mtu:
        return False
    mtu = out_dev.mtu - (size - len(packet))
    packet_offload = state.offload is not None and state.offload.type == "packet"
    counter = "XfrmOutError" if packet_offload else "XfrmOutStateModeError"
    node.xfrm.mib.bump(counter)
    icmp = icmp_too_big(node, dev_name, packet, mtu)
    walk.drop(
        f"{node.name}.xfrm.state",
        node.name,
        f"ESP packet of {size} bytes > mtu {out_dev.mtu}: ICMP with mtu {mtu}",
        counter,
        "tunnel mode: the inner packet may not be fragmented, so its sender "
        f"learns the path MTU less the ESP overhead ({size - len(packet)} bytes); "
        "the snapshot is that ICMP message",
        data=icmp,
    )
    if icmp is not None and not node.owns(addrs(packet)[0]):
        datapath.send(node.name, None, icmp)  # a forwarded packet: back to its sender
    return True
