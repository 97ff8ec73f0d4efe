"""The offload datapaths through the EIP-93 engine (crypto, packet, sw+aead).

Filled in by the driver model: ``attach_engine`` gives an ap port its
``xdo_dev_state_add``; ``engine_output``/``engine_input`` run one packet through
the rings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from esplab.model.lab import Lab
    from esplab.model.node import Node
    from esplab.model.offload_port import PortOffload
    from esplab.model.xfrm.objects import XfrmState

__all__ = ["attach_engine", "engine_input", "engine_output"]


def attach_engine(lab: Lab, port: PortOffload) -> None:
    return None


def engine_output(lab: Lab, walk: Any, node: Node, state: XfrmState, packet: bytes,
                  dev_name: str, datapath: str) -> bytes | None:
    walk.drop(f"{dev_name}.xfrmdev", dev_name, "engine not attached", None, "")
    return None


def engine_input(lab: Lab, walk: Any, node: Node, state: XfrmState, packet: bytes,
                 dev_name: str) -> bytes | None:
    walk.drop(f"{dev_name}.xfrmdev", dev_name, "engine not attached", None, "")
    return None
