"""``esplab decode`` on a big capture against tshark and scapy; peak memory.

Run from the repository root: ``python bench/bench_decode.py [--packets N] [--repeat R]``.
Not a test: it takes a minute or two.

The capture: N ESP packets (default 200,000) made with esplab's own encrypt, in
Ethernet frames (pcapng), mixed inner sizes (64 to 1400 bytes), alternating
between two tunnel-mode SAs: AES-128-CBC + HMAC-SHA1-96 and AES-128-GCM (rfc4106,
ICV 128). The inner packets are UDP to port 5001, which tshark shows as plain data
(its cheapest case: an inner port with a dissector, 5678 say, makes tshark 2 to 3
times slower). Every tool decodes the same file with the same SAs and checks every
ICV:

* esplab, the decode pipeline in this process: ``decode_capture`` alone (every
  packet checked, decrypted, summarised and accounted; nothing printed), then
  with the JSON line of every packet written to /dev/null; one core;
* ``esplab decode FILE --sa-file SA --json > /dev/null`` as a subprocess, start-up
  included, with ``--jobs 1`` and ``--jobs 2`` (one worker per SA), and without
  ``--json`` (the human tables: per-SA and overall summaries, the first rows). The
  command runs as installed: with its bytecode cached (pip compiles it at install;
  here a cache of the bench's own, filled by one untimed run). Where the
  environment forbids bytecode files (``PYTHONDONTWRITEBYTECODE``, as in a
  development checkout), every start compiles esplab's modules again, about 50 ms:
  ``--jobs 1 --json`` is then also timed that way, in a row of its own;
* ``tshark -r FILE -o esp.enable_encryption_decode:TRUE -o
  esp.enable_authentication_check:TRUE -o uat:esp_sa:... -T fields -e esp.icv_good``;
* scapy: ``SecurityAssociation.decrypt`` after ``Ether(frame)`` on the first
  ``--scapy`` packets only; the rate is extrapolated to the whole file.

Times are the best of ``--repeat`` runs (the machine is shared). Peak memory is
the ``ru_maxrss`` of the process that ran the decode (for ``--jobs 2`` the parent's
plus twice the largest worker's: an upper bound of the sum), measured on the full
file and on a file a tenth of its size: the two are about equal, so memory does
not grow with the file.

Targets, on the file of ``--packets`` packets: the pipeline in process (no output, one
core) at least 4x tshark's packets/s (the goal is set at 200,000 packets, the
default), ``esplab decode --json --jobs 1`` with its start-up at least 3x (set at
50,000: ``--packets 50000``, where start-up weighs most), and 30x scapy's; peak
memory under 200 MB.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from esplab.capfile.formats import PacketJson  # noqa: E402
from esplab.capfile.pipeline import decode_capture  # noqa: E402
from esplab.capfile.safile import SaSpec, parse_sa_text  # noqa: E402
from esplab.model.kernel.esp.core import EspSA, encrypt  # noqa: E402
from esplab.model.kernel.esp.ip import checksum  # noqa: E402
from esplab.pcapio import FrameReader, PcapngWriter  # noqa: E402
from esplab.wireshark import EspSaEntry, tshark_options  # noqa: E402

CBC_KEY, SHA_KEY = bytes(range(16)), bytes(range(100, 120))
GCM_KEY = bytes(range(32, 52))  # AES-128 key + 4-byte salt
SA_TEXT = f"""\
ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi 0x1000 reqid 1 mode tunnel \\
    auth sha1 0x{SHA_KEY.hex()} enc aes 0x{CBC_KEY.hex()}
ip xfrm state add src 192.0.2.2 dst 192.0.2.1 proto esp spi 0x2000 reqid 2 mode tunnel \\
    aead 'rfc4106(gcm(aes))' 0x{GCM_KEY.hex()} 128
