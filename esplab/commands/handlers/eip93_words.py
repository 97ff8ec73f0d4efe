"""The ``eip93`` command's words: its subcommands and its usage line, for the command's
declaration (:mod:`esplab.commands.handlers.eip93`) and for its views
(:mod:`esplab.commands.handlers.eip93_views`), which are loaded on first use."""

from __future__ import annotations

__all__ = ["SUBCOMMANDS", "USAGE"]

SUBCOMMANDS = ("regs", "ring", "sa", "state", "stats", "fault", "swap-digest")
USAGE = (
    "eip93 regs | ring cdr|rdr [N] | sa SPI [in|out] | state SPI [in|out] | stats"
    " | fault [set SPI KIND [ARG] | clear SPI [KIND]] [in|out] | swap-digest SPI [in|out]"
)
