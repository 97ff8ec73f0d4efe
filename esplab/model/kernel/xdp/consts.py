"""Constants, enums and the model's design choices for XDP and AF_XDP.

Every value cites ``reference/af_xdp.md`` (section and tag). The reference tags its
facts [src], [derived], [3rd] and [hyp]; this package writes them in the project's
tags: [C] = [src] (read in the source), [D] = [derived], [U] = [3rd]/[hyp] or not
covered by the reference. Where the reference is silent the model makes a choice;
each such choice is listed in :data:`DESIGN_CHOICES` and referred to by its key.

The model follows one kernel behaviour set (reference 7): mainline ~6.17 net/xdp with
the Oct-2025 TX descriptor hardening (zero-length TX descriptors invalid, options other
than PKT_CONTD|TX_METADATA invalid, addr - tx_metadata_len underflow invalid,
chunk_size <= PAGE_SIZE).
"""

from __future__ import annotations

import enum

from esplab.errors import KernelError

__all__ = [
    "AF_XDP",
    "DESIGN_CHOICES",
    "ETH_FCS_SIZE",
    "MAX_PER_SOCKET_BUDGET",
    "MAX_SKB_FRAGS",
    "PAGE_SIZE",
    "TX_BATCH_SIZE",
    "U32_MASK",
    "WIRE_OVERHEAD",
    "XDP_OPTIONS_ZEROCOPY",
    "XDP_PACKET_HEADROOM",
    "XDP_RING_NEED_WAKEUP",
    "XDP_UMEM_MIN_CHUNK_SIZE",
    "XSK_UNALIGNED_BUF_ADDR_MASK",
    "XSK_UNALIGNED_BUF_OFFSET_SHIFT",
    "AttachFlag",
    "AttachMode",
    "Benchmark",
    "BindFlag",
    "DescOption",
    "NetdevXdpAct",
    "RingKind",
    "UmemFlag",
    "Wakeup",
    "XdpAction",
    "XdpAttached",
    "XskMode",
    "kernel_error",
]

U32_MASK = 0xFFFF_FFFF  # ring indices are free-running u32 counters (2.4) [C]
PAGE_SIZE = 4096  # the emulated kernel's page size; chunk_size may not exceed it (2.2) [C]
XDP_PACKET_HEADROOM = 256  # headroom in front of every XDP buffer (1.2) [C]
XDP_UMEM_MIN_CHUNK_SIZE = 2048  # smallest chunk_size (2.2) [C]
XSK_UNALIGNED_BUF_OFFSET_SHIFT = 48  # unaligned addr: offset in bits 63:48 (2.2) [C]
XSK_UNALIGNED_BUF_ADDR_MASK = (1 << XSK_UNALIGNED_BUF_OFFSET_SHIFT) - 1  # base bits 47:0 [C]
TX_BATCH_SIZE = 32  # copy-mode descriptors per sendto, default max_tx_budget (2.6) [C]
MAX_PER_SOCKET_BUDGET = 32  # generic multi-socket ZC path, per socket per round (2.6) [C]
MAX_SKB_FRAGS = 17  # default; am65-cpsw keeps this many TX descriptors for the stack (6.23) [C]
AF_XDP = 44  # socket family (2.1) [C]
ETH_FCS_SIZE = 4  # xdpsock -s counts the FCS: desc len = size - 4 (3.1) [C]
WIRE_OVERHEAD = 20  # preamble 7 + SFD 1 + inter-frame gap 12 bytes per frame (5) [D]
XDP_RING_NEED_WAKEUP = 1 << 0  # the flag in a ring's flags word (2.5) [C]
XDP_OPTIONS_ZEROCOPY = 1 << 0  # getsockopt(XDP_OPTIONS) bit (2.6) [C]


class XdpAction(enum.IntEnum):
    """``enum xdp_action`` (1.2) [C]."""

    ABORTED = 0  # program error: dropped, xdp_exception tracepoint fires
    DROP = 1  # dropped at the hook, no skb is built
    PASS = 2  # continues into the normal stack
    TX = 3  # sent back out of the receiving interface
    REDIRECT = 4  # to the target chosen by bpf_redirect_map (here: an XSKMAP slot)


class AttachMode(enum.Enum):
    """XDP attach modes with their netlink flag (1.1) [C]."""

    SKB = 1 << 1  # XDP_FLAGS_SKB_MODE, generic hook after skb allocation ("xdpgeneric")
    DRV = 1 << 2  # XDP_FLAGS_DRV_MODE, native hook in the driver's NAPI poll ("xdpdrv")
    HW = 1 << 3  # XDP_FLAGS_HW_MODE, offloaded to the NIC ("xdpoffload")


class AttachFlag(enum.IntFlag):
    """The other attach flags (1.1) [C]."""

    NONE = 0
    UPDATE_IF_NOEXIST = 1 << 0  # fail if a program is already attached
    REPLACE = 1 << 4  # replace only an expected program


class XdpAttached(enum.IntEnum):
    """``IFLA_XDP_ATTACHED`` as reported on dump (1.1) [C]."""

    NONE = 0
    DRV = 1
    SKB = 2
    HW = 3
    MULTI = 4


class NetdevXdpAct(enum.IntFlag):
    """``enum netdev_xdp_act``, the driver's XDP feature bits (1.1) [C]."""

    NONE = 0
    BASIC = 1  # ABORTED/DROP/PASS/TX
    REDIRECT = 2
    NDO_XMIT = 4
    XSK_ZEROCOPY = 8
    HW_OFFLOAD = 16
    RX_SG = 32
    NDO_XMIT_SG = 64

    @classmethod
    def zc_required(cls) -> NetdevXdpAct:
        """A zero-copy bind needs all of BASIC, REDIRECT and XSK_ZEROCOPY (1.1) [C]."""
        return cls.BASIC | cls.REDIRECT | cls.XSK_ZEROCOPY


