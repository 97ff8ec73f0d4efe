"""Packets per second through the EIP-93 model, side by side with the software ESP core.

Run from the repository root: ``python bench/bench_engine.py [--quick] [--profile]``.

One SA, the seed configuration (airoha-dsa-xfrm.md 5.5 a): IPv4 transport,
AES-128-CBC + HMAC-SHA1-96. Packets of 64, 512 and 1500 bytes (the whole IPv4/UDP
packet). Four datapaths (DESIGN.md), each timed on TX (encrypt) and RX (decrypt):

* ``sw``: the software ESP core (``esplab.model.kernel.esp.core``);
* ``sw+aead``: software framing, the engine's basic-mode authenc through the rings;
* ``crypto``: crypto offload, the engine in ESP mode with the kernel's sequence numbers;
* ``packet``: packet offload, the engine's own sequence numbers and replay window.

Engine datapaths include building the skb the kernel would hand over, the driver,
the rings and the engine, with journey stages but without snapshots. Before timing,
every datapath's bytes are compared with the software's for one packet.

Targets: every engine datapath at least half the software path's rate, and at least
20,000 packets/s for 64-byte packets.
"""

from __future__ import annotations

import argparse
import cProfile
import platform
import pstats
import struct
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from esplab.model.kernel.drivers.eip93 import EIP93Driver, OffloadedSA, new_eip93
from esplab.model.kernel.esp.core import EspSA, decrypt, encrypt

SPI = 0x100
SIZES = (64, 512, 1500)
PATHS = ("sw", "sw+aead", "crypto", "packet")
RATIO_TARGET = 0.5
PPS64_TARGET = 20_000.0
ENC_KEY, AUTH_KEY = bytes(range(16)), bytes(range(100, 120))
KEYS: dict[str, Any] = {
    "enc": "cbc(aes)",
    "enc_key": ENC_KEY,
    "auth": "hmac(sha1)",
    "auth_key": AUTH_KEY,
}


def packet(size: int, n: int) -> bytes:
    """An IPv4/UDP packet of ``size`` bytes with a valid header checksum, id ``n``."""
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
        bytes((198, 51, 100, 10)),
        bytes((203, 0, 113, 7)),
    )
    total = sum(struct.unpack("!10H", head))
    total = (total & 0xFFFF) + (total >> 16)
    total = (total & 0xFFFF) + (total >> 16)
    head = head[:10] + struct.pack("!H", ~total & 0xFFFF) + head[12:]
    udp = struct.pack("!HHHH", 4000, 5000, size - 20, 0)
    return head + udp + bytes(size - 28)


def skb(pkt: bytes, seq: int, iv_size: int = 16) -> bytes:
    """What the kernel hands the driver in transport mode: the IP header naming ESP, the
    ESP header with SPI and sequence number, IV room, the payload."""
    return pkt[:9] + b"\x32" + pkt[10:20] + struct.pack("!II", SPI, seq) + bytes(iv_size) + pkt[20:]


