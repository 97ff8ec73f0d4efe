"""The outer side of software ESP output: the length an ESP packet may reach, and the
outer IPv4/IPv6 header of tunnel mode as Linux builds it (``xfrm4/6_tunnel_encap_add``:
DSCP and ECN, DF, the IPv4 id, an IPv6 flow label; NAT-T's UDP checksum over IPv6).
"""

from __future__ import annotations

import struct

from esplab.errors import KernelError
from esplab.model.kernel.esp.ip import IPPROTO_UDP, checksum, ecn_encapsulate, udp6_checksum
from esplab.model.kernel.esp.layout import IPV4_HEADER_LEN, UDP_ENCAP_LEN, esp_len
from esplab.model.kernel.esp.sa import EspSA

__all__ = ["OUTPUT", "check_size", "outer_df", "tunnel_header", "udp6_fill"]

OUTPUT = "xfrm output"  # the prefix of output's kernel errors
_IPV6_MIN_MTU = 1280


def check_size(sa: EspSA, version: int, hlen: int, size: int, tunnel: bool) -> None:
    """The ESP packet must fit the 16-bit IP length field of its outer header."""
    esp = esp_len(size, sa.iv_size, sa.align, sa.icv_len)
    esp += UDP_ENCAP_LEN if sa.encap is not None else 0
    if tunnel:
        total = esp + (IPV4_HEADER_LEN if sa.outer_version == 4 else 0)
    else:
        total = esp + (hlen if version == 4 else hlen - 40)
    if total > 0xFFFF:
        raise KernelError(
            "EMSGSIZE", f"{total} bytes after ESP do not fit an IP length field", prefix=OUTPUT
        )


def udp6_fill(src: bytes, dst: bytes, segment: bytes) -> bytes:
    # Kernel esp6_output_encap_csum: UDP over IPv6 carries a real checksum.
    return segment[:6] + udp6_checksum(src, dst, segment).to_bytes(2, "big") + segment[8:]


def outer_df(sa: EspSA, inner_version: int, inner_df: bool, inner_len: int) -> bool:
    """DF of the outer IPv4 header (xfrm4_tunnel_encap_add): copied from the inner
    packet, where an IPv6 one counts as DF unless it fits the IPv6 minimum MTU."""
    if sa.df == "copy":
        return inner_df if inner_version == 4 else inner_len > _IPV6_MIN_MTU
    return sa.df == "set"


def tunnel_header(
    sa: EspSA,
    inner: bytes,
    inner_version: int,
    inner_ds: int,
    inner_df: bool,
    inner_len: int,
    proto: int,
    body: bytes,
    ident: int | None,
) -> bytes:
    """The outer header of kernel ``xfrm4/6_tunnel_encap_add``."""
    ds = ecn_encapsulate(inner_ds if sa.encap_dscp else 0, inner_ds)
    if sa.noecn:
        ds &= 0xFC
    if sa.outer_version == 4:
        df = outer_df(sa, inner_version, inner_df, inner_len)
        if ident is None:
            ident = sa.next_ident(df, proto)
        head = (
            struct.pack(
                "!BBHHHBBH",
                0x45,
                ds,
                20 + len(body),
                ident & 0xFFFF,
                0x4000 if df else 0,
                sa.ttl,
                proto,
                0,
            )
            + sa.outer_src
            + sa.outer_dst
        )
        return head[:10] + checksum(head).to_bytes(2, "big") + head[12:] + body
    flow = int.from_bytes(inner[1:4], "big") & 0xFFFFF if inner_version == 6 else 0
    head = struct.pack("!IHBB", 0x60000000 | ds << 20 | flow, len(body), proto, sa.ttl)
    head += sa.outer_src + sa.outer_dst
    if proto == IPPROTO_UDP:
        body = udp6_fill(sa.outer_src, sa.outer_dst, body)
    return head + body
