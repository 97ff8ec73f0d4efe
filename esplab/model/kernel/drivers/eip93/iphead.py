"""The IP headers in front of ESP: finding ESP, and the driver's length and checksum fixes.

The EIP-93 writes the ESP packet from its header on (eip93.md 4.2, 4.3); everything in
front of it is the driver's: it finds the ESP header in the skb, sets the outer total
(or payload) length and the IPv4 header checksum (RFC 791, RFC 1071) for the result,
and on packet offload RX rebuilds the plain packet (airoha-dsa-xfrm.md 3.2).
"""

from __future__ import annotations

import struct
from functools import lru_cache

from esplab.model.kernel.esp.ip import (
    inner_set_ce_and_dscp,
    ipv4_fix,
    locate_esp,
    trim_to_ip_length,
)

__all__ = ["decapsulate", "fix_ipv4", "fix_outer", "locate_esp"]

_HEADER_WORDS = struct.Struct("!10H")  # an IPv4 header without options


def fix_ipv4(head: bytes, total_length: int, protocol: int) -> bytes:
    """``ipv4_fix`` (new total length, protocol and checksum) with fewer copies."""
    return _fix_ipv4(bytes(head), total_length, protocol)


@lru_cache(maxsize=1024)
def _fix_ipv4(head: bytes, total_length: int, protocol: int) -> bytes:
    """``fix_ipv4`` of a header as bytes, remembered: a flow's packets fix the same
    header the same way."""
    if len(head) == 20:  # no options: the ten words at once
        w0, _, w2, w3, w4, _, w6, w7, w8, w9 = _HEADER_WORDS.unpack(head)
        w4 = w4 & 0xFF00 | protocol
        total = w0 + total_length + w2 + w3 + w4 + w6 + w7 + w8 + w9
        total = (total & 0xFFFF) + (total >> 16)  # RFC 1071 end-around carry, twice
        total = (total & 0xFFFF) + (total >> 16)
        return _HEADER_WORDS.pack(w0, total_length, w2, w3, w4, ~total & 0xFFFF, w6, w7, w8, w9)
    if len(head) & 1 or len(head) < 12:
        return ipv4_fix(head, total_length, protocol)
    # RFC 1071: the sum is the big-endian integer mod 0xffff (0xffff for a nonzero multiple).
    h = head[:2] + total_length.to_bytes(2, "big") + head[4:9] + bytes((protocol,)) + b"\x00\x00"
    rest = head[12:]
    n = int.from_bytes(h + rest, "big")
    total = n % 0xFFFF
    if total == 0 and n:
        total = 0xFFFF
    return h[:10] + (~total & 0xFFFF).to_bytes(2, "big") + rest


def fix_outer(head: bytes, esp_len: int) -> bytes:
    """The headers in front of ESP with the length (and IPv4 checksum) for ``esp_len``."""
    if head[0] >> 4 == 4:
        return _fix_ipv4(bytes(head), len(head) + esp_len, head[9])
    return head[:4] + (len(head) - 40 + esp_len).to_bytes(2, "big") + head[6:]


def decapsulate(head: bytes, nh_off: int, payload: bytes, next_header: int, tunnel: bool) -> bytes:
    """The plain packet from the headers in front of ESP and the decrypted payload: the
    inner packet in tunnel mode (RFC 6040 ECN as the kernel's default), the rebuilt IP
    packet in transport mode (``nh_off``: the byte that named ESP). Packet offload RX
    hands this up (airoha-dsa-xfrm.md 3.2) [M] packet-offload."""
    if tunnel:
        ds = head[1] if head[0] >> 4 == 4 else (int.from_bytes(head[0:2], "big") >> 4) & 0xFF
        # RFC 6040 decapsulation as the kernel's software path does by default.
        # TFC padding after the inner packet goes in ip_rcv_core / ipv6_rcv [C].
        return inner_set_ce_and_dscp(trim_to_ip_length(payload), ds, ecn=True, dscp=False)
    if head[0] >> 4 == 4:
        return _fix_ipv4(bytes(head), len(head) + len(payload), next_header) + payload
    fixed = bytearray(head)
    fixed[nh_off] = next_header
    fixed[4:6] = (len(head) - 40 + len(payload)).to_bytes(2, "big")
    return bytes(fixed) + payload
