"""Shared set-up for the capture tests: SA files, packets made with esplab's own ESP
core, link-layer wrappers and capture files, and the mistakes diagnose must name."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from esplab.capfile.safile import SaFile, SaSpec, parse_sa_text
from esplab.layers.hashstate import hmac_from_states, hmac_precompute, state_from_record_bytes
from esplab.layers.linktypes import DLT_MTK_ETHER
from esplab.model.kernel.esp.core import encrypt
from esplab.model.kernel.esp.ip import checksum
from esplab.model.kernel.esp.sa import EspSA, UdpEncap
from esplab.pcap import LINKTYPE_ETHERNET, LINKTYPE_RAW, CaptureRecord, write_capture

__all__ = [
    "AUTH_KEY",
    "ENC_KEY",
    "GCM_KEY",
    "SA_TEXT",
    "esp_icv_patch",
    "ether",
    "ipv4_udp",
    "ipv6_udp",
    "make_packets",
    "mtk",
    "sa_file",
    "sender",
    "sll",
    "sll2",
    "swapped_state_icv",
    "write_frames",
]

ENC_KEY = bytes(range(16))
AUTH_KEY = bytes(range(0x40, 0x54))  # 20 bytes, hmac(sha1)
GCM_KEY = bytes(range(0x20, 0x34))  # 16-byte key + 4-byte salt

#: Both directions of a tunnel plus a transport SA and a NAT-T SA (ip xfrm state add).
SA_TEXT = f"""\
# test SAs
ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode tunnel \\
    auth sha1 0x{AUTH_KEY.hex()} enc aes 0x{ENC_KEY.hex()}
ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x2000 reqid 2 mode tunnel \\
    aead 'rfc4106(gcm(aes))' 0x{GCM_KEY.hex()} 128
ip xfrm state add src 2001:db8::1 dst 2001:db8::2 proto esp spi 0x3000 mode transport \\
    auth-trunc 'hmac(sha256)' 0x{bytes(range(32)).hex()} 128 enc aes 0x{ENC_KEY.hex()}
ip xfrm state add src 198.51.100.1 dst 198.51.100.2 proto esp spi 0x4000 mode tunnel \\
    aead 'rfc4106(gcm(aes))' 0x{GCM_KEY.hex()} 96 encap espinudp 4500 4500 0.0.0.0
"""


def sa_file(text: str = SA_TEXT, source: str = "sa.txt") -> SaFile:
    return parse_sa_text(text, source)


def sender(spec: SaSpec, **changes: object) -> EspSA:
    """An outbound EspSA with the spec's keys (``changes`` alter the spec first), in the
    spec's mode, with deterministic IVs."""
    if changes:
        spec = replace(spec, **changes)  # type: ignore[arg-type]
    tunnel = spec.mode == "tunnel"
    kw: dict[str, object] = {}
    if spec.aead is not None:
        kw.update(aead=spec.aead, aead_key=spec.aead_key, aead_icv=spec.icv_bits)
    else:
        kw.update(enc=spec.enc or "ecb(cipher_null)", enc_key=spec.enc_key)
        if spec.auth is not None:
            kw.update(auth=spec.auth, auth_key=spec.auth_key, auth_trunc=spec.icv_bits)
    return EspSA.build(
        spec.spi or 0,
        mode="tunnel" if tunnel else "transport",
        tunnel_src=spec.src if tunnel else None,
        tunnel_dst=spec.dst if tunnel else None,
        esn=spec.esn,
        replay_window=spec.replay_window or (32 if spec.esn else 0),
        encap=UdpEncap(*spec.encap) if spec.encap else None,
        **kw,  # type: ignore[arg-type]
    )


def ipv4_udp(size: int, ident: int, src: str = "10.0.0.1", dst: str = "10.0.0.2") -> bytes:
    """An IPv4/UDP packet of ``size`` bytes (checksummed header, zero UDP checksum)."""
    payload = bytes((ident + i) & 0xFF for i in range(size - 28))
    head = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, size, ident & 0xFFFF, 0x4000, 64, 17, 0,
        bytes(map(int, src.split("."))), bytes(map(int, dst.split("."))),
    )  # fmt: skip
    head = head[:10] + checksum(head).to_bytes(2, "big") + head[12:]
    return head + struct.pack("!HHHH", 1234, 5678, size - 20, 0) + payload


def ipv6_udp(size: int, ident: int, src: str = "2001:db8::1", dst: str = "2001:db8::2") -> bytes:
    import ipaddress

    payload = bytes((ident + i) & 0xFF for i in range(size - 48))
    udp = struct.pack("!HHHH", 1234, 5678, size - 40, 0) + payload
    head = struct.pack("!IHBB", 0x60000000, len(udp), 17, 64)
    return head + ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed + udp


