"""Soak: one long session, and million-packet runs on every datapath; memory must stay flat.

Run on demand from the repository root::

    python bench/soak.py [--commands N] [--packets N] [--datapaths sw,crypto]

1. **Mixed commands.** N commands (200,000 unless given) in one session, through the
   same runner as ``esplab -c`` and piped stdin: sends on each datapath, shows, captures,
   diffs, explains, state and policy churn, settings, and commands that fail. The
   resident set size (RSS) is reported after 10,000, 100,000 and N commands.
2. **Long runs.** On each datapath (sw, sw+aead, crypto and packet offload), ``send ...
   count 100000`` (the most one command sends) repeated until N packets (1,000,000
   unless given) have gone ap to host in one session, tracing off as a long run is
   sent; RSS after 10,000, 100,000 and N packets, and the rate.
3. **Ctrl-C.** On each datapath a run is interrupted by SIGINT after 0.3 s; the
   counts must agree: sent = delivered + dropped, and the SAs and the wire count the
   same packets (tests/commands/test_interrupt_counts.py checks this in CI).

Memory is RSS from /proc/self/status (VmRSS), after a garbage collection.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console

from esplab.batch import run_text
from esplab.commands.session import Session

AUTH = "auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314"
ENC = "enc aes 0x000102030405060708090a0b0c0d0e0f"
SA = "src 192.0.2.1 dst 192.0.2.2 proto esp spi {spi:#x} reqid {reqid} mode transport"
POLICY = "src 192.0.2.1/32 dst 192.0.2.2/32 proto udp dport {port} dir out"
TMPL = "tmpl src 192.0.2.1 dst 192.0.2.2 proto esp reqid {reqid} mode transport"
UDP = 'IP(dst="192.0.2.2")/UDP(sport=1234,dport={port})/Raw(b"x"*64)'
#: datapath -> (state suffix, policy suffix, SPI, reqid, UDP port)
DATAPATHS = {
    "sw": ("", "", 0x1000, 1, 5201),
    "sw+aead": ("", "", 0x1000, 1, 5201),
    "crypto": (" offload dev wan dir out", "", 0x2000, 2, 5202),
    "packet": (" offload packet dev wan dir out", " offload packet dev wan", 0x3000, 3, 5203),
}
MARKS = (10_000, 100_000)


def rss_mb() -> float:
    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def setup(datapath: str, *, policy: bool = True) -> list[str]:
    state, pol, spi, reqid, port = DATAPATHS[datapath]
    sa = SA.format(spi=spi, reqid=reqid)
    lines = [f"ip xfrm state add {sa} {AUTH} {ENC}{state}"]
    if policy:
        selector, tmpl = POLICY.format(port=port), TMPL.format(reqid=reqid)
        lines.append(f"ip xfrm policy add {selector} {tmpl}{pol}")
    lines.append(f"host ip xfrm state add {sa} {AUTH} {ENC}")
    return lines


def mixed_lines() -> list[str]:
    """One round of the mixed workload (some lines fail on purpose)."""
    send = "send ap wan " + UDP
    return [
        send.format(port=5201),
        send.format(port=5202),
        send.format(port=5203) + " count 3",
        'pc2 send eth0 IP(dst="198.51.100.65")/UDP(sport=7,dport=1234)/Raw(b"y"*20)',
        "capture show wan.wire#-1",
        "diff ap.out#-1 host.deliver#-1",
        "trace",
        "ip -s xfrm state",
        "host xfrm stat",
        "ip route get 192.0.2.2",
        "flows",
        "eip93 stats",
        "ip xfrm state add " + SA.format(spi=0x9000, reqid=9) + f" {AUTH} {ENC}",
        "ip xfrm state delete src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x9000",
        "ip xfrm state delete src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x9000",  # fails
        "send ap nope " + UDP.format(port=1),  # fails
        "decode rdr 1fb70000: 06001112 1000002c 10000014 08000000 00000000 00000000 "
        "00050001 00800074",
        "ping -c 2 192.0.2.2",
        "ethtool -S lan1",
        "help send",
    ]


def soak_commands(total: int) -> list[tuple[int, float, float]]:
    session = Session()
    quiet = Console(file=io.StringIO(), width=100, color_system=None)
    setup_text = "\n".join(
        ["set crypto-provider eip93", *setup("sw"), *setup("crypto"), *setup("packet")]
    )
    run_text(session, setup_text, quiet, quiet)
    lines = mixed_lines()
    marks: list[tuple[int, float, float]] = [(0, rss_mb(), 0.0)]
    start = time.perf_counter()
    failed = 0
    for n in range(1, total + 1):
        outcomes = run_text(session, lines[n % len(lines)], quiet, quiet)
        failed += sum(not o.ok for o in outcomes)
        if n % 5_000 == 0:
            quiet.file = io.StringIO()  # what was printed is not the session's memory
        if n in MARKS or n == total:
            marks.append((n, rss_mb(), time.perf_counter() - start))
    print(f"  {failed} of {total} commands failed (on purpose: 2 lines in {len(lines)})")
    return marks


def soak_packets(datapath: str, total: int) -> tuple[list[tuple[int, float, float]], bool]:
    session = Session()
    session.execute("set tracing off")
    if datapath == "sw+aead":
        session.execute("set crypto-provider eip93")
    for line in setup(datapath):
        session.execute(line)
    port = DATAPATHS[datapath][4]
    marks: list[tuple[int, float, float]] = [(0, rss_mb(), 0.0)]
    sent = delivered = 0
    start = time.perf_counter()
    stops = sorted({m for m in MARKS if m < total} | {total})
    for stop in stops:
        while sent < stop:
            count = min(100_000, stop - sent)
            result = session.execute(f"send ap wan {UDP.format(port=port)} count {count}")
            sent += result.data["sent"]
            delivered += result.data["delivered_count"]
        marks.append((sent, rss_mb(), time.perf_counter() - start))
    host_sa = session.lab.node("host").xfrm.states[0]
    ok = delivered == sent == host_sa.curlft.packets
    return marks, ok


def interrupted(datapath: str) -> str:
    session = Session()
    session.execute("set tracing off")
    if datapath == "sw+aead":
        session.execute("set crypto-provider eip93")
    for line in setup(datapath):
        session.execute(line)

    def alarm(signum: int, frame: FrameType | None) -> None:
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        port = DATAPATHS[datapath][4]
        result = session.execute(f"send ap wan {UDP.format(port=port)} count 100000")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    sent, delivered = result.data["sent"], result.data["delivered_count"]
    ap, host = session.lab.node("ap"), session.lab.node("host")
    wire = ap.dev("wan").counters.tx_packets
    dropped = sum(session.execute("host cat /proc/net/xfrm_stat").data.values())
    agree = (
        sent == delivered + dropped
        and ap.xfrm.states[0].curlft.packets == wire == sent
        and host.xfrm.states[0].curlft.packets == delivered
    )
    return f"sent {sent}, delivered {delivered}, dropped {dropped}, wire {wire}: " + (
        "consistent" if agree else "INCONSISTENT"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=200_000)
    parser.add_argument("--packets", type=int, default=1_000_000)
    parser.add_argument("--datapaths", default=",".join(DATAPATHS))
    args = parser.parse_args()
    datapaths = args.datapaths.split(",")

    print(f"mixed commands, one session ({args.commands}):")
    for n, rss, took in soak_commands(args.commands):
        rate = f", {n / took:,.0f} commands/s" if took else ""
        print(f"  after {n:>9,} commands: RSS {rss:6.1f} MB{rate}")
    good = True
    for datapath in datapaths:
        marks, ok = soak_packets(datapath, args.packets)
        good &= ok
        print(f"{datapath}: send ... count 100000 until {args.packets:,} packets")
        for n, rss, took in marks:
            rate = f", {n / took:,.0f} packets/s" if took else ""
            print(f"  after {n:>9,} packets: RSS {rss:6.1f} MB{rate}")
        print(f"  every packet delivered and counted by the host's SA: {ok}")
    for datapath in datapaths:
        line = interrupted(datapath)
        good &= line.endswith("consistent") and "INCONSISTENT" not in line
        print(f"{datapath}: Ctrl-C after 0.3 s: {line}")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
