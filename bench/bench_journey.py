"""Journeys per second through the lab, ap to host, and memory per retained journey.

Run on demand from the repository root::

    python bench/bench_journey.py

For each datapath (sw, crypto and packet offload through the EIP-93, the driver's full
ring protocol) it sends 64-byte UDP payloads from the ap to the host over wan, N at a
time as ``send ... count N`` does (N = 20000 unless given), once with full stage
snapshots (tracing on, every tap captured) and once with tracing off, and reports
journeys per second, best of 3; every packet is walked, stage by stage. A third column
sends one ``send`` call a journey. A last row does the same from pc2 to the host
through the ap, in over lan2 (the DSA receive path) and out over wan in the clear, so
lan regressions show. It fills the journey ring to report the memory one retained
journey costs (tracemalloc), and checks that the ring stays bounded. Targets, for
64-byte payloads through packet offload: at least 15,000 journeys/s with tracing off
and 5,000/s with snapshots.

With ``--split`` it also reports, per journey with tracing off, the microseconds
spent in the EIP-93 driver and engine (``crypto_tx``/``packet_tx``), in software
ESP (``esp.encrypt``/``esp.decrypt``), and in the rest of the walk::

    python bench/bench_journey.py 2000 --split
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from esplab.commands.session import Session
from esplab.model.journey.datapath import SendOptions
from esplab.model.kernel.esp import core as esp_core

AUTH = "0x0102030405060708090a0b0c0d0e0f1011121314"
ENC = "0x000102030405060708090a0b0c0d0e0f"
PATHS = {
    "sw": ("", ""),
    "crypto": (" offload dev wan dir out", ""),
    "packet": (" offload packet dev wan dir out", " priority 10 offload packet dev wan"),
}
#: The lan row: (row label, sending node, its device, its address). pc2's traffic is
#: forwarded by the ap in the clear (the policies match the ap's own address only).
LAN = ("sw, pc2 via lan2", "pc2", "eth0", "198.51.100.66")


def session(path: str, tracing: bool) -> Session:
    state_off, policy_off = PATHS[path]
    s = Session()
    s.lab.settings.tracing = tracing
    s.lab.eip93.snapshots = tracing
    for line in (
        f"ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 "
        f"mode transport auth sha1 {AUTH} enc aes {ENC}{state_off}",
        "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out "
        f"tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport{policy_off}",
        f"host ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 "
        f"mode transport auth sha1 {AUTH} enc aes {ENC}",
    ):
        s.execute(line)
    return s


def packet(src: str = "192.0.2.1") -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.packet import Raw

    head = IP(src=src, dst="192.0.2.2")
    return bytes(head / UDP(sport=1234, dport=5201) / Raw(b"x" * 64))


def rate(path: str, tracing: bool, n: int, lan: bool = False, each: bool = False) -> float:
    """Journeys/s from the ap out of wan, or with ``lan`` from pc2 (see ``LAN``), as
    ``send ... count n`` sends them (``Datapath.send_many``), or with ``each`` one
    ``Datapath.send`` call a journey."""
    s = session(path, tracing)
    node, dev, src = LAN[1:] if lan else ("ap", "wan", "192.0.2.1")
    data = packet(src)
    datapath = s.lab.datapath
    send = datapath.send
    opts = SendOptions()
    for _ in range(200):  # warm caches (SA contexts, engine HMAC states)
        send(node, dev, data, opts)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        if each:
            for _ in range(n):
                journey = send(node, dev, data, opts)
        else:
            last = datapath.send_many(node, dev, data, n).last
            assert last is not None
            journey = last
        elapsed = time.perf_counter() - start
        assert journey.delivered, journey.verdict
        best = max(best, n / elapsed)
    return best


def split(path: str, n: int) -> dict[str, float]:
    """Microseconds per journey (tracing off): engine, software ESP, the rest."""
    s = session(path, False)
    data = packet()
    send = s.lab.datapath.send
    for _ in range(200):
        send("ap", "wan", data)
    spent = {"engine": 0.0, "esp": 0.0}
    drv = s.lab.eip93
    saved = [(drv, name) for name in ("crypto_tx", "packet_tx")]
    saved += [(esp_core, name) for name in ("encrypt", "decrypt")]
    originals = [(obj, name, getattr(obj, name)) for obj, name in saved]

    def timed(fn: Callable[..., Any], key: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start

        return call

    for obj, name, fn in originals:
        setattr(obj, name, timed(fn, "engine" if obj is drv else "esp"))
    try:
        start = time.perf_counter()
        for _ in range(n):
            send("ap", "wan", data)
        total = time.perf_counter() - start
    finally:
        for obj, name, fn in originals:
            setattr(obj, name, fn)
    us = {key: value / n * 1e6 for key, value in spent.items()}
    us["walk"] = total / n * 1e6 - us["engine"] - us["esp"]
    us["total"] = total / n * 1e6
    return us


def memory_per_journey(path: str, ring: int) -> tuple[float, int]:
    s = session(path, True)
    s.lab.journeys.resize(ring)
    data = packet()
    for _ in range(ring):  # fill the ring once so steady state is measured
        s.lab.datapath.send("ap", "wan", data)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    s.lab.journeys.resize(ring * 2)
    for _ in range(ring):
        s.lab.datapath.send("ap", "wan", data)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / ring, len(s.lab.journeys)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "count",
        nargs="?",
        type=int,
        default=20000,
        help="journeys per timed round and datapath, as send ... count N (default 20000)",
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="also time the EIP-93, software ESP and the rest of the walk per journey",
    )
    args = parser.parse_args(argv)
    n = args.count
    print(f"journeys/s, ap -> host over wan, 64-byte UDP payload ({n} journeys, best of 3)\n")
    print("| datapath | snapshots on | tracing off | tracing off, one send a journey |")
    print("|---|---:|---:|---:|")
    for path in PATHS:
        on, off = rate(path, True, n), rate(path, False, n)
        each = rate(path, False, n, each=True)
        print(f"| {path} | {on:,.0f} | {off:,.0f} | {each:,.0f} |")
    on, off = rate("sw", True, n, lan=True), rate("sw", False, n, lan=True)
    each = rate("sw", False, n, lan=True, each=True)
    print(f"| {LAN[0]} | {on:,.0f} | {off:,.0f} | {each:,.0f} |")
    if args.split:
        print("\nus per journey, tracing off (the timers add a little to each part)\n")
        print("| datapath | total | EIP-93 driver+engine | software ESP | rest of the walk |")
        print("|---|---:|---:|---:|---:|")
        for path in PATHS:
            us = split(path, n)
            print(
                f"| {path} | {us['total']:.1f} | {us['engine']:.1f} | {us['esp']:.1f} "
                f"| {us['walk']:.1f} |"
            )
    per, kept = memory_per_journey("packet", 256)
    print(f"\nmemory per retained journey (packet offload, snapshots on): {per / 1024:.1f} KiB")
    s = session("sw", True)
    s.lab.journeys.resize(100)
    s.lab.captures.resize(100)
    for _ in range(1000):
        s.lab.datapath.send("ap", "wan", packet())
    print(
        f"ring bounded: {len(s.lab.journeys)} journeys kept of 1000 sent (ring 100); "
        f"largest capture ring {max(s.lab.captures.counts().values())} (ring 100)"
    )
    del kept


if __name__ == "__main__":
    main()
