"""The packet journey: every stage a packet crosses, and the taps that capture them.

A journey is an ordered list of stages. Each stage records the device, the stage
(tap) name, the decision taken and why (with its fidelity tag), the counters it
touched, and a snapshot of the bytes as they are at that point. Snapshots are
kept as bytes and decoded only when someone looks (``Stage.packet()``).

Journeys are kept in a bounded ring (``JourneyLog``) and every snapshot also goes
to its tap's bounded capture ring (``Captures``), so a long run never grows
without limit. With tracing off, stages keep no snapshot and taps see nothing,
which is the fast path.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from esplab.citations import cite
from esplab.errors import NoSuchTap

if TYPE_CHECKING:
    from scapy.packet import Packet

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

Fidelity = Literal["C", "D", "U", "M", "K"]

FIDELITY = {
    "C": "confirmed by a source",
    "D": "derived from a source",
    "U": "uncertain: a labelled choice where sources disagree or are silent",
    "M": "modelled design: no hardware source, our choice",
    "K": "checked against a real Linux kernel (the differential suite, or a live peer)",
}

# How a snapshot's bytes are decoded, by its kind.
Kind = Literal[
    "ip",
    "ether",
    "mtk",
    "mtk-rx",
    "qdma",
    "qdma-rx",
    "cdr",
    "rdr",
    "sa",
    "state",
    "offload",
    "xdp",
    "raw",
]


def decode_snapshot(kind: str, data: bytes) -> Packet:
    """Decode snapshot bytes into the Scapy class for their kind (imports on first use)."""
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    from esplab import layers
    from esplab.layers.qdma import QDMARxDescriptor

    table: dict[str, Callable[[bytes], Packet]] = {
        "ether": Ether,
        "mtk": layers.MTKEther,
        "qdma": layers.QDMADescriptor,
        "qdma-rx": QDMARxDescriptor,
        "mtk-rx": layers.MTKEtherRx,
        "cdr": layers.EIP93CommandDescriptor,
        "rdr": layers.EIP93ResultDescriptor,
        "sa": layers.EIP93SARecord,
        "state": layers.EIP93StateRecord,
        "offload": layers.XfrmOffload,
        "xdp": layers.XDPDesc,
        "raw": Raw,
    }
    if kind == "ip":
        return IPv6(data) if data[:1] and data[0] >> 4 == 6 else IP(data)
    return table.get(kind, Raw)(data)


@dataclass(slots=True)
class Stage:
    """One step of a journey; also one captured record at its tap."""

    tap: str
    device: str
    decision: str
    why: str = ""
    fidelity: Fidelity = "C"
    counters: dict[str, int] = field(default_factory=dict)
    data: bytes | None = None
    kind: str = "ip"
    drop: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # User-visible text cites public sources, never the reference notes.
        if ".md" in self.why:
            self.why = cite(self.why)
        if ".md" in self.decision:
            self.decision = cite(self.decision)

    def packet(self) -> Packet | None:
        return None if self.data is None else decode_snapshot(self.kind, self.data)


# The slot that holds a Stage's decision text (LazyTextStage's property stands over it).
_DECISION: Any = Stage.__dict__["decision"]


class LazyTextStage(Stage):
    """A Stage whose ``decision`` is ``decision.format(*args)``, formatted when first read.

    Formatting addresses and numbers into decision lines costs more than the rest of
    a stage, and a walk without tracing may never read them. The arguments must be
    values that do not change afterwards (numbers, strings, addresses, prefixes).
    The parameters are Stage's, in its order, plus ``args``; without ``args`` the
    decision is taken as it is (so ``dataclasses.replace`` works). It compares,
    prints and copies like any Stage.
    """

    __slots__ = ("_args",)

    def __init__(
        self,
        tap: str,
        device: str,
        decision: str,
        why: str = "",
        fidelity: Fidelity = "C",
        counters: dict[str, int] | None = None,
        data: bytes | None = None,
        kind: str = "ip",
        drop: str | None = None,
        meta: dict[str, Any] | None = None,
        args: tuple[Any, ...] = (),
    ) -> None:
        self.tap = tap
        self.device = device
        _DECISION.__set__(self, decision)  # the template, until it is formatted
        self._args: tuple[Any, ...] | None = args or None
        self.why = cite(why) if ".md" in why else why
        self.fidelity = fidelity
        self.counters = {} if counters is None else counters
        self.data = data
        self.kind = kind
        self.drop = drop
        self.meta = {} if meta is None else meta

    @property
    def decision(self) -> str:
        text: str = _DECISION.__get__(self)
        args = self._args
        if args is not None:
            text = text.format(*args)
            _DECISION.__set__(self, text)
            self._args = None
        return text

    @decision.setter
    def decision(self, text: str) -> None:
        _DECISION.__set__(self, text)
        self._args = None


class Journey:
    """Every stage one injected packet went through, in order. Journeys compare by
    identity (each is one packet's), stages by value."""

    __slots__ = ("_later", "_stages", "delivered", "id", "origin", "verdict")

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
        self._later = False
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
        if self._later:
            self._later = False
            i = 0
            while i < len(stages):
                item = stages[i]
                if type(item) is _Later:
                    built = item.build()
                    if not item.keep_data:
                        for stage in built:
                            stage.data = None
                    stages[i : i + 1] = built
                    i += len(built)
                else:
                    i += 1
        return stages

    @stages.setter
    def stages(self, stages: list[Stage]) -> None:
        self._stages = stages
        self._later = False

    @property
    def dropped(self) -> Stage | None:
        return next((s for s in self.stages if s.drop is not None), None)

    def stage(self, tap: str) -> Stage | None:
        return next((s for s in self.stages if s.tap == tap), None)

    def taps(self) -> list[str]:
        return [s.tap for s in self.stages]

    def extend_later(self, build: Callable[[], list[Stage]], *, keep_data: bool) -> None:
        """Append the stages ``build()`` returns, building them only when ``stages`` is
        first read (their content must be fixed by now); without ``keep_data`` their
        snapshots are dropped, as a walk without tracing does."""
        self._stages.append(_Later(build, keep_data))
        self._later = True


def built_stages(items: list[Any]) -> list[Stage]:
    """A stretch of a journey's stage list as it is being walked, with extend_later's
    places built now (without snapshots); the journey itself is left as it is."""
    stages: list[Stage] = []
    for item in items:
        if type(item) is _Later:
            built = item.build()
            for stage in built:
                stage.data = None
            stages += built
        else:
            stages.append(item)
    return stages


class _Later:
    """A place in a journey's stages for stages still to be built."""

    __slots__ = ("build", "keep_data")

    def __init__(self, build: Callable[[], list[Stage]], keep_data: bool) -> None:
        self.build = build
        self.keep_data = keep_data


@dataclass(frozen=True)
class Captured:
    """A captured record: which journey and stage it came from, and its bytes."""

    journey: int
    index: int
    tap: str
    kind: str
    data: bytes
    meta: dict[str, Any]

    def __init__(
        self, journey: int, index: int, tap: str, kind: str, data: bytes, meta: dict[str, Any]
    ) -> None:
        # One record per snapshot while tracing: set the fields directly rather than
        # through the frozen class's __setattr__.
        d = self.__dict__
        d["journey"] = journey
        d["index"] = index
        d["tap"] = tap
        d["kind"] = kind
        d["data"] = data
        d["meta"] = meta

    def packet(self) -> Packet:
        return decode_snapshot(self.kind, self.data)


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
        journey = Journey(id=self.next_id, origin=origin)
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
