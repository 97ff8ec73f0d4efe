"""Typed views of what a command returns, for tests: its text, its first journey, its
table (each asserts the result is of that kind first)."""

from __future__ import annotations

from esplab.commands.result import JourneyResult, TableResult, TextResult
from esplab.commands.session import Session
from esplab.model.stage import Journey

__all__ = ["journey", "table", "text"]


def text(session: Session, line: str) -> str:
    """The text ``line`` prints (ip, ethtool...)."""
    result = session.execute(line)
    assert isinstance(result, TextResult), result
    return result.text


def journey(session: Session, line: str) -> Journey:
    """The first journey of ``line`` (send, ping)."""
    result = session.execute(line)
    assert isinstance(result, JourneyResult), result
    return result.journeys[0]


def table(session: Session, line: str) -> TableResult:
    """The table ``line`` shows."""
    result = session.execute(line)
    assert isinstance(result, TableResult), result
    return result
