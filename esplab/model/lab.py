"""The whole emulated lab: nodes, wires, journeys and captures, from one seed."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from esplab.errors import NoSuchNode
from esplab.model.journey import Captures, JourneyLog
from esplab.model.node import Node
from esplab.model.topology import LINKS, build_nodes

__all__ = ["Lab", "LabSettings"]


@dataclass
class LabSettings:
    """Knobs a user may turn (``set``); defaults follow DESIGN.md."""

    seed: int = 0x5EED
    tracing: bool = True
    journey_ring: int = 256
    capture_ring: int = 1024


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
            from esplab.model.engine import new_eip93

            self._eip93 = new_eip93(self.settings.seed)
        return self._eip93

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = build_nodes(self.settings.seed)
        self.rng = random.Random(self.settings.seed ^ 0x1AB)
        self.journeys.resize(self.settings.journey_ring)
        self.captures.resize(self.settings.capture_ring)

    def node(self, name: str | None = None) -> Node:
        key = self.current if name is None else name
        try:
            return self.nodes[key]
        except KeyError:
            raise NoSuchNode(f"unknown node '{key}'", valid=list(self.nodes), value=key) from None

    def offloaded_count(self, node: str, dev: str) -> int:
        """States and policies of ``node`` offloaded to ``dev``."""
        xfrm = self.node(node).xfrm
        return 0 if xfrm is None else int(xfrm.offloaded_count(dev))

    def dev_down(self, node: str, dev: str) -> int:
        """A device went down: with esp-hw-offload on, its offloaded states and
        policies are flushed (xfrm_dev_down, airoha-dsa-xfrm.md 3.7, 6.17) [C].
        Returns how many objects were flushed."""
        the_node = self.node(node)
        if the_node.xfrm is None or not the_node.dev(dev).has_hw_esp:
            return 0
        return int(the_node.xfrm.device_down(dev))

    def peer_of(self, node: str, dev: str) -> tuple[str, str] | None:
        """The (node, dev) at the other end of a wire, if any."""
        if (node, dev) in LINKS:
            return LINKS[(node, dev)]
        for a, b in LINKS.items():
            if b == (node, dev):
                return a
        return None
