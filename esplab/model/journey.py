"""The packet journey: every stage a packet crosses, and the taps that capture them.

A journey is an ordered list of stages (:mod:`esplab.model.stage`). Each stage records
the device, the stage (tap) name, the decision taken and why (with its fidelity tag),
the counters it touched, and a snapshot of the bytes as they are at that point.

Journeys are kept in a bounded ring (``JourneyLog``) and every snapshot also goes
to its tap's bounded capture ring (``Captures``), so a long run never grows
without limit. With tracing off, stages keep no snapshot and taps see nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from esplab.errors import NoSuchTap
from esplab.model.stage import (
    FIDELITY,
    Captured,
    Fidelity,
    LazyStage,
    Stage,
    build_in_place,
    built_stages,
    decode_snapshot,
)

# (the stage types live in esplab.model.stage; these names stay importable from here)
__all__ = [
    "FIDELITY",
    "Captured",
    "Captures",
    "Fidelity",
    "Journey",
    "JourneyLog",
    "LazyTextStage",
    "Stage",
    "built_stages",
    "decode_snapshot",
]

LazyTextStage = LazyStage


class Journey:
    """Every stage one injected packet went through, in order. Journeys compare by
    identity (each is one packet's), stages by value."""

    __slots__ = ("_stages", "delivered", "id", "origin", "unbuilt", "verdict")

    def __init__(
        self,
        id: int,
        origin: str,
        stages: list[Stage] | None = None,
        verdict: str = "",
        delivered: bool = False,
    ) -> None:
        self.id = id
        self.origin = origin
        self._stages: list[Any] = [] if stages is None else stages
        #: True while the stage list may hold places still to be built (see ``stages``).
        self.unbuilt = False
        self.verdict = verdict
        self.delivered = delivered

    def __repr__(self) -> str:
        return (
            f"Journey(id={self.id!r}, origin={self.origin!r}, stages={self.stages!r}, "
            f"verdict={self.verdict!r}, delivered={self.delivered!r})"
        )

    @property
    def stages(self) -> list[Stage]:
        """The stages, with extend_later's pending places built now (in place: a walk
        in progress holds this list)."""
        stages: list[Any] = self._stages
        if self.unbuilt:
            self.unbuilt = False
            build_in_place(stages)
        return stages

    @stages.setter
    def stages(self, stages: list[Stage]) -> None:
        self._stages = stages
        self.unbuilt = False

    @property
    def dropped(self) -> Stage | None:
        return next((s for s in self.stages if s.drop is not None), None)

    def stage(self, tap: str) -> Stage | None:
        return next((s for s in self.stages if s.tap == tap), None)

    def taps(self) -> list[str]:
        return [s.tap for s in self.stages]

    def extend_items(self, items: list[Any]) -> None:
        """Append stages and :class:`~esplab.model.stage.Later` places (built when
        ``stages`` is first read)."""
        self._stages += items
        self.unbuilt = True


class Captures:
    """Per-tap bounded capture rings."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._rings: dict[str, deque[Captured]] = {}
        self.known: set[str] = set()

    def add(self, record: Captured) -> None:
        ring = self._rings.get(record.tap)
        if ring is None:
            ring = self._rings[record.tap] = deque(maxlen=self.size)
            self.known.add(record.tap)
        ring.append(record)

    def resize(self, size: int) -> None:
        self.size = size
        self._rings = {tap: deque(ring, maxlen=size) for tap, ring in self._rings.items()}

    def get(self, tap: str) -> list[Captured]:
        if tap not in self.known:
            raise NoSuchTap(f"unknown tap '{tap}'", valid=sorted(self.known), value=tap)
        return list(self._rings.get(tap, ()))

    def taps(self) -> list[str]:
        return sorted(self.known)

    def counts(self) -> dict[str, int]:
        return {tap: len(self._rings.get(tap, ())) for tap in sorted(self.known)}

    def clear(self, tap: str | None = None) -> int:
        if tap is not None and tap not in self.known:
            raise NoSuchTap(f"unknown tap '{tap}'", valid=sorted(self.known), value=tap)
        rings = [r for t, r in self._rings.items() if tap is None or t == tap]
        n = sum(len(r) for r in rings)
        for r in rings:
            r.clear()
        return n


class JourneyLog:
    """The last ``size`` journeys, by id."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._ring: deque[Journey] = deque(maxlen=size)
        self.next_id = 1

    def new(self, origin: str) -> Journey:
        journey = Journey(self.next_id, origin)
        self.next_id += 1
        self._ring.append(journey)
        return journey

    def resize(self, size: int) -> None:
        self.size = size
        self._ring = deque(self._ring, maxlen=size)

    def get(self, jid: int | None = None) -> Journey | None:
        if not self._ring:
            return None
        if jid is None:
            return self._ring[-1]
        return next((j for j in self._ring if j.id == jid), None)

    def ids(self) -> list[int]:
        return [j.id for j in self._ring]

    def __iter__(self) -> Iterator[Journey]:
        return iter(self._ring)

    def __len__(self) -> int:
        return len(self._ring)