class Bench:
    """The four datapaths, set up once."""

    def __init__(self) -> None:
        self.sw_out = EspSA.build(SPI, **KEYS)
        self.sw_in = EspSA.build(SPI, **KEYS)
        self.drivers: dict[str, EIP93Driver] = {}
        self.sas: dict[str, OffloadedSA] = {}
        for path in ("crypto", "packet"):
            drv = self.drivers[path] = new_eip93(0x5EED)
            drv.snapshots = False
            out = drv.state_add(direction="out", spi=SPI, offload=path, **KEYS).sa
            inb = drv.state_add(direction="in", spi=SPI, offload=path, **KEYS).sa
            assert out is not None and inb is not None
            self.sas[path] = out
        aead = self.drivers["sw+aead"] = new_eip93(0x5EED)
        aead.snapshots = False
        self.tfm = aead.aead_setkey(spi=SPI, **KEYS)

    def check(self, size: int) -> None:
        """Each datapath's bytes equal the software's for one packet (same IV, same seq)."""
        iv = bytes(range(16))
        pkt = packet(size, 1)
        ref = encrypt(EspSA.build(SPI, **KEYS), pkt, seq=1, iv=iv)
        fresh = new_eip93(1)
        out = fresh.state_add(direction="out", spi=SPI, offload="crypto", **KEYS).sa
        assert out is not None
        assert fresh.crypto_tx(out, skb(pkt, 1), proto=17, iv=iv).data == ref, "crypto"
        fresh2 = new_eip93(1)
        out2 = fresh2.state_add(direction="out", spi=SPI, offload="packet", **KEYS).sa
        assert out2 is not None
        assert fresh2.packet_tx(out2, skb(pkt, 1), proto=17, iv=iv).data == ref, "packet"
        tfm = fresh.aead_setkey(**KEYS)
        assert fresh.sw_aead_tx(tfm, skb(pkt, 1), proto=17, iv=iv).data == ref, "sw+aead"

    def tx(self, path: str, size: int) -> Callable[[int], None]:
        pkts = [packet(size, n) for n in range(64)]
        if path == "sw":
            sw = self.sw_out
            return lambda n: _consume(encrypt(sw, pkts[n & 63]))
        drv = self.drivers[path]
        if path == "sw+aead":
            tfm = self.tfm
            seqs = iter(range(1, 1 << 31))
            return lambda n: _ok(drv.sw_aead_tx(tfm, skb(pkts[n & 63], next(seqs)), proto=17).ok)
        sa = self.sas[path]
        send = drv.crypto_tx if path == "crypto" else drv.packet_tx
        seqs = iter(range(1, 1 << 31))
        return lambda n: _ok(send(sa, skb(pkts[n & 63], next(seqs)), proto=17).ok)

    def rx(self, path: str, size: int, count: int) -> Callable[[int], None]:
        wire = [encrypt(self.sw_out, packet(size, n), seq=n + 1) for n in range(count)]
        if path == "sw":
            sw = self.sw_in
            return lambda n: _ok(decrypt(sw, wire[n]).ok)
        drv = self.drivers[path]
        if path == "sw+aead":
            tfm = self.tfm
            return lambda n: _ok(drv.sw_aead_rx(tfm, wire[n]).ok)
        return lambda n: _ok(_rx_ok(drv, wire[n]))

    def fresh_rx(self, path: str, size: int, count: int) -> Callable[[int], None]:
        """RX with fresh inbound SAs, so each timed run starts with an empty replay window."""
        for offload in ("crypto", "packet"):
            drv = self.drivers[offload]
            drv.state_delete(drv.lookup(SPI, "in"))
            assert drv.state_add(direction="in", spi=SPI, offload=offload, **KEYS).ok
        return self.rx(path, size, count)


def _consume(data: bytes) -> None:
    assert data


def _ok(ok: bool) -> None:
    assert ok


def _rx_ok(drv: EIP93Driver, wire: bytes) -> bool:
    outcome = drv.rx(wire)
    return outcome is not None and outcome.ok


def rates(
    makers: dict[str, Callable[[], Callable[[int], None]]], count: int, runs: int = 5
) -> dict[str, float]:
    """Best packets per second of each datapath over ``runs`` rounds of ``count`` packets.
    A round runs every datapath once, in turn, so a slow moment of the machine falls on
    all of them alike rather than on one column."""
    best = dict.fromkeys(makers, 0.0)
    for _ in range(runs):
        for path, make in makers.items():
            step = make()
            start = time.perf_counter()
            for n in range(count):
                step(n)
            best[path] = max(best[path], count / (time.perf_counter() - start))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer packets")
    parser.add_argument("--profile", action="store_true", help="profile 64-byte crypto TX")
    args = parser.parse_args()
    bench = Bench()
    for size in SIZES:
        bench.check(size)
    if args.profile:
        step = bench.tx("crypto", 64)
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [step(n) for n in range(5000)])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        return 0
    count = {64: 3000, 512: 2000, 1500: 1000}
    if args.quick:
        count = {k: v // 5 for k, v in count.items()}
    print(
        f"EIP-93 model, AES-128-CBC + HMAC-SHA1-96, IPv4 transport; Python "
        f"{platform.python_version()} on {platform.machine()}; packets/s, best of 5 "
        "interleaved rounds"
    )
    failures = []
    for direction in ("TX", "RX"):
        print(
            f"\n{direction:<3} {'bytes':>5} "
            + " ".join(f"{p:>9}" for p in PATHS)
            + "   engine/sw (worst)"
        )
        for size in SIZES:
            best = rates(
                {
                    path: (
                        partial(bench.tx, path, size)
                        if direction == "TX"
                        else partial(bench.fresh_rx, path, size, count[size])
                    )
                    for path in PATHS
                },
                count[size],
            )
            worst = min(best[p] / best["sw"] for p in PATHS[1:])
            print(
                f"{'':<3} {size:>5} "
                + " ".join(f"{best[p]:>9,.0f}" for p in PATHS)
                + f"   {worst:.2f}"
            )
            for path in PATHS[1:]:
                if best[path] < RATIO_TARGET * best["sw"]:
                    failures.append(
                        f"{direction} {size} B {path}: {best[path]:,.0f}/s is "
                        f"below half of sw ({best['sw']:,.0f}/s)"
                    )
                if size == 64 and best[path] < PPS64_TARGET:
                    failures.append(f"{direction} 64 B {path}: {best[path]:,.0f}/s < 20,000/s")
    print()
    if failures:
        print("targets missed:\n  " + "\n  ".join(failures))
        return 1
    print("targets met: every engine datapath >= 0.5 x sw, >= 20,000 packets/s at 64 bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
