"""The packet walk: from the node that sends to the node that delivers, stage by stage.

``Datapath.send`` injects one IP packet at a node's device and returns its
journey. The walk follows Linux: route lookup, XFRM output (policy, state, the
datapath the SA selects), the device's transmit (with the DSA tagger and the
Airoha descriptor on lan ports), the wire, the peer's receive, XFRM input
(replay and ICV), and delivery to the sink or forwarding onwards.

Every decision becomes a Stage with its reason and fidelity tag; a drop is a
stage too, with the counter it bumped. Snapshots are bytes, taken only while
tracing is on. Decision lines that format addresses are formatted when read
(``LazyTextStage``); each hop parses the IP header once and passes it on. What a
walk carries is :class:`~esplab.model.walk.Walk`; path MTU is in :mod:`~esplab.model.pmtu`.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address
from typing import TYPE_CHECKING, Literal

from esplab.errors import BadArgument, DecodeError, EsplabError, KernelError
from esplab.model import esp as esp_core
from esplab.model.esp_ip import IpInfo, parse_ip
from esplab.model.journey import Journey, LazyTextStage, Stage
from esplab.model.l2 import (
    ETH_P_8021AD,
    ETH_P_8021Q,
    ETH_P_IP,
    ETH_P_IPV6,
    MTK_TAG_LEN,
    dsa_rx_stages,
    dsa_tx_stages,
    ether_frame,
    mac_bytes,
)
from esplab.model.netdev import NetDev
from esplab.model.node import Node
from esplab.model.offload_rules import OffloadVerdict, esp_length, offload_ok
from esplab.model.pmtu import too_big, tunnel_too_big
from esplab.model.pmtu_cache import learn, too_big_report
from esplab.model.walk import (
    IPPROTO_UDP,
    SendOptions,
    Walk,
    addrs,
    flow_key,
    is_natt,
    tapname,
)
from esplab.model.xfrm.objects import XfrmState
from esplab.model.xfrm.tables import FlowKey

if TYPE_CHECKING:
    from esplab.model.esp_sa import EspSA
    from esplab.model.lab import Lab

__all__ = ["Datapath", "SendOptions"]

OFFLOADED = ("crypto", "packet")
IPPROTO_ESP = 50
MAX_HOPS = 8

_NO_OFFLOAD = OffloadVerdict("sw", "no offload requested", "C")


class Datapath:
    """Walks packets through the lab."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab

    # -- entry -------------------------------------------------------------
    def send(
        self, node: str, dev: str | None, packet: bytes, opts: SendOptions | None = None
    ) -> Journey:
        """Send ``packet`` (an IP packet) from ``node``, out of ``dev`` if given."""
        lab = self.lab
        src = lab.node(node)
        if dev is not None:
            out_dev = src.dev(dev)
            if not out_dev.up:
                raise KernelError(
                    "ENETDOWN", f"{node} {dev} is down", prefix="send", hint=f"ip link set {dev} up"
                )
        lab.engine_snapshots(lab.settings.tracing)
        journey = lab.journeys.new(f"{node}" + (f" {dev}" if dev else ""))
        walk = Walk(lab, journey, opts or SendOptions())
        walk.add(
            Stage(
                f"{node}.out",
                node,
                f"{node} sends {len(packet)} bytes",
                data=packet,
                kind="ip",
                meta={"len": len(packet)},
            )
        )
        self._output(walk, src, packet, dev, hops=0)
        if not journey.verdict:
            journey.verdict = "no verdict"
        return journey

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
    def _output(self, walk: Walk, node: Node, packet: bytes, bound: str | None, hops: int) -> None:
        name = node.name
        try:
            info = parse_ip(packet)
        except Exception as exc:
            walk.drop(f"{name}.out", name, "not an IP packet", None, str(exc))
            return
        src, dst = addrs(packet)
        if node.owns(dst):
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
        walk.add(
            LazyTextStage(
                f"{name}.route",
                name,
                "{} via {} dev {}" if via else "{} dev {}",
                f"longest-prefix match: {node.route_text(route)}",
                "C",
                None,
                None,
                args=(dst, nexthop, dev_name) if via else (dst, dev_name),
            )
        )
        # XFRM output: policy, state, datapath.
        decision = node.xfrm.resolve_output_key(flow_key(info, packet, src, dst, dev_name))
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
            self._transmit(walk, node, dev_name, nexthop, packet, hops)
            return
        policy = decision.policy
        if decision.verdict != "ipsec":
            pol_text = (
                f"policy {policy.sel.src} -> {policy.sel.dst} dir out priority {policy.priority}"
                if policy
                else "policy"
            )
            reason = {"block": "policy action block", "no-state": "no SA for the template"}.get(
                decision.verdict, decision.counter or decision.verdict
            )
            walk.drop(
                f"{name}.xfrm.policy(out)",
                name,
                reason,
                decision.counter,
                f"{pol_text}: {reason} ({decision.counter})",
            )
            return
        if policy:
            walk.add(
                LazyTextStage(
                    f"{name}.xfrm.policy(out)",
                    name,
                    "policy {} -> {} dir out priority {}: ipsec",
                    "the flow matches an outbound policy with templates",
                    "C",
                    args=(policy.sel.src, policy.sel.dst, policy.priority),
                )
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
        first: IpInfo | None = info
        for state in decision.states:
            out = self._esp_output(walk, node, state, packet, dev_name, first)
            if out is None:
                return
            packet = out
            first = None
        self._transmit(walk, node, dev_name, nexthop, packet, hops)

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
        """A packet to one of the node's own addresses: the local table's route sends it
        through ``lo`` and it comes straight back in (``ip route show table local``)."""
        name = node.name
        walk.add(
            LazyTextStage(
                f"{name}.route",
                name,
                "{} is local: dev lo",
                "the local table has a route for every address of the node (RTN_LOCAL); "
                "the packet loops back through lo",
                "C",
                args=(dst,),
            )
        )
        decision = node.xfrm.resolve_output_key(flow_key(info, packet, src, dst, "lo"))
        if decision.verdict != "bypass":
            walk.drop(
                f"{name}.xfrm.policy(out)",
                name,
                "IPsec on loopback is not modelled",
                None,
                f"an outbound policy matches this flow to {dst} through lo "
                f"({decision.verdict}); the lab does not model IPsec over loopback",
                "M",
            )
            return
        walk.add(
            Stage(
                f"{name}.lo",
                "lo",
                f"loopback {len(packet)} bytes",
                "loopback_xmit hands the packet back to the node's receive path",
                "C",
            )
        )
        self._input(walk, node, "lo", packet, hops + 1)

    def _esp_output(
        self,
        walk: Walk,
        node: Node,
        state: XfrmState,
        packet: bytes,
        dev_name: str,
        info: IpInfo | None = None,
    ) -> bytes | None:
        """Protect ``packet`` with ``state`` on the datapath the state selects
        (``info``: its parsed header, when the caller has it)."""
        meta = {"spi": f"{state.spi:#010x}", "mode": state.mode}
        verdict = _NO_OFFLOAD
        refused = self.lab.fallback_reason(state)
        if state.offload is None and refused is not None:
            verdict = OffloadVerdict(
                "sw",
                f"not offloaded: {refused}, so the state was "
                "added for software (the driver returned EOPNOTSUPP for "
                "a crypto offload request; airoha-dsa-xfrm.md 3.3, 6.11)",
            )
        runtime = self.lab.sa_runtime(node.name)
        sa = _software_sa(walk, node, state, f"{node.name}.xfrm.state", "XfrmOutStateProtoError")
        if sa is None:
            return None
        if state.mode == "tunnel" and tunnel_too_big(
            self, walk, node, state, sa, packet, dev_name, info
        ):
            return None
        if state.offload is not None:
            out_dev = node.dev(dev_name)
            if info is None:
                info = parse_ip(packet)
            outer = 0 if state.mode != "tunnel" else (20 if state.dst.version == 4 else 40)
            outer += 8 if state.encap is not None else 0
            size = esp_length(len(packet), info.hlen, sa.iv_size, sa.align, sa.icv_len, outer)
            verdict = offload_ok(state, out_dev, packet, size)
            walk.add(
                Stage(
                    f"{dev_name}.xfrmdev",
                    dev_name,
                    f"offload_ok: {'yes' if verdict.datapath in OFFLOADED else 'no'} "
                    f"({verdict.reason})",
                    why=verdict.reason,
                    fidelity=verdict.fidelity,
                    meta=meta,
                )
            )
            if verdict.datapath == "drop":
                node.xfrm.mib.bump("XfrmOutError")
                walk.drop(
                    f"{dev_name}.xfrmdev",
                    dev_name,
                    "packet offload cannot send it",
                    "XfrmOutError",
                    f"{verdict.reason}; packet offload has no software "
                    "fallback (seed 001; airoha-dsa-xfrm.md 3.2, 6.18)",
                )
                return None
        datapath = verdict.datapath
        if datapath in OFFLOADED:
            return self._offload_output(walk, node, state, packet, dev_name, datapath, info)
        tap = f"{node.name}.xfrm.state"
        if self._use_engine_aead(node):
            from esplab.model.engine_path import SW_INPUT, aead_output

            out = aead_output(self.lab, walk, node, state, packet)
            if out is not SW_INPUT:
                return out if isinstance(out, bytes) else None
        try:
            out = esp_core.encrypt(sa, packet, seq=walk.opts.seq, iv=walk.opts.iv)
        except (BadArgument, DecodeError) as exc:
            counter = _refused_counter(walk, sa)
            node.xfrm.mib.bump(counter)
            walk.drop(tap, node.name, str(exc), counter, "the ESP output refused this packet")
            return None
        except KernelError as exc:
            counter = (
                "XfrmOutStateSeqError"
                if exc.errno_name == "EOVERFLOW"
                else (
                    "XfrmOutStateExpired"
                    if exc.errno_name == "EINVAL"
                    else "XfrmOutStateProtoError"
                )
            )
            node.xfrm.mib.bump(counter)
            runtime.sync(state, sa)
            walk.drop(tap, node.name, str(exc), counter, "software ESP refused the packet")
            return None
        runtime.sync(state, sa)
        seq = walk.opts.seq if walk.opts.seq is not None else sa.oseq
        walk.add(
            LazyTextStage(
                f"{node.name}.esp",
                node.name,
                "software ESP: spi {:#010x} seq {} ({})",
                "kernel esp4/esp6 builds header, IV, padding, trailer and ICV; " + verdict.reason,
                "C",
                None,
                out,
                "ip",
                meta={**meta, "seq": seq, "datapath": "sw"},
                args=(state.spi, seq, state.mode),
            )
        )
        return out

    # -- L2 and the wire ---------------------------------------------------------
    def _transmit(
        self, walk: Walk, node: Node, dev_name: str, nexthop: object, packet: bytes, hops: int
    ) -> None:
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
        if node.pmtu:
            learned = node.pmtu.get(addrs(packet)[1])
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
        walk.add(Stage(f"{tname}.tx", dev_name, decision, "", "C", {"tx_packets": 1}))
        if dev.kind == "dsa-user" and dev.switch_port is not None:
            _count_conduit(node, dev, len(frame), tx=True)
            walk.extend(dsa_tx_stages(frame, dev.switch_port, dev_name, walk.snap))
        else:
            walk.add(
                Stage(
                    f"{tname}.wire",
                    dev_name,
                    "on the wire",
                    "",
                    "C",
                    {},
                    frame if walk.snap else None,
                    "ether",
                )
            )
        peer = self.lab.peer_of(node.name, dev_name)
        if peer is None:
            walk.journey.verdict = f"sent out {dev_name} (nothing connected)"
            return
        self._receive(walk, self.lab.node(peer[0]), peer[1], frame, hops + 1)

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
            if dev.up:  # a port that is down is disabled: nothing reaches the CPU
                _count_conduit(node, dev, len(frame), tx=False)
                walk.extend(dsa_rx_stages(frame, dev.switch_port, dev_name, walk.snap))
        if not dev.up:
            dev.counters.rx_dropped += 1
            walk.drop(
                f"{tapname(node, dev_name)}.rx",
                dev_name,
                "device is down",
                "rx_dropped",
                f"{node.name} {dev_name} is down",
            )
            return
        counters = dev.counters
        counters.rx_packets += 1
        counters.rx_bytes += len(frame)
        if self.lab.xdp_state is not None:
            from esplab.model.xdp_lab import xdp_rx_hook

            if xdp_rx_hook(self.lab, node.name, dev_name, frame, walk.journey):
                return
        etype = int.from_bytes(frame[12:14], "big")
        if etype in (ETH_P_8021Q, ETH_P_8021AD):
            vid = int.from_bytes(frame[14:16], "big") & 0x0FFF
            dev.counters.rx_dropped += 1
            walk.drop(
                f"{tapname(node, dev_name)}.rx",
                dev_name,
                f"VLAN {vid} frame, no {dev_name}.{vid} device",
                "rx_dropped",
                "a tagged frame for a VLAN the node has no device for is dropped "
                "(no VLAN devices are modelled)",
                "D",
                data=frame,
            )
            return
        if not self._for_us(walk, node, dev, frame, etype):
            return
        packet = frame[14:]
        walk.add(
            Stage(
                f"{tapname(node, dev_name)}.rx",
                dev_name,
                f"{node.name} {dev_name} receives {len(frame)} bytes",
                "",
                "C",
                {"rx_packets": 1},
                packet if walk.snap else None,
            )
        )
        self._input(walk, node, dev_name, packet, hops)

    def _for_us(self, walk: Walk, node: Node, dev: NetDev, frame: bytes, etype: int) -> bool:
        """What ``eth_type_trans`` and the protocol handlers check before IP sees a
        frame [C]: a unicast destination that is not the device's address is
        PACKET_OTHERHOST (ip_rcv drops it, ``rx_otherhost_dropped``); an EtherType no
        handler takes is ``rx_nohandler``; an IP header whose version is not the
        EtherType's, or that does not parse, is a header error (ip_rcv_core,
        ipv6_rcv: InHdrErrors / Ip6InHdrErrors)."""
        tap = f"{tapname(node, dev.name)}.rx"
        dst = frame[:6]
        if not dst[0] & 1 and dst != mac_bytes(dev.mac):
            dev.counters.rx_otherhost_dropped += 1
            walk.drop(
                tap,
                dev.name,
                f"frame for {dst.hex(':')}, not {dev.mac}",
                "rx_otherhost_dropped",
                "eth_type_trans marks a unicast frame for another address PACKET_OTHERHOST, "
                "and IP drops it",
                data=frame,
            )
            return False
        if etype not in (ETH_P_IP, ETH_P_IPV6):
            dev.counters.rx_nohandler += 1
            walk.drop(
                tap,
                dev.name,
                f"no protocol handler for EtherType {etype:#06x}",
                "rx_nohandler",
                "the nodes model IPv4 (0x0800) and IPv6 (0x86dd) only; a frame no handler "
                "takes is counted in rx_nohandler",
                data=frame,
            )
            return False
        version = 4 if etype == ETH_P_IP else 6
        counter = "InHdrErrors" if version == 4 else "Ip6InHdrErrors"
        try:
            info = parse_ip(frame[14:])
        except DecodeError as exc:
            reason = str(exc)
        else:
            if info.version == version:
                return True
            reason = f"IPv{info.version} header in a frame of EtherType {etype:#06x}"
        walk.drop(
            f"{node.name}.ip",
            node.name,
            reason,
            counter,
            f"ip{'v6' if version == 6 else ''}_rcv checks the header before anything else "
            f"and counts {counter}",
            data=frame,
        )
        return False

    # -- IP input ----------------------------------------------------------------
    def _input(self, walk: Walk, node: Node, dev_name: str, packet: bytes, hops: int) -> None:
        if hops > MAX_HOPS:
            walk.drop(f"{node.name}.route", node.name, "too many hops", None, "routing loop")
            return
        info = parse_ip(packet)
        src, dst = addrs(packet)
        walk.secpath = []
        if (info.proto == IPPROTO_ESP or is_natt(info, packet)) and node.owns(dst):
            inner = self._esp_input(walk, node, dev_name, packet, info, dst)
            if inner is None:
                return
            packet = inner
            info = parse_ip(packet)
            src, dst = addrs(packet)
        local = node.owns(dst)
        key = flow_key(info, packet, src, dst, dev_name)
        if not self._policy_check(walk, node, key, local):
            return
        if local:
            node.count_flow(key, len(packet))
            walk.add(
                LazyTextStage(
                    f"{node.name}.deliver",
                    node.name,
                    "delivered to {} (proto {}, {} bytes)",
                    "",
                    "C",
                    None,
                    packet if walk.snap else None,
                    "ip",
                    args=(dst, info.proto, len(packet)),
                )
            )
            if info.proto in (1, 58):
                self._learn_pmtu(walk, node, packet, info)
            walk.journey.verdict = f"delivered to {node.name}"
            walk.journey.delivered = True
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
        walk.add(Stage(f"{node.name}.forward", node.name, f"forward towards {dst}"))
        self._output(walk, node, packet, None, hops)

    def _learn_pmtu(self, walk: Walk, node: Node, packet: bytes, info: IpInfo) -> None:
        """ICMP too big reached its sender: the path MTU to the packet's destination
        becomes a route exception (:mod:`~esplab.model.pmtu_cache`) [C]."""
        report = too_big_report(packet, info.hlen, info.proto)
        if report is None:
            return
        route = node.route(report.dst)
        current = node.pmtu.get(report.dst) or (node.dev(route.dev).mtu if route else 0xFFFF)
        mtu = learn(node.pmtu, report, current)
        if mtu is None:
            walk.add(
                LazyTextStage(
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
            LazyTextStage(
                f"{node.name}.pmtu",
                node.name,
                "path MTU to {} is now {} (route exception, from ICMP mtu {})",
                "the kernel keeps the reported MTU as an exception on the route to the "
                "destination (floor 552 for IPv4, 1280 for IPv6); ip route get shows it",
                "C",
                args=(report.dst, mtu, report.mtu),
            )
        )

    # -- IPsec input and the engine ------------------------------------------------
    def _esp_input(
        self,
        walk: Walk,
        node: Node,
        dev_name: str,
        packet: bytes,
        info: IpInfo,
        dst: IPv4Address | IPv6Address,
    ) -> bytes | None:
        """XFRM input for an ESP packet addressed to ``node`` (at ``dst``): the inner
        packet or None."""
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
                "xfrm_state_lookup found nothing (XfrmInNoStates)",
            )
            return None
        if state.offload is not None and state.offload.dev == dev_name:
            inner = self._offload_input(walk, node, state, packet, dev_name)
        else:
            inner = self._sw_input(walk, node, state, packet)
        if inner is not None:
            walk.secpath.append(state)
        return inner

    def _policy_check(self, walk: Walk, node: Node, key: FlowKey, local: bool) -> bool:
        """``__xfrm_policy_check`` for the flow ``key``: the inbound (or forward) policy
        must be satisfied by the states that decrypted the packet (airoha-dsa-xfrm.md
        3.2, 3.8) [C]."""
        direction: Literal["in", "fwd"] = "in" if local else "fwd"
        policy = node.xfrm.lookup_policy_key(key, direction)
        if policy is None:
            return True  # no policy: the default is to allow
        tap = f"{node.name}.xfrm.policy({direction})"
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
        if any(x.is_packet_offload for x in walk.secpath):
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

    def _use_engine_aead(self, node: Node) -> bool:
        return node.role == "ap" and self.lab.settings.crypto_provider == "eip93"

    def _sw_input(self, walk: Walk, node: Node, state: XfrmState, packet: bytes) -> bytes | None:
        if self._use_engine_aead(node):
            from esplab.model.engine_path import SW_INPUT, aead_input

            out = aead_input(self.lab, walk, node, state, packet)
            if out is not SW_INPUT:
                return out if isinstance(out, bytes) else None
        runtime = self.lab.sa_runtime(node.name)
        sa = _software_sa(walk, node, state, f"{node.name}.xfrm", "XfrmInStateProtoError")
        if sa is None:
            return None
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
                "software ESP input (esp_input / xfrm_input)",
                data=packet,
            )
            return None
        walk.add(
            LazyTextStage(
                f"{node.name}.xfrm",
                node.name,
                "software ESP: spi {:#010x} seq {} ICV good, next header {}, pad {}",
                "xfrm_input: replay check, ICV, decrypt, trailer strip (RFC 4303 3.4)",
                "C",
                None,
                res.packet if walk.snap else None,
                "ip",
                meta={"spi": f"{state.spi:#010x}", "seq": res.seq, "datapath": "sw"},
                args=(state.spi, res.seq, res.next_header, res.pad_len),
            )
        )
        return res.packet

    def _offload_output(
        self,
        walk: Walk,
        node: Node,
        state: XfrmState,
        packet: bytes,
        dev_name: str,
        datapath: str,
        info: IpInfo | None = None,
    ) -> bytes | None:
        from esplab.model.engine_path import engine_output

        try:
            return engine_output(self.lab, walk, node, state, packet, dev_name, datapath, info)
        except (BadArgument, DecodeError) as exc:
            counter = _refused_counter(walk, self.lab.sa_runtime(node.name).get(state))
            node.xfrm.mib.bump(counter)
            walk.drop(
                f"{dev_name}.xfrmdev",
                dev_name,
                str(exc),
                counter,
                "the ESP output refused this packet",
            )
            return None

    def _offload_input(
        self, walk: Walk, node: Node, state: XfrmState, packet: bytes, dev_name: str
    ) -> bytes | None:
        from esplab.model.engine_path import SW_INPUT, engine_input

        inner = engine_input(self.lab, walk, node, state, packet, dev_name)
        if inner is SW_INPUT:
            return self._sw_input(walk, node, state, packet)
        return inner if isinstance(inner, bytes) else None


def _refused_counter(walk: Walk, sa: EspSA) -> str:
    """The MIB counter of an ESP output that refused the packet: a pinned sequence
    number past the SA's sequence space is an overflow, whichever datapath was to
    carry it (the kernel checks before the device sees the packet, 3.9) [C]."""
    seq = walk.opts.seq
    return (
        "XfrmOutStateSeqError" if seq is not None and seq > sa.seq_max else "XfrmOutStateProtoError"
    )


def _count_conduit(node: Node, user: NetDev, size: int, *, tx: bool) -> None:
    """A user port's frame crosses the conduit (GDM1) with its special tag: the
    conduit's MIB counts it (see ``l2.CONDUIT_COUNTS``) [D]."""
    if user.conduit is None:
        return
    counters = node.dev(user.conduit).counters
    if tx:
        counters.tx_packets += 1
        counters.tx_bytes += size + MTK_TAG_LEN
    else:
        counters.rx_packets += 1
        counters.rx_bytes += size + MTK_TAG_LEN


def _software_sa(walk: Walk, node: Node, state: XfrmState, tap: str, counter: str) -> EspSA | None:
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
