"""What a walk carries from stage to stage, and the small helpers every hop uses.

:class:`Walk` is one journey being walked: the lab, the journey and its stage list,
the send options (pinned sequence number and IV) and the skb's secpath. ``add``
records a stage and, while tracing is on, captures its snapshot at the stage's tap.
The helpers read addresses and flow keys from raw headers (parsed once per hop by
``parse_ip``) and build the ICMP errors of path MTU discovery.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from ipaddress import IPv4Address, IPv6Address
from typing import TYPE_CHECKING, Any

from esplab.errors import DecodeError, EsplabError
from esplab.model.kernel.esp.ip import (
    IpInfo,
    fragment_offset,
    parse_ip,
)
from esplab.model.kernel.xfrm.tables import FlowKey
from esplab.model.stage import Captured, Fidelity, Journey, LazyStage, Stage, built_stages

if TYPE_CHECKING:
    from esplab.model.journey.board import Board
    from esplab.model.kernel.esp.sa import EspSA
    from esplab.model.kernel.node import Node
    from esplab.model.kernel.xfrm.objects import XfrmState
    from esplab.model.kernel.xfrm.tables import OutputDecision

__all__ = [
    "IPPROTO_UDP",
    "SendOptions",
    "Walk",
    "addr",
    "addrs",
    "decrease_ttl",
    "expire",
    "flow_key",
    "icmp_answers",
    "icmp_error",
    "icmp_time_exceeded",
    "icmp_too_big",
    "is_natt",
    "no_icmp",
    "policy_refused",
    "quoted",
    "refused_counter",
    "software_sa",
    "tapname",
]

IPPROTO_UDP = 17


@dataclass(frozen=True)
class SendOptions:
    """Pins for bit-exact reproduction: the ESP sequence number and IV of this packet."""

    seq: int | None = None
    iv: bytes | None = None


class Walk:
    """One journey being walked (keeps the hot path free of repeated lookups)."""

    __slots__ = ("arrived", "journey", "lab", "opts", "secpath", "snap", "stages")

    def __init__(self, lab: Board, journey: Journey, opts: SendOptions) -> None:
        self.lab = lab
        self.journey = journey
        self.stages: list[Any] = journey.stages  # (stages and places still to be built)
        self.opts = opts
        self.snap = lab.settings.tracing
        # The states that decrypted the packet on the current node (the skb's secpath).
        self.secpath: list[XfrmState] = []
        # A forwarded packet as it arrived, before its TTL went down: what the forward
        # path's ICMP errors quote (ip_forward checks the MTU before ip_decrease_ttl).
        self.arrived: bytes | None = None

    def add(self, stage: Stage) -> Stage:
        stages = self.stages
        stages.append(stage)
        if not self.snap:
            stage.data = None
        elif stage.data is not None:
            self.lab.captures.add(
                Captured(
                    self.journey.id,
                    len(stages) - 1,
                    stage.tap,
                    stage.kind,
                    stage.data,
                    {"decision": stage.decision, **stage.meta},
                )
            )
        return stage

    def record(
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
        """Add the :class:`~esplab.model.stage.LazyStage` of these arguments: at once
        while tracing (its snapshot is captured), else as the tuple of its arguments,
        built when the journey's stages are read (a walk without tracing may never
        read them)."""
        if self.snap:
            self.add(
                LazyStage(
                    tap, device, decision, why, fidelity, counters, data, kind, drop, meta, args
                )
            )
        else:
            self.stages.append(
                (tap, device, decision, why, fidelity, counters, None, kind, drop, meta, args)
            )
            self.journey.unbuilt = True

    def extend(self, stages: Iterable[Stage]) -> None:
        add = self.add
        for stage in stages:
            add(stage)

    def extend_items(self, items: list[Any]) -> None:
        """Stages and :class:`~esplab.model.stage.Later` places (fixed by now): built at
        once while tracing, so their snapshots are captured, else when the journey's
        stages are first read."""
        if self.snap:
            self.extend(built_stages(items))
        else:
            self.journey.extend_items(items)

    def drop(
        self,
        tap: str,
        device: str,
        reason: str,
        counter: str | None,
        why: str,
        fidelity: Fidelity = "C",
        data: bytes | None = None,
    ) -> None:
        self.add(
            Stage(
                tap,
                device,
                f"drop: {reason}",
                why=why,
                fidelity=fidelity,
                counters={counter: 1} if counter else {},
                data=data,
                drop=reason,
            )
        )
        self.journey.verdict = f"dropped at {tap}: {reason}"


def icmp_too_big(node: Node, dev: str, packet: bytes, mtu: int) -> bytes | None:
    """ICMP fragmentation needed (IPv4) or packet too big (IPv6) for ``packet``."""
    return icmp_error(node, dev, packet, mtu)


def icmp_time_exceeded(node: Node, dev: str, packet: bytes) -> bytes | None:
    """ICMP time exceeded in transit (IPv4 type 11 code 0, ICMPv6 type 3 code 0) for a
    packet whose TTL or hop limit ran out (ip_forward, ip6_forward) [C]."""
    return icmp_error(node, dev, packet, None)


def quoted(walk: Walk, packet: bytes) -> bytes:
    """What an ICMP error about ``packet`` quotes: the packet as it arrived when the node
    is forwarding it (its TTL not yet decreased), else the packet itself."""
    arrived = walk.arrived
    if arrived is not None and len(arrived) == len(packet) and decrease_ttl(arrived) == packet:
        return arrived
    return packet


# ICMP types that are errors (RFC 792, 950, 1812); those above NR_ICMP_TYPES (18) are
# treated as errors too by __icmp_send.
_ICMP_ERRORS = frozenset({3, 4, 5, 11, 12})


def icmp_answers(packet: bytes, *, too_big: bool) -> bool:
    """Whether Linux answers ``packet`` with an ICMP error at all [C]: __icmp_send
    never answers a fragment other than the first, a packet to a multicast or broadcast
    address, or an ICMP error (or a type it does not know); icmp6_send never answers
    an ICMPv6 error or a fragment other than the first (is_ineligible), and answers a
    multicast destination only with packet too big (RFC 4443 2.4 e.3)."""
    try:
        info = parse_ip(packet)
    except DecodeError:
        return False
    if fragment_offset(packet):
        return False
    # An ICMP packet whose type was not captured is not answered either: Linux gives
    # up when it cannot read it (__icmp_send's itp, is_ineligible's skb_header_pointer).
    cut = len(packet) <= info.hlen
    upper = 0 if cut else packet[info.hlen]
    if info.version == 4:
        # 224/4 multicast, 240/4 and 255.255.255.255; a subnet's directed broadcast,
        # which Linux refuses by its route (RTCF_BROADCAST), is not told apart [M].
        if packet[16] >= 224:
            return False
        return not (info.proto == 1 and (cut or upper > 18 or upper in _ICMP_ERRORS))
    if packet[24] == 0xFF and not too_big:
        return False
    return not (info.proto == 58 and (cut or upper < 128))


def no_icmp(packet: bytes, *, too_big: bool) -> str:
    """Why no ICMP error went back for ``packet`` when :func:`icmp_error` gave none."""
    if not icmp_answers(packet, too_big=too_big):
        return "no ICMP error answers this packet"
    return "the node has no address to send an ICMP error from"


def icmp_error(node: Node, dev: str, packet: bytes, mtu: int | None) -> bytes | None:
    """The ICMP error ``node`` sends back to ``packet``'s source: too big with ``mtu``,
    or time exceeded when ``mtu`` is None; None when Linux sends none for it
    (:func:`icmp_answers`) or the node has no address to send it from."""
    from scapy.layers.inet import ICMP, IP
    from scapy.layers.inet6 import ICMPv6PacketTooBig, ICMPv6TimeExceeded, IPv6
    from scapy.packet import Packet, Raw

    if not icmp_answers(packet, too_big=mtu is not None):
        return None
    v6 = packet[0] >> 4 == 6
    # The source is the node's address on the way back to the sender (icmp_send).
    back = node.route(addrs(packet)[0])
    src = (back.src or node.source_for(back.dev, 6 if v6 else 4)) if back else None
    if src is None:
        src = node.source_for(dev, 6 if v6 else 4)
    if src is None:
        return None
    dst = str(addrs(packet)[0])
    if v6:
        # icmp6_send quotes as much as fits the IPv6 minimum MTU: 1280 - 40 - 8 [C].
        head6: Packet = IPv6(src=str(src), dst=dst)
        kind6: Packet = ICMPv6TimeExceeded(code=0) if mtu is None else ICMPv6PacketTooBig(mtu=mtu)
        return bytes(head6 / kind6 / Raw(packet[: 1280 - 48]))
    # __icmp_send quotes as much of the packet as fits a 576-byte ICMP message
    # (RFC 1812 4.3.2.3): 576 - 20 (IP) - 8 (ICMP) bytes [C].
    head4: Packet = IP(src=str(src), dst=dst)
    kind4: Packet = ICMP(type=11, code=0) if mtu is None else ICMP(type=3, code=4, nexthopmtu=mtu)
    return bytes(head4 / kind4 / Raw(packet[: 576 - 28]))


def decrease_ttl(packet: bytes) -> bytes:
    """``packet`` with its TTL (IPv4, the header checksum updated incrementally as
    ip_decrease_ttl does, RFC 1624) or hop limit (IPv6) one lower [C]."""
    if packet[0] >> 4 == 6:
        return packet[:7] + bytes((packet[7] - 1,)) + packet[8:]
    check = int.from_bytes(packet[10:12], "big") + 0x0100
    check = (check + (check >= 0xFFFF)) & 0xFFFF
    return packet[:8] + bytes((packet[8] - 1, packet[9])) + check.to_bytes(2, "big") + packet[12:]


def tapname(node: Node, dev: str) -> str:
    """Tap prefix of a device: the ap's devices by name, a peer's by its node."""
    return dev if node.role == "ap" else node.name


class _HashedIPv4Address(IPv4Address):
    """An IPv4Address that computes its hash once: a walk's lookups (routes, policies,
    flows, neighbours) hash the same few addresses in every packet. It is an
    IPv4Address in every other way, its name included."""

    __slots__ = ("_hash",)

    def __init__(self, address: object) -> None:
        super().__init__(address)
        self._hash = IPv4Address.__hash__(self)

    def __hash__(self) -> int:
        return self._hash


class _HashedIPv6Address(IPv6Address):
    """:class:`_HashedIPv4Address` for IPv6."""

    __slots__ = ("_hash",)

    def __init__(self, address: object) -> None:
        super().__init__(address)
        self._hash = IPv6Address.__hash__(self)

    def __hash__(self) -> int:
        return self._hash


_HashedIPv4Address.__name__ = "IPv4Address"  # (its repr is an IPv4Address's)
_HashedIPv6Address.__name__ = "IPv6Address"


@lru_cache(maxsize=4096)
def addr(raw: bytes) -> IPv4Address | IPv6Address:
    """The address object of packed bytes, remembered: a walk meets the same few
    addresses again and again, and the objects are immutable."""
    return _HashedIPv4Address(raw) if len(raw) == 4 else _HashedIPv6Address(raw)


def addrs(packet: bytes) -> tuple[IPv4Address | IPv6Address, IPv4Address | IPv6Address]:
    """Source and destination of an IPv4/IPv6 header (already checked by parse_ip)."""
    if packet[0] >> 4 == 6:
        return addr(packet[8:24]), addr(packet[24:40])
    return addr(packet[12:16]), addr(packet[16:20])


def flow_key(
    info: IpInfo,
    packet: bytes,
    src: IPv4Address | IPv6Address,
    dst: IPv4Address | IPv6Address,
    dev: str,
) -> FlowKey:
    """What a policy lookup needs of ``packet``: ``Flow(*key)`` is its flow. Ports for
    TCP and UDP; for ICMP and ICMPv6 the type and code stand in the ports' places, as
    the selector's ``type``/``code`` (xfrm_flowi_sport/dport, decode_session4/6) [C]."""
    off = info.hlen
    proto = info.proto
    if proto in (6, 17) and len(packet) >= off + 4:
        return (
            src,
            dst,
            proto,
            int.from_bytes(packet[off : off + 2], "big"),
            int.from_bytes(packet[off + 2 : off + 4], "big"),
            dev,
        )
    if proto in (1, 58) and len(packet) >= off + 2:
        return (src, dst, proto, packet[off], packet[off + 1], dev)
    return (src, dst, proto, 0, 0, dev)


