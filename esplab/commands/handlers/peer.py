"""peer: put a real Linux kernel in a node's place, and run commands on it."""

from __future__ import annotations

from esplab.commands.base import Session
from esplab.commands.parser import Invocation
from esplab.commands.peers import BACKENDS, peer_nodes, start_peer, stop_peer
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, Result, TableResult
from esplab.errors import BadArgument

__all__ = ["COMMANDS"]


def _peer(session: Session, inv: Invocation) -> Result:
    node, what, image = inv.args["node"], inv.args["backend"], inv.args["image"]
    lab = session.lab
    if node is None:
        rows = []
        for name in peer_nodes(session):
            real = lab.real_peers.get(name)
            if real is None:
                rows.append((name, "emulated", "", "", ""))
                continue
            carried = (real.frames_in, real.frames_out, real.client.held)
            rows.append((name, real.label, *(str(n) for n in carried)))
        return TableResult(
            summary=f"{len(lab.real_peers)} real peer(s)",
            title="who plays each peer node",
            columns=("node", "played by", "frames in", "frames out", "held back"),
            rows=rows,
            data={"peers": {row[0]: row[1] for row in rows}},
        )
    if what is None:
        raise BadArgument(f"peer {node}: say what plays it", valid=list(BACKENDS), value="")
    if what == "off":
        was = stop_peer(session, node)
        said = f"{node} is emulated again" if was else f"{node} was emulated already"
        return MessageResult(summary=said, data={"node": node, "peer": "emulated"})
    if image is not None and what != "kernel":
        raise BadArgument(f"an IMAGE goes with 'kernel', not '{what}'", value=image)
    said = start_peer(session, node, what, image)
    peer = lab.real_peers[node]
    return MessageResult(
        summary=said, data={"node": node, "peer": peer.label, "release": peer.client.release}
    )


COMMANDS = (
    Command(
        name="peer",
        nodeless="peer NODE ... names the node itself",
        summary="make a peer node a real Linux kernel (a QEMU guest or a network namespace)",
        handler=_peer,
        params=(
            Param("node", optional=True, choices=peer_nodes, metavar="NODE"),
            Param("backend", optional=True, choices=BACKENDS, metavar="kernel|netns|off"),
            Param("image", optional=True, metavar="IMAGE"),
        ),
        example="peer host kernel",
        details=(
            "peer host kernel [IMAGE] boots a stock kernel image (the newest /boot/vmlinuz-* "
            "with ESP, or IMAGE) under QEMU through virtme-ng, with this machine's own "
            "userspace: no root, no KVM needed (about 20 s under TCG). peer host netns puts a "
            "network namespace of your own kernel there instead (root). The real host gets "
            "the emulated host's MAC, addresses, routes and neighbours; frames the ap puts "
            "on the wire reach it, and what it sends comes back as journeys. Lines that start "
            "with the node's name run there with the real iproute2: host ip xfrm state add "
            "..., host ip -s xfrm state, host cat /proc/net/xfrm_stat, host ping ADDR (ip, "
            "ping, cat of /proc and /sys, sysctl, ethtool, ss and nstat; no shell). "
            "peer host off stops it and the emulated host is back; peer lists who plays "
            "each node, with the frames carried into and out of each real one (and those it "
            "sent to a group address, held back). The guest is shut down when esplab exits."
        ),
    ),
)
