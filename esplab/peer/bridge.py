"""A real Linux kernel in a node's place on the emulated wire.

:class:`RealPeer` gives the kernel the emulated node's devices, MACs, addresses,
routes and neighbours (``eth0`` is one end of a veth pair whose other end the agent
carries frames on). A frame the lab puts on the node's wire is written into that
veth; the kernel's part of the journey is one stage, ``NODE.kernel``, with the
counters it moved (``/proc/net/xfrm_stat``, ``/proc/net/snmp``), tagged **K**: it is
Linux itself. Every frame the kernel sends back starts a journey of its own at the
other end of the wire.

Commands typed with the node's name in front run on the kernel, with no shell: the
programs in :data:`PROGRAMS` only, so a lab file cannot run anything else there.
"""

from __future__ import annotations

import shlex
from ipaddress import IPv4Interface
from typing import TYPE_CHECKING

from esplab.errors import PeerError
from esplab.model.stage import Journey, Stage
from esplab.peer.client import KernelPeer, RunResult

if TYPE_CHECKING:
    from esplab.model.journey.board import Board
    from esplab.model.journey.datapath import Datapath
    from esplab.model.journey.walk import Walk
    from esplab.model.kernel.node import Node
    from esplab.model.lab import Lab

__all__ = [
    "NATT_PORT",
    "PROGRAMS",
    "WIRE_DEV",
    "RealPeer",
    "delivered",
    "interesting",
    "split_line",
]

#: What a node-prefixed line may run on the peer; ``cat`` reads /proc and /sys only.
PROGRAMS = ("ip", "ping", "cat", "sysctl", "ethtool", "ss", "nstat")
#: The agent's end of the veth pair whose other end is the node's eth0.
WIRE_DEV = "esplab0"
_PING_COUNT = "3"
#: The peer listens for ESP in UDP here as an IKE daemon would (RFC 3948 port 4500):
#: without such a socket Linux takes ESP in UDP for plain UDP.
NATT_PORT = 4500
# Counters that say the packet reached a transport protocol (or ICMP) on the peer.
_DELIVERY = (
    "UdpInDatagrams",
    "UdpNoPorts",
    "UdpInErrors",
    "IcmpInMsgs",
    "TcpInSegs",
    "Udp6InDatagrams",
    "Udp6NoPorts",
    "Udp6InErrors",
    "Icmp6InMsgs",
)


