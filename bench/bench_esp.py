"""Packets per second of the software ESP core against scapy's SecurityAssociation.

Run from the repository root: ``python bench/bench_esp.py [--quick]``.

Both sides get the same work: bytes in, bytes out. Tunnel mode, IPv4 in IPv4; the
"payload" is the ESP Payload Data, i.e. the inner IPv4/UDP packet of 64, 512 or
1400 bytes. esplab is timed over many packets (best of three runs), scapy over
fewer; each side encrypts a fresh sequence of numbers and decrypts the packets it
made itself, with its own SA, in order. Before timing, both sides' bytes are
compared for one packet.

Targets: esplab at least 30 times scapy's rate on every row, and at least 100,000
packets/s for 64-byte AES-GCM encryption on one core.
"""

from __future__ import annotations

import argparse
import platform
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scapy.layers.inet import IP
from scapy.layers.ipsec import ESP, SecurityAssociation

from esplab.model.kernel.esp.core import EspSA, decrypt, encrypt

SPI = 0x0000C0DE
OUTER = ("198.51.100.1", "203.0.113.2")
SIZES = (64, 512, 1400)
RATIO_TARGET = 30.0
GCM64_TARGET = 100_000.0


@dataclass(frozen=True)
class Suite:
    label: str
    esplab: dict[str, Any]
    scapy: dict[str, Any]


def suites() -> list[Suite]:
    aes_key, sha_key = bytes(range(16)), bytes(range(100, 120))
    gcm_key = bytes(range(32, 52))
    return [
        Suite(
            "AES-128-CBC + HMAC-SHA1-96",
            {"enc": "cbc(aes)", "enc_key": aes_key, "auth": "hmac(sha1)", "auth_key": sha_key},
            {
                "crypt_algo": "AES-CBC",
                "crypt_key": aes_key,
                "auth_algo": "HMAC-SHA1-96",
                "auth_key": sha_key,
            },
        ),
        Suite(
            "AES-128-GCM (rfc4106, ICV 128)",
            {"aead": "rfc4106(gcm(aes))", "aead_key": gcm_key, "aead_icv": 128},
            {"crypt_algo": "AES-GCM", "crypt_key": gcm_key},
        ),
    ]


def inner_packet(size: int, n: int) -> bytes:
    """An IPv4/UDP packet of ``size`` bytes, header checksum filled, id ``n``."""
    udp_len = size - 20
    head = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        size,
        n & 0xFFFF,
        0x4000,
        64,
        17,
        0,
        bytes((192, 0, 2, 10)),
        bytes((192, 0, 2, 20)),
    )
    s = sum(struct.unpack("!10H", head))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    head = head[:10] + struct.pack("!H", ~s & 0xFFFF) + head[12:]
    udp = struct.pack("!HHHH", 40000, 5001, udp_len, 0)
    return head + udp + bytes((n + i) & 0xFF for i in range(udp_len - 8))


def esplab_sa(suite: Suite) -> EspSA:
    return EspSA.build(
        SPI,
        mode="tunnel",
        tunnel_src=OUTER[0],
        tunnel_dst=OUTER[1],
        replay_window=128,
        **suite.esplab,
    )


def scapy_sa(suite: Suite, ident: int = 0) -> SecurityAssociation:
    # DF as the kernel (and esplab) set it for a DF inner packet; ``ident``: the outer
    # IPv4 id (the kernel's ip_select_ident draws it; scapy takes it as given).
    outer = IP(src=OUTER[0], dst=OUTER[1], flags="DF", id=ident)
    return SecurityAssociation(  # type: ignore[no-untyped-call]
        ESP, spi=SPI, tunnel_header=outer, **suite.scapy
    )


def scapy_encrypt(sa: SecurityAssociation, pkt: bytes, **kw: Any) -> bytes:
    """Bytes in, bytes out, like esplab's encrypt."""
    return bytes(sa.encrypt(IP(pkt), **kw))  # type: ignore[no-untyped-call]


