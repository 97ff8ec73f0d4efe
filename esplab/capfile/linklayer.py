"""From a captured frame to its ESP bytes: link headers, VLAN and DSA tags, IP, NAT-T.

Link types (tcpdump.org numbers): Ethernet (1), raw IP (101, and 228/229 for
IPv4/IPv6 only), Linux cooked capture v1 (113: 16-byte header, protocol at
offset 14) and v2 (276: 20-byte header, protocol at offset 0), and esplab's
``DLT_MTK_ETHER`` (151): Ethernet with the 4-byte MediaTek special tag after the
source MAC (airoha-dsa-xfrm.md 2.1). Whatever the tag says, the EtherType that
follows it sits at offset 16: untagged and receive tags are ``00 0N 00 00`` in
front of the original EtherType, and a transmit tag that merged an 802.1Q/802.1ad
header keeps the TCI at 14-15 (2.2, 2.3). The tag is never guessed on plain
Ethernet. 802.1Q, 802.1ad and the old 0x9100 QinQ tags are skipped, stacked too.

ESP is IP protocol 50, or UDP (RFC 3948 2.1) on port 4500 or on an SA's encap
ports; a NAT-keepalive (one 0xFF byte, 3948 2.3) and the non-ESP marker (four
zero bytes, IKE, 3948 2.2) are not ESP. Fragments are not reassembled.
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from esplab.errors import DecodeError
from esplab.model.kernel.esp.ip import parse_ip
from esplab.pcapio import (
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_RAW,
)

__all__ = [
    "CUT",
    "DLT_MTK_ETHER",
    "LINKTYPE_ETHERNET",
    "LINKTYPE_IPV4",
    "LINKTYPE_IPV6",
    "LINKTYPE_LINUX_SLL",
    "LINKTYPE_LINUX_SLL2",
    "LINKTYPE_RAW",
    "NATT_PORT",
    "SKIP_REASONS",
    "SUPPORTED_LINKTYPES",
    "TRUNCATED",
    "Located",
    "ip_offset",
    "locate_esp",
]

# esplab.layers.linktypes.DLT_MTK_ETHER (DLT_USER4); repeated here because importing
# esplab.layers loads scapy, which decode does not need.
DLT_MTK_ETHER = 151
NATT_PORT = 4500

SUPPORTED_LINKTYPES: Mapping[int, str] = MappingProxyType(
    {
        LINKTYPE_ETHERNET: "Ethernet",
        LINKTYPE_RAW: "raw IP",
        LINKTYPE_IPV4: "raw IPv4",
        LINKTYPE_IPV6: "raw IPv6",
        LINKTYPE_LINUX_SLL: "Linux cooked v1",
        LINKTYPE_LINUX_SLL2: "Linux cooked v2",
        DLT_MTK_ETHER: "Ethernet with MediaTek DSA tag",
    }
)

_VLAN_TPIDS = frozenset({0x8100, 0x88A8, 0x9100})
_ETH_IPV4, _ETH_IPV6 = 0x0800, 0x86DD
_UNPACK_H = struct.Struct("!H").unpack_from
_UNPACK_HH = struct.Struct("!HH").unpack_from

# Why a frame holds no ESP, as negative codes from ip_offset / in Located.skip.
NOT_IP = "not-ip"
LINK_UNSUPPORTED = "link-type"
TRUNCATED = "truncated"
CUT = "cut-esp"
#: Skip reason -> words for the summary.
SKIP_REASONS: Mapping[str, str] = MappingProxyType(
    {
        NOT_IP: "not IP (ARP, LLDP, ...)",
        LINK_UNSUPPORTED: "link type not decoded",
        TRUNCATED: "truncated link or IP header",
        CUT: "ESP cut by the snaplen before its SPI and sequence number",
        "malformed-ip": "IP header lengths do not fit the frame",
        "fragment": "IP fragment (not reassembled)",
        "other-ip": "IP without ESP",
        "keepalive": "NAT-keepalive (RFC 3948 2.3)",
        "ike": "IKE on the NAT-T port (non-ESP marker, RFC 3948 2.2)",
    }
)


def _ether_payload(data: bytes, off: int) -> int | str:
    """Offset of the IP header after an EtherType at ``off``, skipping VLAN tags."""
    n = len(data)
    while True:
        if off + 2 > n:
            return TRUNCATED
        etype = _UNPACK_H(data, off)[0]
        if etype in (_ETH_IPV4, _ETH_IPV6):
            return off + 2
        if etype in _VLAN_TPIDS:
            off += 4
            continue
        return NOT_IP


def ip_offset(linktype: int, data: bytes) -> int | str:
    """Where the IP header starts in a frame of this link type, or why there is none."""
    if linktype == LINKTYPE_ETHERNET:
        return _ether_payload(data, 12)
    if linktype in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6):
        return 0
    if linktype == LINKTYPE_LINUX_SLL:
        return _ether_payload(data, 14)
    if linktype == LINKTYPE_LINUX_SLL2:
        if len(data) < 20:
            return TRUNCATED
        etype = _UNPACK_H(data, 0)[0]
        if etype in (_ETH_IPV4, _ETH_IPV6):
            return 20
        if etype in _VLAN_TPIDS:
            return _ether_payload(data, 22)
        return NOT_IP
    if linktype == DLT_MTK_ETHER:
        return _ether_payload(data, 16)
    return LINK_UNSUPPORTED


@dataclass(frozen=True, slots=True)
class Located:
    """The ESP inside a frame, or why there is none (``skip`` set, the rest empty,
    except that ``ike`` keeps the offsets, addresses and ports, so a caller can tell
    whether the non-ESP marker was captured).

    ``ip`` is the offset of the outer IP header, ``hlen`` the length of the headers
    kept in front of ESP (IPv4 with options, or IPv6 with its extension headers),
    ``esp`` the ESP bytes (SPI to ICV) and ``encap`` the UDP ports when the ESP came
    in UDP. ``src``/``dst`` are the packed outer addresses.
    """

    skip: str | None
    ip: int = 0
    version: int = 0
    hlen: int = 0
    nh_off: int = 0
    src: bytes = b""
    dst: bytes = b""
    esp: bytes = b""
    encap: tuple[int, int] | None = None


def locate_esp(
    linktype: int, data: bytes, encap_ports: Collection[int], spis: Collection[int] = ()
) -> Located:
    """Find the ESP in one frame (the general path; the decoder inlines the common case).

    ``spis``: UDP on any port whose payload starts with one of these SPIs is taken
    as ESP too (diagnose looks for NAT-T on unexpected ports).
    """
    off = ip_offset(linktype, data)
    if isinstance(off, str):
        return Located(off)
    packet = data[off:] if off else data
    try:
        info = parse_ip(packet)
    except DecodeError:
        return Located("malformed-ip")
    if info.fragment:
        return Located("fragment")
    if info.version == 4:
        src, dst = packet[12:16], packet[16:20]
    else:
        src, dst = packet[8:24], packet[24:40]
    start, end = info.hlen, info.end
    if info.proto == 50:
        return Located(None, off, info.version, info.hlen, info.nh_off, src, dst, packet[start:end])
    if info.proto != 17 or end - start < 8:
        return Located("other-ip")
    sport, dport = _UNPACK_HH(packet, start)
    body = packet[start + 8 : end]
    natt = sport in encap_ports or dport in encap_ports
    if not natt and (not spis or len(body) < 8 or int.from_bytes(body[:4], "big") not in spis):
        return Located("other-ip")
    if body == b"\xff":
        return Located("keepalive")
    if body[:4] == b"\x00\x00\x00\x00":
        return Located(
            "ike", off, info.version, info.hlen, info.nh_off, src, dst, b"", (sport, dport)
        )
    return Located(None, off, info.version, info.hlen, info.nh_off, src, dst, body, (sport, dport))
