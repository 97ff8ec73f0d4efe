"""eip93: look inside the emulated EIP-93 (registers, rings, SA and state records, counters),
and inject the classic driver faults into an offloaded SA (``fault``; ``swap-digest``
is the old name of one of them).

The views (``eip93_views``) import the record layers and the engine, so they are
loaded on first use; declaring the command costs nothing at start-up.
"""

from __future__ import annotations

from esplab.commands.base import Session
from esplab.commands.handlers.eip93_words import SUBCOMMANDS, USAGE
from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import Result

__all__ = ["COMMANDS", "SUBCOMMANDS", "USAGE"]


def _eip93(session: Session, inv: Invocation) -> Result:
    from esplab.commands.handlers.eip93_views import run

    return run(session, inv)


def _complete(session: Session, words: list[str]) -> list[str]:
    from esplab.commands.handlers.eip93_views import complete

    words_out: list[str] = complete(session, words)
    return words_out


COMMANDS = (
    Command(
        name="eip93",
        nodeless="the EIP-93 is the ap's engine",
        summary="the EIP-93 packet engine: registers, rings, SA and state records, statistics, "
        "driver faults",
        handler=_eip93,
        params=(Param("args", kind="rest", metavar="WHAT", optional=True),),
        usage_text=USAGE,
        example="eip93 ring cdr 3",
        details="regs: every register with its fields; ring cdr|rdr: the ring's entries, or "
        "entry N decoded; sa/state SPI: an offloaded SA's record field by field, its faults, "
        "and where it differs from the record the driver writes; stats: what the engine and "
        "the driver counted; fault: fault injection, the driver mistakes that can be "
        "injected (each one that esplab diagnose names) and the SAs that carry one; "
        "fault set SPI KIND [ARG]: inject "
        "one (SA record faults rewrite the record in DMA memory, tx faults change what the "
        "driver sends); fault clear SPI [KIND]: remove one or all; swap-digest SPI: the old "
        "name of fault digest-byte-order, which sets it or, when set, clears it, and says "
        "which.",
        complete=_complete,
    ),
)
