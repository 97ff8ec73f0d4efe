"""The device side of XFRM offload on the emulated ports (``xfrmdev_ops``).

There is no IPsec offload in mainline ``airoha_eth`` (airoha-dsa-xfrm.md 3.10)
[C]. The ap's ports follow the contract of the withdrawn JM series instead,
which attached the same ops to the GDM netdevs and the DSA user ports (user
ports borrow the conduit's engine) [C for that series, M for its use here]:

* ``state_add`` returns EOPNOTSUPP (so crypto offload falls back to software)
  unless ESP-HW is on (checked here) and the driver takes the SA: ESP in
  transport or tunnel mode, no NAT-T, no TFC padding, no AEAD, algorithms the
  EIP-93ies has (the driver's own checks, ``esplab.model.engine.xmit.state_add``) [C];
* ESN needs ``advance_esn``, which the series does not implement [C];
* packet offload and policy offload are accepted on the ap's ports: a
  labelled design choice (DESIGN.md: the packet datapath is modelled) [M].

Peers' NICs have no ``xfrmdev_ops``: crypto offload to them silently stays in
software, packet offload fails with EINVAL (fact 6.10) [C].
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass, field

from esplab.model.netdev import NetDev
from esplab.model.xfrm.objects import XfrmPolicy, XfrmState

__all__ = ["PortOffload", "refusal"]


def refusal(state: XfrmState, dev: NetDev) -> str | None:
    """Why the port refuses ``state`` before asking the driver, or None."""
    if not dev.has_hw_esp:
        return f"esp-hw-offload is off on {dev.name}"
    return None


@dataclass
class PortOffload:
    """``xfrmdev_ops`` of one netdev, as the XFRM core sees it."""

    dev: NetDev
    program: Callable[[XfrmState, NetDev], str | None] | None = None
    unprogram: Callable[[XfrmState, NetDev], None] | None = None
    refused: str = ""
    # id(state) -> (state, why): crypto-offload requests that fell back to software.
    fallbacks: dict[int, tuple[XfrmState, str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.dev.name

    @property
    def features(self) -> Set[str]:
        return {name for name, on in self.dev.features.items() if on}

    @property
    def has_xfrmdev_ops(self) -> bool:
        return self.dev.xfrmdev_ops

    @property
    def supports_policy_offload(self) -> bool:
        return self.dev.xfrmdev_ops

    @property
    def supports_advance_esn(self) -> bool:
        return False

    def state_add(self, state: XfrmState) -> str | None:
        why = refusal(state, self.dev)
        errno: str | None = "EOPNOTSUPP" if why is not None else None
        if why is None and self.program is not None:
            errno = self.program(state, self.dev)
            why = self.refused or None
        self.refused = why or ""
        if errno == "EOPNOTSUPP" and why:
            self.fallbacks[id(state)] = (state, why)
        return errno

    def state_delete(self, state: XfrmState) -> None:
        if self.unprogram is not None:
            self.unprogram(state, self.dev)

    def policy_add(self, policy: XfrmPolicy) -> str | None:
        return None

    def policy_delete(self, policy: XfrmPolicy) -> None:
        return None
