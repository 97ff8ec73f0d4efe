"""``ip [-s] xfrm state|policy ...`` from a token list to an :class:`IpXfrm` command.

iproute2's grammar (reference ``airoha-dsa-xfrm.md`` 5.1, 5.2; ``ip/ip.c``,
``ip/ipxfrm.c``, ``ip/xfrm_state.c``, ``ip/xfrm_policy.c``) with the checks
iproute2 makes before anything reaches the kernel. The caller tokenizes
shell-style, so ``'cbc(aes)'`` arrives as ``cbc(aes)``. Objects and verbs take
iproute2's abbreviations (``ip x s l``). Parsing is pure: netdev names are only
collected in ``IpXfrm.devices`` for the executor to check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from esplab.errors import ToolUsageError
from esplab.model.kernel.xfrm.objects import PolicyId, StateId, XfrmOffload, XfrmPolicy, XfrmState
from esplab.model.tools.iproute2.options import parse_options
from esplab.model.tools.iproute2.xfrm_filters import PolicyFilter, StateFilter
from esplab.model.tools.iproute2.xfrm_monitor import MONITOR_GROUPS, MONITOR_USAGE
from esplab.model.tools.iproute2.xfrm_policy import (
    parse_defaults,
    parse_flush_ptype,
    parse_policy_add,
    parse_policy_filter,
    parse_policy_id,
)
from esplab.model.tools.iproute2.xfrm_state import (
    SpiRange,
    parse_flush_proto,
    parse_state_add,
    parse_state_allocspi,
    parse_state_filter,
    parse_state_id,
)
from esplab.model.tools.iproute2.xfrm_words import Cursor, bad, matches

__all__ = [
    "POLICY_VERBS",
    "STATE_VERBS",
    "IpXfrm",
    "MonitorArgs",
    "Verb",
    "parse_ip_xfrm",
    "parse_monitor",
]

Verb: TypeAlias = Literal[
    "add",
    "update",
    "delete",
    "get",
    "list",
    "deleteall",
    "flush",
    "count",
    "help",
    "allocspi",
    "setdefault",
    "getdefault",
    "monitor",
]

# do_xfrm_state / do_xfrm_policy try these in order, so "d" is delete and "s" list.
STATE_VERBS: tuple[tuple[str, Verb | None], ...] = (
    ("add", "add"),
    ("update", "update"),
    ("allocspi", "allocspi"),
    ("delete", "delete"),
    ("deleteall", "deleteall"),
    ("delall", "deleteall"),
    ("list", "list"),
    ("show", "list"),
    ("lst", "list"),
    ("get", "get"),
    ("flush", "flush"),
    ("count", "count"),
    ("help", "help"),
)
POLICY_VERBS: tuple[tuple[str, Verb | None], ...] = (
    *(v for v in STATE_VERBS if v[0] != "allocspi"),
    ("set", None),
    ("setdefault", "setdefault"),
    ("getdefault", "getdefault"),
)


@dataclass(frozen=True)
class IpXfrm:
    """One parsed ``ip xfrm`` command; which fields are set depends on ``verb``."""

    obj: Literal["state", "policy", "monitor"]
    verb: Verb
    stats: int = 0
    family: int = 0
    state: XfrmState | None = None
    policy: XfrmPolicy | None = None
    offload: XfrmOffload | None = None
    state_id: StateId | None = None
    policy_id: PolicyId | None = None
    state_filter: StateFilter | None = None
    policy_filter: PolicyFilter | None = None
    nokeys: bool = False
    flush_proto: int | None = None
    flush_ptype: Literal["main", "sub"] = "main"
    devices: tuple[str, ...] = ()
    spi_range: SpiRange | None = None
    defaults: tuple[tuple[str, str], ...] = ()
    monitor: MonitorArgs | None = None


def _verb(word: str, table: tuple[tuple[str, Verb | None], ...], obj: str) -> Verb:
    for name, verb in table:
        if matches(word, name):
            if verb is None:
                raise bad(word, f"ip xfrm {obj} {name} is not modelled by esplab")
            return verb
    names = [n for n, v in table if v is not None]
    raise ToolUsageError(
        f'Command "{word}" is unknown, try "ip xfrm {obj} help".', valid=names, value=word
    )


def _options(cur: Cursor) -> tuple[int, int]:
    """``ip`` options before the object, as the ``ip`` command reads them
    (:func:`~esplab.model.tools.iproute2.options.parse_options`): the ``-s`` count and
    the family (0: any); ``-d``, ``-o`` and ``-br`` change nothing ip xfrm prints here."""
    opts, _, rest = parse_options(cur.tokens[cur.i :])
    cur.i = len(cur.tokens) - len(rest)
    return opts.stats, opts.family or 0


def parse_ip_xfrm(argv: Sequence[str]) -> IpXfrm:
    """Parse ``[ip] [-s ...] [-4|-6] xfrm state|policy [VERB ...]`` (no verb: list)."""
    cur = Cursor(argv)
    if cur.peek() == "ip":
        cur.take()
    stats, family = _options(cur)
    word = cur.peek()
    if word is None or not matches(word, "xfrm"):
        raise ToolUsageError(f'Object "{word}" is unknown, try "ip help".', valid=("xfrm",))
    cur.take()
    objword = cur.peek()
    if objword is None or matches(objword, "help"):
        # ipxfrm.c usage(): printed for no object and for help alike, exit 255 (C,
        # iproute2 6.15 in the kernel guest).
        raise ToolUsageError(
            "Usage: ip xfrm XFRM-OBJECT { COMMAND | help }\n"
            "where  XFRM-OBJECT := state | policy | monitor"
        )
    cur.take()
    if matches(objword, "state") or matches(objword, "sa"):
        obj: Literal["state", "policy", "monitor"] = "state"
    elif matches(objword, "policy"):
        obj = "policy"
    elif matches(objword, "monitor"):
        return IpXfrm("monitor", "monitor", stats, family, monitor=parse_monitor(cur))
    else:
        raise ToolUsageError(
            f'Object "{objword}" is unknown, try "ip xfrm help".',
            valid=("state", "policy", "monitor"),
            value=objword,
        )
    verb: Verb = "list"
    if cur.more():
        verb = _verb(cur.take(), STATE_VERBS if obj == "state" else POLICY_VERBS, obj)
    base = IpXfrm(obj, verb, stats, family)
    return _state_rest(cur, base) if obj == "state" else _policy_rest(cur, base)


def _state_rest(cur: Cursor, base: IpXfrm) -> IpXfrm:
    fam, verb = base.family, base.verb
    if verb in ("add", "update"):
        state, offload = parse_state_add(cur, fam)
        devs = tuple(d for d in (offload.dev if offload else None, state.sel.dev) if d)
        return replace(base, state=state, offload=offload, devices=devs)
    if verb in ("get", "delete"):
        return replace(base, state_id=parse_state_id(cur, fam))
    if verb in ("list", "deleteall"):
        filt, nokeys = parse_state_filter(cur, fam)
        return replace(base, state_filter=filt, nokeys=nokeys)
    if verb == "flush":
        return replace(base, flush_proto=parse_flush_proto(cur))
    if verb == "allocspi":
        state, spi_range = parse_state_allocspi(cur, fam)
        return replace(base, state=state, spi_range=spi_range)
    return base  # count (extra words ignored, as iproute2 does) and help


def _policy_rest(cur: Cursor, base: IpXfrm) -> IpXfrm:
    fam, verb = base.family, base.verb
    if verb in ("add", "update"):
        policy, offload = parse_policy_add(cur, fam)
        devs = tuple(d for d in (offload.dev if offload else None, policy.sel.dev) if d)
        return replace(base, policy=policy, offload=offload, devices=devs)
    if verb in ("get", "delete"):
        return replace(base, policy_id=parse_policy_id(cur, fam))
    if verb in ("list", "deleteall"):
        return replace(base, policy_filter=parse_policy_filter(cur, fam))
    if verb == "flush":
        return replace(base, flush_ptype=parse_flush_ptype(cur))
    if verb == "setdefault":
        return replace(base, defaults=parse_defaults(cur))
    return base  # count, getdefault (extra words ignored, as iproute2 does) and help


@dataclass(frozen=True)
class MonitorArgs:
    """``ip xfrm monitor [nokeys] [all-nsid] [all | OBJECTS]``; ``off`` is esplab's
    (a real monitor runs until Ctrl-C)."""

    groups: frozenset[str] = frozenset(MONITOR_GROUPS)
    nokeys: bool = False
    all_nsid: bool = False
    off: bool = False


def parse_monitor(cur: Cursor) -> MonitorArgs:
    """do_xfrm_monitor's words, tried in its order (so ``a`` is all-nsid, ``ac``
    acquire), and its message for any other [C: iproute2 6.15]."""
    groups: set[str] = set()
    nokeys = all_nsid = off = False
    while cur.more():
        word = cur.take()
        if matches(word, "file"):
            raise bad(word, "ip xfrm monitor file is not modelled by esplab")
        if word == "nokeys":
            nokeys = True
        elif word == "all":
            pass
        elif matches(word, "all-nsid"):
            all_nsid = True
        elif word == "off":
            off = True
        elif matches(word, "help"):
            raise ToolUsageError(MONITOR_USAGE)
        else:
            group = next((g for g in MONITOR_GROUPS if matches(word, g)), None)
            if group is None:
                raise ToolUsageError(
                    f'Argument "{word}" is unknown, try "ip xfrm monitor help".',
                    valid=("all", *MONITOR_GROUPS, "nokeys", "all-nsid", "off"),
                    value=word,
                )
            groups.add(group)
    return MonitorArgs(frozenset(groups or MONITOR_GROUPS), nokeys, all_nsid, off)
