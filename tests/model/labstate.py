"""Compare two labs value by value: every attribute, dict entry and list item reachable
from each, side by side (the journey and capture rings left out). Used to show that
two ways of sending the same packets leave the same lab behind."""

from __future__ import annotations

import random
from collections import deque
from enum import Enum
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any

_PLAIN = (int, float, str, bytes, bool, type(None), Enum)
_ADDRS = (IPv4Address, IPv6Address, IPv4Network, IPv6Network)
_CODE = (FunctionType, MethodType, BuiltinFunctionType, ModuleType, type)
#: Rings of what happened, not the lab's state (compared journey by journey instead).
_LEFT_OUT = {"journeys", "captures"}
#: Keys made of id(): they differ between two labs and are compared by their values.
_ID_KEYED = 1 << 32


def differences(a: Any, b: Any, limit: int = 20) -> list[str]:
    """Where ``a`` and ``b`` differ (up to ``limit`` places), as paths from the roots."""
    found: list[str] = []
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[str, Any, Any]] = [("lab", a, b)]
    while stack and len(found) < limit:
        path, x, y = stack.pop()
        if type(x) is not type(y):
            found.append(f"{path}: {type(x).__name__} vs {type(y).__name__}")
            continue
        if isinstance(x, _PLAIN + _ADDRS):
            if x != y:
                found.append(f"{path}: {x!r} vs {y!r}")
            continue
        if isinstance(x, _CODE) or type(x).__module__.startswith(("cryptography", "_hashlib")):
            continue
        pair = (id(x), id(y))
        if pair in seen:
            continue
        seen.add(pair)
        if isinstance(x, random.Random):
            if x.getstate() != y.getstate():
                found.append(f"{path}: random state differs")
            continue
        if isinstance(x, bytearray | memoryview):
            if bytes(x) != bytes(y):
                found.append(f"{path}: bytes differ")
            continue
        if isinstance(x, dict):
            if len(x) != len(y):
                found.append(f"{path}: {len(x)} vs {len(y)} entries")
                continue
            if all(isinstance(k, int) and k > _ID_KEYED for k in (*x, *y)):
                pairs = zip(x.values(), y.values(), strict=True)
                stack += [(f"{path}[#{i}]", u, v) for i, (u, v) in enumerate(pairs)]
                continue
            if list(map(_key, x)) != list(map(_key, y)):
                found.append(f"{path}: keys {list(x)[:4]} vs {list(y)[:4]}")
                continue
            for (k, u), v in zip(x.items(), y.values(), strict=True):
                stack.append((f"{path}[{k!r}]", u, v))
            continue
        if isinstance(x, list | tuple | deque):
            if len(x) != len(y):
                found.append(f"{path}: {len(x)} vs {len(y)} items")
                continue
            stack += [(f"{path}[{i}]", u, v) for i, (u, v) in enumerate(zip(x, y, strict=True))]
            continue
        if isinstance(x, set | frozenset):
            if sorted(map(repr, x)) != sorted(map(repr, y)):
                found.append(f"{path}: sets differ")
            continue
        for name, u, v in _fields(x, y):
            if name not in _LEFT_OUT:
                stack.append((f"{path}.{name}", u, v))
    return found


def _key(key: Any) -> Any:
    return key if isinstance(key, _PLAIN + _ADDRS + (tuple,)) else repr(key)


def _fields(x: Any, y: Any) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    dx, dy = getattr(x, "__dict__", None), getattr(y, "__dict__", None)
    if dx is not None and dy is not None:
        out += [(k, dx[k], dy.get(k)) for k in dx]
    for cls in type(x).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name in ("__dict__", "__weakref__") or not hasattr(x, name):
                continue
            out.append((name, getattr(x, name), getattr(y, name, None)))
    return out
