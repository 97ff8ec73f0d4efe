"""A real Linux peer: how long the guest takes to boot, and frames/s across the bridge.

Run from the repository root: ``python bench/bench_peer.py [--boots N] [--frames N]``.

* boot: ``peer host kernel`` from start to a configured host (QEMU under TCG through
  virtme-ng, KVM off), N times; median and range;
* frames: the ap sends N ESP packets (AES-128-CBC + HMAC-SHA1-96, transport, 64-byte
  UDP payload, software ESP) to the real host with tracing off, each carried into the
  guest, decrypted by Linux, its counters read back (``send ... count N``);
  frames/s and microseconds a frame;
* kernel-check: one scenario of the differential suite, start to verdict, on a booted
  guest.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KEYS = (
    "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314 "
    "enc aes 0x000102030405060708090a0b0c0d0e0f"
)
STATE = f"src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode transport {KEYS}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boots", type=int, default=3)
    parser.add_argument("--frames", type=int, default=2000)
    args = parser.parse_args()

    from esplab.commands.session import Session
    from esplab.peer.backends import qemu
    from esplab.peer.bridge import attach
    from esplab.peer.check import run_scenario
    from esplab.peer.client import KernelPeer

    boots = []
    for _ in range(args.boots):
        started = time.perf_counter()
        client = KernelPeer(qemu(kvm="off")).start()
        session = Session()
        attach(session.lab, "host", client)
        boots.append(time.perf_counter() - started)
        client.close()
    print(
        f"boot to a configured host: median {statistics.median(boots):.1f} s "
        f"(min {min(boots):.1f}, max {max(boots):.1f}, {len(boots)} boots) on "
        f"{client.label}"
    )

    client = KernelPeer(qemu(kvm="off")).start()
    session = Session()
    attach(session.lab, "host", client)
    for line in (
        f"host ip xfrm state add {STATE}",
        f"ip xfrm state add {STATE}",
        "ip xfrm policy add src 192.0.2.1/32 dst 192.0.2.2/32 dir out "
        "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid 1 mode transport",
        "set tracing off",
    ):
        session.execute(line)
    started = time.perf_counter()
    result = session.execute(
        f'send ap wan IP(dst="192.0.2.2")/UDP(sport=1234,dport=5201)/Raw(b"x"*64) '
        f"count {args.frames}"
    )
    took = time.perf_counter() - started
    delivered = result.data.get("delivered_count")
    print(
        f"frames through the bridge: {args.frames / took:,.0f}/s "
        f"({took / args.frames * 1e6:,.0f} us a frame; {delivered} delivered by Linux)"
    )
    session.lab.real_peers.clear()

    from tests.kernel.cases import CASES

    name, lines = next(c for c in CASES if c[0] == "tx-crypto-aes128-sha1-v4-tr")
    started = time.perf_counter()
    report = run_scenario(name, lines, client)
    print(
        f"one kernel-check scenario ({name}, {len(report.findings)} observations): "
        f"{time.perf_counter() - started:.2f} s"
    )
    client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
