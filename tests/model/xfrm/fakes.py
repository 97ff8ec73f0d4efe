"""A configurable stand-in for a netdev and its xfrmdev_ops (the device model plugs
in through the same ``OffloadDevice`` protocol)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from esplab.model.kernel.xfrm.objects import XfrmPolicy, XfrmState
from esplab.model.kernel.xfrm.offload import ESP_HW_OFFLOAD, OffloadDevice

__all__ = ["FakeDevice", "resolver"]


@dataclass
class FakeDevice:
    """``state_errno`` / ``policy_errno``: what the driver callbacks answer (None = ok).
    ``packet``: whether ``state_add`` accepts packet offload (netdevsim does not)."""

    name: str
    features: frozenset[str] = frozenset({ESP_HW_OFFLOAD})
    has_xfrmdev_ops: bool = True
    supports_policy_offload: bool = True
    supports_advance_esn: bool = True
    packet: bool = True
    state_errno: str | None = None
    policy_errno: str | None = None
    states: list[XfrmState] = field(default_factory=list)
    policies: list[XfrmPolicy] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def state_add(self, state: XfrmState) -> str | None:
        self.calls.append(f"state_add {state.spi:#x}")
        if self.state_errno is not None:
            return self.state_errno
        if state.offload is not None and state.offload.type == "packet" and not self.packet:
            return "EINVAL"
        self.states.append(state)
        return None

    def state_delete(self, state: XfrmState) -> None:
        self.calls.append(f"state_delete {state.spi:#x}")
        self.states.remove(state)

    def policy_add(self, policy: XfrmPolicy) -> str | None:
        self.calls.append(f"policy_add {policy.dir}")
        if self.policy_errno is not None:
            return self.policy_errno
        self.policies.append(policy)
        return None

    def policy_delete(self, policy: XfrmPolicy) -> None:
        self.calls.append(f"policy_delete {policy.dir}")
        self.policies.remove(policy)


def resolver(*devices: FakeDevice) -> Callable[[str], OffloadDevice | None]:
    """A DeviceResolver over the given devices."""
    table: dict[str, OffloadDevice] = {d.name: d for d in devices}
    return table.get
