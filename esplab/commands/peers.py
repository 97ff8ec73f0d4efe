"""A session's real peers: start a real Linux kernel in a peer node's place (a QEMU
guest or a network namespace), or put the emulated node back. The ``peer`` command,
a lab's ``peer:`` and ``esplab --peer`` all come here; running a line on a real peer
is the session's own (:func:`esplab.commands.base.run_on_peer`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from esplab.errors import BadArgument, EsplabError

if TYPE_CHECKING:
    from esplab.commands.base import Session

__all__ = ["BACKENDS", "peer_nodes", "start_peer", "start_peers", "stop_peer"]

BACKENDS = ("kernel", "netns", "off")


def peer_nodes(session: Session) -> list[str]:
    return [name for name, node in session.lab.nodes.items() if node.role == "peer"]


def start_peer(session: Session, node: str, backend: str, image: str | None = None) -> str:
    """Start a real kernel for ``node`` (``kernel``: a QEMU guest; ``netns``: a network
    namespace) and put it on the wire. Returns what plays the node now."""
    from esplab.peer.backends import netns, qemu
    from esplab.peer.bridge import attach
    from esplab.peer.client import KernelPeer

    lab = session.lab
    if node not in peer_nodes(session):
        raise BadArgument(
            f"'{node}' cannot be a real kernel", valid=peer_nodes(session), value=node
        )
    # (the new kernel first: one that cannot start leaves the node as it was)
    chosen = qemu(image, kvm=session.peer_kvm) if backend == "kernel" else netns()
    client = KernelPeer(chosen).start()
    stop_peer(session, node)
    peer = attach(lab, node, client)  # (it stops the client when it cannot configure it)
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
