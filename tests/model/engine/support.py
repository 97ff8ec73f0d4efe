"""Shared set-up for the EIP-93 tests: keys, packets, SA pairs, the kernel's skb, raw jobs."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw

from esplab.layers.crypto_desc import EIP93ResultDescriptor
from esplab.model.kernel.drivers.eip93 import EIP93Driver, OffloadedSA, Outcome, new_eip93
from esplab.model.kernel.drivers.eip93.outcome import Ticket
from esplab.model.kernel.drivers.eip93.xmit import locate_esp
from esplab.model.kernel.esp.sa import EspSA
from esplab.model.stage import Stage

__all__ = [
    "AUTHS",
    "ENCS",
    "LAYOUTS",
    "Pair",
    "kernel_skb",
    "key",
    "le_words",
    "make_pair",
    "plain_packet",
    "raw_job",
    "words",
]

# (kernel name, key bytes): the EIP-93ies ciphers (DESIGN.md, eip93.md 4).
ENCS = [
    ("cbc(aes)", 16),
    ("cbc(aes)", 24),
    ("cbc(aes)", 32),
    ("rfc3686(ctr(aes))", 20),
    ("cbc(des3_ede)", 24),
    ("cbc(des)", 8),
    ("ecb(cipher_null)", 0),
]
# (kernel name, key bytes, ICV bits): HMAC-MD5-96, HMAC-SHA1-96, HMAC-SHA256-128.
AUTHS = [("hmac(md5)", 16, 96), ("hmac(sha1)", 20, 96), ("hmac(sha256)", 32, 128)]
LAYOUTS = [("transport", 4), ("transport", 6), ("tunnel", 4), ("tunnel", 6)]

_TUNNEL = {4: ("192.0.2.1", "192.0.2.2"), 6: ("2001:db8::1", "2001:db8::2")}


def key(size: int, salt: int) -> bytes:
    return bytes((salt + 7 * i) & 0xFF for i in range(size))


def plain_packet(family: int, size: int = 100, ident: int = 7) -> bytes:
    """An IPv4 or IPv6 UDP packet of ``size`` bytes."""
    if family == 4:
        return bytes(
            IP(src="198.51.100.10", dst="203.0.113.7", id=ident, flags="DF")
            / UDP(sport=4000, dport=5000)
            / Raw(b"u" * (size - 28))
        )
    return bytes(
        IPv6(src="2001:db8:1::10", dst="2001:db8:2::7")
        / UDP(sport=4000, dport=5000)
        / Raw(b"u" * (size - 48))
    )


@dataclass
class Pair:
    """One SA set up twice: on the engine (out and in) and in the software ESP core."""

    driver: EIP93Driver
    out: OffloadedSA
    inb: OffloadedSA
    sw_out: EspSA
    sw_in: EspSA
    mode: str
    family: int

    @property
    def iv_size(self) -> int:
        return self.out.iv_size


def make_pair(
    enc: str,
    enc_len: int,
    auth: str,
    auth_len: int,
    bits: int,
    mode: str,
    family: int,
    offload: str,
    *,
    spi: int = 0x100,
    seed: int = 5,
    driver: EIP93Driver | None = None,
) -> Pair:
    drv = driver or new_eip93(seed)
    ekey, akey = key(enc_len, 0x11), key(auth_len, 0x80)
    sas = []
    for direction in ("out", "in"):
        added = drv.state_add(
            direction=direction,
            spi=spi,
            mode=mode,
            enc=enc,
            enc_key=ekey,
            auth=auth,
            auth_key=akey,
            auth_trunc_bits=bits,
            offload=offload,
            family=family,
        )
        assert added.ok, added.reason
        assert added.sa is not None
        sas.append(added.sa)
    src, dst = _TUNNEL[family] if mode == "tunnel" else (None, None)
    sw = [
        EspSA.build(
            spi,
            enc=enc,
            enc_key=ekey,
            auth=auth,
            auth_key=akey,
            auth_trunc=bits,
            mode=mode,
            tunnel_src=src,
            tunnel_dst=dst,
        )
        for _ in range(2)
    ]
    return Pair(drv, sas[0], sas[1], sw[0], sw[1], mode, family)


def kernel_skb(esp_packet: bytes, plain: bytes, mode: str, iv_size: int) -> tuple[bytes, int]:
    """What the kernel hands the driver for this packet in crypto offload: the headers and
    ESP header of ``esp_packet`` (SPI and sequence number written), IV room (zeros) and the
    plaintext payload; plus ``xo->proto``."""
    off, _ = locate_esp(esp_packet)
    if mode == "tunnel":
        payload, proto = plain, 4 if plain[0] >> 4 == 4 else 41
    else:
        hlen = (plain[0] & 0xF) * 4 if plain[0] >> 4 == 4 else 40
        payload, proto = plain[hlen:], plain[9] if plain[0] >> 4 == 4 else plain[6]
    return esp_packet[: off + 8] + bytes(iv_size) + payload, proto


def raw_job(drv: EIP93Driver, *words: int) -> tuple[EIP93ResultDescriptor, Outcome]:
    """Submit one raw command descriptor through the driver's ring; returns the result
    descriptor as the engine wrote it and the outcome (with every stage)."""

    def finish(driver: object, w: tuple[int, ...], ticket: Ticket) -> Outcome:
        return Outcome(w[0] >> 16 & 0xFF == 0, stages=ticket.stages)

    stages: list[Stage] = []
    ticket = drv.submit(tuple(words), finish, stages)
    outcome = drv.complete(ticket)
    return EIP93ResultDescriptor(outcome.result), outcome


def words(ctrl: int, src: int, dst: int, sa: int, state: int, length: int) -> tuple[int, ...]:
    """A command's eight words with HOST_READY in word 7 (eip93.md 2.3)."""
    return (ctrl, src, dst, sa, state, 0, 0x1234, 0x00400000 | length)


def le_words(data: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(data) // 4}I", data)