def split_line(line: str) -> list[str]:
    """A node-prefixed command line as argv, checked against :data:`PROGRAMS`."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise PeerError(f"cannot split '{line}': {exc}", value=line) from exc
    if not argv:
        raise PeerError("nothing to run on the peer", valid=", ".join(PROGRAMS))
    program = argv[0]
    if program not in PROGRAMS:
        raise PeerError(
            f"'{program}' does not run on a real peer from esplab",
            valid=list(PROGRAMS),
            value=program,
        )
    if any(word in ("|", ">", "<", ";", "&&", "||", "&") for word in argv):
        raise PeerError(f"no shell on the peer: '{line}' has a pipe or redirection", value=line)
    if program == "cat":
        bad = [p for p in argv[1:] if not p.startswith(("/proc/", "/sys/"))]
        if bad:
            raise PeerError(
                f"cat reads /proc and /sys only on a real peer, not '{bad[0]}'", value=bad[0]
            )
    if program == "ping" and not any(w == "-c" or w.startswith("-c") for w in argv[1:]):
        argv[1:1] = ["-c", _PING_COUNT, "-W", "1"]
    return argv


def interesting(delta: dict[str, int]) -> dict[str, int]:
    """The deltas worth a stage line: XFRM errors, delivery, ICMP sent."""
    keep = {}
    for name, value in delta.items():
        if value and (
            name.startswith("Xfrm")
            or name in _DELIVERY
            or name.startswith(("IcmpOut", "Icmp6Out"))
            or name.endswith(("InDiscards", "InHdrErrors", "InAddrErrors", "InNoRoutes"))
        ):
            keep[name] = value
    return keep


def delivered(delta: dict[str, int]) -> bool:
    """A transport protocol (or ICMP) took the packet and XFRM counted no error."""
    return any(delta.get(n, 0) > 0 for n in _DELIVERY) and not any(
        v > 0 for n, v in delta.items() if n.startswith("Xfrm")
    )


class RealPeer:
    """One node of the lab played by a real kernel."""

    def __init__(self, node: str, client: KernelPeer) -> None:
        self.node = node
        self.client = client
        # Frames carried into the kernel and out of it (the peer command lists them).
        self.frames_in = 0
        self.frames_out = 0
        # Echo replies the lab owes the kernel: (emulated node, IP packet).
        self.replies: list[tuple[str, bytes]] = []

    def heard(self, node: str, packet: bytes) -> None:
        """A packet delivered to an emulated node: an ICMP or ICMPv6 echo request gets
        its reply, as Linux answers one (net/ipv4/icmp.c icmp_echo, net/ipv6/icmp.c
        icmpv6_echo_reply) [C]. esplab's own ping draws its replies itself, so only
        requests from a real peer are answered here (our design [M])."""
        reply = echo_reply(packet)
        if reply is not None:
            self.replies.append((node, reply))

    @property
    def label(self) -> str:
        return self.client.label

    # -- set-up --------------------------------------------------------------
    def configure(self, node: Node) -> None:
        """Give the kernel the emulated node's devices, addresses, routes, neighbours."""
        sysctls = [
            "net.ipv6.conf.default.addr_gen_mode=1",
            "net.ipv6.conf.all.accept_ra=0",
            "net.ipv6.conf.default.accept_ra=0",
            "net.ipv6.conf.default.router_solicitations=0",
            "net.ipv6.conf.all.forwarding=0",
            f"net.ipv4.ip_forward={int(node.forwarding)}",
        ]
        self.client.must(["sysctl", "-q", "-w", *sysctls])
        batch: list[str] = [
            f"link add {name} type veth peer name {WIRE_DEV}"
            if name == "eth0"
            else f"link add {name} type dummy"
            for name, dev in node.devs.items()
            if dev.kind != "loopback"
        ]
        self.client.must(["ip", "-batch", "-"], stdin="\n".join(batch) + "\n")
        self.client.must(["sysctl", "-q", "-w", f"net.ipv6.conf.{WIRE_DEV}.disable_ipv6=1"])
        batch = []
        for name, dev in node.devs.items():
            if dev.kind == "loopback":
                batch.append("link set lo up")
                continue
            batch.append(f"link set {name} address {dev.mac} mtu {dev.mtu}")
            for iface in dev.addrs:
                if isinstance(iface, IPv4Interface):
                    batch.append(f"address add {iface} brd + dev {name}")
                else:
                    batch.append(f"address add {iface} dev {name} nodad")
            batch.append(f"link set {name} {'up' if dev.up else 'down'}")
        batch.append(f"link set {WIRE_DEV} up")
        for route in node.routes:
            if route.via is None or route.proto == "kernel":
                continue
            batch.append(f"route add {route.dst} via {route.via} dev {route.dev}")
        for neigh in node.neigh:
            batch.append(
                f"neigh replace {neigh.addr} dev {neigh.dev} lladdr {neigh.mac} nud permanent"
            )
        self.client.must(["ip", "-batch", "-"], stdin="\n".join(batch) + "\n")
        self.client.request("attach", dev=WIRE_DEV, encap_port=NATT_PORT)

    # -- commands --------------------------------------------------------------
    def run_line(
        self, line: str, timeout: float = 30.0, datapath: Datapath | None = None
    ) -> RunResult:
        """Run ``line`` on the kernel; with ``datapath``, every frame it sends meanwhile
        is walked as it comes (the lab's answers go back at once: ping hears them)."""
        argv = split_line(line)
        if datapath is None:
            return self.client.run(argv, timeout=timeout)
        self.client.frame_hook = lambda: self.answer(datapath)
        try:
            return self.client.run(argv, timeout=timeout)
        finally:
            self.client.frame_hook = None

    # -- frames ----------------------------------------------------------------
    def carry(self, datapath: Datapath, walk: Walk, frame: bytes, hops: int) -> None:
        """``frame`` reaches the kernel: one stage for its part, then a journey for each
        frame it sends back."""
        before = self.client.counters
        try:
            after = self.client.inject(frame)
        except PeerError as exc:
            self.gone(datapath.lab, walk, str(exc))
            datapath.receive_from_wire(walk, self.node, "eth0", frame, hops)
            return
        self.frames_in += 1
        delta = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
        shown = interesting(delta)
        ok = delivered(delta)
        counts = ", ".join(f"{k} +{v}" for k, v in shown.items()) or "no counter moved"
        if ok:
            decision = f"the real {self.node} ({self.client.release}) delivered it: {counts}"
        else:
            decision = f"the real {self.node} ({self.client.release}) did not deliver it: {counts}"
        walk.add(
            Stage(
                f"{self.node}.kernel",
                "eth0",
                decision,
                f"{self.label}: counters read from /proc/net/xfrm_stat and /proc/net/snmp "
                "before and after the frame",
                "K",
                shown,
                drop=None if ok else "peer",
            )
        )
        walk.journey.verdict = (
            f"delivered by the real {self.node}" if ok else f"not delivered by the real {self.node}"
        )
        walk.journey.delivered = ok
        self.answer(datapath, hops)

    def gone(self, lab: Board, walk: Walk | None, why: str) -> None:
        """The kernel stopped answering (the guest died, or timed out): the emulated
        node takes over, and the journey says so."""
        detach(lab, self.node)
        if walk is not None:
            walk.add(
                Stage(
                    f"{self.node}.kernel",
                    "eth0",
                    f"the real {self.node} is gone; the emulated {self.node} takes over",
                    why,
                    "M",
                )
            )

    def answer(self, datapath: Datapath, hops: int = 0) -> list[Journey]:
        """Every frame the kernel sent since the last look, each walked from the wire."""
        return [self.walk_frame(datapath, frame, hops) for frame in self.client.take_frames()]

    def walk_frame(self, datapath: Datapath, frame: bytes, hops: int = 0) -> Journey:
        from esplab.model.journey.walk import SendOptions, Walk

        lab = datapath.lab
        self.frames_out += 1
        journey = lab.journeys.new(f"{self.node} eth0 (real kernel)")
        walk = Walk(lab, journey, SendOptions())
        walk.add(
            Stage(
                f"{self.node}.wire",
                "eth0",
                f"the real {self.node} sends {len(frame)} bytes",
                "",
                "K",
                {},
                frame,
                "ether",
            )
        )
        other = lab.peer_of(self.node, "eth0")
        if other is None or hops > 8:
            journey.verdict = "sent out eth0 (nothing connected)"
            return journey
        datapath.receive_from_wire(walk, other[0], other[1], frame, hops + 1)
        if not journey.verdict:
            journey.verdict = "no verdict"
        while self.replies:
            node, reply = self.replies.pop(0)
            datapath.send(node, None, reply)
        return journey

    def close(self) -> None:
        self.client.close()


