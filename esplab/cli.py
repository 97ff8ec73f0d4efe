"""The ``esplab`` command.

* ``esplab``: the interactive REPL (when stdin is a terminal);
* ``esplab -c "CMD; CMD"``: run commands and exit, non-zero if one failed;
* ``echo CMD | esplab``: commands from a non-terminal stdin, one per line;
* ``esplab --version``, ``esplab --help``;
* ``esplab SUBCOMMAND ...``: ``run``/``check`` lab files, ``decode``/``diagnose``
  captures from a board (each subcommand has its own ``--help``).

Exit codes: 0 success; 1 a command (or lab step) failed; 2 usage errors or a bad file.
Heavy modules are imported only by the path that needs them, so ``--version``
and ``--help`` are instant and the REPL starts quickly.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from esplab import __version__
from esplab.exitcodes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, seed_arg

if TYPE_CHECKING:
    from rich.console import Console

    from esplab.batch import Outcome
    from esplab.commands.base import Session

__all__ = ["build_parser", "main", "run", "seed_arg"]


# Subcommands live in their own modules, imported only when used:
# name -> (module, function taking argv and returning the exit code, one-line help).
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("esplab.lab.cli", "main_run", "run lab files (exit 1 when a step fails)"),
    "check": ("esplab.lab.cli", "main_check", "check lab files without running them"),
    "decode": ("esplab.capfile.cli", "main_decode", "decode ESP in a capture, given the SAs"),
    "diagnose": (
        "esplab.capfile.cli",
        "main_diagnose",
        "explain ICV failures in a capture by known driver mistakes",
    ),
    "kernel-check": (
        "esplab.peer.cli",
        "main_kernel_check",
        "run a scenario on the emulated host and on a real Linux kernel; say where they differ",
    ),
    "wireshark-plugin": (
        "esplab.wireshark_plugin",
        "main_wireshark_plugin",
        "the Wireshark Lua dissector for esplab's records: print its path or --install it",
    ),
}


# Subcommands that take --seed (before them too: esplab --seed N run LAB).
_SEEDED = frozenset({"run"})


def _subcommand(name: str, argv: Sequence[str]) -> int:
    import importlib

    module_name, func_name, _ = SUBCOMMANDS[name]
    module = importlib.import_module(module_name)
    result: int = getattr(module, func_name)(list(argv))
    return result


def _unknown_subcommand(word: str) -> int:
    """``esplab foo``: what the subcommands are (a lab file given alone: how to run it)."""
    from esplab.commands.tokens import shown_text
    from esplab.errors import UsageError

    width = max(len(name) for name in SUBCOMMANDS)
    lines = [f"  esplab {name:<{width}} {text}" for name, (_, _, text) in SUBCOMMANDS.items()]
    error = UsageError(
        f"unknown subcommand '{shown_text(word)}'",
        valid=list(SUBCOMMANDS),
        value=word,
        hint="'esplab run FILE' runs a lab file" if word.endswith((".yaml", ".yml")) else None,
    )
    print(
        f"esplab: {error}", *lines, "  esplab --help lists the options", sep="\n", file=sys.stderr
    )
    return EXIT_USAGE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="esplab",
        description=(
            "An interactive lab for IPsec ESP hardware offload: craft packets, push them "
            "through an emulated Airoha EN7581 with an EIP-93 packet engine, and watch "
            "every stage."
        ),
        epilog="With no arguments and a terminal, esplab opens its REPL; 'help' lists commands. "
        "Subcommands: "
        + "; ".join(f"esplab {name}: {text}" for name, (_, _, text) in SUBCOMMANDS.items())
        + ".",
    )
    parser.add_argument("--version", action="version", version=f"esplab {__version__}")
    parser.add_argument(
        "-c",
        dest="commands",
        metavar="COMMANDS",
        help='run these commands ("CMD; CMD") and exit; non-zero exit if one failed',
    )
    parser.add_argument(
        "--seed",
        type=seed_arg,
        default=None,
        help="seed for IVs, sequence starts, MACs and every random choice (default 0x5eed)",
    )
    parser.add_argument(
        "--no-color", action="store_true", help="plain output (NO_COLOR is honoured too)"
    )
    parser.add_argument(
        "--real-host",
        nargs="?",
        const="",
        default=None,
        metavar="IMAGE",
        help="a real Linux kernel plays the host: a QEMU guest of IMAGE (default: the newest "
        "/boot/vmlinuz-* with ESP) through virtme-ng; see 'help peer'",
    )
    parser.add_argument(
        "--json", action="store_true", help="print each command's result as one line of JSON"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``esplab``: every front end, with Ctrl-C ending it as a shell expects (130)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("esplab: interrupted", file=sys.stderr)
        return 130


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``esplab`` command and ``python -m esplab``: :func:`main`, then exit with its
    code. Everything still alive is frozen first (``gc.freeze``), so the interpreter's
    shutdown does not run the collector over every object the run created or imported
    (10 to 15 ms of each ``esplab decode``); atexit handlers and the flush of stdout and
    stderr happen as before. Tests call :func:`main`, which freezes nothing."""
    code = main(argv)
    gc.freeze()
    sys.exit(code)


