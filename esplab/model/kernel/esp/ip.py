"""IP-level helpers for the software ESP core: checksums, IPv4/IPv6 header parsing,
the IPv6 extension-header chain, ECN/DSCP handling for tunnels.

Bytes in, bytes or small tuples out; nothing here allocates scapy objects.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import NamedTuple

from esplab.errors import DecodeError, InvalidValue

__all__ = [
    "IPPROTO_ESP",
    "IPPROTO_IPIP",
    "IPPROTO_IPV6",
    "IPPROTO_NONE",
    "IPPROTO_UDP",
    "V6_EXT_HEADERS",
    "IpInfo",
    "checksum",
    "ecn_encapsulate",
    "fragment_offset",
    "inner_set_ce_and_dscp",
    "ipv4_fix",
    "locate_esp",
    "parse_ip",
    "trim_to_ip_length",
    "udp6_checksum",
    "v6_esp_split",
]

IPPROTO_IPIP = 4
IPPROTO_UDP = 17
IPPROTO_IPV6 = 41
IPPROTO_ESP = 50
IPPROTO_NONE = 59

_HOPOPTS, _ROUTING, _FRAGMENT, _DSTOPTS = 0, 43, 44, 60
#: Extension headers that may precede ESP (RFC 8200 4.1 order; RFC 4303 3.1.1).
V6_EXT_HEADERS = frozenset({_HOPOPTS, _ROUTING, _FRAGMENT, _DSTOPTS})

_ECN_MASK = 0x03
_ECN_CE = 0x03
_ECN_ECT0 = 0x02


def checksum(data: bytes) -> int:
    """RFC 1071 Internet checksum of ``data`` (odd length padded with a zero byte).

    The 16-bit one's-complement sum equals the big-endian integer modulo 0xffff,
    since 2**16 = 1 (mod 0xffff); a nonzero multiple of 0xffff is the sum 0xffff.
    """
    if len(data) & 1:
        data += b"\x00"
    n = int.from_bytes(data, "big")
    s = n % 0xFFFF
    if s == 0 and n:
        s = 0xFFFF
    return ~s & 0xFFFF


def ipv4_fix(header: bytes, total_length: int, protocol: int) -> bytes:
    """``header`` (with options) with a new total length, protocol and checksum."""
    return _ipv4_fix(bytes(header), total_length, protocol)


@lru_cache(maxsize=1024)
def _ipv4_fix(header: bytes, total_length: int, protocol: int) -> bytes:
    """``ipv4_fix`` of a header as bytes, remembered: a flow's packets fix the same
    header the same way."""
    h = header[:2] + total_length.to_bytes(2, "big") + header[4:9] + bytes((protocol,))
    h += b"\x00\x00" + header[12:]
    return h[:10] + checksum(h).to_bytes(2, "big") + h[12:]


def udp6_checksum(src: bytes, dst: bytes, segment: bytes) -> int:
    """UDP checksum over the IPv6 pseudo-header (RFC 8200 8.1); 0 becomes 0xffff."""
    pseudo = src + dst + struct.pack("!IxxxB", len(segment), IPPROTO_UDP)
    c = checksum(pseudo + segment)
    return c or 0xFFFF


def ecn_encapsulate(dsfield: int, inner: int) -> int:
    """Outer ECN from the inner one (RFC 6040 4.1 normal mode; kernel
    ``INET_ECN_encapsulate``): copied, except CE which becomes ECT(0)."""
    ecn = inner & _ECN_MASK
    if ecn == _ECN_CE:
        ecn = _ECN_ECT0
    return (dsfield & ~_ECN_MASK & 0xFF) | ecn


class IpInfo(NamedTuple):
    """What the ESP core needs from an IP packet.

    ``hlen`` is the length of the headers kept in front of ESP in transport mode (the
    IPv4 header with options, or IPv6 header plus the extension headers that stay
    in the clear); ``nh_off`` is the offset of the byte naming the protocol after
    them; ``proto`` is that protocol; ``end`` is the packet length from the header.
    """

    version: int
    hlen: int
    nh_off: int
    proto: int
    end: int
    dsfield: int
    df: bool
    fragment: bool


_V4_HEAD = struct.Struct("!BBH2xH1xB")  # version/ihl, tos, total length, frag, protocol
_new_info = tuple.__new__


def parse_ip(packet: bytes, *, esp_split: bool = False, after_fragment: bool = True) -> IpInfo:
    """Parse the IPv4 or IPv6 header of ``packet``.

    IPv6: with ``esp_split`` the chain is walked to where ESP would be inserted
    (:func:`v6_esp_split`); without it, to the first header that is not a
    hop-by-hop, routing, fragment or destination-options header. Raises
    :class:`DecodeError` for anything that is not a whole IP packet.
    """
    n = len(packet)
    if n < 1:
        raise DecodeError("empty packet: no IP header", valid="an IPv4 or IPv6 packet")
    version = packet[0] >> 4
    if version == 4:
        if n < 20:
            raise DecodeError(f"IPv4 header truncated: {n} bytes", valid="at least 20")
        # Every packet of a walk is parsed here, several times: one unpack, one tuple.
        vihl, tos, end, frag, proto = _V4_HEAD.unpack_from(packet)
        ihl = (vihl & 0x0F) * 4
        if ihl < 20 or ihl > end or end > n:
            raise DecodeError(
                f"bad IPv4 lengths: ihl {ihl}, total length {end}, {n} bytes captured",
                valid="20 <= ihl <= total length <= captured length",
            )
        return _new_info(
            IpInfo, (4, ihl, 9, proto, end, tos, frag & 0x4000 != 0, frag & 0x3FFF != 0)
        )
    if version == 6:
        if n < 40:
            raise DecodeError(f"IPv6 header truncated: {n} bytes", valid="at least 40")
        end = 40 + int.from_bytes(packet[4:6], "big")
        if end > n:
            raise DecodeError(
                f"bad IPv6 payload length {end - 40} for {n} bytes captured",
                valid="40 + payload length <= captured length",
            )
        ds = (int.from_bytes(packet[0:2], "big") >> 4) & 0xFF
        if esp_split:
            hlen, nh_off, proto, frag = v6_esp_split(packet, end, after_fragment)
        else:
            hlen, nh_off, proto, frag_at = _v6_walk(packet, end)
            frag = frag_at > 0
        return IpInfo(6, hlen, nh_off, proto, end, ds, False, frag)
    raise DecodeError(f"IP version {version}", valid=["4", "6"])


def _ext_len(packet: bytes, off: int, end: int, nh: int) -> int:
    if off + 8 > end:
        raise DecodeError(f"IPv6 extension header {nh} truncated at offset {off}")
    return 8 if nh == _FRAGMENT else (packet[off + 1] + 1) * 8


def _is_fragment(packet: bytes, off: int) -> bool:
    # Fragment offset or M flag set; an atomic fragment (both zero) is a whole packet.
    return bool(int.from_bytes(packet[off + 2 : off + 4], "big") & 0xFFF9)


def _v6_walk(packet: bytes, end: int) -> tuple[int, int, int, int]:
    """(offset of the upper-layer header, offset of the byte naming it, its protocol,
    offset of the fragment header when the packet is a fragment, else 0)."""
    off, nh_off, nh, frag = 40, 6, packet[6], 0
    while nh in V6_EXT_HEADERS:
        size = _ext_len(packet, off, end, nh)
        if nh == _FRAGMENT and _is_fragment(packet, off):
            frag = off
        nh_off, nh = off, packet[off]
        off += size
        if off > end:
            raise DecodeError(f"IPv6 extension header runs past the payload at {off}")
    return off, nh_off, nh, frag


def v6_esp_split(packet: bytes, end: int, after_fragment: bool) -> tuple[int, int, int, bool]:
    """Where transport-mode ESP goes in an IPv6 packet: (offset, offset of the
    next-header byte to rewrite, protocol that follows, is-a-fragment).

    RFC 4303 3.1.1: ESP follows hop-by-hop, routing and fragment headers; destination
    options may sit before or after it. As the kernel (``ip6_find_1stfragopt``) does,
    destination options stay in front of ESP until a routing header has been seen and
    go behind ESP (encrypted) after one. The kernel also puts ESP in front of a
    fragment header; ``after_fragment=False`` selects that, the default follows the
    RFC's figure.
    """
    off, nh_off, nh, frag, routed = 40, 6, packet[6], False, False
    while nh in V6_EXT_HEADERS:
        if nh == _DSTOPTS and routed:
            break
        if nh == _FRAGMENT and not after_fragment:
            break
        size = _ext_len(packet, off, end, nh)
        if nh == _ROUTING:
            routed = True
        elif nh == _FRAGMENT and _is_fragment(packet, off):
            frag = True
        nh_off, nh = off, packet[off]
        off += size
        if off > end:
            raise DecodeError(f"IPv6 extension header runs past the payload at {off}")
    return off, nh_off, nh, frag


def trim_to_ip_length(packet: bytes) -> bytes:
    """``packet`` without the bytes after the length its IP header gives (TFC padding
    after a tunnel's inner packet): ``ip_rcv_core`` / ``ipv6_rcv`` trim the skb so
    (``pskb_trim_rcsum``) [C]. A header too short to say, or a length longer than
    the bytes, leaves it as it is (those checks drop it later)."""
    version = packet[0] >> 4 if packet else 0
    if version == 4 and len(packet) >= 20:
        size = int.from_bytes(packet[2:4], "big")
        return packet[:size] if 20 <= size < len(packet) else packet
    if version == 6 and len(packet) >= 40:
        size = int.from_bytes(packet[4:6], "big") + 40
        return packet[:size] if 40 < size < len(packet) else packet
    return packet


def inner_set_ce_and_dscp(inner: bytes, outer_ds: int, *, ecn: bool, dscp: bool) -> bytes:
    """Tunnel decapsulation of the DS field (kernel ``xfrm4/6_remove_tunnel_encap``).

    ``ecn``: an outer CE marks an ECN-capable inner packet CE (RFC 6040 4.2, kernel
    ``ipip_ecn_decapsulate``; a not-ECT inner packet is left alone). ``dscp``: the
    outer DSCP replaces the inner one (``flag decap-dscp``). IPv4 checksums follow.
    """
    version = inner[0] >> 4
    old = inner[1] if version == 4 else (int.from_bytes(inner[0:2], "big") >> 4) & 0xFF
    new = old
    if dscp:
        new = (outer_ds & 0xFC) | (new & _ECN_MASK)
    if ecn and outer_ds & _ECN_MASK == _ECN_CE and new & _ECN_MASK:
        new |= _ECN_CE
    if new == old:
        return inner
    if version == 4:
        ihl = (inner[0] & 0x0F) * 4
        h = inner[:1] + bytes((new,)) + inner[2:10] + b"\x00\x00" + inner[12:ihl]
        return h[:10] + checksum(h).to_bytes(2, "big") + h[12:] + inner[ihl:]
    word = int.from_bytes(inner[0:2], "big") & 0xF00F | new << 4
    return word.to_bytes(2, "big") + inner[2:]


def fragment_offset(packet: bytes) -> int:
    """The fragment offset (in 8-byte units) of a parsed IPv4/IPv6 packet: of its IPv4
    header, or of its IPv6 fragment header (0 when it has none)."""
    if packet[0] >> 4 == 4:
        return int.from_bytes(packet[6:8], "big") & 0x1FFF
    try:
        at = _v6_walk(packet, len(packet))[3]
    except DecodeError:
        return 0
    return int.from_bytes(packet[at + 2 : at + 4], "big") >> 3 if at else 0


def locate_esp(skb: bytes) -> tuple[int, int]:
    """(offset of the ESP header, offset of the byte that names it) in an IP packet."""
    if len(skb) >= 20 and skb[0] >> 4 == 4:
        off = (skb[0] & 0xF) * 4
        if off >= 20 and skb[9] == IPPROTO_ESP and len(skb) >= off + 8:
            return off, 9
    elif len(skb) >= 40 and skb[0] >> 4 == 6:
        try:
            off, nh_off, nh, _ = _v6_walk(skb, len(skb))
        except DecodeError:
            nh = -1  # an extension header cut short: no ESP to find
        if nh == IPPROTO_ESP and len(skb) >= off + 8:
            return off, nh_off
    raise InvalidValue(
        "not an ESP packet: no IPv4/IPv6 header followed by ESP (protocol 50)",
        valid="an IP packet whose (last extension) header names protocol 50",
    )