def scapy_decrypt(sa: SecurityAssociation, wire: bytes) -> bytes:
    """A fresh parse each time: scapy's decrypt() modifies the packet it is given."""
    return bytes(sa.decrypt(IP(wire)))  # type: ignore[no-untyped-call]


def rate(run: Callable[[], int], repeat: int) -> float:
    """Best packets/s over ``repeat`` runs of ``run`` (which returns its packet count)."""
    best = 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = run()
        best = max(best, n / (time.perf_counter() - t0))
    return best


def check_same_bytes(suite: Suite, pkt: bytes) -> None:
    iv_len = esplab_sa(suite).iv_size
    iv = bytes(range(7, 7 + iv_len))
    mine = encrypt(esplab_sa(suite), pkt, seq=1, iv=iv)
    ident = int.from_bytes(mine[4:6], "big")  # (the id esplab's ip_select_ident drew)
    theirs = scapy_encrypt(scapy_sa(suite, ident), pkt, seq_num=1, iv=iv)
    if mine != theirs:
        raise SystemExit(f"{suite.label}: esplab and scapy disagree on the bytes")


def bench_row(suite: Suite, size: int, n_ours: int, n_scapy: int) -> list[tuple[str, float, float]]:
    pkts = [inner_packet(size, i) for i in range(256)]
    check_same_bytes(suite, pkts[0])

    sa = esplab_sa(suite)
    batch = [pkts[i % 256] for i in range(n_ours)]

    def ours_enc() -> int:
        for p in batch:
            encrypt(sa, p)
        return len(batch)

    enc_rate = rate(ours_enc, 3)
    tx = esplab_sa(suite)
    wire = [encrypt(tx, p) for p in batch]
    state = {"sa": esplab_sa(suite)}

    def ours_dec() -> int:
        rx = state["sa"] = esplab_sa(suite)
        for w in wire:
            if not decrypt(rx, w).ok:
                raise SystemExit("esplab failed to decrypt its own packet")
        return len(wire)

    dec_rate = rate(ours_dec, 3)

    ssa = scapy_sa(suite)
    sbatch = batch[:n_scapy]

    def scapy_enc() -> int:
        for p in sbatch:
            scapy_encrypt(ssa, p)
        return len(sbatch)

    s_enc = rate(scapy_enc, 1)
    stx = scapy_sa(suite)
    swire = [scapy_encrypt(stx, p) for p in sbatch]
    srx = scapy_sa(suite)

    def scapy_dec() -> int:
        for w in swire:
            scapy_decrypt(srx, w)
        return len(swire)

    s_dec = rate(scapy_dec, 1)
    return [("encrypt", enc_rate, s_enc), ("decrypt", dec_rate, s_dec)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer packets, rougher numbers")
    args = ap.parse_args()
    n_ours, n_scapy = (5_000, 50) if args.quick else (50_000, 300)

    print(
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"one core; {n_ours} packets per esplab run (best of 3), {n_scapy} for scapy."
    )
    print("Tunnel mode, IPv4 in IPv4; payload = inner IPv4/UDP packet.\n")
    print("| suite | payload | op | esplab pkt/s | scapy pkt/s | ratio | target |")
    print("|---|---:|---|---:|---:|---:|---|")
    missed = []
    for suite in suites():
        for size in SIZES:
            for op, ours, theirs in bench_row(suite, size, n_ours, n_scapy):
                ratio = ours / theirs
                ok = ratio >= RATIO_TARGET
                note = f">= {RATIO_TARGET:.0f}x"
                if suite.esplab.get("aead") and size == 64 and op == "encrypt":
                    ok = ok and ours >= GCM64_TARGET
                    note += f", >= {GCM64_TARGET:,.0f}/s"
                if not ok:
                    missed.append(f"{suite.label} {size} {op}")
                print(
                    f"| {suite.label} | {size} | {op} | {ours:,.0f} | {theirs:,.0f} | "
                    f"{ratio:,.0f}x | {'met' if ok else 'MISSED'} ({note}) |"
                )
    print()
    print("All targets met." if not missed else "Missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
