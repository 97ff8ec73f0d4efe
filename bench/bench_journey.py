"""Journeys per second through the lab, ap to host, and memory per retained journey.

Run on demand from the repository root::

    python bench/bench_journey.py

For each datapath (sw, packet offload through the EIP-93) it sends 64-byte UDP
payloads from the ap to the host over wan, once with full stage snapshots
(tracing on, every tap captured) and once with tracing off, and reports
journeys per second. It then fills the journey ring and reports the memory one
retained journey costs (tracemalloc), and checks that the ring stays bounded.
Targets (issue 5): at least 5,000 journeys/s with snapshots and 20,000/s
without, for 64-byte payloads through packet offload.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from esplab.commands.session import Session
from esplab.model.datapath import SendOptions

AUTH = "0x0102030405060708090a0b0c0d0e0f1011121314"
ENC = "0x000102030405060708090a0b0c0d0e0f"
PATHS = {
    "sw": ("", ""),
    "crypto": (" offload dev wan dir out", ""),
    "packet": (" offload packet dev wan dir out", " priority 10 offload packet dev wan"),
}


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


def packet() -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.packet import Raw

    head = IP(src="192.0.2.1", dst="192.0.2.2")
    return bytes(head / UDP(sport=1234, dport=5201) / Raw(b"x" * 64))


def rate(path: str, tracing: bool, n: int) -> float:
    s = session(path, tracing)
    data = packet()
    send = s.lab.datapath.send
    opts = SendOptions()
    for _ in range(200):  # warm caches (SA contexts, engine HMAC states)
        send("ap", "wan", data, opts)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            journey = send("ap", "wan", data, opts)
        elapsed = time.perf_counter() - start
        assert journey.delivered, journey.verdict
        best = max(best, n / elapsed)
    return best


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


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(f"journeys/s, ap -> host over wan, 64-byte UDP payload ({n} journeys, best of 3)\n")
    print("| datapath | snapshots on | tracing off |")
    print("|---|---:|---:|")
    for path in PATHS:
        on, off = rate(path, True, n), rate(path, False, n)
        print(f"| {path} | {on:,.0f} | {off:,.0f} |")
    per, kept = memory_per_journey("packet", 256)
    print(f"\nmemory per retained journey (packet offload, snapshots on): {per / 1024:.1f} KiB")
    s = session("sw", True)
    s.lab.journeys.resize(100)
    s.lab.captures.resize(100)
    for _ in range(1000):
        s.lab.datapath.send("ap", "wan", packet())
    print(f"ring bounded: {len(s.lab.journeys)} journeys kept of 1000 sent (ring 100); "
          f"largest capture ring {max(s.lab.captures.counts().values())} (ring 100)")
    del kept


if __name__ == "__main__":
    main()
