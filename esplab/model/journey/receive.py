"""The receiving half of the walk: a frame arrives at a device, IP input, XFRM input
(the engine or software ESP, then the policy check), and delivery to the node's sink
or forwarding onwards.

:class:`ReceivePath` is the part of :class:`~esplab.model.journey.datapath.Datapath` that
starts at a wire; the sending half (route, XFRM output, transmit) is in
:mod:`~esplab.model.journey.datapath`, and forwarding hands a packet back to it.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address
from typing import TYPE_CHECKING, Literal

from esplab.model.journey.esp_input import esp_input
from esplab.model.journey.l2 import (
    count_conduit,
    dsa_rx_stages,
)
from esplab.model.journey.receive_l2 import (
    frame_checks,
    untag,
)
from esplab.model.journey.walk import (
    SendOptions,
    Walk,
    addrs,
    decrease_ttl,
    flow_key,
    icmp_time_exceeded,
    is_natt,
    no_icmp,
    tapname,
)
from esplab.model.kernel.esp.ip import (
    IPPROTO_ESP,
    IpInfo,
    parse_ip,
)
from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.pmtu_cache import too_big_report
from esplab.model.kernel.stack.route import is_loopback, raw_loopback
from esplab.model.kernel.xfrm.objects import Flow
from esplab.model.kernel.xfrm.tables import FlowKey
from esplab.model.stage import Journey, LazyStage, Stage

if TYPE_CHECKING:
    from esplab.model.journey.board import Board

__all__ = ["MAX_HOPS", "ReceivePath"]

MAX_HOPS = 8


_V4_MAPPED = bytes(10) + b"\xff\xff"


def _martian_addrs(raw_dst: bytes, packet: bytes, version: int) -> bool:
    """A loopback destination or source, or (IPv6) a v4-mapped source: what IP input
    drops from a device (ip_route_input_slow; ip6_rcv_core, RFC 4291 2.5.5.2) [C]."""
    if version == 4:
        return raw_dst[0] == 127 or packet[12] == 127  # raw_loopback of each
    src = packet[8:24]
    return raw_loopback(raw_dst) or raw_loopback(src) or src[:12] == _V4_MAPPED


def _martian(
    walk: Walk, node: Node, src: IPv4Address | IPv6Address, dst: IPv4Address | IPv6Address
) -> None:
    """A loopback address arriving from a wire: IPv4 routing calls it a martian
    (ip_route_input_slow: in_martian_dst / in_martian_src); IPv6 drops it at once
    (ip6_rcv_core, Ip6InAddrErrors) [C]."""
    which = "destination" if is_loopback(dst) else "source"
    counter = (
        "Ip6InAddrErrors"
        if dst.version == 6
        else f"in_martian_{'dst' if is_loopback(dst) else 'src'}"
    )
    walk.drop(
        f"{node.name}.ip",
        node.name,
        f"martian {which} {dst if which == 'destination' else src}",
        counter,
        "a loopback address only ever comes from lo; one arriving on a device is dropped",
    )


def _hold_fragment(walk: Walk, node: Node, packet: bytes, info: IpInfo) -> None:
    """ip_local_deliver / ipv6_frag_rcv: a fragment addressed to the node waits for
    the others, and reassembly is not modelled: it goes no further [M] (ReasmReqds
    [C]). A tunnel's inner fragment comes back to IP input and waits the same way."""
    counter = "Ip6ReasmReqds" if info.version == 6 else "ReasmReqds"
    walk.drop(
        f"{node.name}.ip",
        node.name,
        "IP fragment held for reassembly, which the lab does not model",
        counter,
        "a fragment addressed to the node waits in the reassembly queue for the "
        "rest of its packet (ip_defrag, ipv6_frag_rcv); the lab does not reassemble, "
        "so nothing is delivered",
        "M",
        data=packet,
    )


