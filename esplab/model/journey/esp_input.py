"""XFRM input in the walk: the decisions for an ESP packet addressed to a node (its SPI
and state), then the packet checked and opened (software ESP, the engine's authenc, or
the engine under crypto or packet offload), which puts the state in the skb's secpath
(:func:`esp_input`, called by :class:`~esplab.model.journey.receive.ReceivePath`).
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address
from typing import TYPE_CHECKING

from esplab.model.journey.aead_path import (
    aead_input,
    uses_engine_aead,
)
from esplab.model.journey.engine_path import (
    SW_INPUT,
    engine_input,
)
from esplab.model.journey.walk import (
    IPPROTO_UDP,
    Walk,
    expire,
    software_sa,
)
from esplab.model.kernel.esp import core as esp_core
from esplab.model.kernel.esp.ip import IPPROTO_ESP, IpInfo
from esplab.model.kernel.node import Node
from esplab.model.kernel.xfrm.objects import XfrmState
from esplab.model.stage import KERNEL_CHECKED_WHY

if TYPE_CHECKING:
    from esplab.model.journey.board import Board
    from esplab.model.kernel.esp.sa import EspSA

__all__ = ["esp_input"]


_SW_OPEN_WHY = (
    "xfrm_input: replay check, ICV, decrypt, trailer strip (RFC 4303 3.4); " + KERNEL_CHECKED_WHY
)


def esp_input(
    lab: Board,
    walk: Walk,
    node: Node,
    dev_name: str,
    packet: bytes,
    info: IpInfo,
    dst: IPv4Address | IPv6Address,
) -> bytes | None:
    """XFRM input of an ESP packet addressed to ``node`` (at ``dst``): its SPI and
    state, then the packet checked and opened; the inner packet (its state now in the
    skb's secpath), or None when it was dropped."""
    off = info.hlen + (8 if info.proto == IPPROTO_UDP else 0)
    if len(packet) < off + 8:
        node.xfrm.mib.bump("XfrmInHdrError")
        walk.drop(
            f"{node.name}.xfrm",
            node.name,
            "ESP header truncated",
            "XfrmInHdrError",
            "no room for SPI and sequence number (xfrm_parse_spi)",
        )
        return None
    spi = int.from_bytes(packet[off : off + 4], "big")
    state = node.xfrm.lookup_state_input(dst, spi, IPPROTO_ESP)
    if state is None:
        node.xfrm.mib.bump("XfrmInNoStates")
        walk.drop(
            f"{node.name}.xfrm",
            node.name,
            f"no SA for spi {spi:#010x} dst {dst}",
            "XfrmInNoStates",
            "xfrm_state_lookup (daddr, SPI, protocol esp) found nothing (XfrmInNoStates); "
            + _no_state(node, dst, spi),
        )
        return None
    if state.larval:
        # xfrm_input: a state that is not XFRM_STATE_VALID (here a larval one that
        # ip xfrm state allocspi made, with no keys yet) drops the packet [C].
        node.xfrm.mib.bump("XfrmInStateInvalid")
        walk.drop(
            f"{node.name}.xfrm",
            node.name,
            f"SA spi {spi:#010x} dst {dst} is larval (no keys yet)",
            "XfrmInStateInvalid",
            "xfrm_input finds the state by SPI, but it is not XFRM_STATE_VALID: "
            "ip xfrm state allocspi reserved the SPI; give it keys with "
            "ip xfrm state update ... spi " + f"{spi:#x}",
        )
        return None
    if state.offload is not None and state.offload.dev == dev_name:
        inner = _offload_input(lab, node, state, dev_name, walk, packet)
    else:
        inner = _sw_input(lab, walk, node, state, packet)
    if inner is not None:
        walk.secpath.append(state)  # what the policy check reads
    return inner


def _no_state(node: Node, dst: IPv4Address | IPv6Address, spi: int) -> str:
    """The states that almost matched a received SPI, and why each was passed over."""
    from esplab.model.kernel.xfrm.nearmiss import input_near_misses, report

    misses = input_near_misses(node.xfrm.states, dst, spi, IPPROTO_ESP)
    return report(
        misses,
        f"no SA of {node.name} has SPI {spi:#010x} or is for {dst}: add the sender's SA "
        f"(ip xfrm state add src SENDER dst {dst} proto esp spi {spi:#x} ... with its keys)",
    )


def _sw_input(lab: Board, walk: Walk, node: Node, state: XfrmState, packet: bytes) -> bytes | None:
    """Software XFRM input with ``state``: through the engine's authenc on an ap
    that uses it (sw+aead), else generic software ESP."""
    if uses_engine_aead(lab, node):
        out = aead_input(lab, walk, node, state, packet)
        if out is not SW_INPUT:
            return out if isinstance(out, bytes) else None
    sa = software_sa(walk, node, state, f"{node.name}.xfrm", "XfrmInStateProtoError")
    if sa is None:
        return None
    return _sw_open(lab, node, state, sa, f"{state.spi:#010x}", walk, packet)


def _sw_open(
    lab: Board, node: Node, state: XfrmState, sa: EspSA, spi: str, walk: Walk, packet: bytes
) -> bytes | None:
    """Software ESP input of ``packet`` with ``sa`` (``spi``:
    the state's SPI as stages show it)."""
    runtime = lab.sa_runtime(node.name)
    res = esp_core.decrypt(sa, packet)
    runtime.sync(state, sa)
    if not res.ok:
        if res.mib:
            node.xfrm.mib.bump(res.mib)
        walk.drop(
            f"{node.name}.xfrm",
            node.name,
            f"{res.reason}: {res.detail}",
            res.mib,
            "software ESP input (esp_input / xfrm_input); " + KERNEL_CHECKED_WHY,
            "K",
            data=packet,
        )
        expire(node, state, res.mib)
        return None
    walk.record(
        f"{node.name}.xfrm",
        node.name,
        "software ESP: spi {:#010x} seq {} ICV good, next header {}, pad {}",
        _SW_OPEN_WHY,
        "K",
        None,
        res.packet,
        "ip",
        None,
        {"spi": spi, "seq": res.seq, "datapath": "sw"},
        (state.spi, res.seq, res.next_header, res.pad_len),
    )
    return res.packet


def _offload_input(
    lab: Board, node: Node, state: XfrmState, dev_name: str, walk: Walk, packet: bytes
) -> bytes | None:
    inner = engine_input(lab, walk, node, state, packet, dev_name)
    if inner is SW_INPUT:
        return _sw_input(lab, walk, node, state, packet)
    return inner if isinstance(inner, bytes) else None