def _seed_first(args: list[str]) -> list[str]:
    """``--seed N SUBCOMMAND ...`` as ``SUBCOMMAND --seed N ...`` for a subcommand that
    takes a seed (``run``); anything else unchanged."""
    if args[:1] == ["--seed"] and len(args) > 2 and args[2] in _SEEDED:
        return [args[2], "--seed", args[1], *args[3:]]
    if args[:1] and args[0].startswith("--seed=") and len(args) > 1 and args[1] in _SEEDED:
        return [args[1], args[0], *args[2:]]
    return args


def _main(argv: Sequence[str] | None) -> int:
    args_list = _seed_first(list(sys.argv[1:] if argv is None else argv))
    if args_list and args_list[0] in SUBCOMMANDS:
        return _subcommand(args_list[0], args_list[1:])
    if args_list and not args_list[0].startswith("-"):
        return _unknown_subcommand(args_list[0])
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help/--version
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE

    from esplab.batch import run_text
    from esplab.commands.base import Session, SessionOptions
    from esplab.console import consoles
    from esplab.lab.command import every_command

    options = SessionOptions() if args.seed is None else SessionOptions(seed=args.seed)
    output = "json" if args.json else "text"
    session = Session(every_command(), options=options, output=output)
    out, err = consoles(args.no_color)
    if args.real_host is not None and not _real_host(session, args.real_host, err):
        return EXIT_FAILED

    from esplab.progress import for_console

    session.progress = for_console(err)  # a bar for long runs on a terminal only
    if args.commands is not None:
        return _status(run_text(session, args.commands, out, err, batch=True))
    if not sys.stdin.isatty():
        # Bytes, decoded here: a byte that is not UTF-8 becomes a lone surrogate, which
        # the command it is in reports (column and value), whatever the locale says.
        text = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
        return _status(run_text(session, text, out, err, batch=True))

    from esplab.repl.app import run_repl

    return run_repl(session, out)


def _status(outcomes: list[Outcome]) -> int:
    """A batch's exit status: 130 when Ctrl-C stopped it, 1 when a command failed."""
    from esplab.batch import INTERRUPTED

    if outcomes and outcomes[-1].error == INTERRUPTED:
        return EXIT_INTERRUPTED
    return EXIT_OK if all(o.ok for o in outcomes) else EXIT_FAILED


def _real_host(session: Session, image: str, err: Console) -> bool:
    """``--real-host [IMAGE]``: a real Linux kernel plays the host from the start."""
    from esplab.commands.peers import start_peer
    from esplab.errors import EsplabError
    from esplab.render import render_error

    print("esplab: starting the real host (a QEMU guest, about 20 s) ...", file=sys.stderr)
    try:
        said = start_peer(session, "host", "kernel", image or None)
    except EsplabError as exc:
        err.print(render_error(f"--real-host: {exc}"))
        return False
    print(f"esplab: {said}", file=sys.stderr)
    return True


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
