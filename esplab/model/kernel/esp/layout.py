"""The sizes of an ESP packet and what ESP adds to the packet it protects: one home
for the arithmetic every datapath, check and printer of the kernel side uses.

The packet (RFC 4303 2, ``struct ip_esp_hdr``)::

    SPI (4) | sequence number (4) | IV | payload | [TFC] | padding | pad length (1)
    | next header (1) | ICV

Padding (RFC 4303 2.4): payload, padding, pad length and next header end on a
multiple of the cipher's block size, and on a 4-byte boundary whatever the cipher.
Linux net/ipv4/esp4.c and net/ipv6/esp6.c ``esp_output``: ``blksize =
ALIGN(crypto_aead_blocksize(aead), 4)``, ``esp.clen = ALIGN(skb->len + 2 +
esp.tfclen, blksize)``, ``esp.plen = esp.clen - skb->len - esp.tfclen``: the least
padding that does it [C]. The EIP-93 engine pads by the same arithmetic to a boundary
of its own (:mod:`esplab.model.hw.eip93.espmode`, which the hardware layer keeps).

What ESP adds in front of the payload is ``x->props.header_len`` (``esp_init_state``):
the ESP header and IV, the outer IP header in tunnel mode (``struct iphdr`` in esp4,
``struct ipv6hdr`` in esp6), and the UDP header of ESP in UDP (RFC 3948 2.1) [C].
"""

from __future__ import annotations

__all__ = [
    "ESP_HEADER_LEN",
    "ESP_TRAILER_LEN",
    "IPV4_HEADER_LEN",
    "IPV6_HEADER_LEN",
    "UDP_ENCAP_LEN",
    "encap_len",
    "encrypted_len",
    "esp_align",
    "esp_head_len",
    "esp_len",
    "esp_packet_len",
    "min_esp_len",
    "pad_len",
    "state_mtu",
]

ESP_HEADER_LEN = 8  # SPI and sequence number (RFC 4303 2; struct ip_esp_hdr) [C]
ESP_TRAILER_LEN = 2  # pad length and next header (RFC 4303 2.4) [C]
UDP_ENCAP_LEN = 8  # the UDP header of ESP in UDP (RFC 3948 2.1; struct udphdr) [C]
IPV4_HEADER_LEN = 20  # a tunnel's outer IPv4 header, no options (struct iphdr) [C]
IPV6_HEADER_LEN = 40  # a tunnel's outer IPv6 header (struct ipv6hdr) [C]


def esp_align(block_size: int) -> int:
    """What payload, padding and trailer align to for a cipher of ``block_size`` bytes:
    ``ALIGN(crypto_aead_blocksize(aead), 4)`` (esp4/esp6 ``esp_output``, RFC 4303 2.4) [C]."""
    return (block_size + 3) & ~3


def pad_len(size: int, align: int) -> int:
    """The padding after ``size`` bytes of payload (TFC padding included): the least
    that brings payload, padding, pad length and next header to a multiple of ``align``
    (RFC 4303 2.4; ``esp.plen``) [C]."""
    return -(size + ESP_TRAILER_LEN) % align


def encrypted_len(size: int, align: int) -> int:
    """The encrypted part of an ESP packet for ``size`` bytes of payload: the payload,
    its padding, pad length and next header (``esp.clen``) [C]."""
    return size + pad_len(size, align) + ESP_TRAILER_LEN


def esp_head_len(iv_size: int) -> int:
    """Where the payload starts in an ESP packet: ESP header and IV [C]."""
    return ESP_HEADER_LEN + iv_size


def esp_len(size: int, iv_size: int, align: int, icv_len: int) -> int:
    """An ESP packet's length for ``size`` bytes of payload: header, IV, the encrypted
    part and the ICV (RFC 4303 2) [C]."""
    return ESP_HEADER_LEN + iv_size + encrypted_len(size, align) + icv_len


def min_esp_len(iv_size: int, icv_len: int) -> int:
    """The shortest ESP packet there can be: header, IV, pad length, next header and
    ICV, no payload and no padding [C]."""
    return ESP_HEADER_LEN + iv_size + ESP_TRAILER_LEN + icv_len


def encap_len(tunnel: bool, outer_version: int, udp: bool) -> int:
    """What goes in front of the ESP header besides the packet's own IP header: the
    outer IP header in tunnel mode (IPv4 or IPv6 by ``outer_version``) and the UDP
    header of ESP in UDP (``esp_init_state``'s ``header_len`` less ESP header and IV) [C]."""
    outer = (IPV4_HEADER_LEN if outer_version == 4 else IPV6_HEADER_LEN) if tunnel else 0
    return outer + (UDP_ENCAP_LEN if udp else 0)


def esp_packet_len(
    packet_len: int,
    ip_hlen: int,
    iv_size: int,
    align: int,
    icv_len: int,
    *,
    tunnel: bool,
    outer_version: int = 4,
    udp: bool = False,
) -> int:
    """The length of the ESP packet made from an IP packet of ``packet_len`` bytes
    whose header is ``ip_hlen`` bytes: tunnel mode protects the whole packet behind
    an outer header, transport mode its payload behind its own header [C]."""
    head = encap_len(tunnel, outer_version, udp)
    if tunnel:
        return head + esp_len(packet_len, iv_size, align, icv_len)
    return ip_hlen + head + esp_len(packet_len - ip_hlen, iv_size, align, icv_len)


def state_mtu(mtu: int, header_len: int, icv_len: int, align: int, net_adj: int) -> int:
    """``xfrm_state_mtu`` (net/xfrm/xfrm_state.c) for an ESP state: the largest payload
    it protects within ``mtu``. ``header_len`` is ``x->props.header_len``
    (:func:`encap_len` + :func:`esp_head_len`); the rest, less the ICV, is rounded down
    to ``align``, less pad length and next header; ``net_adj`` (the IP header in
    transport mode, 0 in tunnel mode) stays out of the rounding [C]."""
    rest = mtu - header_len - icv_len - net_adj
    return (rest & ~(align - 1)) + net_adj - ESP_TRAILER_LEN
