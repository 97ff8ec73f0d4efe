"""The whole emulated lab: nodes, wires, journeys and captures, from one seed."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from esplab.errors import NoSuchNode
from esplab.model.kernel.drivers.airoha_eth import PortOffload
from esplab.model.kernel.node import Node
from esplab.model.kernel.xfrm.offload import OffloadDevice
from esplab.model.kernel.xfrm.tables import XfrmNode
from esplab.model.stage import Captures, JourneyLog
from esplab.model.topology import LINKS, build_nodes

if TYPE_CHECKING:
    from esplab.model.kernel.esp.runtime import SaRuntime
    from esplab.model.kernel.xfrm.objects import XfrmState

__all__ = ["Lab", "LabSettings"]


@dataclass
class LabSettings:
    """Knobs a user may turn (``set``); defaults follow DESIGN.md."""

    seed: int = 0x5EED
    tracing: bool = True
    journey_ring: int = 256
    capture_ring: int = 1024
    # The ap's crypto API provider for software ESP: "software", or "eip93" for the
    # sw+aead datapath (the mainline eip93 driver registers authenc(hmac(*),cbc(*))
    # with a higher priority than the generic code; DESIGN.md datapaths).
    crypto_provider: str = "software"


@dataclass
class Lab:
    settings: LabSettings = field(default_factory=LabSettings)
    nodes: dict[str, Node] = field(default_factory=dict)
    journeys: JourneyLog = field(default_factory=JourneyLog)
    captures: Captures = field(default_factory=Captures)
    current: str = "ap"

    _eip93: Any = field(default=None, repr=False)

    @property
    def eip93(self) -> Any:
        """The ap's EIP-93 driver (with its engine), built on first use."""
        if self._eip93 is None:
            from esplab.model.kernel.drivers.eip93 import new_eip93

            self._eip93 = new_eip93(self.settings.seed)
        return self._eip93

    def engine_snapshots(self, on: bool) -> None:
        """Follow the tracing setting in the engine (if it was built at all)."""
        if self._eip93 is not None and self._eip93.snapshots != on:
            self._eip93.snapshots = on

    def free_aead_tfms(self) -> None:
        """Free the sw+aead transform of every state that has one, in the order they
        were keyed (``crypto_free_aead``); each state is keyed again on next use."""
        records = [
            state.runtime
            for node in self.nodes.values()
            for state in node.xfrm.states
            if state.runtime.aead is not None
        ]
        if not records:
            return
        keyed = {id(tfm): n for n, tfm in enumerate(self.eip93.tfms.values())}
        for record in sorted(records, key=lambda r: keyed.get(id(r.aead), -1)):
            tfm, record.aead = record.aead, None
            self.eip93.aead_free(tfm)

    def resize_captures(self, size: int) -> None:
        """Every tap keeps ``size`` packets from now on (the setting and the rings)."""
        self.settings.capture_ring = size
        self.captures.resize(size)

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = build_nodes(self.settings.seed)
        self.rng = random.Random(self.settings.seed ^ 0x1AB)
        self.journeys.resize(self.settings.journey_ring)
        self.captures.resize(self.settings.capture_ring)
        self._ports: dict[tuple[str, str], PortOffload] = {}
        self._peers: dict[tuple[str, str], tuple[str, str] | None] = {}
        self._runtimes: dict[str, SaRuntime] = {}
        self._datapath: Any = None
        # The XDP/AF_XDP side (esplab.model.journey.xdp.XdpLab), built by the first xdp command.
        self.xdp_state: Any = None
        # Nodes played by a real Linux kernel (esplab.peer.bridge.RealPeer), by name.
        self.real_peers: dict[str, Any] = {}
        # Called with (node, packet) for every packet delivered locally (a real peer
        # answers echo requests for the emulated nodes it pings).
        self.deliver_hooks: list[Callable[[str, bytes], None]] = []
        for node in self.nodes.values():
            node.xfrm = XfrmNode(
                name=node.name,
                resolve_dev=self._resolver(node.name),
                on_state=self._state_changed,
                # What the kernel draws at random (allocspi's SPI), from the lab's seed.
                rng=random.Random(f"{self.settings.seed}:{node.name}:xfrm"),
            )

    def drain_monitors(self) -> str:
        """What the nodes' ``ip xfrm monitor`` instances printed since the last call, node by
        node (each node is a machine of its own, with its own monitor)."""
        return "".join(
            n.xfrm.monitor.drain() for n in self.nodes.values() if n.xfrm.monitor is not None
        )

    def _state_changed(self, state: XfrmState, gone: bool) -> None:
        """What the lab built for a state goes when it changes or leaves the SAD: its
        software SAs (rebuilt from the state on next use) and, once it is gone, its
        sw+aead transform (esp_destroy frees the AEAD) and any refusal note."""
        record = state.runtime
        record.sa = record.scratch = None  # (SaRuntime.forget, without importing ESP)
        if not gone:
            return
        record.refused = None
        tfm, record.aead = record.aead, None
        if tfm is not None:
            self.eip93.aead_free(tfm)

    def _resolver(self, node: str) -> Any:
        def resolve(dev: str) -> OffloadDevice | None:
            return self.port(node, dev)

        return resolve

    def port(self, node: str, dev: str) -> PortOffload | None:
        """The xfrmdev_ops view of a device (None when the node has no such device)."""
        key = (node, dev)
        if key not in self._ports:
            netdev = self.nodes[node].devs.get(dev)
            if netdev is None:
                return None
            self._ports[key] = PortOffload(netdev)
            if self.nodes[node].role == "ap":
                from esplab.model.journey.engine_path import attach_engine

                attach_engine(self, self._ports[key])
        return self._ports[key]

    def sa_runtime(self, node: str) -> SaRuntime:
        """The software SAs of a node (built on first use)."""
        if node not in self._runtimes:
            from esplab.model.kernel.esp.runtime import SaRuntime

            # The node's xfrm clock: the same time for add, use and lastused.
            clock = self.node(node).xfrm.clock
            self._runtimes[node] = SaRuntime(node, self.settings.seed, clock=clock)
        return self._runtimes[node]

    @property
    def datapath(self) -> Any:
        if self._datapath is None:
            from esplab.model.journey.datapath import Datapath

            self._datapath = Datapath(self)
        return self._datapath

    def node(self, name: str | None = None) -> Node:
        key = self.current if name is None else name
        try:
            return self.nodes[key]
        except KeyError:
            raise NoSuchNode(f"unknown node '{key}'", valid=list(self.nodes), value=key) from None

    def set_link(self, node: str, dev: str, up: bool) -> tuple[list[str], list[str]]:
        """``ip link set DEV up|down``, with what DSA does around it (net/dsa/user.c)
        [C]: opening a user port opens its conduit first (``dsa_user_open`` calls
        ``dev_open(conduit)``), and a conduit going down closes every user port on it
        first (``NETDEV_GOING_DOWN``). Each device that goes down flushes its offloaded
        states and policies (:meth:`dev_down`) and its routes (:meth:`Node.link_down`);
        each that comes up gets its connected routes back (:meth:`Node.link_up`). Only a
        real change of state notifies: ``dev_open``/``dev_close`` return early on a
        device already in that state (net/core/dev.c). Returns a line per device, and
        a line per device on what IP lost or regained ("DEV: ...")."""
        the_node = self.node(node)
        target = the_node.dev(dev)
        done: list[str] = []
        notes: list[str] = []
        if up:
            if target.conduit is not None and not the_node.dev(target.conduit).up:
                why = " (the conduit opens with its user port)"
                done.append(self._up(the_node, target.conduit, why, notes))
            return [self._up(the_node, dev, "", notes), *done], notes
        users = [d for d in the_node.devs.values() if d.conduit == dev and d.up]
        for user in users:
            why = f" (its conduit {dev} is going down)"
            done.append(self._down(the_node, user.name, why, notes))
        return [self._down(the_node, dev, "", notes), *done], notes

    def _up(self, node: Node, dev: str, why: str, notes: list[str]) -> str:
        netdev = node.dev(dev)
        if netdev.up:
            return f"{dev} up{why} (already up)"
        netdev.up = True
        notes += [f"{dev}: {note}" for note in node.link_up(dev)]
        return f"{dev} up{why}"

    def _down(self, node: Node, dev: str, why: str, notes: list[str]) -> str:
        netdev = node.dev(dev)
        if not netdev.up:
            return f"{dev} down{why} (already down)"
        netdev.up = False
        flushed = self.dev_down(node.name, dev)
        tail = f"; flushed {flushed} offloaded state(s)/policy(ies)" if flushed else ""
        notes += [f"{dev}: {note}" for note in node.link_down(dev)]
        return f"{dev} down{why}{tail}"

    def dev_down(self, node: str, dev: str) -> int:
        """A device went down: with esp-hw-offload on, its offloaded states and
        policies are flushed (xfrm_dev_down, airoha-dsa-xfrm.md 3.7, 6.17) [C].
        Returns how many objects were flushed."""
        the_node = self.node(node)
        port = self.port(node, dev)
        if port is None or not the_node.dev(dev).has_hw_esp:
            return 0
        states, pols = the_node.xfrm.device_down(port)
        return len(states) + len(pols)

    def peer_of(self, node: str, dev: str) -> tuple[str, str] | None:
        """The (node, dev) at the other end of a wire, if any (the wires are fixed)."""
        key = (node, dev)
        try:
            return self._peers[key]
        except KeyError:
            pass
        peer: tuple[str, str] | None = None
        if key in LINKS:
            peer = LINKS[key]
        else:
            for a, b in LINKS.items():
                if b == key:
                    peer = a
                    break
        if len(self._peers) < 1024:
            self._peers[key] = peer
        return peer
