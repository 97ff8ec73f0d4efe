"""The XFRM offload contract at configuration time, and the device side it talks to.

Reference ``airoha-dsa-xfrm.md`` 3.3, 3.5, 3.7, 3.10 and facts 6.10-6.17. The
kernel half (``xfrm_dev_state_add`` / ``xfrm_dev_policy_add`` in
``net/xfrm/xfrm_device.c``) lives here; the driver half is whatever implements
:class:`OffloadDevice` (the EN7581 port model, netdevsim-like test doubles). A
:data:`DeviceResolver` maps a netdev name to such a device, or None when the node
has no netdev of that name.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import Protocol, TypeAlias

from esplab.errors import KernelError
from esplab.model.kernel.stack.netdev import ESP_HW_OFFLOAD
from esplab.model.kernel.xfrm.objects import IPPROTO_ESP, XfrmOffload, XfrmPolicy, XfrmState

__all__ = [
    "ESP_HW_OFFLOAD",
    "DeviceResolver",
    "OffloadDevice",
    "no_devices",
    "offload_policy",
    "offload_state",
]


class OffloadDevice(Protocol):
    """What the XFRM core needs from a netdev (``struct net_device`` + ``xfrmdev_ops``).

    * ``features``: enabled ethtool feature names; ``esp-hw-offload``
      (``NETIF_F_HW_ESP``) decides whether ``device_down`` flushes the device's
      states and policies (``xfrm_dev_down``).
    * ``has_xfrmdev_ops``: the driver has ``xdo_dev_state_add``.
    * ``supports_policy_offload``: it has ``xdo_dev_policy_add``.
    * ``supports_advance_esn``: it has ``xdo_dev_state_advance_esn``.
    * ``state_add`` / ``policy_add`` return None on success or an errno name
      (``"EOPNOTSUPP"``, ``"EINVAL"``, ``"ENOSPC"``...). They see the object with
      its ``offload`` already set, as a driver sees ``x->xso``.
    """

    @property
    def name(self) -> str: ...

    @property
    def features(self) -> Set[str]: ...

    @property
    def has_xfrmdev_ops(self) -> bool: ...

    @property
    def supports_policy_offload(self) -> bool: ...

    @property
    def supports_advance_esn(self) -> bool: ...

    def state_add(self, state: XfrmState) -> str | None: ...

    def state_delete(self, state: XfrmState) -> None: ...

    def policy_add(self, policy: XfrmPolicy) -> str | None: ...

    def policy_delete(self, policy: XfrmPolicy) -> None: ...


DeviceResolver: TypeAlias = Callable[[str], "OffloadDevice | None"]


def no_devices(name: str) -> OffloadDevice | None:
    """A resolver for a node without offload-capable netdevs."""
    return None


def offload_state(
    state: XfrmState, request: XfrmOffload, resolve: DeviceResolver, *, duplicate: bool = False
) -> OffloadDevice | None:
    """``xfrm_dev_state_add`` (newest order, reference 3.5 rows 1-9).

    On success ``state.offload`` is the binding and the device is returned, so the
    caller can undo with ``state_delete`` if the insert fails later. A crypto
    request that the kernel lets fall back to software returns None with
    ``state.offload`` None and no "offload" line printed. Raises ``KernelError``.

    ``duplicate``: the SAD holds this SA already, and the insert will answer EEXIST.
    Every check of rows 1-8 still comes first, as in Linux; the driver (row 9) is
    then not asked [M]: Linux asks it and undoes the offload after -EEXIST, but the
    model's driver refuses an SPI it holds (sa_add.py), which would blame the device
    for a duplicate and leave a journey of a command that changed nothing.
    """
    packet = request.type == "packet"
    state.offload = None
    # Row 1: only IPV6/INBOUND/PACKET flags exist; a typed request can still be off.
    if request.type not in ("crypto", "packet") or request.dir not in ("in", "out"):
        raise KernelError("EINVAL", "Unrecognized flags in offload request")
    # Row 2: XFRMA_SA_DIR (6.10+) must agree with XFRM_OFFLOAD_INBOUND.
    if state.sa_dir is not None and state.sa_dir != request.dir:
        raise KernelError(
            "EINVAL",
            "Mismatched SA and offload direction",
            hint=f"the SA is dir {state.sa_dir}, the offload dir {request.dir}",
        )
    # Row 3: inbound offload cannot carry an if_id.
    if request.dir == "in" and state.if_id:
        raise KernelError("EINVAL", "XFRM if_id is not supported in offload RX path")
    # Row 4: no TFC padding in hardware.
    if state.tfcpad:
        raise KernelError("EINVAL", "TFC padding can't be offloaded")
    # Rows 5-6: no such device, or no xfrmdev_ops: crypto quietly stays software.
    dev = resolve(request.dev)
    if dev is None or not dev.has_xfrmdev_ops:
        if packet:
            why = "no such device" if dev is None else "device has no xfrmdev_ops"
            raise KernelError("EINVAL", f"packet offload to {request.dev}: {why}")
        return None
    # Row 7: crypto offload of an ESN SA needs xdo_dev_state_advance_esn.
    if not packet and state.esn and not dev.supports_advance_esn:
        raise KernelError("EINVAL", "Device doesn't support offload with ESN")
    # Row 8: only ESP has an offload type (esp4_offload/esp6_offload).
    if state.proto != IPPROTO_ESP:
        raise KernelError("EINVAL", "Type doesn't support offload")
    if duplicate:
        return None
    # Row 9: the driver decides; crypto -EOPNOTSUPP is a silent software fallback.
    state.offload = request
    err = dev.state_add(state)
    if err is None:
        return dev
    state.offload = None
    if err == "EOPNOTSUPP" and not packet:
        return None
    # The state is not added. What the driver did is kept, and said: its
    # xdo_dev_state_add is a journey (trace), as it ran on the device.
    raise KernelError(
        err,
        "Device failed to offload this state",
        hint="no state was added; the driver's refusal is kept as the last journey (trace)",
    )


def offload_policy(
    policy: XfrmPolicy, request: XfrmOffload, resolve: DeviceResolver
) -> OffloadDevice:
    """``xfrm_dev_policy_add`` (reference 3.5, policy table; fact 6.12).

    Sets ``policy.offload`` and returns the device; raises ``KernelError``.
    """
    policy.offload = None
    # Socket policies come from setsockopt(IP_XFRM_POLICY), which has no offload
    # attribute (reference 3.7): the request cannot be expressed, so refuse it.
    if policy.socket:
        raise KernelError("EINVAL", "socket policies cannot be offloaded")
    if request.type != "packet":
        raise KernelError("EINVAL", "Only packet offload mode is supported")
    dev = resolve(request.dev)
    if dev is None:
        raise KernelError("EINVAL", f"no device {request.dev}")
    if not dev.has_xfrmdev_ops or not dev.supports_policy_offload:
        raise KernelError("EINVAL", "Policy offload is not supported")
    policy.offload = XfrmOffload("packet", request.dev, policy.dir)
    err = dev.policy_add(policy)
    if err is not None:
        policy.offload = None
        raise KernelError(err, "Device failed to offload this policy")
    return dev
