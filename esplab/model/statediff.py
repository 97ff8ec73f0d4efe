"""What one stretch of a walk changed in the lab, found by comparing two snapshots.

:func:`snapshot` reads every value reachable from the lab (object attributes, dict
entries, list items) into a flat map keyed by ``(id(container), key)``; :func:`diff`
compares two such maps. When the only changes are integers that moved (counters),
the result is the list of :class:`Delta` that replays the stretch's bookkeeping; any
other change (a new dict entry, a list that grew, a string or an object replaced)
makes the stretch something only a real walk can repeat, and ``diff`` returns None.

The flow cache (:mod:`~esplab.model.flowcache`) uses this once per flow, so a
stretch that cannot be replayed by adding the same numbers again is never replayed.
"""

from __future__ import annotations

import gc
import random
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any

__all__ = ["Delta", "Snapshot", "apply", "as_moves", "diff", "snapshot"]

#: Values compared as they are (immutable, no references into the lab).
_LEAVES = (
    int,
    float,
    complex,
    str,
    bytes,
    bool,
    type(None),
    Enum,
    IPv4Address,
    IPv6Address,
    IPv4Network,
    IPv6Network,
)
#: Values not looked into: code, and types (the class, not its instances).
_OPAQUE = (FunctionType, MethodType, BuiltinFunctionType, ModuleType, type)


class _Seen:
    """Marks a place holding a container the snapshot went into, by identity."""

    __slots__ = ("ident",)

    def __init__(self, ident: int) -> None:
        self.ident = ident

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Seen) and other.ident == self.ident

    def __hash__(self) -> int:
        return self.ident


@dataclass(frozen=True)
class Delta:
    """Add ``amount`` to ``container``'s ``key`` (an attribute, a dict key or an index)."""

    container: Any
    key: Any
    amount: int
    attribute: bool


class Snapshot:
    """The lab's values at one moment, keyed by (container identity, key), and the
    bytes of its mutable buffers (bytearrays), all in one piece."""

    __slots__ = ("buffers", "keep", "live", "shape", "values")

    def __init__(self) -> None:
        # (container identity, key) -> (container, is-attribute, value)
        self.values: dict[tuple[int, Any], tuple[Any, bool, Any]] = {}
        # The containers themselves, so their identities stay theirs while compared.
        self.keep: list[Any] = []
        # Every bytearray reached, as (identity, length), and their bytes joined.
        self.shape: list[tuple[int, int]] = []
        self.live: list[bytearray] = []
        # Their bytes at the time (when the snapshot is to be compared against later).
        self.buffers: bytes | None = None


#: Exact types read as values (checked first, as most values are of these).
_LEAF_TYPES = frozenset({int, str, bytes, bool, float, type(None)})
_SLOTS: dict[type, tuple[str, ...]] = {}


def _slots(cls: type) -> tuple[str, ...]:
    names = _SLOTS.get(cls)
    if names is None:
        names = _SLOTS[cls] = tuple(
            name
            for klass in cls.__mro__
            for name in getattr(klass, "__slots__", ())
            if not name.startswith("__") and name not in ("__dict__", "__weakref__")
        )
    return names


def snapshot(root: Any, skip: Iterable[Any] = (), *, before: bool = True) -> Snapshot:
    """Read everything reachable from ``root``, leaving out the objects in ``skip``
    (and what only they reach). A snapshot that is only ever the ``after`` of
    :func:`diff` (``before`` false) keeps its buffers as they are, uncopied: diff reads
    them at once. The garbage collector waits meanwhile: the thousands of small
    tuples made here would start it several times over the whole lab."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _snapshot(root, skip, before)
    finally:
        if paused:
            gc.enable()


def _snapshot(root: Any, skip: Iterable[Any], before: bool) -> Snapshot:
    snap = Snapshot()
    values = snap.values
    keep = snap.keep
    buffers: list[bytearray] = []
    seen: set[int] = {id(obj) for obj in skip}
    stack: list[Any] = [root]
    leaf_types = _LEAF_TYPES
    while stack:
        obj = stack.pop()
        ident = id(obj)
        if ident in seen:
            continue
        seen.add(ident)
        keep.append(obj)
        kind = type(obj)
        attribute = False
        items: Iterable[tuple[Any, Any]]
        if kind is dict:
            items = obj.items()
        elif kind is list or kind is tuple or kind is deque:
            items = enumerate(obj)
        elif kind is bytearray:
            buffers.append(obj)
            continue
        elif kind is bytes:
            continue
        elif kind is set or kind is frozenset:
            # Members stand for themselves: a set that gains or loses one has changed.
            items = [(("member", _key(value)), value) for value in obj]
        else:
            attribute = True
            state = getattr(obj, "__dict__", None)
            items = [] if state is None else list(state.items())
            for name in _slots(kind):
                try:
                    items.append((name, getattr(obj, name)))
                except AttributeError:
                    continue
        for key, value in items:
            if type(value) in leaf_types or isinstance(value, _LEAVES):
                values[(ident, key)] = (obj, attribute, value)
            elif isinstance(value, _OPAQUE):
                continue
            elif isinstance(value, random.Random):
                values[(ident, key)] = (obj, attribute, value.getstate())
            elif isinstance(value, memoryview):
                # A view stands for the buffer it shows, read once (the engine's memory
                # is megabytes, each region with a view on it).
                base = value.obj
                values[(ident, key)] = (obj, attribute, _Seen(id(base)))
                stack.append(base)
            else:
                values[(ident, key)] = (obj, attribute, _Seen(id(value)))
                stack.append(value)
    snap.shape = [(id(buf), len(buf)) for buf in buffers]
    snap.live = buffers
    if before:
        snap.buffers = b"".join(buffers)
    return snap


def _key(value: Any) -> Any:
    return value if isinstance(value, _LEAVES) else ("object", id(value))


def diff(before: Snapshot, after: Snapshot) -> list[Delta] | None:
    """The integer moves from ``before`` to ``after`` (taken now, if its buffers were
    not copied); None when anything else changed (a buffer's bytes included)."""
    old = before.values
    new = after.values
    if old.keys() != new.keys() or before.shape != after.shape or before.buffers is None:
        return None
    if after.buffers is not None:
        if after.buffers != before.buffers:
            return None
    else:
        was = memoryview(before.buffers)
        at = 0
        for buf in after.live:
            end = at + len(buf)
            if buf != was[at:end]:  # (bytearray first: a memcmp)
                return None
            at = end
    deltas: list[Delta] = []
    for place, (container, attribute, value) in new.items():
        was = old[place][2]
        if value == was and type(value) is type(was):
            continue
        if type(value) is not int or type(was) is not int:
            return None
        deltas.append(Delta(container, place[1], value - was, attribute))
    return deltas


def apply(deltas: Iterable[Delta]) -> None:
    """Make the moves again."""
    for d in deltas:
        if d.attribute:
            setattr(d.container, d.key, getattr(d.container, d.key) + d.amount)
        else:
            d.container[d.key] += d.amount


def as_moves(deltas: Iterable[Delta]) -> tuple[list[tuple[Any, Any, int]], list[Delta]]:
    """``deltas`` as (mapping, key, amount) moves, an object's attribute through its
    ``__dict__``; the attributes of objects without one (slots) stay :class:`Delta`."""
    moves: list[tuple[Any, Any, int]] = []
    rest: list[Delta] = []
    for d in deltas:
        if not d.attribute:
            moves.append((d.container, d.key, d.amount))
            continue
        state = getattr(d.container, "__dict__", None)
        if state is not None and d.key in state:
            moves.append((state, d.key, d.amount))
        else:
            rest.append(d)
    return moves, rest