class BindFlag(enum.IntFlag):
    """``sockaddr_xdp.sxdp_flags`` (2.5, 2.6, 2.8) [C]."""

    NONE = 0
    SHARED_UMEM = 1 << 0
    COPY = 1 << 1
    ZEROCOPY = 1 << 2
    USE_NEED_WAKEUP = 1 << 3
    USE_SG = 1 << 4


class UmemFlag(enum.IntFlag):
    """``xdp_umem_reg.flags`` (2.2) [C]."""

    NONE = 0
    UNALIGNED_CHUNK = 1 << 0
    TX_SW_CSUM = 1 << 1
    TX_METADATA_LEN = 1 << 2


class DescOption(enum.IntFlag):
    """``xdp_desc.options`` bits (2.3) [C]."""

    NONE = 0
    PKT_CONTD = 1 << 0  # the packet continues in the next descriptor
    TX_METADATA = 1 << 1  # an xsk_tx_metadata sits just before addr


class Wakeup(enum.IntFlag):
    """``XDP_WAKEUP_RX``/``XDP_WAKEUP_TX`` for ndo_xsk_wakeup and the pool's cache (2.5) [C]."""

    NONE = 0
    RX = 1 << 0
    TX = 1 << 1


class RingKind(enum.Enum):
    """The four rings, with their mmap page offset (2.3) [C]."""

    RX = 0
    TX = 0x8000_0000
    FILL = 0x1_0000_0000
    COMPLETION = 0x1_8000_0000

    @property
    def holds_descs(self) -> bool:
        """RX and TX carry 16-byte ``xdp_desc``; FILL and COMPLETION carry u64 addrs."""
        return self in (RingKind.RX, RingKind.TX)

    @property
    def user_produces(self) -> bool:
        """User space produces FILL and TX; the kernel produces RX and COMPLETION (2.3) [C]."""
        return self in (RingKind.FILL, RingKind.TX)


class Benchmark(enum.Enum):
    """xdpsock benchmarks (3.1, 3.2) [C]."""

    RXDROP = "rxdrop"
    TXONLY = "txonly"
    L2FWD = "l2fwd"


class XskMode(enum.Enum):
    """The seed table's three columns (4.3; column reading in 3.2 [D])."""

    SKB = "XDP-SKB"  # generic hook, copy mode (xdpsock -S)
    NATIVE = "XDP-Native"  # native hook, copy mode
    ZEROCOPY = "XDP-Native (ZeroCopy)"  # native hook, zero-copy bind


# Choices the model makes where the reference is silent. Code refers to them by key.
DESIGN_CHOICES: dict[str, str] = {
    "lazy-consumer": (
        "The kernel consumer of FILL and TX publishes its index lazily (2.4, 6.4 [C]): "
        "when it refreshes an empty cache, at the end of an RX flush and after a TX pass. "
        "A socket may ask for eager publication instead (publish after every release)."
    ),
    "wire-no-latency": (
        "The emulated wire has no time: a transmitted frame is on the wire when the "
        "driver takes it; its completion (skb free or xsk_tx_completed) is published "
        "at the port's next NAPI pass, so a CQ slot is reserved but unpublished in between."
    ),
    "rx-fifo": (
        "A port's RX hardware queue holds at most driver.hw_ring_size frames that NAPI "
        "has not processed; in zero-copy mode it holds only as many as UMEM frames are "
        "posted. A frame that finds no room is counted in rx_missed_errors."
    ),
    "zc-oversize": (
        "A zero-copy driver without multi-buffer support cannot place a frame longer "
        "than the XSK RX frame size: it drops the frame (rx_length_errors) before "
        "taking a UMEM buffer for it."
    ),
    "zc-tx-frame": (
        "XDP_TX and XDP_PASS of a zero-copy frame copy the bytes out (PASS into an skb, "
        "4.2 patch 4 [C]); the UMEM frame returns to the pool's free list."
    ),
    "need-wakeup-gate": (
        "Drivers set or clear the FILL ring's NEED_WAKEUP flag only when the socket "
        "was bound with XDP_USE_NEED_WAKEUP, as the common drivers do; the reference "
        "does not say whether am65-cpsw checks it."
    ),
    "attach-conflicts": (
        "Attaching in one mode while a program sits in the other gives EEXIST, and "
        "UPDATE_IF_NOEXIST over an attached program gives EBUSY (dev_xdp_attach; "
        "background knowledge, not in the reference) [U]."
    ),
    "app-loops": (
        "xdpsock busy-loops. The stepped model runs one NAPI pass, then the benchmark "
        "loop until a loop makes no progress, at most XdpSock.loops_per_step times."
    ),
    "xskmap-key": "An XSKMAP key outside max_entries gives E2BIG (array-map rule) [U].",
    "two-cores": (
        "Cost model: the NAPI/softirq work and the application run on two different "
        "cores, and the busier one sets the packet rate; the reference does not give "
        "the pinning (7) [U]. CostModel(same_core=True) adds the two instead."
    ),
    "ring-memory": (
        "The kernel allocates a ring at setsockopt time and fails with ENOMEM when it "
        "cannot; the lab refuses rings over 2**20 entries with ENOMEM, so its own memory "
        "stays bounded [M]."
    ),
}


def kernel_error(errno_name: str, reason: str, *, op: str, hint: str | None = None) -> KernelError:
    """A :class:`KernelError` as the syscall ``op`` would report it."""
    return KernelError(errno_name, reason, hint=hint, prefix=op)
