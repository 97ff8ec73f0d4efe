"""The packet walk: from the node that sends to the node that delivers, stage by stage.

``Datapath.send`` injects one IP packet at a node's device and returns its
journey. The walk follows Linux: route lookup, XFRM output (policy, state, the
datapath the SA selects), the device's transmit (with the DSA tagger and the
Airoha descriptor on lan ports), the wire, the peer's receive, XFRM input
(replay and ICV), and delivery to the sink or forwarding onwards.

Every decision becomes a Stage with its reason and fidelity tag; a drop is a
stage too, with the counter it bumped. Snapshots are bytes, taken only while
tracing is on. Decision lines that format addresses are formatted when read
(``LazyStage``); each hop parses the IP header once and passes it on. What a
walk carries is :class:`~esplab.model.journey.walk.Walk`; path MTU is in
:mod:`~esplab.model.journey.pmtu`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address
from typing import TYPE_CHECKING

from esplab.errors import KernelError, PeerError
from esplab.model.journey.esp_output import esp_output
from esplab.model.journey.l2 import (
    count_conduit,
    count_cpu_port,
    dsa_tx_stages,
    ether_frame,
)
from esplab.model.journey.pmtu import too_big
from esplab.model.journey.receive import ReceivePath
from esplab.model.journey.walk import (
    SendOptions,
    Walk,
    addrs,
    flow_key,
    policy_refused,
    tapname,
)
from esplab.model.kernel.esp.ip import (
    IpInfo,
    parse_ip,
)
from esplab.model.kernel.node import Node
from esplab.model.kernel.stack.netdev import NetDev
from esplab.model.kernel.xfrm.objects import (
    Flow,
    XfrmState,
)
from esplab.model.stage import Journey, LazyStage, Stage

if TYPE_CHECKING:
    from esplab.model.journey.board import Board

__all__ = ["Datapath", "SendOptions", "SendRun"]

_NO_PINS = SendOptions()


@dataclass
class SendRun:
    """What a run of sends leaves: the journeys' ids, how many were delivered, and
    the last journey."""

    ids: list[int] = field(default_factory=list)
    delivered: int = 0
    last: Journey | None = None

    def add(self, journey: Journey) -> None:
        self.ids.append(journey.id)
        self.delivered += journey.delivered
        self.last = journey


class Datapath(ReceivePath):
    """Walks packets through the lab."""

    def __init__(self, lab: Board) -> None:
        self.lab = lab

    # -- entry -------------------------------------------------------------
    def send(
        self, node: str, dev: str | None, packet: bytes, opts: SendOptions | None = None
    ) -> Journey:
        """Send ``packet`` (an IP packet) from ``node``, out of ``dev`` if given."""
        return self._send(node, dev, packet, opts or _NO_PINS).journey

    def send_many(
        self,
        node: str,
        dev: str | None,
        packet: bytes,
        count: int,
        opts: Callable[[int], SendOptions] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> SendRun:
        """Send ``packet`` ``count`` times (``opts(n)``: the pins of the n-th, from 0),
        until ``stop()`` says so; every packet is walked. The journeys themselves stay
        in the journey ring only (a run that held them all would grow without limit,
        and slow the garbage collector's passes by a fifth); the run keeps their ids."""
        run = SendRun()
        for n in range(count):
            run.add(self.send(node, dev, packet, None if opts is None else opts(n)))
            if stop is not None and stop():
                break
        return run

    def check_dev(self, node: str, dev: str | None) -> Node:
        """The sending node, when ``dev`` (if given) is up: else ENETDOWN."""
        src = self.lab.node(node)
        if dev is not None and not src.dev(dev).up:
            raise KernelError(
                "ENETDOWN", f"{node} {dev} is down", prefix="send", hint=f"ip link set {dev} up"
            )
        return src

    def _send(
        self,
        node: str,
        dev: str | None,
        packet: bytes,
        opts: SendOptions,
    ) -> Walk:
        """The walk of one packet sent."""
        lab = self.lab
        if node in lab.real_peers:
            raise PeerError(
                f"{node} is a real Linux kernel: esplab does not send in its name",
                hint=f"run it there: {node} ping ADDR, or peer {node} off",
            )
        src = self.check_dev(node, dev)
        lab.engine_snapshots(lab.settings.tracing)
        journey = lab.journeys.new(f"{node}" + (f" {dev}" if dev else ""))
        walk = Walk(lab, journey, opts)
        walk.record(
            f"{node}.out",
            node,
            "{} sends {} bytes",
            "",
            "C",
            None,
            packet,
            "ip",
            None,
            {"len": len(packet)},
            (node, len(packet)),
        )
        self._output(walk, src, packet, dev, hops=0)
        if not journey.verdict:
            journey.verdict = "no verdict"
        return walk

    def send_frame(self, node: str, dev: str, frame: bytes) -> Journey:
        """Send an Ethernet frame as it is (VLAN tags included) out of ``node``'s ``dev``:
        no routing, no XFRM; the DSA tagger merges with an inline 802.1Q/802.1ad header
        (airoha-dsa-xfrm.md 2.2) [C]."""
        src = self.lab.node(node)
        out = src.dev(dev)
        if not out.up:
            raise KernelError(
                "ENETDOWN", f"{node} {dev} is down", prefix="send", hint=f"ip link set {dev} up"
            )
        self.lab.engine_snapshots(self.lab.settings.tracing)
        journey = self.lab.journeys.new(f"{node} {dev} (frame)")
        walk = Walk(self.lab, journey, SendOptions())
        walk.add(
            Stage(
                f"{node}.out",
                node,
                f"{node} sends a {len(frame)}-byte frame",
                data=frame,
                kind="ether",
            )
        )
        self._xmit(walk, src, dev, frame, 0, f"xmit {len(frame)} bytes as given")
        if not journey.verdict:
            journey.verdict = "no verdict"
        return journey

    def deliver_frame(self, journey: Journey, node: str, dev: str, frame: bytes) -> None:
        """A frame leaves ``node``'s ``dev`` onto its wire (e.g. an AF_XDP transmit): the
        walk continues at the other end, within ``journey``."""
        peer = self.lab.peer_of(node, dev)
        if peer is None:
            journey.verdict = f"sent out {dev} (nothing connected)"
            return
        walk = Walk(self.lab, journey, SendOptions())
        self._receive(walk, self.lab.node(peer[0]), peer[1], frame, 1)
        if not journey.verdict:
            journey.verdict = "no verdict"

    # -- IP output ---------------------------------------------------------
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
        """IP output of ``packet`` from ``node`` (out of ``bound`` if given); a
        ``forwarded`` packet is measured against its device's MTU alone (see
        :meth:`_transmit`)."""
        name = node.name
        try:
            info = parse_ip(packet)
        except Exception as exc:
            walk.drop(f"{name}.out", name, "not an IP packet", None, str(exc))
            return
        src, dst = addrs(packet)
        # The node's addresses and the loopback network, read from the header's bytes.
        if node.owns_raw(packet[16:20] if info.version == 4 else packet[24:40]):
            self._loopback(walk, node, info, packet, src, dst, hops)
            return
        route = node.route(dst)
        if route is None:
            walk.drop(
                f"{name}.route",
                name,
                f"no route to {dst}",
                None,
                "no route matches the destination (ENETUNREACH)",
            )
            return
        dev_name = bound or route.dev
        via = route.via if route.dev == dev_name else None
        nexthop = via or dst
        walk.record(
            f"{name}.route",
            name,
            "{} via {} dev {}" if via else "{} dev {}",
            f"longest-prefix match: {node.route_text(route)}",
            "C",
            None,
            None,
            "ip",
            None,
            None,
            (dst, nexthop, dev_name) if via else (dst, dev_name),
        )
        # XFRM output: policy, state, datapath.
        key = flow_key(info, packet, src, dst, dev_name)
        decision = node.xfrm.resolve_output_key(key)
        if decision.verdict == "bypass":
            walk.add(
                Stage(
                    f"{name}.xfrm.policy(out)",
                    name,
                    "no policy: plain IP",
                    "no outbound policy matches this flow",
                    "C",
                )
            )
            self._transmit(walk, node, dev_name, nexthop, packet, hops, forwarded)
            return
        policy = decision.policy
        if decision.verdict != "ipsec":
            policy_refused(walk, name, decision, node.xfrm.states, Flow(*key))
            return
        if policy:
            walk.record(
                f"{name}.xfrm.policy(out)",
                name,
                "policy {} -> {} dir out priority {}: ipsec",
                "the flow matches an outbound policy with templates",
                "C",
                None,
                None,
                "ip",
                None,
                None,
                (policy.sel.src, policy.sel.dst, policy.priority),
            )
        else:
            walk.add(
                Stage(
                    f"{name}.xfrm.policy(out)",
                    name,
                    "policy: ipsec",
                    "the flow matches an outbound policy with templates",
                    "C",
                )
            )
        if decision.states and decision.states[-1].mode == "tunnel":
            # The bundle's route is the tunnel endpoint's (xfrm_bundle_create looks it up
            # before any output): offload and the size checks are made for that device.
            tun_dst = decision.states[-1].dst
            route = node.route(tun_dst)
            if route is None:
                walk.drop(
                    f"{node.name}.route",
                    node.name,
                    f"no route to {tun_dst}",
                    None,
                    "the tunnel endpoint is unreachable",
                )
                return
            dev_name, nexthop = route.dev, route.via or tun_dst
        self._protect(walk, node, decision.states, packet, dev_name, nexthop, hops, forwarded, info)

    def _protect(
        self,
        walk: Walk,
        node: Node,
        states: tuple[XfrmState, ...],
        packet: bytes,
        dev_name: str,
        nexthop: object,
        hops: int,
        forwarded: bool,
        info: IpInfo | None = None,
    ) -> None:
        """ESP output with each state of the bundle in turn, then the device's transmit
        (``info``: the packet's parsed header, for the first state)."""
        for state in states:
            out = esp_output(self, walk, node, state, packet, dev_name, info, forwarded)
            if out is None:
                return
            packet = out
            info = None
        self._transmit(walk, node, dev_name, nexthop, packet, hops, forwarded)

    def _loopback(
        self,
        walk: Walk,
        node: Node,
        info: IpInfo,
        packet: bytes,
        src: IPv4Address | IPv6Address,
        dst: IPv4Address | IPv6Address,
        hops: int,
    ) -> None:
        """A packet to one of the node's own addresses, or to the loopback network
        (127.0.0.0/8, ::1, which lo holds): the local table's route sends it through
        ``lo`` and it comes straight back in (``ip route show table local``) [C]."""
        name = node.name
        walk.add(
            LazyStage(
                f"{name}.route",
                name,
                "{} is local: dev lo",
                "the local table has a route for every address of the node (RTN_LOCAL); "
                "the packet loops back through lo",
                "C",
                args=(dst,),
            )
        )
        key = flow_key(info, packet, src, dst, "lo")
        decision = node.xfrm.resolve_output_key(key)
        if decision.verdict == "ipsec":
            walk.drop(
                f"{name}.xfrm.policy(out)",
                name,
                "IPsec on loopback is not modelled",
                None,
                f"an outbound policy with templates matches this flow to {dst} through lo; "
                "the lab does not model IPsec over loopback",
                "M",
            )
            return
        # The default policy spares loopback (xfrm_lookup_with_ifid, nopol: a route
        # through an IFF_LOOPBACK device) [C].
        if decision.verdict not in ("bypass", "default-block"):
            policy_refused(walk, name, decision, node.xfrm.states, Flow(*key))
            return
        lo = node.devs.get("lo")
        if lo is not None and not lo.up:
            # __dev_queue_xmit on a device that is down: -ENETDOWN, tx_dropped [C].
            lo.counters.tx_dropped += 1
            walk.drop(
                f"{name}.lo",
                "lo",
                "lo is down",
                "tx_dropped",
                "local traffic leaves through lo, and lo is administratively down (ENETDOWN)",
            )
            return
        if lo is not None:  # loopback_xmit counts the packet out and in
            counters = lo.counters
            counters.tx_packets += 1
            counters.tx_bytes += len(packet)
            counters.rx_packets += 1
            counters.rx_bytes += len(packet)
        walk.add(
            Stage(
                f"{name}.lo",
                "lo",
                f"loopback {len(packet)} bytes",
                "loopback_xmit hands the packet back to the node's receive path",
                "C",
                {},
                packet if walk.snap else None,
                "ip",
            )
        )
        self._input(walk, node, "lo", packet, hops + 1)

    def _transmit(
        self,
        walk: Walk,
        node: Node,
        dev_name: str,
        nexthop: object,
        packet: bytes,
        hops: int,
        forwarded: bool = False,
    ) -> None:
        """Neighbour, MTU and the device's transmit. The MTU is the device's, or for a
        packet the node sends itself the path MTU it learned (a forwarded packet ignores
        learned path MTUs: ip_dst_mtu_maybe_forward with ip_forward_use_pmtu 0,
        ip6_dst_mtu_maybe_forward) [C]."""
        dev = node.dev(dev_name)
        if not dev.up:
            dev.counters.tx_dropped += 1
            walk.drop(
                f"{tapname(node, dev_name)}.tx",
                dev_name,
                "device is down",
                "tx_dropped",
                f"{dev_name} is administratively down",
            )
            return
        mtu = dev.mtu
        if node.pmtu and not forwarded:
            learned = node.path_mtu(addrs(packet)[1])
            if learned is not None and learned < mtu:
                mtu = learned
        if len(packet) > mtu:
            too_big(self, walk, node, dev_name, packet, mtu, learned=mtu != dev.mtu)
            return
        neigh = node.lookup_neigh(nexthop, dev_name)  # type: ignore[arg-type]
        if neigh is None:
            walk.drop(
                f"{node.name}.neigh",
                node.name,
                f"no neighbour entry for {nexthop}",
                None,
                "neighbours are static in this lab: add one with ip neigh add",
                fidelity="M",
            )
            return
        frame = ether_frame(neigh.mac, dev.mac, packet)
        self._xmit(
            walk, node, dev_name, frame, hops, f"xmit {len(frame)} bytes to {neigh.mac}", dev
        )

    def _xmit(
        self,
        walk: Walk,
        node: Node,
        dev_name: str,
        frame: bytes,
        hops: int,
        decision: str,
        dev: NetDev | None = None,
    ) -> None:
        """A frame leaves ``dev_name`` (``dev``, when the caller has it): counters, the
        DSA tagger on user ports, the wire."""
        if dev is None:
            dev = node.dev(dev_name)
        counters = dev.counters
        counters.tx_packets += 1
        counters.tx_bytes += len(frame)
        tname = tapname(node, dev_name)
        walk.record(f"{tname}.tx", dev_name, decision, "", "C", {"tx_packets": 1})
        if dev.kind == "dsa-user" and dev.switch_port is not None:
            count_conduit(node, dev, frame, tx=True)
            walk.extend(dsa_tx_stages(frame, dev.switch_port, dev_name, walk.snap))
        else:
            if dev.kind == "gdm" and node.is_conduit(dev_name):
                count_cpu_port(dev, frame)  # sent on the conduit itself, untagged
            walk.record(f"{tname}.wire", dev_name, "on the wire", "", "C", None, frame, "ether")
        peer = self.lab.peer_of(node.name, dev_name)
        if peer is None:
            walk.journey.verdict = f"sent out {dev_name} (nothing connected)"
            return
        if self.lab.real_peers and peer[0] in self.lab.real_peers:
            self.lab.real_peers[peer[0]].carry(self, walk, frame, hops + 1)
            return
        self._receive(walk, self.lab.node(peer[0]), peer[1], frame, hops + 1)

    def receive_from_wire(self, walk: Walk, node: str, dev: str, frame: bytes, hops: int) -> None:
        """A frame arrives at ``node``'s ``dev`` from its wire (a real peer's frames)."""
        self._receive(walk, self.lab.node(node), dev, frame, hops)
