"""SPD and SAD lookups for a flow (``xfrm_policy_lookup_bytype``, ``xfrm_state_find``).

Reference ``airoha-dsa-xfrm.md`` 3.6 and facts 6.23, 6.24. These functions are
pure: they read policies and states and count nothing; ``XfrmNode.resolve_output``
adds the MIB counters.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from ipaddress import ip_address

from esplab.model.kernel.xfrm.objects import (
    Address,
    Flow,
    XfrmMark,
    XfrmPolicy,
    XfrmState,
    XfrmTemplate,
)

__all__ = ["chain_order", "find_output_state", "find_policy", "mark_ok"]


def mark_ok(have: XfrmMark | None, mark: int) -> bool:
    """An object without a mark matches every packet mark."""
    return have is None or have.matches(mark)


def _wild(addr: Address) -> bool:
    return addr == ip_address("::" if addr.version == 6 else "0.0.0.0")


def chain_order(policies: Iterable[XfrmPolicy], *, mainline: bool) -> list[XfrmPolicy]:
    """A chain's order. Mainline (``xfrm_policy_insert_list``) puts packet-offload
    policies at the head, newest first, then the rest by priority and age; the
    seed series orders everything by priority and age."""
    by_prio = sorted(policies, key=lambda p: (p.priority, p.pos))
    if not mainline:
        return by_prio
    hw = sorted((p for p in by_prio if p.is_packet_offload), key=lambda p: -p.pos)
    return hw + [p for p in by_prio if not p.is_packet_offload]


def find_policy(
    policies: Iterable[XfrmPolicy], flow: Flow, dir: str, ptype: str, *, mainline: bool
) -> XfrmPolicy | None:
    """``xfrm_policy_lookup_bytype``: the first match in the exact chain (both
    prefixes full length), then the inexact candidates, which win only with a
    lower priority, or an equal one and an older position. In mainline a
    packet-offload exact match ends the search."""
    found = [
        p
        for p in policies
        if not p.socket
        and p.dir == dir
        and p.ptype == ptype
        and p.sel.matches(flow)
        and mark_ok(p.mark, flow.mark)
        and p.if_id == flow.if_id
    ]
    chain = chain_order(found, mainline=mainline)
    exact = next((p for p in chain if p.sel.is_exact), None)
    if exact is not None and exact.is_packet_offload and mainline:
        return exact
    inexact = next((p for p in chain if not p.sel.is_exact), None)
    if exact is None or inexact is None:
        return exact or inexact
    if (inexact.priority, inexact.pos) < (exact.priority, exact.pos):
        return inexact
    return exact


def find_output_state(
    newest_first: Sequence[XfrmState], flow: Flow, policy: XfrmPolicy, tmpl: XfrmTemplate
) -> XfrmState | None:
    """``xfrm_state_find`` for one template of ``policy``.

    Transport templates match the flow's addresses, tunnel/BEET templates their
    own (a zero source is a wildcard). A software policy never selects a
    packet-offload SA; a packet-offload policy selects only packet SAs on its own
    device (the kernel keeps those at the head of the chain and stops at the first
    software one). The newest matching SA wins.
    """
    if tmpl.mode in ("tunnel", "beet"):
        daddr, saddr = tmpl.dst, tmpl.src
    else:
        daddr, saddr = flow.dst, flow.src
    mark = policy.mark.value & policy.mark.mask if policy.mark else 0
    want_dev = policy.offload.dev if policy.offload is not None else None
    best: XfrmState | None = None
    for x in newest_first:
        dev = x.offload.dev if x.offload is not None and x.is_packet_offload else None
        if dev != want_dev or x.larval:  # xfrm_state_find takes XFRM_STATE_VALID only
            continue
        if not (
            x.family == daddr.version
            and x.reqid == tmpl.reqid
            and mark_ok(x.mark, mark)
            and x.if_id == policy.if_id
            and "wildrecv" not in x.flags
            and x.dst == daddr
            and (x.src == saddr or _wild(saddr) or _wild(x.src))
            and x.mode == tmpl.mode
            and x.proto == tmpl.proto
            and tmpl.spi in (0, x.spi)
        ):
            continue
        if x.sel.family and not x.sel.matches(flow):
            continue
        if best is None or x.curlft.add_time > best.curlft.add_time:
            best = x
    return best
