"""Frames and helpers shared by the DSA tag and QDMA descriptor tests.

Section numbers refer to /work/shared/reference/airoha-dsa-xfrm.md.
"""

from __future__ import annotations

import struct
from pathlib import Path

__all__ = ["DA", "IPV4_UDP", "QINQ", "SA", "UNTAGGED", "VLAN100", "pcap_linktype"]

# Addresses of the hex examples in section 2.2.
DA = bytes.fromhex("020000000002")
SA = bytes.fromhex("020000000001")
# IPv4 192.0.2.1 -> 192.0.2.2, id 1, TTL 64, UDP 1000 -> 2000 with no checksum
# (RFC 791 / RFC 768, header checksum 0xf6cc worked out by hand).
IPV4_UDP = bytes.fromhex("4500001c000100004011f6ccc0000201c000020203e807d000080000")

UNTAGGED = DA + SA + bytes.fromhex("0800") + IPV4_UDP
VLAN100 = DA + SA + bytes.fromhex("810000640800") + IPV4_UDP
# 802.1ad S-VLAN 10 carrying an 802.1Q C-VLAN 20.
QINQ = DA + SA + bytes.fromhex("88a8000a810000140800") + IPV4_UDP


def pcap_linktype(path: Path) -> int:
    # libpcap file header: the link type is the u32 at offset 20 (native order).
    header = path.read_bytes()[:24]
    magic = header[:4]
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    return int(struct.unpack(order + "I", header[20:24])[0])
