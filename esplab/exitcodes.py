"""What every command-line front end (``esplab``, its subcommands, the Wireshark
plugin installer) shares: the exit codes and the ``--seed`` argument.

Exit codes: 0 success; 1 a command, lab step or capture check failed; 2 usage errors
or a bad (unusable) file; 130 a batch Ctrl-C ended, as a shell reports it.
"""

from __future__ import annotations

import argparse

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "seed_arg"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # as a shell reports a command Ctrl-C ended


def seed_arg(text: str) -> int:
    """``--seed``: an integer from 0 to 2**64 - 1 (what a lab file's ``seed:`` takes),
    decimal or 0x-hex."""
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a seed; valid: a number from 0 to 2**64 - 1, decimal (24301) "
            "or hex (0x5eed)"
        )
    return value
