"""Whether a command changed the session: everything reachable from it, flattened to
``{path: value}`` before and after, and compared.

A path reads as Python would reach the value from the session
(``lab.nodes['ap'].xfrm.states[0].curlft``); an object reached twice is walked at the
first path only. A dataclass field declared ``init=False, repr=False, compare=False``
is a lookup cache (``Node._routes_for``: derived, forgotten by ``invalidate``) and is
left out. A journey's stages format their text when first read
(LazyStage), so :func:`before` flattens twice and keeps the second: only what the
command did is seen.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from enum import Enum
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any

from esplab.commands.session import Session

__all__ = ["Flat", "before", "changes", "flatten"]

Flat = dict[str, Any]

_PLAIN = (int, float, str, bytes, bool, type(None), Enum)
_ADDRS = (IPv4Address, IPv6Address, IPv4Network, IPv6Network)
_CODE = (FunctionType, MethodType, BuiltinFunctionType, ModuleType, type)
#: Not the model: the command table (code and help texts).
_SKIPPED = frozenset({"registry"})


def _slots(obj: Any) -> list[str]:
    return [
        name
        for klass in type(obj).__mro__
        for name in getattr(klass, "__slots__", ())
        if not name.startswith("__")
    ]


def _caches(obj: Any) -> frozenset[str]:
    if not dataclasses.is_dataclass(obj):
        return frozenset()
    return frozenset(f.name for f in dataclasses.fields(obj) if not (f.init or f.repr or f.compare))


def flatten(session: Session) -> Flat:
    """Every value reachable from ``session`` by path."""
    flat: Flat = {}
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [
        (name, value) for name, value in vars(session).items() if name not in _SKIPPED
    ]
    while stack:
        path, obj = stack.pop()
        if isinstance(obj, _PLAIN + _ADDRS):
            flat[path] = obj
            continue
        if isinstance(obj, _CODE) or type(obj).__module__.startswith(("cryptography", "_hashlib")):
            continue
        if id(obj) in seen:
            flat[path] = "<seen>"
            continue
        seen.add(id(obj))
        if isinstance(obj, random.Random):
            flat[path] = obj.getstate()
        elif isinstance(obj, bytearray | memoryview):
            flat[path] = hash(bytes(obj))
        elif isinstance(obj, dict):
            flat[path] = f"<dict of {len(obj)}>"
            stack += [(f"{path}[{key!r}]", value) for key, value in obj.items()]
        elif isinstance(obj, list | tuple | deque):
            flat[path] = f"<{type(obj).__name__} of {len(obj)}>"
            stack += [(f"{path}[{i}]", value) for i, value in enumerate(obj)]
        elif isinstance(obj, set | frozenset):
            flat[path] = sorted(map(repr, obj))
        else:
            caches = _caches(obj)
            names = [n for n in [*getattr(obj, "__dict__", {}), *_slots(obj)] if n not in caches]
            flat[path] = f"<{type(obj).__name__}>"
            for name in names:
                try:
                    stack.append((f"{path}.{name}", getattr(obj, name)))
                except AttributeError:
                    continue
    return flat


def before(session: Session) -> Flat:
    flatten(session)
    return flatten(session)


def changes(was: Flat, session: Session, limit: int = 6) -> list[str]:
    """What differs between ``was`` and the session now (empty when nothing did)."""
    now = flatten(session)
    found = [f"{p}: {was[p]!r} -> {now[p]!r}" for p in was if p in now and was[p] != now[p]]
    found += [f"{p} is new: {now[p]!r}" for p in now if p not in was]
    found += [f"{p} is gone" for p in was if p not in now]
    return [line[:300] for line in found[:limit]]