def echo_reply(packet: bytes) -> bytes | None:
    """The echo reply to ``packet`` if it is an ICMP or ICMPv6 echo request, else None:
    addresses swapped, type 0 (129 for ICMPv6), identifier, sequence and data kept."""
    version = packet[0] >> 4 if packet else 0
    if version == 4 and len(packet) >= 28 and packet[9] == 1:
        hlen = (packet[0] & 0xF) * 4
        if packet[hlen : hlen + 1] != b"\x08":
            return None
        from scapy.layers.inet import ICMP, IP
        from scapy.packet import Raw

        ip = IP(packet)
        icmp = ip[ICMP]
        head = IP(src=ip.dst, dst=ip.src, ttl=64, flags=ip.flags)
        return bytes(head / ICMP(type=0, id=icmp.id, seq=icmp.seq) / Raw(bytes(icmp.payload)))
    if version == 6 and len(packet) >= 48 and packet[6] == 58 and packet[40] == 128:
        from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6

        ip6 = IPv6(packet)
        req = ip6[ICMPv6EchoRequest]
        back = IPv6(src=ip6.dst, dst=ip6.src, hlim=64) / ICMPv6EchoReply(
            id=req.id, seq=req.seq, data=req.data
        )
        return bytes(back)
    return None


def detach(lab: Board, node: str) -> bool:
    """Back to the emulated node (the peer's guest is shut down); False if none."""
    peer = lab.real_peers.pop(node, None)
    if peer is None:
        return False
    if peer.heard in lab.deliver_hooks:
        lab.deliver_hooks.remove(peer.heard)
    peer.close()
    return True


def attach(lab: Lab, node: str, client: KernelPeer) -> RealPeer:
    """Put ``client``'s kernel in ``node``'s place (configured like the emulated node)."""
    peer = RealPeer(node, client)
    try:
        peer.configure(lab.node(node))
        client.read_counters()
    except PeerError:
        client.close()
        raise
    lab.real_peers[node] = peer
    lab.deliver_hooks.append(peer.heard)
    return peer
