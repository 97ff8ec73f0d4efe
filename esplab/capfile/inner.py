"""The packet inside ESP, once decrypted: what decode reports of it (addresses,
protocol, ports, length) and, in transport mode, the packet the kernel would
deliver: the outer header(s) with next header and lengths fixed."""

from __future__ import annotations

import struct

from esplab.model.kernel.esp.ip import ipv4_fix

__all__ = ["inner_ip", "l4_ports", "rebuild"]

_HH = struct.Struct("!HH")
#: IPv4 without options, then TCP/UDP ports: version/IHL, total length, protocol,
#: addresses, ports in one unpack (RFC 791 3.1).
_V4_PORTS = struct.Struct("!BxH5xB2x4s4sHH")


def l4_ports(buf: bytes, off: int, end: int, proto: int) -> tuple[int, int]:
    """TCP/UDP ports at ``off`` (the payload ends at ``end``); -1, -1 for others."""
    if (proto == 17 or proto == 6) and end - off >= 4:
        return _HH.unpack_from(buf, off)
    return -1, -1


def inner_ip(buf: bytes, n: int) -> tuple[int, bytes, bytes, int, int, int, int] | None:
    """(version, src, dst, protocol, sport, dport, length) of the IP packet that
    fills ``buf[:n]`` (its own length may be shorter: TFC padding), or None."""
    if n >= 24 and buf[0] == 0x45:  # the usual case, in one unpack
        _, total, proto, src, dst, sport, dport = _V4_PORTS.unpack_from(buf)
        if 24 <= total <= n and (proto == 17 or proto == 6):
            return 4, src, dst, proto, sport, dport, total
    first = buf[0] if n else 0
    if first >> 4 == 4 and n >= 20:
        ihl = (first & 0x0F) * 4
        total = (buf[2] << 8) | buf[3]
        if ihl < 20 or total < ihl or total > n:
            return None
        proto = buf[9]
        if (proto == 17 or proto == 6) and total - ihl >= 4:
            sport, dport = _HH.unpack_from(buf, ihl)
        else:
            sport = dport = -1
        return 4, buf[12:16], buf[16:20], proto, sport, dport, total
    if first >> 4 == 6 and n >= 40:
        total = 40 + ((buf[4] << 8) | buf[5])
        if total > n:
            return None
        proto = buf[6]
        sport, dport = l4_ports(buf, 40, total, proto)
        return 6, buf[8:24], buf[24:40], proto, sport, dport, total
    return None


def rebuild(head: bytes, version: int, nh_off: int, nh: int, payload: bytes) -> bytes:
    """The transport-mode packet without ESP: the outer header(s) with the next header
    and lengths fixed (kernel ``esp_input_done2`` / ``xfrm4_transport_finish``)."""
    if version == 4:
        return ipv4_fix(head, len(head) + len(payload), nh) + payload
    fixed = bytearray(head)
    fixed[nh_off] = nh
    fixed[4:6] = (len(head) - 40 + len(payload)).to_bytes(2, "big")
    return bytes(fixed) + payload
