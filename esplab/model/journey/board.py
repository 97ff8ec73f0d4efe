"""What the walk needs of the board it walks: the lab (:class:`esplab.model.lab.Lab`)
satisfies these protocols, and the steps import them rather than the lab, so the walk
sits under the lab that runs it.

* :class:`Recorder`: where a step keeps what it did (the journey log, the capture
  rings, and whether tracing is on);
* :class:`Board`: a recorder with the nodes and their wires, the software SAs of each
  node, the ap's EIP-93 driver, the real Linux peers, the XDP side and the datapath
  that carries frames between nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from esplab.model.kernel.esp.runtime import SaRuntime
    from esplab.model.kernel.node import Node
    from esplab.model.stage import Captures, Journey, JourneyLog

__all__ = ["Board", "Recorder", "Settings", "WireCarrier"]


class Settings(Protocol):
    """The lab's settings a walk reads."""

    @property
    def tracing(self) -> bool: ...

    @property
    def crypto_provider(self) -> str: ...


class Recorder(Protocol):
    """Where a step keeps its journeys and their snapshots."""

    @property
    def settings(self) -> Settings: ...

    @property
    def journeys(self) -> JourneyLog: ...

    @property
    def captures(self) -> Captures: ...


class WireCarrier(Protocol):
    """The datapath as an AF_XDP transmit sees it: it puts a frame on a wire."""

    def deliver_frame(self, journey: Journey, node: str, dev: str, frame: bytes) -> None: ...


class Board(Recorder, Protocol):
    """The emulated board the walk goes through (the lab)."""

    #: The XDP and AF_XDP side (``esplab.model.journey.xdp.XdpLab``), None until built.
    xdp_state: Any

    @property
    def real_peers(self) -> dict[str, Any]:
        """Nodes played by a real Linux kernel (``esplab.peer.bridge.RealPeer``)."""
        ...

    @property
    def deliver_hooks(self) -> list[Callable[[str, bytes], None]]:
        """Called with (node, packet) for every packet delivered locally."""
        ...

    @property
    def eip93(self) -> Any:
        """The ap's EIP-93 driver, with its engine."""
        ...

    @property
    def datapath(self) -> WireCarrier: ...

    def node(self, name: str | None = None) -> Node: ...

    def peer_of(self, node: str, dev: str) -> tuple[str, str] | None: ...

    def sa_runtime(self, node: str) -> SaRuntime: ...

    def engine_snapshots(self, on: bool) -> None: ...
