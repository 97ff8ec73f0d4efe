"""What executing a command gives back: structured results, rendered elsewhere.

A handler never prints. It returns one of these; ``esplab.render`` turns it into a
rich renderable, the lab runner checks ``data`` against ``expect:``, and
``esplab.render_json`` serialises the same view for ``--json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scapy.packet import Packet

    from esplab.model.stage import Journey

__all__ = [
    "ByteView",
    "DiffResult",
    "ErrorResult",
    "HelpEntry",
    "HelpResult",
    "JourneyResult",
    "MessageResult",
    "PacketResult",
    "QuitResult",
    "Result",
    "TableResult",
    "TextResult",
    "journey_data",
]


@dataclass
class Result:
    """Base result: a one-line summary and structured data for labs and JSON."""

    summary: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    # How the printers show it: "text" (esplab.render) or "json" (esplab.render_json),
    # set by the session from ``--json`` on the line or ``set output json``.
    output: str = "text"
    # What a running ``ip xfrm monitor`` printed while the command ran (the session
    # fills it; the printers show it after the result).
    monitor: str = ""

    @property
    def ok(self) -> bool:
        return True


@dataclass
class MessageResult(Result):
    """A short confirmation ("state added")."""


@dataclass
class TextResult(Result):
    """Text that must be shown verbatim (iproute2 output, /proc files)."""

    text: str = ""


@dataclass
class TableResult(Result):
    """Rows under named columns."""

    title: str = ""
    columns: tuple[str, ...] = ()
    rows: Sequence[Sequence[str]] = field(default_factory=list)


@dataclass
class PacketResult(Result):
    """A dissected packet or record, shown as a field tree plus a hexdump."""

    packet: Packet | None = None
    title: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class HelpEntry:
    name: str
    summary: str
    usage: str
    example: str = ""
    details: str = ""
    aliases: tuple[str, ...] = ()


@dataclass
class HelpResult(Result):
    """Either the command list (``entries``) or one command in full (``detail``)."""

    entries: list[HelpEntry] = field(default_factory=list)
    detail: HelpEntry | None = None


@dataclass
class JourneyResult(Result):
    """One or more journeys, shown as a trace; ``explain`` adds each stage's reason.
    With ``show_summary`` the summary follows the traces (it says more than they do:
    ``ping``'s statistics, how many of ``send ... count N`` were delivered)."""

    journeys: list[Journey] = field(default_factory=list)
    explain: bool = False
    only: str | None = None
    start: int = 0
    stop: int | None = None
    show_summary: bool = False


@dataclass
class QuitResult(Result):
    """Ask the REPL to leave."""


@dataclass
class ErrorResult(Result):
    """A command that failed with a user-fixable error; nothing was changed."""

    error: Exception | None = None
    line: str = ""

    @property
    def ok(self) -> bool:
        return False


@dataclass(frozen=True)
class ByteView:
    """Two byte strings side by side, with the ranges where they differ."""

    title: str
    left: bytes
    right: bytes
    ranges: tuple[tuple[int, int], ...] = ()

    @property
    def changed(self) -> int:
        return sum(end - start for start, end in self.ranges)


@dataclass
class DiffResult(TableResult):
    """Rows ``(layer, field, left, right)`` plus byte views (the wire, the plaintext)."""

    views: list[ByteView] = field(default_factory=list)
    left_label: str = "left"
    right_label: str = "right"
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.rows and not any(v.ranges for v in self.views)


def journey_data(j: Journey) -> dict[str, Any]:
    """A journey as plain data (lab expectations, --json)."""
    return {
        "id": j.id,
        "verdict": j.verdict,
        "delivered": j.delivered,
        "dropped": j.dropped.drop if j.dropped else None,
        "stages": [
            {
                "tap": s.tap,
                "device": s.device,
                "decision": s.decision,
                "fidelity": s.fidelity,
                "drop": s.drop,
                "counters": dict(s.counters),
                "meta": dict(s.meta),
                "why": s.why,
                "len": len(s.data) if s.data is not None else None,
            }
            for s in j.stages
        ],
    }
