"""``esplab kernel-check``: a scenario on the emulated host and on a real kernel.

::

    esplab kernel-check labs/06-replay-and-esn.yaml
    esplab kernel-check -c "host ip xfrm state add ...; send ap wan IP(dst='192.0.2.2')/UDP()"
    esplab kernel-check steps.txt --json

A lab file's ``run:`` lines, the lines of a text file, or ``-c``'s commands make the
scenario (:mod:`esplab.peer.check`). It prints a table of what differs (``--all``:
every observation) or JSON, and exits 0 when both sides agree, 1 on any difference,
2 when the input or the peer could not be had.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from esplab.errors import EsplabError
from esplab.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE, seed_arg

if TYPE_CHECKING:
    from esplab.peer.check import Report
    from esplab.peer.client import KernelPeer

__all__ = ["main_kernel_check", "scenario_lines"]


def scenario_lines(source: str) -> list[str]:
    """The command lines of a lab file (its steps' ``run:``) or of a text file."""
    from esplab.commands.tokens import split_commands

    path = Path(source).expanduser()
    if path.suffix in (".yaml", ".yml"):
        from esplab.lab.loader import load_document

        doc = load_document(path)
        steps = doc.data.get("steps", []) if isinstance(doc.data, dict) else []
        lines = [str(step["run"]) for step in steps if isinstance(step, dict) and "run" in step]
        return [line for text in lines for line in split_commands(text)]
    from esplab.files import read_input

    return split_commands(read_input(path, "scenario file").decode("utf-8", "replace"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="esplab kernel-check",
        description="Run a scenario with the emulated host and with a real Linux kernel as "
        "the host, and say where they differ (exit 1 on any difference).",
    )
    parser.add_argument("scenario", nargs="?", help="a lab file (.yaml) or a file of commands")
    parser.add_argument("-c", dest="commands", metavar="COMMANDS", help='"CMD; CMD" instead')
    parser.add_argument("--json", action="store_true", help="every observation, as JSON")
    parser.add_argument("--all", action="store_true", help="show the observations that agree too")
    parser.add_argument("--image", help="the kernel image to boot (default: newest in /boot)")
    parser.add_argument(
        "--kvm", choices=("auto", "on", "off"), default="auto", help="KVM for the guest"
    )
    parser.add_argument(
        "--netns", action="store_true", help="a network namespace of this kernel (root)"
    )
    parser.add_argument("--seed", type=seed_arg, default=0x5EED, help="lab seed")
    return parser


def main_kernel_check(argv: Sequence[str], client: KernelPeer | None = None) -> int:
    """``esplab kernel-check``; ``client``: a kernel already booted as the host (tests)."""
    parser = _parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    args.client = client
    if (args.scenario is None) == (args.commands is None):
        parser.print_usage(sys.stderr)
        print("esplab kernel-check: give a scenario file or -c COMMANDS (one)", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.commands is not None:
            from esplab.commands.tokens import split_commands

            lines = split_commands(args.commands)
        else:
            lines = scenario_lines(args.scenario)
        report = _run(args, lines)
    except EsplabError as exc:
        print(f"esplab kernel-check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        payload = {
            "scenario": report.name,
            "differences": len(report.differences),
            "findings": [f.as_dict() for f in report.findings],
        }
        print(json.dumps(payload, indent=2))
    else:
        _print(report, show_all=args.all)
    return EXIT_FAILED if report.differences else EXIT_OK


def _run(args: argparse.Namespace, lines: list[str]) -> Report:
    from esplab.commands.session import Session, SessionOptions
    from esplab.peer.bridge import attach
    from esplab.peer.check import run_scenario

    client, owned = start_client(args)
    try:
        if owned:
            holder = Session(options=SessionOptions(seed=args.seed))
            attach(holder.lab, "host", client)
            holder.lab.real_peers.clear()
        name = args.scenario or "-c"
        from rich.console import Console

        from esplab.progress import for_console

        shown = for_console(Console(stderr=True), minimum=10)  # lines take seconds each
        return run_scenario(name, lines, client, seed=args.seed, progress=shown)
    finally:
        if owned:
            client.close()


def start_client(args: argparse.Namespace) -> tuple[KernelPeer, bool]:
    """The kernel to check against, and whether this run started it (and so configures
    and stops it). Tests hand in one already booted and configured as the host."""
    from esplab.peer.backends import netns, qemu
    from esplab.peer.client import KernelPeer

    given = getattr(args, "client", None)
    if given is not None:
        return given, False
    backend = netns() if args.netns else qemu(args.image, kvm=args.kvm)
    print(f"starting the {backend.label} ...", file=sys.stderr)
    return KernelPeer(backend).start(), True


def _print(report: Report, *, show_all: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    shown = report.findings if show_all else report.differences
    table = Table(title=f"kernel-check {report.name}: {len(report.differences)} difference(s)")
    for column in ("observation", "emulated", "real kernel", ""):
        table.add_column(column, overflow="fold")
    for finding in shown:
        table.add_row(
            finding.item,
            finding.emulated,
            finding.kernel,
            "same" if finding.same else "[red]differs[/red]",
        )
    if shown:
        console.print(table)
    else:
        console.print(f"kernel-check {report.name}: the emulated host and the kernel agree")
