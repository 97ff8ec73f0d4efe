"""The device side of XFRM offload on the emulated ports (``xfrmdev_ops``).

There is no IPsec offload in mainline ``airoha_eth`` (airoha-dsa-xfrm.md 3.10)
[C]. The ap's ports follow the contract of the withdrawn JM series instead,
which attached the same ops to the GDM netdevs and the DSA user ports (user
ports borrow the conduit's engine) [C for that series, M for its use here]:

* ``state_add`` returns EOPNOTSUPP (so crypto offload falls back to software)
  unless ESP-HW is on (checked here) and the driver takes the SA: ESP in
  transport or tunnel mode, no NAT-T, no TFC padding, no AEAD, algorithms the
  EIP-93ies has (the driver's own checks,
  ``esplab.model.kernel.drivers.eip93.sa_add.state_add``) [C];
* ESN: JM patch 3 ("net: airoha: add EIP93-backed ESP XFRM offload", airoha_xfrm.c)
  sets ``.xdo_dev_state_advance_esn = airoha_xfrm_state_advance_esn`` in
  ``airoha_xfrmdev_ops``; that calls patch 2's ``eip93_ipsec_state_advance_esn``
  ("crypto: inside-secure: add EIP93 ESP packet backend", eip93-ipsec.c), which
  writes replay_esn seq_hi (in) or oseq_hi (out) into the SA record's sa_seqnum[1]
  [C, the patches]. So the core's crypto+ESN check passes. The reference notes say
  otherwise or nothing: airoha-dsa-xfrm.md 3.10 does not mention ESN, and eip93.md
  3.1 and 4 ("drivers write 0 and ESN is unsupported") describe the mainline and
  vschagen drivers, not patch 2. The model's engine does not put sa_seqnum[1] into
  the ICV, so its backend declines ESN SAs and they run in software
  (``esplab.model.kernel.drivers.eip93.sa_add.ESN_NOT_OFFLOADED_WHY``) [M];
* packet offload and policy offload are accepted on the ap's ports: a
  labelled design choice (DESIGN.md: the packet datapath is modelled) [M].

Peers' NICs have no ``xfrmdev_ops``: crypto offload to them silently stays in
software, packet offload fails with EINVAL (fact 6.10) [C].
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING

from esplab.model.kernel.stack.netdev import ESP_HW_OFFLOAD, NetDev
from esplab.model.kernel.xfrm.objects import XfrmPolicy, XfrmState

if TYPE_CHECKING:
    from esplab.model.kernel.xfrm.tables import XfrmNode

__all__ = ["DSA_FEATURE_LOST", "PortOffload", "dsa_feature_change", "refusal"]

#: The JM notifier's warning when a DSA user port loses ESP with SAs on its GDM port
#: (airoha_xfrm_dsa_feature_change, netdev_warn) [C].
DSA_FEATURE_LOST = "DSA feature lost ESP SAs, flushing"


def dsa_feature_change(
    xfrm: XfrmNode, dev: NetDev, held: int
) -> tuple[list[XfrmState], list[XfrmPolicy]] | None:
    """NETDEV_FEAT_CHANGE on ``dev`` as the JM series handles it (airoha_xfrm.c
    ``airoha_xfrm_dsa_feature_change``) [C]: a DSA user port that now has
    esp-hw-offload off, while its conduit's GDM port still counts offloaded SAs
    (``held``: the conduit's and every user port's, the shared ``xfrm_state_count``),
    has its own states and policies flushed (``xfrm_dev_state_flush``,
    ``xfrm_dev_policy_flush``), with the warning :data:`DSA_FEATURE_LOST`. The core's
    own notifier deletes nothing on a feature change [C] (3.7). The lists flushed, or
    None when the notifier does nothing. That offloaded policies count in ``held`` is
    the model's [M], as in :meth:`NetDev.set_features`.

    Call it only when ``dev``'s active features changed: ``ethnl_set_features`` calls
    ``netdev_features_change``, which raises the event, only then
    (net/ethtool/features.c, ``if (mod)``) [C]."""
    if dev.kind != "dsa-user" or not dev.xfrmdev_ops or dev.features.get(ESP_HW_OFFLOAD):
        return None
    if not held:
        return None
    return xfrm.flush_dev(dev.name)


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
    # What the last programmed state's add should warn of ("" for nothing).
    note: str = ""

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
        # JM patch 3 (airoha_xfrm.c): airoha_xfrmdev_ops sets .xdo_dev_state_advance_esn
        # = airoha_xfrm_state_advance_esn [C, the patch; airoha-dsa-xfrm.md 3.10 does not
        # list it]. A port without xfrmdev_ops never gets this far (reference 3.5 row 6).
        return self.dev.xfrmdev_ops

    def state_add(self, state: XfrmState) -> str | None:
        why = refusal(state, self.dev)
        self.note = ""
        errno: str | None = "EOPNOTSUPP" if why is not None else None
        if why is None and self.program is not None:
            errno = self.program(state, self.dev)
            why = self.refused or None
        self.refused = why or ""
        # Only crypto offload falls back to software on EOPNOTSUPP; a packet-offload
        # state the driver refuses is never added, so nothing may remember it. A
        # crypto-offload request that falls back to software keeps why in its record.
        crypto = state.offload is None or state.offload.type == "crypto"
        if errno == "EOPNOTSUPP" and why and crypto:
            state.runtime.refused = why
        return errno

    def state_delete(self, state: XfrmState) -> None:
        if self.unprogram is not None:
            self.unprogram(state, self.dev)

    def policy_add(self, policy: XfrmPolicy) -> str | None:
        return None

    def policy_delete(self, policy: XfrmPolicy) -> None:
        return None