class ReceivePath:
    """From a wire to delivery (the Datapath's receiving half)."""

    lab: Board

    def _output(
        self,
        walk: Walk,
        node: Node,
        packet: bytes,
        bound: str | None,
        hops: int,
        *,
        forwarded: bool = False,
    ) -> None:
        """The sending half's IP output (Datapath): forwarding hands packets to it."""
        raise NotImplementedError

    def send(
        self, node: str, dev: str | None, packet: bytes, opts: SendOptions | None = None
    ) -> Journey:
        """The sending half's entry (Datapath): ICMP errors go back through it."""
        raise NotImplementedError

    def _receive(self, walk: Walk, node: Node, dev_name: str, frame: bytes, hops: int) -> None:
        dev = node.dev(dev_name)
        if dev.kind == "dsa-user" and dev.switch_port is not None:
            walk.add(
                Stage(
                    f"{dev_name}.wire",
                    dev_name,
                    f"frame enters switch port {dev.switch_port}",
                    data=None,
                )
            )
            if dev.up:  # a disabled switch port passes nothing to the CPU
                count_conduit(node, dev, frame, tx=False)
                walk.extend(dsa_rx_stages(frame, dev.switch_port, dev_name, walk.snap))
        if not dev.up:
            dev.counters.rx_dropped += 1
            walk.drop(
                f"{tapname(node, dev_name)}.rx",
                dev_name,
                "device is down",
                "rx_dropped",
                f"{node.name} {dev_name} is down: a real port that is down receives "
                "nothing; the lab counts the lost frame in its rx_dropped so the loss shows",
                "M",
            )
            return
        counters = dev.counters
        counters.rx_packets += 1
        counters.rx_bytes += len(frame)
        if self.lab.xdp_state is not None:
            from esplab.model.journey.xdp_rx import xdp_rx_hook

            if xdp_rx_hook(self.lab, node.name, dev_name, frame, walk.journey):
                return
        untagged = untag(walk, node, dev, frame)
        if untagged is None:
            return
        frame, etype = untagged
        packet = frame[14:]
        info = frame_checks(walk, node, dev, frame, packet, etype)
        if info is None:
            return
        walk.record(
            f"{tapname(node, dev_name)}.rx",
            dev_name,
            "{} {} receives {} bytes",
            "",
            "C",
            {"rx_packets": 1},
            packet,
            "ip",
            None,
            None,
            (node.name, dev_name, len(frame)),
        )
        self._input(walk, node, dev_name, packet, hops, info)

    # -- IP input ----------------------------------------------------------------
    def _input(
        self,
        walk: Walk,
        node: Node,
        dev_name: str,
        packet: bytes,
        hops: int,
        info: IpInfo | None = None,
    ) -> None:
        """IP input of ``packet`` (``info``: its parsed header, when the caller has it)."""
        if hops > MAX_HOPS:
            walk.drop(f"{node.name}.route", node.name, "too many hops", None, "routing loop")
            return
        if info is None:
            info = parse_ip(packet)
        src, dst = addrs(packet)
        raw_dst = packet[16:20] if info.version == 4 else packet[24:40]
        if dev_name != "lo" and _martian_addrs(raw_dst, packet, info.version):
            _martian(walk, node, src, dst)
            return
        walk.secpath = []
        local = node.owns_raw(raw_dst)
        if local and info.fragment:
            _hold_fragment(walk, node, packet, info)
            return
        if local and (info.proto == IPPROTO_ESP or is_natt(info, packet)):
            inner = esp_input(self.lab, walk, node, dev_name, packet, info, dst)
            if inner is not None:
                self._inner_input(walk, node, dev_name, inner, hops)
            return
        self._local_or_forward(walk, node, dev_name, packet, info, src, dst, local, hops)

    def _inner_input(self, walk: Walk, node: Node, dev_name: str, packet: bytes, hops: int) -> None:
        """What XFRM input decapsulated goes through IP input again (ip_rcv,
        ip_route_input): martian addresses, a fragment held, then delivery or
        forwarding."""
        info = parse_ip(packet)
        src, dst = addrs(packet)
        raw_dst = packet[16:20] if info.version == 4 else packet[24:40]
        if _martian_addrs(raw_dst, packet, info.version):
            _martian(walk, node, src, dst)
            return
        local = node.owns_raw(raw_dst)
        if local and info.fragment:
            _hold_fragment(walk, node, packet, info)
            return
        self._local_or_forward(walk, node, dev_name, packet, info, src, dst, local, hops)

    def _local_or_forward(
        self,
        walk: Walk,
        node: Node,
        dev_name: str,
        packet: bytes,
        info: IpInfo,
        src: IPv4Address | IPv6Address,
        dst: IPv4Address | IPv6Address,
        local: bool,
        hops: int,
    ) -> None:
        """The inbound policy check, then local delivery or forwarding."""
        key = flow_key(info, packet, src, dst, dev_name)
        if not self._policy_check(walk, node, key, local):
            return
        if local:
            node.count_flow(key, len(packet))
            walk.record(
                f"{node.name}.deliver",
                node.name,
                "delivered to {} (proto {}, {} bytes)",
                "",
                "C",
                None,
                packet,
                "ip",
                None,
                None,
                (dst, info.proto, len(packet)),
            )
            if info.proto in (1, 58):
                self._learn_pmtu(walk, node, packet, info)
            walk.journey.verdict = f"delivered to {node.name}"
            walk.journey.delivered = True
            for hook in self.lab.deliver_hooks:
                hook(node.name, packet)
            return
        if not node.forwarding:
            walk.drop(
                f"{node.name}.route",
                node.name,
                f"{dst} is not local and forwarding is off",
                None,
                "a host does not forward (net.ipv4.ip_forward = 0)",
            )
            return
        self._forward(walk, node, dev_name, packet, info, dst, hops)

    def _forward(
        self,
        walk: Walk,
        node: Node,
        dev_name: str,
        packet: bytes,
        info: IpInfo,
        dst: IPv4Address | IPv6Address,
        hops: int,
    ) -> None:
        """ip_forward / ip6_forward after the policy check: a packet whose TTL (hop
        limit) would reach 0 is dropped and its sender gets ICMP time exceeded
        (InHdrErrors, Ip6InHdrErrors); any other goes on one lower [C]. Errors of the
        forward path (too big) quote it as it arrived (:attr:`Walk.arrived`)."""
        v6 = info.version == 6
        ttl = packet[7] if v6 else packet[8]
        name = node.name
        if ttl <= 1:
            what = "hop limit" if v6 else "TTL"
            icmp = icmp_time_exceeded(node, dev_name, packet)
            counter = "Ip6InHdrErrors" if v6 else "InHdrErrors"
            sent = (
                "sends ICMP time exceeded in transit to its source; the snapshot is that "
                "ICMP message"
                if icmp is not None
                else f"sends no ICMP: {no_icmp(packet, too_big=False)}"
            )
            walk.drop(
                f"{name}.forward",
                name,
                f"{what} {ttl}: ICMP time exceeded"
                if icmp is not None
                else f"{what} {ttl}: dropped, {no_icmp(packet, too_big=False)}",
                counter,
                f"a router does not forward a packet whose {what} would reach 0: "
                f"{'ip6_forward' if v6 else 'ip_forward'} counts {counter} and {sent}",
                data=icmp,
            )
            if icmp is not None and not node.owns(addrs(packet)[0]):
                self.send(name, None, icmp)  # back to the sender, a journey of its own
            return
        walk.add(
            LazyStage(
                f"{name}.forward",
                name,
                "forward towards {}, {} {} -> {}",
                "ip_decrease_ttl (the checksum updated, RFC 1624) / ip6_forward's hop_limit--",
                "C",
                args=(dst, "hop limit" if v6 else "TTL", ttl, ttl - 1),
            )
        )
        walk.arrived = packet
        self._output(walk, node, decrease_ttl(packet), None, hops, forwarded=True)

    def _learn_pmtu(self, walk: Walk, node: Node, packet: bytes, info: IpInfo) -> None:
        """ICMP too big reached its sender: the path MTU to the packet's destination
        becomes a route exception (:mod:`~esplab.model.kernel.stack.pmtu_cache`). Linux learns it
        through the socket that sent the packet (udp_err, ping_err, tcp_v4_err ->
        ipv4_sk_update_pmtu; their IPv6 twins): the lab's sender stands for that
        socket [D]."""
        report = too_big_report(packet, info.hlen, info.proto)
        if report is None:
            return
        mtu, current = node.learn_pmtu(report)
        if mtu is None:
            walk.add(
                LazyStage(
                    f"{node.name}.pmtu",
                    node.name,
                    "ICMP reports mtu {} for {}: not below the path MTU {}, ignored",
                    "a report only lowers the path MTU (__ip_rt_update_pmtu, rt6_do_update_pmtu)",
                    "C",
                    args=(report.mtu, report.dst, current),
                )
            )
            return
        walk.add(
            LazyStage(
                f"{node.name}.pmtu",
                node.name,
                "path MTU to {} is now {} (route exception, from ICMP mtu {})",
                "the sending socket's error handler keeps the reported MTU as an exception "
                "on the route to the destination (floor 552 for IPv4, 1280 for IPv6); ip "
                "route get shows it. The lab's sender stands for that socket",
                "D",
                args=(report.dst, mtu, report.mtu),
            )
        )

    # -- IPsec input and the engine ------------------------------------------------
    def _policy_check(self, walk: Walk, node: Node, key: FlowKey, local: bool) -> bool:
        """``__xfrm_policy_check`` for the flow ``key``: the inbound (or forward) policy
        must be satisfied by the states that decrypted the packet (airoha-dsa-xfrm.md
        3.2, 3.8) [C]."""
        direction: Literal["in", "fwd"] = "in" if local else "fwd"
        policy = node.xfrm.lookup_policy_key(key, direction)
        tap = f"{node.name}.xfrm.policy({direction})"
        if policy is None:
            # No policy and the default for the direction is block: XfrmInNoPols
            # (__xfrm_policy_check). What came in through lo is spared: its routes
            # carry DST_NOPOLICY (__xfrm_check_dev_nopolicy; inetdev_init sets
            # disable_policy on the loopback device) [C: net/xfrm/xfrm_policy.c].
            if node.xfrm.defaults[direction] == "block" and key[5] != "lo":
                node.xfrm.mib.bump("XfrmInNoPols")
                walk.drop(
                    tap,
                    node.name,
                    f"no {direction} policy, and the default for dir {direction} is block",
                    "XfrmInNoPols",
                    "__xfrm_policy_check: no policy matches and the default policy "
                    f"(ip xfrm policy setdefault {direction} block) drops the packet; "
                    f"ip xfrm policy setdefault {direction} accept, or a policy for this "
                    "flow, lets it through",
                )
                return False
            # Else allowed, unless a tunnel (or BEET) SA decapsulated the packet
            # (secpath_has_nontransport -> xfrm_secpath_reject, XfrmInNoPols) [C].
            for x in walk.secpath:
                if x.mode != "transport":
                    break
            else:
                return True
            node.xfrm.mib.bump("XfrmInNoPols")
            x = walk.secpath[-1]
            flow = Flow(*key)
            fix = (
                f"ip xfrm policy add src {flow.src} dst {flow.dst} dir {direction} tmpl src "
                f"{x.src} dst {x.dst} proto esp reqid {x.reqid} mode {x.mode}"
            )
            walk.drop(
                tap,
                node.name,
                f"decapsulated by a {x.mode} SA, and no {direction} policy",
                "XfrmInNoPols",
                "__xfrm_policy_check: a packet that came out of a tunnel needs a policy "
                f"that allows it (airoha-dsa-xfrm.md 3.8); the check: a policy dir {direction} "
                f"for {flow.src} -> {flow.dst}, none matches. Fix: {fix}",
            )
            return False
        if policy.action == "block":
            node.xfrm.mib.bump("XfrmInPolBlock")
            walk.drop(
                tap,
                node.name,
                "policy action block",
                "XfrmInPolBlock",
                f"the {direction} policy blocks this flow",
            )
            return False
        for x in walk.secpath:
            if x.is_packet_offload:
                # Packet offload: the check is CRYPTO_DONE and CRYPTO_SUCCESS, no MIB change.
                return True
        for tmpl in policy.templates:
            if tmpl.level == "use":
                continue
            if not any(
                x.proto == tmpl.proto
                and x.mode == tmpl.mode
                and (tmpl.reqid == 0 or x.reqid == tmpl.reqid)
                and (tmpl.spi == 0 or x.spi == tmpl.spi)
                for x in walk.secpath
            ):
                node.xfrm.mib.bump("XfrmInTmplMismatch")
                what = "arrived in clear" if not walk.secpath else "came through another SA"
                walk.drop(
                    tap,
                    node.name,
                    f"the {direction} policy requires ESP reqid {tmpl.reqid}; the packet {what}",
                    "XfrmInTmplMismatch",
                    "xfrm_policy_check: the secpath does not satisfy the policy's "
                    "templates (XfrmInTmplMismatch)",
                )
                return False
        return True