def make_packets(sa: EspSA, count: int, *, v6: bool = False, start: int = 1) -> list[bytes]:
    """``count`` ESP packets of mixed sizes with sequence numbers from ``start``."""
    sizes = (64, 100, 512, 1400, 77)
    src, dst = ("2001:db8::1", "2001:db8::2") if v6 else ("10.0.0.1", "10.0.0.2")
    out = []
    for i in range(count):
        size = sizes[i % len(sizes)]
        inner = ipv6_udp(size, i, src, dst) if v6 else ipv4_udp(size, i)
        out.append(encrypt(sa, inner, seq=start + i))
    return out


_MACS = bytes.fromhex("020000000002020000000001")


def ether(ip: bytes, *vlans: tuple[int, int]) -> bytes:
    """Ethernet, optionally with (TPID, VID) tags, outermost first."""
    tags = b"".join(struct.pack("!HH", tpid, vid) for tpid, vid in vlans)
    return _MACS + tags + (b"\x86\xdd" if ip[:1] and ip[0] >> 4 == 6 else b"\x08\x00") + ip


def mtk(ip: bytes, port: int, vlan: int | None = None) -> bytes:
    """An Ethernet frame with the MediaTek tag: receive form ``00 0N 00 00`` (with a
    stacked 802.1Q header after it), or the transmit form with a merged VLAN."""
    etype = b"\x86\xdd" if ip[0] >> 4 == 6 else b"\x08\x00"
    if vlan is None:
        return _MACS + bytes((0, port, 0, 0)) + etype + ip
    return _MACS + bytes((1, 1 << port)) + vlan.to_bytes(2, "big") + etype + ip


def sll(ip: bytes) -> bytes:
    """Linux cooked capture v1: packet type, ARPHRD_ETHER, address, protocol."""
    proto = 0x86DD if ip[0] >> 4 == 6 else 0x0800
    return struct.pack("!HHH8sH", 0, 1, 6, bytes(8), proto) + ip


def sll2(ip: bytes) -> bytes:
    """Linux cooked capture v2: protocol, reserved, ifindex, ARPHRD, type, address."""
    proto = 0x86DD if ip[0] >> 4 == 6 else 0x0800
    return struct.pack("!HHIHBB8s", proto, 0, 2, 1, 0, 6, bytes(8)) + ip


def write_frames(path: Path, frames: Iterable[tuple[int, bytes]], *, iface: str = "eth0") -> Path:
    """Write (link type, frame) pairs; ``.pcap`` gives classic pcap."""
    records = [
        CaptureRecord(iface, lt, 1_000_000_000 + i * 1000, data)
        for i, (lt, data) in enumerate(frames)
    ]
    write_capture(path, records)
    return path


def raw(packets: Sequence[bytes]) -> list[tuple[int, bytes]]:
    return [(LINKTYPE_RAW, p) for p in packets]


def eth(packets: Sequence[bytes]) -> list[tuple[int, bytes]]:
    return [(LINKTYPE_ETHERNET, ether(p)) for p in packets]


def mtk_frames(packets: Sequence[bytes]) -> list[tuple[int, bytes]]:
    return [(DLT_MTK_ETHER, mtk(p, 3)) for p in packets]


# -- injected mistakes --------------------------------------------------------------


def esp_icv_patch(packet: bytes, icv_len: int, make: Callable[[bytes], bytes]) -> bytes:
    """Replace the ICV of a plain-ESP IPv4 packet (no options) with ``make(esp_without_icv)``."""
    head, esp = packet[:20], packet[20:]
    body = esp[:-icv_len]
    return head + body + make(body)


def swapped_state_icv(
    key: bytes, alg: str, icv_len: int, *, inner: bool = True, outer: bool = True
) -> Callable[[bytes], bytes]:
    """The ICV an EIP-93 computes when the driver wrote the HMAC inner/outer hash states
    big-endian into sa_i_digest/sa_o_digest (eip93.md 5.2): the engine reads each word
    byte-swapped."""
    i_state, o_state = hmac_precompute(alg, key)

    def wrong(state: tuple[int, ...]) -> tuple[int, ...]:
        stored = b"".join(struct.pack(">I", w) for w in state)  # the driver's mistake
        return state_from_record_bytes(alg, stored)  # what the engine reads

    i_used = wrong(i_state) if inner else i_state
    o_used = wrong(o_state) if outer else o_state
    return lambda body: hmac_from_states(alg, i_used, o_used, body)[:icv_len]
