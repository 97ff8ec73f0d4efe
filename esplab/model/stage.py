"""Journey stages: what every layer of the model emits, and the one way to defer them.

A :class:`Stage` records the device, the stage (tap) name, the decision taken and why
with its fidelity tag (:data:`FIDELITY`), the counters it touched, and a snapshot of
the bytes at that point, decoded only when someone looks (``Stage.packet()``).
:class:`LazyStage` formats its decision line when first read. A list of stages may
hold :class:`Later` places, stages still to be built from what is fixed already (an
engine job's stages, built when someone reads them): :func:`build_in_place` builds
them. A stage's snapshot is also captured at its tap as a :class:`Captured` record.
The kernel the K tag is checked against is named here once (:data:`KERNEL_CHECKED`).

A :class:`Journey` is the ordered list of stages one packet crossed. Journeys are
kept in a bounded ring (:class:`JourneyLog`) and every snapshot also goes to its
tap's bounded capture ring (:class:`Captures`), so a long run never grows without
limit. With tracing off, stages keep no snapshot and taps see nothing.
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
    "KERNEL_CHECKED",
    "KERNEL_CHECKED_WHY",
    "Captured",
    "Captures",
    "Fidelity",
    "Journey",
    "JourneyLog",
    "Later",
    "LazyStage",
    "Stage",
    "build_in_place",
    "built_stages",
    "decode_snapshot",
]

#: The kernel and iproute2 the differential suite (``tests/kernel/``, tag K) runs
#: against (Debian bookworm's).
KERNEL_CHECKED = "Linux 6.12.118 (Debian), iproute2 6.15"
KERNEL_CHECKED_WHY = f"checked against {KERNEL_CHECKED} in CI (tests/kernel, K)"

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


# The slot that holds a Stage's decision text (LazyStage's property stands over it).
_DECISION: Any = Stage.__dict__["decision"]


class LazyStage(Stage):
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
        if not args and ".md" in decision:
            decision = cite(decision)
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
            if ".md" in text:  # (as Stage cites its decision)
                text = cite(text)
            _DECISION.__set__(self, text)
            self._args = None
        return text

    @decision.setter
    def decision(self, text: str) -> None:
        _DECISION.__set__(self, text)
        self._args = None


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


class Later:
    """A place in a list of stages for stages still to be built: ``build(arg)`` gives
    them (their content fixed by now; see :func:`build_in_place`); without
    ``keep_data`` their snapshots are dropped, as a walk without tracing does. ``slot``
    is the engine's ring slot of a job's stages (-1 for none), by which the driver
    gives them to the request in that slot."""

    __slots__ = ("arg", "build", "keep_data", "slot")

    def __init__(
        self, build: Callable[[Any], list[Stage]], arg: Any, keep_data: bool, slot: int = -1
    ) -> None:
        self.build = build
        self.arg = arg
        self.keep_data = keep_data
        self.slot = slot


def build_in_place(items: list[Any]) -> list[Stage]:
    """Replace each :class:`Later` place in ``items`` by its stages, and each tuple (the
    arguments of a :class:`LazyStage`, as a walk without tracing records a stage) by
    its stage, in place (whoever holds the list sees them); returns ``items``."""
    i = 0
    while i < len(items):
        item = items[i]
        if type(item) is tuple:
            items[i] = LazyStage(*item)
            i += 1
        elif type(item) is Later:
            built = item.build(item.arg)
            if not item.keep_data:
                for stage in built:
                    stage.data = None
            items[i : i + 1] = built
            i += len(built)
        else:
            i += 1
    return items


def built_stages(items: list[Any]) -> list[Stage]:
    """A copy of ``items`` with its :class:`Later` places built (``items`` is left as it is)."""
    return build_in_place(list(items))


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
