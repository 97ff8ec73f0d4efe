"""What the kernel hangs on an XFRM state or policy beside its configuration: the
runtime record each object carries from its construction to its end.

A state's record holds its software SA and the scratch SA the packet-offload path
builds headers with (``esp/runtime``), the device it is bound to (``xso.dev``), why
the device refused to offload it, the engine's SA record (``xso.offload_handle``) and
the sw+aead datapath's authenc transform. An object made again from a request
(``construct_state``, ``dataclasses.replace``) starts with an empty record, as a new
``struct xfrm_state`` does; an update in place keeps the object, and the XFRM tables
tell the lab (``XfrmNode.on_state``), which drops what is built from the old values.

The layers above fill the record (ESP, the drivers, the walk): its fields are typed
here only as far as this layer knows them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from esplab.model.kernel.xfrm.offload import OffloadDevice

__all__ = ["PolicyRuntime", "StateRuntime"]


class StateRuntime:
    """One state's runtime record (every field None until something builds it)."""

    __slots__ = ("aead", "dev", "offloaded", "refused", "sa", "scratch")

    def __init__(self) -> None:
        #: The software SA (``EspSA``) built from the state, and a second one to build
        #: headers with while the engine owns the sequence numbers (packet offload).
        self.sa: Any = None
        self.scratch: Any = None
        #: The device the state is offloaded to (the kernel's ``xso.dev``).
        self.dev: OffloadDevice | None = None
        #: Why the device refused crypto offload, so the state runs in software.
        self.refused: str | None = None
        #: The engine's SA record for the state (``OffloadedSA``: xso.offload_handle).
        self.offloaded: Any = None
        #: The engine's authenc transform for the sw+aead datapath (``AeadTfm``).
        self.aead: Any = None

    def __repr__(self) -> str:
        return "StateRuntime()"


class PolicyRuntime:
    """One policy's runtime record: the device it is offloaded to (``xdo.dev``)."""

    __slots__ = ("dev",)

    def __init__(self) -> None:
        self.dev: OffloadDevice | None = None

    def __repr__(self) -> str:
        return "PolicyRuntime()"
