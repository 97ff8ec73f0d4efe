"""What one stretch of a walk changed in the lab, found by comparing two snapshots.

:func:`snapshot` reads every value reachable from the lab (object attributes, dict
entries, list items) in a fixed order: the places (container identity and key) in
one list, the values in another. :func:`diff` compares two snapshots place by place.
When the only changes are integers that moved (counters), the result is the list of
:class:`Delta` that replays the stretch's bookkeeping; any other change (a new dict
entry, a list that grew, a string or an object replaced, a buffer's bytes) makes the
stretch something only a real walk can repeat, and ``diff`` returns None.

The flow cache (:mod:`~esplab.model.accel.flowcache`) uses this once per flow, so a
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
#: Exact types read as values (checked first, as most values are of these).
_LEAF_TYPES = frozenset({int, str, bytes, bool, float, type(None)})
#: Values not looked into: code, and types (the class, not its instances).
_OPAQUE = (FunctionType, MethodType, BuiltinFunctionType, ModuleType, type)
#: What stands at a place holding a container the snapshot went into: this tag and the
#: container's identity (a tuple: compared without Python code).
_SEEN = "<container>"


@dataclass(frozen=True)
class Delta:
    """Add ``amount`` to ``container``'s ``key`` (an attribute, a dict key or an index)."""

    container: Any
    key: Any
    amount: int
    attribute: bool


class Snapshot:
    """The lab's values at one moment, place by place, and its mutable buffers
    (bytearrays) with, for a snapshot to compare against later, a copy of each."""

    __slots__ = ("attributes", "containers", "copies", "keep", "live", "places", "values")

    def __init__(self) -> None:
        # Place n: (container identity, key), the container, whether the key names an
        # attribute, and the value (or a (_SEEN, identity) pair).
        self.places: list[tuple[int, Any]] = []
        self.containers: list[Any] = []
        self.attributes: list[bool] = []
        self.values: list[Any] = []
        # The containers themselves, so their identities stay theirs while compared.
        self.keep: list[Any] = []
        # Every bytearray reached, and its bytes at the time (when the snapshot is to be
        # compared against later).
        self.live: list[bytearray] = []
        self.copies: list[bytes] | None = None


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


def snapshot(
    root: Any,
    skip: Iterable[Any] = (),
    *,
    before: bool = True,
    previous: Snapshot | None = None,
) -> Snapshot:
    """Read everything reachable from ``root``, leaving out the objects in ``skip``
    (and what only they reach). A snapshot that is only ever the ``after`` of
    :func:`diff` (``before`` false) keeps its buffers as they are, uncopied: diff reads
    them at once. Copies of ``previous`` whose buffers have not changed since are
    kept rather than made again (the engine's DMA memory is megabytes, and a step
    writes a few hundred bytes of it). The garbage collector waits meanwhile: the
    thousands of small tuples made here would start it several times over the lab."""
    paused = gc.isenabled()
    gc.disable()
    try:
        snap = _snapshot(root, skip)
    finally:
        if paused:
            gc.enable()
    if before:
        copied: dict[int, bytes] = {}
        if previous is not None and previous.copies is not None:
            copied = {
                id(buf): copy for buf, copy in zip(previous.live, previous.copies, strict=True)
            }
        copies = []
        for buf in snap.live:
            copy = copied.get(id(buf))
            if copy is None or buf != copy:
                copy = bytes(buf)
            copies.append(copy)
        snap.copies = copies
    return snap


def _snapshot(root: Any, skip: Iterable[Any]) -> Snapshot:
    snap = Snapshot()
    places, containers, attributes, values = (
        snap.places,
        snap.containers,
        snap.attributes,
        snap.values,
    )
    keep = snap.keep
    buffers = snap.live
    seen: set[int] = {id(obj) for obj in skip}
    stack: list[Any] = [root]
    leaf_types = _LEAF_TYPES

    def place(ident: int, key: Any, obj: Any, attribute: bool, value: Any) -> None:
        places.append((ident, key))
        containers.append(obj)
        attributes.append(attribute)
        values.append(value)

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
        elif kind is tuple:
            # A tuple's items never change in place: the whole tuple is one value.
            atoms = []
            for value in obj:
                if type(value) in leaf_types or isinstance(value, _LEAVES):
                    atoms.append(value)
                elif not isinstance(value, _OPAQUE):
                    base = value.obj if isinstance(value, memoryview) else value
                    atoms.append((_SEEN, id(base)))
                    stack.append(base)
            place(ident, None, obj, False, tuple(atoms))
            continue
        elif kind is list and all(type(value) in leaf_types for value in obj):
            # A list of plain values is one value: an item that moved is not replayed,
            # as if it were not a counter (lists hold none).
            place(ident, None, obj, False, tuple(obj))
            continue
        elif kind is list or kind is deque:
            items = enumerate(obj)
        elif kind is bytearray:
            buffers.append(obj)
            continue
        elif kind is bytes:
            continue
        elif kind is set or kind is frozenset:
            # Members stand for themselves: a set that gains or loses one has changed.
            # (an unchanged set iterates in the same order)
            items = [(_key(value), value) for value in obj]
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
                places.append((ident, key))
                containers.append(obj)
                attributes.append(attribute)
                values.append(value)
            elif isinstance(value, _OPAQUE):
                continue
            elif isinstance(value, random.Random):
                place(ident, key, obj, attribute, value.getstate())
            elif isinstance(value, memoryview):
                # A view stands for the buffer it shows, read once (the engine's memory
                # is megabytes, each region with a view on it).
                base = value.obj
                place(ident, key, obj, attribute, (_SEEN, id(base)))
                stack.append(base)
            else:
                place(ident, key, obj, attribute, (_SEEN, id(value)))
                stack.append(value)
    return snap


def _key(value: Any) -> Any:
    return value if isinstance(value, _LEAVES) else (_SEEN, id(value))


def diff(before: Snapshot, after: Snapshot) -> list[Delta] | None:
    """The integer moves from ``before`` to ``after`` (its buffers read as they are
    now, if they were not copied); None when anything else changed (a buffer's bytes
    included)."""
    if before.copies is None or before.places != after.places:
        return None
    if len(before.live) != len(after.live):
        return None
    for buf, was in zip(after.live, before.copies, strict=True):
        if buf != was:  # (what the buffer holds now: a memcmp)
            return None
    deltas: list[Delta] = []
    for n, (was, value) in enumerate(zip(before.values, after.values, strict=True)):
        if value is was or (value == was and type(value) is type(was)):
            continue
        if type(value) is not int or type(was) is not int:
            return None
        deltas.append(
            Delta(after.containers[n], after.places[n][1], value - was, after.attributes[n])
        )
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
