"""The long fuzz campaign: every entry point of tests/fuzz/ with 10,000 inputs or more.

Run on demand from the repository root::

    python bench/fuzz.py [--examples N] [-k EXPR]

It runs each property of ``tests/fuzz/`` (the CI runs the same properties with small
fixed budgets) with ``ESPLAB_FUZZ_EXAMPLES=N`` (10,000 unless given), from the same
fixed seeds, one pytest process per property, and reports for each: the inputs tried
(Hypothesis's statistics), the failures, the time and the slowest input. A failure
prints the smallest input Hypothesis found and how to replay it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: property -> the entry point it covers
PROPERTIES = {
    "tests/fuzz/test_command_lines.py::test_failing_command_lines_leave_the_session_as_it_was": (
        "command lines (every registered command, rich session, model compared)"
    ),
    "tests/fuzz/test_inputs.py::test_packet_expressions": "packet expressions",
    "tests/fuzz/test_inputs.py::test_hex_pastes": "hex-paste reader",
    "tests/fuzz/test_files.py::test_sa_files": "SA files (ip xfrm add, ip xfrm state, esp_sa)",
    "tests/fuzz/test_files.py::test_load_of_a_mutated_file_changes_nothing_when_it_fails": (
        "load: the ip grammar in files (model compared)"
    ),
    "tests/fuzz/test_files.py::test_lab_files": "lab YAML (load and check)",
    "tests/fuzz/test_files.py::test_captures": "pcap/pcapng through esplab decode",
}

_PASSING = re.compile(
    r"(\d+) passing(?: examples?)?, (\d+) failing(?: examples?)?, (?:and )?(\d+) invalid"
)
_TALLY = re.compile(r"esplab-fuzz: (\d+) inputs")
_RUNTIMES = re.compile(r"Typical runtimes: ~ (.*)")


def run(test: str, examples: int) -> tuple[int, int, float, str, str, int]:
    env = {**os.environ, "ESPLAB_FUZZ_EXAMPLES": str(examples)}
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-s",
            "--hypothesis-show-statistics",
            test,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    took = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    passing = sum(int(m.group(1)) for m in _PASSING.finditer(out))
    passing += sum(int(m.group(1)) for m in _TALLY.finditer(out))
    failing = sum(int(m.group(2)) for m in _PASSING.finditer(out))
    runtimes = _RUNTIMES.search(out)
    typical = runtimes.group(1) if runtimes else "?"
    return passing, failing, took, typical, out, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("-k", default="", help="only the properties whose name has this")
    args = parser.parse_args()
    print("| entry point | inputs | failures | time (s) | inputs/s | typical runtime |")
    print("|---|---:|---:|---:|---:|---|")
    failed = []
    for test, what in PROPERTIES.items():
        if args.k not in test:
            continue
        passing, failing, took, runtimes, out, status = run(test, args.examples)
        rate = passing / took if took else 0.0
        print(
            f"| {what} | {passing:,} | {failing} | {took:.0f} | {rate:,.0f} | {runtimes} |",
            flush=True,
        )
        if failing or status:
            failed.append((test, out))
    for test, out in failed:
        print(f"\n{test} failed:\n{out[-6000:]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
