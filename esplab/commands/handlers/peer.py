"""peer: put a real Linux kernel in a node's place, and run commands on it."""

from __future__ import annotations

from collections.abc import Iterable

from esplab.commands.parser import Invocation
from esplab.commands.registry import Command, Param
from esplab.commands.result import MessageResult, Result, TableResult, TextResult
from esplab.commands.session import Session
from esplab.errors import BadArgument, EsplabError, PeerError

__all__ = ["COMMANDS", "run_on_peer", "start_peer", "start_peers", "stop_peer"]

BACKENDS = ("kernel", "netns", "off")


def _peer_nodes(session: Session) -> list[str]:
    return [name for name, node in session.lab.nodes.items() if node.role == "peer"]


def start_peer(session: Session, node: str, backend: str, image: str | None = None) -> str:
    """Start a real kernel for ``node`` (``kernel``: a QEMU guest; ``netns``: a network
    namespace) and put it on the wire. Returns what plays the node now."""
    from esplab.peer.backends import netns, qemu
    from esplab.peer.bridge import attach
    from esplab.peer.client import KernelPeer

    lab = session.lab
    if node not in _peer_nodes(session):
        raise BadArgument(
            f"'{node}' cannot be a real kernel", valid=_peer_nodes(session), value=node
        )
    stop_peer(session, node)
    chosen = qemu(image, kvm=session.peer_kvm) if backend == "kernel" else netns()
    client = KernelPeer(chosen).start()
    peer = attach(lab, node, client)
    ready = f"ready in {client.booted_in:.1f} s"
    return f"{node} is now a real Linux {client.release} ({peer.label}, {ready})"


def start_peers(session: Session, peers: Iterable[tuple[str, str]]) -> None:
    """Start each (node, backend) of a lab's ``peer:``; one that cannot start leaves its
    node emulated, and ``session.notes`` says why in one line."""
    for node, what in peers:
        try:
            session.notes.append(start_peer(session, node, what))
        except EsplabError as exc:
            session.notes.append(f"peer {node} {what}: {exc}; {node} stays emulated")


def stop_peer(session: Session, node: str) -> bool:
    """Back to the emulated node; False when it was emulated already."""
    from esplab.peer.bridge import detach

    return detach(session.lab, node)


def _peer(session: Session, inv: Invocation) -> Result:
    node, what, image = inv.args["node"], inv.args["backend"], inv.args["image"]
    lab = session.lab
    if node is None:
        rows = []
        for name in _peer_nodes(session):
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


def run_on_peer(session: Session, node: str, line: str) -> Result:
    """``NODE LINE`` where NODE is a real kernel: run LINE there (see bridge.PROGRAMS),
    then walk every frame it sent."""
    peer = session.lab.real_peers[node]
    first = session.lab.journeys.next_id
    try:
        done = peer.run_line(line, datapath=session.lab.datapath)
    except PeerError as exc:
        if peer.client.alive:
            raise  # the line itself (a program not allowed, ...)
        peer.gone(session.lab, None, str(exc))
        raise PeerError(f"{exc}; {node} is emulated again", hint=f"peer {node} kernel") from exc
    peer.answer(session.lab.datapath)
    journeys = [j for j in session.lab.journeys if j.id >= first]
    peer.client.read_counters()
    data = {
        "node": node,
        "rc": done.rc,
        "stdout": done.out,
        "stderr": done.err,
        "journeys": [j.id for j in journeys],
    }
    if done.timed_out:
        raise PeerError(f"'{line}' did not end within 30 s on the real {node}; it was killed")
    if done.rc != 0:
        said = (done.err or done.out).strip() or f"exit status {done.rc}"
        raise PeerError(f"{said} (exit {done.rc} on the real {node})")
    text = done.out.rstrip("\n")
    if journeys:
        text += (
            ("\n" if text else "")
            + f"({len(journeys)} frame(s) from {node}: journeys "
            + (", ".join(str(j.id) for j in journeys) + ")")
        )
    return TextResult(summary=f"{node}: {line}", text=text, data=data)


COMMANDS = (
    Command(
        name="peer",
        nodeless="peer NODE ... names the node itself",
        summary="make a peer node a real Linux kernel (a QEMU guest or a network namespace)",
        handler=_peer,
        params=(
            Param("node", optional=True, choices=_peer_nodes, metavar="NODE"),
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
