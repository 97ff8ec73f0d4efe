"""The SAD/SPD changes the kernel multicasts to its netlink listeners.

The kernel sends one netlink message per change (net/xfrm/xfrm_user.c
``xfrm_send_state_notify``, ``xfrm_send_policy_notify``, ``xfrm_notify_userpolicy``,
``xfrm_send_acquire``) to a multicast group. A node's tables hand every change to
their :class:`Listener` (``ip xfrm monitor``, in :mod:`esplab.model.tools.iproute2.xfrm_monitor`)
from the one place that counts changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

from esplab.model.kernel.xfrm.objects import XfrmPolicy, XfrmState

__all__ = ["GROUP", "EventKind", "Listener", "XfrmEvent"]

EventKind: TypeAlias = Literal[
    "newsa",
    "updsa",
    "delsa",
    "flushsa",
    "expire",
    "acquire",
    "newpolicy",
    "updpolicy",
    "delpolicy",
    "flushpolicy",
    "default",
]

# The multicast group of each message (xfrm_user.c: xfrm_send_state_notify sends
# EXPIRE to XFRMNLGRP_EXPIRE and the rest to XFRMNLGRP_SA; policies likewise) [C].
GROUP: Mapping[str, str] = {
    "newsa": "SA",
    "updsa": "SA",
    "delsa": "SA",
    "flushsa": "SA",
    "expire": "expire",
    "acquire": "acquire",
    "newpolicy": "policy",
    "updpolicy": "policy",
    "delpolicy": "policy",
    "flushpolicy": "policy",
    "default": "policy",
}


@dataclass(frozen=True)
class XfrmEvent:
    """One change of the tables, as the kernel's notification describes it.

    ``proto``: a flush's protocol as sent (None: ``ip xfrm state flush`` with no
    proto, which iproute2 sends as 0); ``hard``: an expire's kind; ``defaults``: the
    default policies after a ``setdefault``."""

    kind: EventKind
    state: XfrmState | None = None
    policy: XfrmPolicy | None = None
    proto: int | None = None
    ptype: str = "main"
    hard: bool = True
    defaults: Mapping[str, str] = field(default_factory=dict)


class Listener(Protocol):
    """A netlink listener of the tables: the groups it joined, and what it does with a
    message of one of them."""

    groups: frozenset[str]

    def record(self, event: XfrmEvent, *, ptype_attr: bool) -> None: ...
