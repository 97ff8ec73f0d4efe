"""Driver profiles: what a NIC driver offers to XDP and AF_XDP.

Feature bits and attach rules from ``af_xdp.md`` 1.1 and 2.6; the am65-cpsw numbers
from 4.2 (patches 3-6) and facts 6.22-6.24 [C].
"""

from __future__ import annotations

from dataclasses import dataclass

from esplab.model.kernel.xdp.consts import MAX_SKB_FRAGS, NetdevXdpAct

__all__ = ["DriverProfile"]

_BASIC = NetdevXdpAct.BASIC | NetdevXdpAct.REDIRECT | NetdevXdpAct.NDO_XMIT


@dataclass(frozen=True)
class DriverProfile:
    """What a driver offers to XDP and AF_XDP."""

    name: str
    native_xdp: bool = True  # implements ndo_bpf: native attach possible (1.1) [C]
    xdp_features: NetdevXdpAct = _BASIC  # netdev_xdp_act bits (1.1) [C]
    rx_queues: int = 1  # real_num_rx_queues
    tx_queues: int = 1  # real_num_tx_queues
    hw_ring_size: int = 512  # RX descriptors the NIC holds (design choice "rx-fifo")
    tx_ring_size: int = 512  # TX descriptors; copy-mode xmit is busy when they are all used
    zc_min_rx_frame: int = 0  # smallest XSK RX frame the driver accepts for zero copy
    zc_tx_reserve: int = 0  # TX descriptors zero copy leaves to the regular stack
    zc_tx_in_rx_napi: bool = True  # one NAPI drives RX and ZC TX (xdpsock's assumption, 3.2)
    zc_max_segs: int = 1  # xdp_zc_max_segs: 1 = no multi-buffer zero copy (2.6) [C]
    shared_zc_queues: bool = False  # am65: a queue id is zero copy for one port at a time

    @classmethod
    def generic(cls) -> DriverProfile:
        """No ndo_bpf: only generic (SKB) XDP, only copy-mode AF_XDP (1.1) [C]."""
        return cls("generic", native_xdp=False, xdp_features=NetdevXdpAct.NONE)

    @classmethod
    def native(cls) -> DriverProfile:
        """Native XDP without XSK pools: AF_XDP in copy mode only."""
        return cls("native")

    @classmethod
    def zero_copy(cls, queues: int = 4) -> DriverProfile:
        """Native XDP with XSK zero copy and a combined queue-pair NAPI."""
        return cls(
            "zc",
            xdp_features=_BASIC | NetdevXdpAct.XSK_ZEROCOPY,
            rx_queues=queues,
            tx_queues=queues,
        )

    @classmethod
    def am65_cpsw(cls) -> DriverProfile:
        """am65-cpsw with the 2025 zero-copy series (4.2) [C].

        1 RX flow and 8 TX channels of 500 descriptors each, XSK RX frames of at least
        AM65_CPSW_MAX_PACKET_SIZE = 2024, MAX_SKB_FRAGS TX descriptors kept for the
        stack, zero-copy TX only from the TX-completion NAPI (patch 5), zero-copy
        queues shared between the ports (patch 3).
        """
        return cls(
            "am65-cpsw-nuss",
            xdp_features=_BASIC | NetdevXdpAct.XSK_ZEROCOPY,
            rx_queues=1,
            tx_queues=8,
            hw_ring_size=500,
            tx_ring_size=500,
            zc_min_rx_frame=2024,
            zc_tx_reserve=MAX_SKB_FRAGS,
            zc_tx_in_rx_napi=False,
            shared_zc_queues=True,
        )