def is_natt(info: IpInfo, packet: bytes) -> bool:
    """UDP 4500 with a non-zero marker: ESP in UDP (RFC 3948 2.2)."""
    if info.proto != IPPROTO_UDP:
        return False
    off = info.hlen
    return (
        len(packet) >= off + 12
        and packet[off + 2 : off + 4] == b"\x11\x94"
        and packet[off + 8 : off + 12] != b"\x00\x00\x00\x00"
    )


def software_sa(walk: Walk, node: Node, state: XfrmState, tap: str, counter: str) -> EspSA | None:
    """The state's software SA, or a drop counted on ``counter`` when the ESP datapath
    does not model what the state holds (an algorithm or mode ``ip xfrm`` accepts)."""
    try:
        sa: EspSA = walk.lab.sa_runtime(node.name).get(state)
    except EsplabError as exc:
        node.xfrm.mib.bump(counter)
        walk.drop(
            tap,
            node.name,
            f"not modelled by the ESP datapath: {exc}",
            counter,
            "the state is valid for ip xfrm, but this lab's ESP has no such algorithm or mode",
            "M",
        )
        return None
    return sa


def expire(node: Node, state: XfrmState, counter: str | None) -> None:
    """A state that reached its hard lifetime is gone: xfrm_state_check_expire marks it
    XFRM_STATE_EXPIRED and starts its timer at once, and xfrm_timer_handler deletes it
    (__xfrm_state_delete, km_state_expired); later packets find no state [C]."""
    if counter in ("XfrmOutStateExpired", "XfrmInStateExpired"):
        node.xfrm.expire_state(state)  # km_state_expired: ip xfrm monitor's "Expired"


