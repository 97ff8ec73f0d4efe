"""The EN7581's Ethernet side as its sources fix it: the GDM ports' MTU limit and the
MT7530-family DSA switch behind GDM1 (its CPU port, its tag, its frame limit)."""

from __future__ import annotations

__all__ = ["AIROHA_MAX_MTU", "DSA_TAG_LEN", "MT7530_CPU_PORT", "MT7530_MAX_MTU"]

AIROHA_MAX_MTU = 9220  # airoha-dsa-xfrm.md 1.4 [C]
DSA_TAG_LEN = 4  # the MTK special tag (2.1) [C]
# mt7530-family switch: 15 KiB less Ethernet header, FCS and tag (1.3) [C]; the
# conduit's 9220 is what limits the user ports (dsa_user_change_mtu: ERANGE).
MT7530_MAX_MTU = 15 * 1024 - 14 - 4 - 4
# The switch port wired to GDM1: device-tree ``port@6`` has ``ethernet = <&gdm1>``
# (airoha-dsa-xfrm.md 1.1) [C].
MT7530_CPU_PORT = 6