"""
SIZES = (64, 100, 256, 512, 1024, 1400)
ETH = bytes.fromhex("020000000002020000000001") + b"\x08\x00"
RATIO_IN_PROCESS, RATIO_STARTUP, RATIO_SCAPY, MEMORY_MB = 4.0, 3.0, 30.0, 200.0


IN_PROCESS = "esplab decode_capture, in process, no output (1 core)"
CLI_JSON_1 = "esplab decode --json --jobs 1 (CLI)"
CLI_NO_BYTECODE = "esplab decode --json --jobs 1 (CLI, no bytecode)"


def inner_packet(size: int, n: int) -> bytes:
    """An IPv4/UDP packet of ``size`` bytes."""
    head = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, size, n & 0xFFFF, 0x4000, 64, 17, 0,
        bytes((10, 0, 0, 1)), bytes((10, 0, 0, 2)),
    )  # fmt: skip
    head = head[:10] + checksum(head).to_bytes(2, "big") + head[12:]
    udp = struct.pack("!HHHH", 40000, 5001, size - 20, 0)
    return head + udp + bytes((n + i) & 0xFF for i in range(size - 28))


def make_capture(path: Path, count: int, specs: tuple[SaSpec, ...]) -> None:
    senders = [
        EspSA.build(
            s.spi or 0, mode="tunnel", tunnel_src=s.src, tunnel_dst=s.dst,
            **(
                {"aead": s.aead, "aead_key": s.aead_key, "aead_icv": s.icv_bits}
                if s.aead
                else {"enc": s.enc, "enc_key": s.enc_key, "auth": s.auth,
                      "auth_key": s.auth_key, "auth_trunc": s.icv_bits}
            ),
        )
        for s in specs
    ]  # fmt: skip
    rng = random.Random(1)
    inners = {size: [inner_packet(size, n) for n in range(16)] for size in SIZES}
    with PcapngWriter(path) as writer:
        for i in range(count):
            sa = senders[i % 2]
            size = rng.choice(SIZES)
            frame = ETH + encrypt(sa, inners[size][i % 16])
            writer.write("eth0", 1, 1_700_000_000_000_000_000 + i * 10_000, frame)


@dataclass
class Row:
    tool: str
    packets: int
    seconds: float
    rss_mb: float | None = None
    note: str = ""

    @property
    def rate(self) -> float:
        return self.packets / self.seconds


def best(
    repeat: int, run: Callable[[], tuple[int, float | None]]
) -> tuple[float, int, float | None]:
    """(best seconds, packets, peak MB of that run) over ``repeat`` runs."""
    result: tuple[float, int, float | None] | None = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        n, rss = run()
        dt = time.perf_counter() - t0
        if result is None or dt < result[0]:
            result = (dt, n, rss)
    assert result is not None
    return result


def esplab_core(path: Path, specs: tuple[SaSpec, ...]) -> tuple[int, float | None]:
    """The core function alone: every packet checked, decrypted and accounted, its
    record made, nothing printed."""
    run = decode_capture(path, specs)
    if run.summary.ok != run.summary.frames:
        raise SystemExit(f"esplab: {run.summary.failed} packets failed")
    return run.summary.frames, None


def esplab_inprocess(path: Path, specs: tuple[SaSpec, ...]) -> tuple[int, float | None]:
    fmt, names = PacketJson(), ["eth0"]
    lines: list[str] = []
    with open(os.devnull, "w") as sink:

        def on_packet(rec: object) -> None:
            lines.append(fmt(rec, names))  # type: ignore[arg-type]
            if len(lines) >= 512:
                sink.write("\n".join(lines) + "\n")
                lines.clear()

        run = decode_capture(path, specs, on_packet)
        sink.write("\n".join(lines))
    if run.summary.ok != run.summary.frames:
        raise SystemExit(f"esplab: {run.summary.failed} packets failed")
    return run.summary.frames, None


# The installed command's entry (esplab.cli.run), which reports its peak memory at exit.
_CLI = """
import atexit, resource, sys
from esplab.cli import run

def rss():
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"RSS {me} {kids}", file=sys.stderr)

