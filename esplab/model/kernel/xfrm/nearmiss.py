"""Near misses: the states that almost matched a lookup that found nothing, and why.

When ``xfrm_state_find`` finds no SA for an outbound template (``XfrmOutNoStates``)
or ``xfrm_state_lookup`` none for a received SPI (``XfrmInNoStates``), the kernel
says only that. A driver developer wants the states that *almost* matched, the
check each one failed (offload type, device, reqid, mode, addresses, SPI, mark,
interface id, selector), and the one command that would make it match. The checks
are those of :func:`esplab.model.kernel.xfrm.lookup.find_output_state` (the kernel's
``xfrm_state_look_at``/``xfrm_state_find`` in net/xfrm/xfrm_state.c) and of
``xfrm_state_lookup`` (daddr, SPI, protocol, mark) [C]; the wording and the fix are
ours [M]. Pure functions: nothing here counts or changes a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from esplab.model.kernel.xfrm.lookup import find_output_state, mark_ok
from esplab.model.kernel.xfrm.objects import XFRM_PROTOS

if TYPE_CHECKING:
    from esplab.model.kernel.xfrm.objects import XfrmPolicy, XfrmState, XfrmTemplate

__all__ = [
    "NearMiss",
    "explain_no_state",
    "input_near_misses",
    "output_near_misses",
    "policy_command",
    "report",
]

#: States listed at most (the closest first).
LIMIT = 4


@dataclass(frozen=True)
class NearMiss:
    """A state that almost matched: what it is, why it was passed over, and the one
    command that would make it match ('' when no single command does)."""

    label: str
    reasons: tuple[str, ...]
    fix: str = ""


def _wild(addr: Any) -> bool:
    return not int(addr)


def _label(x: XfrmState) -> str:
    off = ""
    if x.offload is not None:
        kind = "packet" if x.is_packet_offload else "crypto"
        off = f", {kind} offload on {x.offload.dev}"
    return f"SA spi {x.spi:#010x} {x.src} > {x.dst} reqid {x.reqid} {x.mode}{off}"


_PROTO_NAMES = {number: name for name, number in XFRM_PROTOS.items()}


def _proto(n: int) -> str:
    return _PROTO_NAMES.get(n, str(n))


def policy_command(pol: XfrmPolicy, tmpls: Sequence[XfrmTemplate], offload: str | None) -> str:
    """``ip xfrm policy update`` of ``pol`` with ``tmpls`` and ``offload`` (``"packet
    dev DEV"`` or None for a software policy)."""
    sel = pol.sel
    words = ["ip xfrm policy update", f"src {sel.src}", f"dst {sel.dst}"]
    if sel.proto:
        words.append(f"proto {sel.proto}")
        if sel.sport_mask:
            words.append(f"sport {sel.sport}")
        if sel.dport_mask:
            words.append(f"dport {sel.dport}")
    words.append(f"dir {pol.dir}")
    if pol.priority:
        words.append(f"priority {pol.priority}")
    if pol.mark is not None:
        words.append(f"mark {pol.mark.value:#x} mask {pol.mark.mask:#x}")
    if pol.if_id:
        words.append(f"if_id {pol.if_id:#x}")
    for t in tmpls:
        words.append("tmpl")
        if not (_wild(t.src) and _wild(t.dst)):
            words.append(f"src {t.src} dst {t.dst}")
        words.append(f"proto {_proto(t.proto)}")
        if t.spi:
            words.append(f"spi {t.spi:#x}")
        words.append(f"reqid {t.reqid} mode {t.mode}")
        if t.level == "use":
            words.append("level use")
    if offload:
        words.append(f"offload {offload}")
    return " ".join(words)


def _offload_of(pol: XfrmPolicy) -> str | None:
    return f"packet dev {pol.offload.dev}" if pol.offload is not None else None


def output_near_misses(
    states: Sequence[XfrmState], flow: Any, pol: XfrmPolicy, tmpl: XfrmTemplate
) -> list[NearMiss]:
    """The states of the template's protocol that ``find_output_state`` passed over,
    each with every check it failed, the closest (fewest failed checks) first."""
    if tmpl.mode in ("tunnel", "beet"):
        daddr, saddr = tmpl.dst, tmpl.src
    else:
        daddr, saddr = flow.dst, flow.src
    want_dev = pol.offload.dev if pol.offload is not None else None
    mark = pol.mark.value & pol.mark.mask if pol.mark else 0
    found: list[tuple[int, NearMiss]] = []
    index = pol.templates.index(tmpl) if tmpl in pol.templates else 0
    for x in states:
        if x.proto != tmpl.proto:
            continue
        reasons: list[str] = []
        fixes: list[str] = []
        new = tmpl
        dev = x.offload.dev if x.offload is not None and x.is_packet_offload else None
        offload = _offload_of(pol)
        if dev != want_dev:
            if dev is not None and want_dev is None:
                reasons.append(
                    f"offload type: the SA is packet offload on {dev}, the policy is a "
                    "software policy, which never selects a packet-offload SA"
                )
                offload = f"packet dev {dev}"
            elif dev is None:
                reasons.append(
                    f"offload type: the policy is packet offload on {want_dev}, which "
                    "selects only packet-offload SAs on that device; this SA is not one"
                )
                offload = None
            else:
                reasons.append(f"device: the SA is offloaded on {dev}, the policy on {want_dev}")
                offload = f"packet dev {dev}"
        if x.family != daddr.version:
            reasons.append(f"family: the SA is IPv{x.family}, the destination IPv{daddr.version}")
        if x.reqid != tmpl.reqid:
            reasons.append(f"reqid: the SA has {x.reqid}, the template wants {tmpl.reqid}")
            new = replace(new, reqid=x.reqid)
        if x.mode != tmpl.mode:
            reasons.append(f"mode: the SA is {x.mode}, the template {tmpl.mode}")
            new = replace(new, mode=x.mode)
            if x.mode in ("tunnel", "beet"):
                new = replace(new, src=x.src, dst=x.dst)
        if x.dst != daddr:
            where = "the template's tunnel end" if tmpl.mode != "transport" else "the packet's"
            reasons.append(f"destination: the SA is for {x.dst}, {where} is {daddr}")
            if tmpl.mode != "transport":
                new = replace(new, dst=x.dst)
            else:
                fixes.append("x")
        if not (x.src == saddr or _wild(saddr) or _wild(x.src)):
            reasons.append(f"source: the SA is from {x.src}, the flow is from {saddr}")
            if tmpl.mode != "transport":
                new = replace(new, src=x.src)
            else:
                fixes.append("x")
        if tmpl.spi not in (0, x.spi):
            reasons.append(f"SPI: the template names spi {tmpl.spi:#x}")
            new = replace(new, spi=x.spi)
        if not mark_ok(x.mark, mark):
            reasons.append(f"mark: the SA's mark does not match the policy's {mark:#x}")
            fixes.append("x")
        if x.if_id != pol.if_id:
            reasons.append(f"if_id: the SA's {x.if_id:#x}, the policy's {pol.if_id:#x}")
            fixes.append("x")
        if "wildrecv" in x.flags:
            reasons.append("flag wildrecv: such an SA only receives")
            fixes.append("x")
        if x.sel.family and not x.sel.matches(flow):
            reasons.append(f"selector: the SA's {x.sel.src} > {x.sel.dst} excludes the flow")
            fixes.append("x")
        if x.sa_dir == "in":
            reasons.append("direction: the SA is dir in")
            fixes.append("x")
        if not reasons:
            continue
        tmpls = list(pol.templates)
        tmpls[index] = new
        fix = "" if fixes else policy_command(pol, tmpls, offload)
        found.append((len(reasons), NearMiss(_label(x), tuple(reasons), fix)))
    found.sort(key=lambda item: item[0])
    return [miss for _, miss in found[:LIMIT]]


def input_near_misses(
    states: Sequence[XfrmState], dst: Any, spi: int, proto: int
) -> list[NearMiss]:
    """States that ``xfrm_state_lookup`` (daddr, SPI, protocol) passed over for a
    received packet: the same SPI elsewhere, or SAs to this address under another SPI."""
    found: list[tuple[int, NearMiss]] = []
    for x in states:
        reasons: list[str] = []
        if x.spi != spi:
            if x.dst != dst or x.proto != proto:
                continue
            reasons.append(f"SPI: the SA's is {x.spi:#010x}, the packet's {spi:#010x}")
        if x.dst != dst:
            reasons.append(f"destination: the SA is for {x.dst}, the packet to {dst}")
        if x.proto != proto:
            reasons.append(f"protocol: the SA is {_proto(x.proto)}, the packet {_proto(proto)}")
        if reasons:
            found.append((len(reasons) + (x.spi != spi), NearMiss(_label(x), tuple(reasons))))
    found.sort(key=lambda item: item[0])
    return [miss for _, miss in found[:LIMIT]]


def explain_no_state(states: Sequence[XfrmState], flow: Any, pol: XfrmPolicy) -> str:
    """Why a policy's template found no SA: its first required template without one,
    and that template's near misses."""
    for tmpl in pol.templates:
        if tmpl.level == "use" or find_output_state(states, flow, pol, tmpl) is not None:
            continue
        want = f"reqid {tmpl.reqid} {tmpl.mode} {_proto(tmpl.proto)}"
        if tmpl.mode != "transport":
            want += f" {tmpl.src} > {tmpl.dst}"
        else:
            want += f" {flow.src} > {flow.dst}"
        kind = f"packet offload on {pol.offload.dev}" if pol.offload is not None else "software"
        misses = output_near_misses(states, flow, pol, tmpl)
        return f"the template wants an SA {want} ({kind} policy). " + report(
            misses, "no state of that protocol at all: add one (ip xfrm state add ...)"
        )
    return ""


def report(misses: Sequence[NearMiss], none: str) -> str:
    """The near misses as one text: each state and why it was passed over, then the
    fix of the closest one that has a single command; ``none`` when there are none."""
    if not misses:
        return none
    lines = [f"{m.label}: " + "; ".join(m.reasons) for m in misses]
    fix = next((m.fix for m in misses if m.fix), "")
    text = "near misses: " + " | ".join(lines)
    return text + (f". Fix: {fix}" if fix else "")