def refused_counter(walk: Walk, state: XfrmState) -> str:
    """The MIB counter of an ESP output that refused the packet: a pinned sequence
    number past the SA's sequence space (32 bits, 64 with ESN) is an overflow,
    whichever datapath was to carry it (the kernel checks before the device sees the
    packet, 3.9) [C]."""
    seq = walk.opts.seq
    seq_max = (1 << 64) - 1 if "esn" in state.flags else (1 << 32) - 1
    return "XfrmOutStateSeqError" if seq is not None and seq > seq_max else "XfrmOutStateProtoError"


def policy_refused(
    walk: Walk,
    name: str,
    decision: OutputDecision,
    states: Sequence[XfrmState] = (),
    flow: Any = None,
) -> None:
    """The outbound policy lookup refused the flow: action block, or no SA for a
    template (the MIB counter came with the decision) [C]. For no SA, the stage says
    which states almost matched and why each was passed over (``states``: the node's
    SAD, ``flow``: the packet's :class:`Flow`), and the command that would fix it [M]."""
    policy = decision.policy
    if decision.verdict == "default-block":
        walk.drop(
            f"{name}.xfrm.policy(out)",
            name,
            "no policy, and the default for dir out is block: dropped (EPERM)",
            None,
            "xfrm_lookup_with_ifid finds no outbound policy and the default policy "
            "(ip xfrm policy setdefault out block) refuses the flow: the sender gets "
            "-EPERM (Operation not permitted) and no XFRM counter moves; ip xfrm policy "
            "setdefault out accept, or a policy for this flow, lets it through",
        )
        return
    pol_text = (
        f"policy {policy.sel.src} -> {policy.sel.dst} dir out priority {policy.priority}"
        if policy
        else "policy"
    )
    reason = {"block": "policy action block", "no-state": "no SA for the template"}.get(
        decision.verdict, decision.counter or decision.verdict
    )
    why = f"{pol_text}: {reason} ({decision.counter})"
    if decision.verdict == "no-state" and policy is not None and flow is not None:
        from esplab.model.kernel.xfrm.nearmiss import explain_no_state

        why += "; " + explain_no_state(states, flow, policy)
    walk.drop(f"{name}.xfrm.policy(out)", name, reason, decision.counter, why)