atexit.register(rss)
run(sys.argv[1:])
"""


def bytecode_env(cache: Path | None) -> dict[str, str]:
    """The environment of the command: with ``cache``, its bytecode is written there
    and read back (as an installed package's is); without, as this environment says."""
    env = dict(os.environ)
    if cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def esplab_cli(
    path: Path, sa_path: Path, jobs: int, json: bool, frames: int, env: dict[str, str]
) -> tuple[int, float | None]:
    """Run the command; ``frames`` is what the capture holds (counted beforehand, so
    that the clock only sees the command)."""
    argv = [sys.executable, "-c", _CLI, "decode", str(path), "--sa-file", str(sa_path),
            "--jobs", str(jobs)] + (["--json"] if json else [])  # fmt: skip
    with open(os.devnull, "w") as sink:
        proc = subprocess.run(
            argv, stdout=sink, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, timeout=600
        )
    if proc.returncode != 0:
        raise SystemExit(f"esplab decode exited {proc.returncode}: {proc.stderr}")
    _, me, kids = proc.stderr.split()[-3:]
    # With workers: the parent plus each worker at the largest worker's peak (an upper bound).
    total = int(me) + (jobs * int(kids) if jobs > 1 else 0)
    return frames, total / 1024


def count_frames(path: Path) -> int:
    return sum(1 for _ in FrameReader(path))


def tshark(path: Path, specs: tuple[SaSpec, ...], binary: str) -> tuple[int, float | None]:
    entries = [
        EspSaEntry(s.src or "", s.dst or "", s.spi or 0, s.aead or s.enc or "",
                   s.aead_key or s.enc_key, s.auth, s.auth_key, s.icv_bits)
        for s in specs
    ]  # fmt: skip
    argv = [binary, "-r", str(path), *tshark_options(entries), "-T", "fields", "-e", "esp.icv_good"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600)
    good = proc.stdout.split()
    if good.count("1") != len(good):
        raise SystemExit("tshark: not every ICV is good")
    return len(good), None


def scapy_loop(path: Path, count: int) -> tuple[int, float]:
    """(packets, seconds) of scapy's decrypt loop over the first ``count`` frames (the
    frames are read before the clock starts)."""
    from scapy.layers.inet import IP
    from scapy.layers.ipsec import ESP, SecurityAssociation
    from scapy.layers.l2 import Ether

    sas = {
        0x1000: SecurityAssociation(  # type: ignore[no-untyped-call]
            ESP, spi=0x1000, crypt_algo="AES-CBC", crypt_key=CBC_KEY,
            auth_algo="HMAC-SHA1-96", auth_key=SHA_KEY,
            tunnel_header=IP(src="192.0.2.1", dst="192.0.2.2"),
        ),
        0x2000: SecurityAssociation(  # type: ignore[no-untyped-call]
            ESP, spi=0x2000, crypt_algo="AES-GCM", crypt_key=GCM_KEY,
            tunnel_header=IP(src="192.0.2.2", dst="192.0.2.1"),
        ),
    }  # fmt: skip
    frames = []
    for _, _, _, data in FrameReader(path):
        frames.append(data)
        if len(frames) == count:
            break
    t0 = time.perf_counter()
    for data in frames:
        ip = Ether(data)[IP]
        # decrypt raises on a bad ICV
        sas[int.from_bytes(data[34:38], "big")].decrypt(ip)  # type: ignore[no-untyped-call]
    return len(frames), time.perf_counter() - t0


def _cli_run(
    path: Path, sa_path: Path, jobs: int, env: dict[str, str], json: bool = True
) -> Callable[[], tuple[int, float | None]]:
    frames = count_frames(path)
    return lambda: esplab_cli(path, sa_path, jobs, json, frames, env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=200_000, help="packets in the capture")
    ap.add_argument("--scapy", type=int, default=3000, help="packets scapy decrypts")
    ap.add_argument("--repeat", type=int, default=5, help="runs per tool (best is kept)")
    ap.add_argument("--keep", metavar="DIR", help="keep the capture and SA file in DIR")
    args = ap.parse_args()

    specs = parse_sa_text(SA_TEXT, "bench-sa").sas
    work = Path(args.keep or tempfile.mkdtemp(prefix="esplab-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    sa_path = work / "sa.txt"
    sa_path.write_text(SA_TEXT)
    big, small = work / "big.pcapng", work / "small.pcapng"
    t0 = time.perf_counter()
    make_capture(big, args.packets, specs)
    make_capture(small, args.packets // 10, specs)
    made = time.perf_counter() - t0
    size_mb = big.stat().st_size / 1e6
    print(
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"capture of {args.packets:,} packets ({size_mb:.0f} MB) made in {made:.1f} s; "
        f"best of {args.repeat} runs.\n"
    )

    rows: list[Row] = []
    dt, n, _ = best(args.repeat, lambda: esplab_core(big, specs))
    rows.append(Row(IN_PROCESS, n, dt))
    dt, n, _ = best(args.repeat, lambda: esplab_inprocess(big, specs))
    rows.append(Row("esplab decode pipeline, in process, JSON lines (1 core)", n, dt))
    installed = bytecode_env(work / "bytecode")
    best(1, _cli_run(small, sa_path, 1, installed))  # fills the bytecode cache
    for jobs in (1, 2):
        dt, n, rss = best(args.repeat, _cli_run(big, sa_path, jobs, installed))
        note = "start-up included" + ("; one worker per SA" if jobs == 2 else "")
        rows.append(Row(f"esplab decode --json --jobs {jobs} (CLI)", n, dt, rss, note))
    if os.environ.get("PYTHONDONTWRITEBYTECODE") or sys.flags.dont_write_bytecode:
        dt, n, rss = best(args.repeat, _cli_run(big, sa_path, 1, bytecode_env(None)))
        note = "start-up included, with esplab's modules compiled (PYTHONDONTWRITEBYTECODE)"
        rows.append(Row(CLI_NO_BYTECODE, n, dt, rss, note))
    dt, n, rss = best(args.repeat, _cli_run(big, sa_path, 1, installed, json=False))
    rows.append(Row("esplab decode --jobs 1 (CLI, tables)", n, dt, rss, "start-up included"))
    _, _, small_rss = best(1, _cli_run(small, sa_path, 1, installed))
    binary = shutil.which("tshark")
    if binary:
        dt, n, _ = best(args.repeat, lambda: tshark(big, specs, binary))
        rows.append(Row("tshark, decrypt + ICV check", n, dt, note="start-up included"))
    n, loop = scapy_loop(big, args.scapy)
    scapy_rate = n / loop
    rows.append(
        Row("scapy SecurityAssociation.decrypt", args.packets, args.packets / scapy_rate,
            note=f"{n:,} packets timed, extrapolated")
    )  # fmt: skip

    tshark_rate = next((r.rate for r in rows if r.tool.startswith("tshark")), None)
    print("| tool | packets | seconds | packets/s | x tshark | x scapy | peak RSS | note |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        vs_t = f"{r.rate / tshark_rate:.1f}" if tshark_rate else "-"
        peak = f"{r.rss_mb:.0f} MB" if r.rss_mb else "-"
        print(
            f"| {r.tool} | {r.packets:,} | {r.seconds:.2f} | {r.rate:,.0f} | {vs_t} | "
            f"{r.rate / scapy_rate:.0f} | {peak} | {r.note} |"
        )
    print(
        "\nThe CLI rows run the installed entry (esplab.cli.run) with esplab's bytecode "
        "cached, except the one that says otherwise."
    )
    print(f"Peak RSS of esplab decode --jobs 1 on a tenth of the file: {small_rss:.0f} MB.")

    ours = [r for r in rows if r.tool.startswith("esplab")]
    best_rate = max(r.rate for r in ours)
    peak_mb = max(r.rss_mb or 0 for r in ours)
    checks = [
        (f"{RATIO_SCAPY:.0f}x scapy", best_rate >= RATIO_SCAPY * scapy_rate),
        (f"peak memory under {MEMORY_MB:.0f} MB", peak_mb < MEMORY_MB),
    ]
    if tshark_rate:
        by_tool = {r.tool: r.rate / tshark_rate for r in rows}
        uncached = by_tool.get(CLI_NO_BYTECODE)
        also = "" if uncached is None else f"; {uncached:.1f}x without bytecode"
        checks[:0] = [
            (f"in process {RATIO_IN_PROCESS:.0f}x tshark ({by_tool[IN_PROCESS]:.1f}x)",
             by_tool[IN_PROCESS] >= RATIO_IN_PROCESS),
            (f"--json --jobs 1 with start-up {RATIO_STARTUP:.0f}x tshark "
             f"({by_tool[CLI_JSON_1]:.1f}x{also})", by_tool[CLI_JSON_1] >= RATIO_STARTUP),
        ]  # fmt: skip
    print("Targets: " + "; ".join(f"{name} {'met' if ok else 'MISSED'}" for name, ok in checks))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
