"""What a node's stack checks of a received frame before IP sees it.

``untag`` handles 802.1Q/802.1ad tags as ``__netif_receive_skb_core`` does for a
device with no VLAN devices: a priority tag (VID 0) is cleared, any other VID marks
the frame PACKET_OTHERHOST. ``frame_checks`` picks the protocol by EtherType, drops
a unicast frame for another MAC, and parses the IP header with ip_rcv_core's and
ipv6_rcv's counters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from esplab.errors import DecodeError
from esplab.model.journey.l2 import ETH_P_8021AD, ETH_P_8021Q, ETH_P_IP, ETH_P_IPV6
from esplab.model.journey.walk import Walk, tapname
from esplab.model.kernel.esp.ip import IpInfo, parse_ip

if TYPE_CHECKING:
    from esplab.model.kernel.node import Node
    from esplab.model.kernel.stack.netdev import NetDev

__all__ = ["frame_checks", "untag"]


def untag(walk: Walk, node: Node, dev: NetDev, frame: bytes) -> tuple[bytes, int] | None:
    """(the frame, its EtherType) once its VLAN tags are dealt with, or None when it
    was dropped. A priority tag (VID 0) is cleared and the frame goes on by the
    EtherType behind it [C]. Any other VID: no VLAN device takes it, so the frame is
    untagged and marked PACKET_OTHERHOST; IP drops it (ip_rcv_core, ipv6_rcv:
    rx_otherhost_dropped) [C], and a frame of another protocol finds no handler."""
    etype = int.from_bytes(frame[12:14], "big")
    while etype in (ETH_P_8021Q, ETH_P_8021AD) and len(frame) >= 18:
        vid = int.from_bytes(frame[14:16], "big") & 0x0FFF
        inner = int.from_bytes(frame[16:18], "big")
        if vid == 0:
            frame, etype = frame[:12] + frame[16:], inner
            continue
        if inner not in (ETH_P_IP, ETH_P_IPV6):
            # Marked PACKET_OTHERHOST and the tag cleared, once: what follows goes to
            # the handler of its EtherType, if any.
            return frame[:12] + frame[16:], inner
        dev.counters.rx_otherhost_dropped += 1
        walk.drop(
            f"{tapname(node, dev.name)}.rx",
            dev.name,
            f"VLAN {vid} frame, no {dev.name}.{vid} device",
            "rx_otherhost_dropped",
            "a tagged frame whose VID no VLAN device takes is marked PACKET_OTHERHOST "
            "(__netif_receive_skb_core) and IP drops it (ip_rcv_core); the lab has no "
            "VLAN devices",
            data=frame,
        )
        return None
    return frame, etype


def frame_checks(
    walk: Walk, node: Node, dev: NetDev, frame: bytes, packet: bytes, etype: int
) -> IpInfo | None:
    """What the stack checks before IP sees a frame, in its order: the EtherType
    picks a protocol handler (none: ``rx_dropped``, see below); the handler drops a unicast
    frame ``eth_type_trans`` marked PACKET_OTHERHOST (``rx_otherhost_dropped``);
    then the header: a total length past the frame is InTruncatedPkts, any other
    fault (the version, the header length) InHdrErrors (ip_rcv_core; ipv6_rcv:
    Ip6InTruncatedPkts, Ip6InHdrErrors) [C]. The parsed header, or None."""
    tap = f"{tapname(node, dev.name)}.rx"
    if etype not in (ETH_P_IP, ETH_P_IPV6):
        # __netif_receive_skb_core: no packet_type takes the protocol; a device counts
        # rx_dropped (rx_nohandler only under an rx_handler asking for exact
        # delivery, as bonding's) [C]. That ARP and the rest have no handler is the
        # lab's [M].
        dev.counters.rx_dropped += 1
        walk.drop(
            tap,
            dev.name,
            f"no protocol handler for EtherType {etype:#06x}",
            "rx_dropped",
            "the nodes model IPv4 (0x0800) and IPv6 (0x86dd) only (no ARP: neighbours "
            "are static); __netif_receive_skb_core counts a frame no protocol takes in "
            "the device's rx_dropped",
            "M",
            data=frame,
        )
        return None
    dst = frame[:6]
    if not dst[0] & 1 and dst != dev.mac_raw:
        dev.counters.rx_otherhost_dropped += 1
        walk.drop(
            tap,
            dev.name,
            f"frame for {dst.hex(':')}, not {dev.mac}",
            "rx_otherhost_dropped",
            "eth_type_trans marks a unicast frame for another address PACKET_OTHERHOST, "
            "and ip_rcv_core / ipv6_rcv drop it",
            data=frame,
        )
        return None
    version = 4 if etype == ETH_P_IP else 6
    v6 = "Ip6" if version == 6 else ""
    try:
        info = parse_ip(packet)
    except DecodeError as exc:
        reason, counter = str(exc), f"{v6}InHdrErrors"
        if packet and packet[0] >> 4 == version and _truncated(packet, version):
            counter = f"{v6}InTruncatedPkts"
    else:
        if info.version == version:
            return info
        reason = f"IPv{info.version} header in a frame of EtherType {etype:#06x}"
        counter = f"{v6}InHdrErrors"
    walk.drop(
        f"{node.name}.ip",
        node.name,
        reason,
        counter,
        f"ip{'v6' if version == 6 else ''}_rcv checks the header before anything else "
        f"and counts {counter}",
        data=frame,
    )
    return None


def _truncated(packet: bytes, version: int) -> bool:
    """The header's total length runs past the bytes received (ip_rcv_core
    ``skb->len < len``; ipv6_rcv ``pkt_len + 40 > skb->len``)."""
    if version == 4:
        return len(packet) >= 4 and int.from_bytes(packet[2:4], "big") > len(packet)
    return len(packet) >= 6 and 40 + int.from_bytes(packet[4:6], "big") > len(packet)
