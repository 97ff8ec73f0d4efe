"""The AF_XDP socket: setup order, bind rules, statistics, syscalls, RX delivery, copy TX.

Kernel semantics from ``af_xdp.md`` 2.1 (setup order and its errors), 2.5
(need_wakeup, sendto/recvfrom/poll), 2.6 (the bind table, copy vs zero copy), 2.7
(statistics), 2.8 (validation) and facts 6.2, 6.5-6.8, 6.11-6.21 [C]. Setup and bind
errors raise :class:`~esplab.errors.KernelError` with the kernel's errno name; the
data path never raises for a packet, it counts.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from esplab.model.kernel.xdp.consts import (
    TX_BATCH_SIZE,
    XDP_OPTIONS_ZEROCOPY,
    XDP_RING_NEED_WAKEUP,
    BindFlag,
    RingKind,
    Wakeup,
    kernel_error,
)
from esplab.model.kernel.xdp.datapath import XskDevice, drop_partial, generic_xmit
from esplab.model.kernel.xdp.pool import BufferPool
from esplab.model.kernel.xdp.rings import (
    AddrRing,
    DescRing,
    MmapOffsets,
    XskDesc,
    mmap_offsets,
    ring_option,
)
from esplab.model.kernel.xdp.umem import FrameState, Umem

__all__ = ["PollMask", "SockState", "SocketMap", "XdpStatistics", "XskSocket"]

_BIND_FLAGS = (
    BindFlag.SHARED_UMEM
    | BindFlag.COPY
    | BindFlag.ZEROCOPY
    | BindFlag.USE_NEED_WAKEUP
    | BindFlag.USE_SG
)


class SockState(enum.Enum):
    READY = "ready"  # created, not bound
    BOUND = "bound"
    UNBOUND = "unbound"  # closed or its device went away


class PollMask(enum.IntFlag):
    """``poll()`` result bits (EPOLLIN|EPOLLRDNORM, EPOLLOUT|EPOLLWRNORM)."""

    NONE = 0
    POLLIN = 0x001
    POLLOUT = 0x004
    POLLRDNORM = 0x040
    POLLWRNORM = 0x100


class SocketMap(Protocol):
    """A map that holds the socket (an XSKMAP, :class:`~esplab.model.kernel.xdp.program.XskMap`)."""

    def remove_socket(self, sock: XskSocket) -> None: ...


@dataclass
class XdpStatistics:
    """``struct xdp_statistics``: six u64, 48 bytes; v1 is the first 24 (2.7) [C]."""

    rx_dropped: int = 0
    rx_invalid_descs: int = 0
    tx_invalid_descs: int = 0
    rx_ring_full: int = 0
    rx_fill_ring_empty_descs: int = 0
    tx_ring_empty_descs: int = 0

    def pack(self, *, v1: bool = False) -> bytes:
        if v1:
            return struct.pack("<3Q", self.rx_dropped, self.rx_invalid_descs, self.tx_invalid_descs)
        return struct.pack("<6Q", *self.__dict__.values())


@dataclass(eq=False)
class XskSocket:
    """``socket(AF_XDP, SOCK_RAW, 0)``; the creation checks of 2.1 run at construction."""

    sock_type: str = "SOCK_RAW"
    protocol: int = 0
    cap_net_raw: bool = True
    lazy_consumer: bool = True  # design choice "lazy-consumer"
    state: SockState = field(default=SockState.READY, init=False)
    umem: Umem | None = field(default=None, init=False)
    rx: DescRing | None = field(default=None, init=False)
    tx: DescRing | None = field(default=None, init=False)
    fq_tmp: AddrRing | None = field(default=None, init=False)
    cq_tmp: AddrRing | None = field(default=None, init=False)
    pool: BufferPool | None = field(default=None, init=False)
    port: XskDevice | None = field(default=None, init=False)  # xs->dev's XDP side
    queue_id: int = field(default=0, init=False)
    zc: bool = field(default=False, init=False)
    sg: bool = field(default=False, init=False)
    fallback_reason: str | None = field(default=None, init=False)  # why ZC was not granted
    max_tx_budget: int = field(default=TX_BATCH_SIZE, init=False)
    rx_dropped: int = field(default=0, init=False)
    rx_queue_full: int = field(default=0, init=False)
    maps: list[SocketMap] = field(default_factory=list, init=False, repr=False)
    needs_flush: bool = field(default=False, init=False, repr=False)
    tx_partial: list[XskDesc] = field(default_factory=list, init=False, repr=False)
    tx_partial_data: bytearray = field(default_factory=bytearray, init=False, repr=False)

    def __post_init__(self) -> None:
        op = "socket(AF_XDP)"
        if not self.cap_net_raw:
            raise kernel_error("EPERM", "AF_XDP needs CAP_NET_RAW", op=op)
        if self.sock_type != "SOCK_RAW":
            raise kernel_error(
                "ESOCKTNOSUPPORT", f"type {self.sock_type}", op=op, hint="valid: SOCK_RAW"
            )
        if self.protocol != 0:
            raise kernel_error(
                "EPROTONOSUPPORT", f"protocol {self.protocol}", op=op, hint="valid: 0"
            )

    @property
    def is_bound(self) -> bool:
        return self.state is SockState.BOUND

    # ---- setup (2.1) -------------------------------------------------------------
    @property
    def fill(self) -> AddrRing | None:
        """The FILL ring: the socket's own before bind, the pool's after."""
        return self.pool.fq if self.pool is not None else self.fq_tmp

    @property
    def comp(self) -> AddrRing | None:
        return self.pool.cq if self.pool is not None else self.cq_tmp

    def reg_umem(self, umem: Umem) -> None:
        """``setsockopt(XDP_UMEM_REG)``: EBUSY once bound or with a UMEM already (2.2) [C]."""
        if self.state is not SockState.READY or self.umem is not None:
            raise kernel_error(
                "EBUSY", "the socket has a UMEM or is bound", op="setsockopt(XDP_UMEM_REG)"
            )
        self.umem = umem

    def set_ring(self, kind: RingKind, entries: int) -> None:
        """``setsockopt(XDP_{RX,TX,UMEM_FILL,UMEM_COMPLETION}_RING, entries)`` (6.2) [C]."""
        op = f"setsockopt({ring_option(kind)})"
        if self.state is not SockState.READY:
            raise kernel_error("EBUSY", "rings cannot change once the socket is bound", op=op)
        attr = {
            RingKind.RX: "rx",
            RingKind.TX: "tx",
            RingKind.FILL: "fq_tmp",
            RingKind.COMPLETION: "cq_tmp",
        }[kind]
        current: DescRing | AddrRing | None = getattr(self, attr)
        if current is not None:
            raise kernel_error("EINVAL", f"{kind.name} ring already set ({current.size})", op=op)
        lazy = self.lazy_consumer and kind.user_produces
        ring_type = DescRing if kind.holds_descs else AddrRing
        ring = ring_type(kind, entries, lazy_consumer=lazy)
        if kind is RingKind.TX:
            # "Tx needs to be explicitly woken up the first time" (2.5, 6.18) [C].
            ring.flags |= XDP_RING_NEED_WAKEUP
        setattr(self, attr, ring)

    def setup(self, umem: Umem, *, rx: int = 0, tx: int = 0, fill: int = 0, comp: int = 0) -> None:
        """Register ``umem`` and create the rings whose size is non-zero.

        Like the setsockopt calls it stands for, each step takes effect on its own.
        """
        self.reg_umem(umem)
        for kind, size in (
            (RingKind.FILL, fill),
            (RingKind.COMPLETION, comp),
            (RingKind.RX, rx),
            (RingKind.TX, tx),
        ):
            if size:
                self.set_ring(kind, size)

    def set_max_tx_budget(self, budget: int) -> None:
        """``XDP_MAX_TX_SKB_BUDGET``: EACCES outside [32, TX ring size] (6.17) [C]."""
        if self.tx is None or not TX_BATCH_SIZE <= budget <= self.tx.size:
            top = self.tx.size if self.tx is not None else "the TX ring size (no TX ring)"
            raise kernel_error(
                "EACCES",
                f"budget {budget}",
                op="setsockopt(XDP_MAX_TX_SKB_BUDGET)",
                hint=f"valid: {TX_BATCH_SIZE}..{top}",
            )
        self.max_tx_budget = budget

    # ---- bind (2.6) -----------------------------------------------------------------
    def bind(
        self,
        port: XskDevice,
        queue_id: int = 0,
        flags: BindFlag | int = BindFlag.NONE,
        shared_umem: XskSocket | None = None,
    ) -> None:
        """``bind(sockaddr_xdp)``: the checks of ``xsk_bind`` and ``xp_assign_dev`` [C]."""
        flags = BindFlag(flags)
        if int(flags) & ~int(_BIND_FLAGS):
            raise kernel_error("EINVAL", f"unknown bind flags {int(flags):#x}", op="bind")
        if self.state is not SockState.READY:
            raise kernel_error("EBUSY", f"socket is {self.state.value}", op="bind")
        if self.rx is None and self.tx is None:
            raise kernel_error("EINVAL", "the socket has neither an RX nor a TX ring", op="bind")
        if flags & BindFlag.SHARED_UMEM:
            pool = self._bind_shared(port, queue_id, flags, shared_umem)
        else:
            if self.umem is None or self.fq_tmp is None or self.cq_tmp is None:
                raise kernel_error(
                    "EINVAL", "needs a UMEM and its FILL and COMPLETION rings", op="bind"
                )
            pool = BufferPool(self.umem, self.fq_tmp, self.cq_tmp, queue_id)
            self._assign_dev(pool, port, queue_id, flags)
        assert self.umem is not None
        self.fq_tmp = self.cq_tmp = None
        self.pool = pool
        self.port = port
        self.queue_id = queue_id
        self.zc = self.umem.zc
        self.sg = self.umem.sg
        pool.sockets.append(self)
        self.umem.holders.append(self)
        self.state = SockState.BOUND

    def _bind_shared(
        self, port: XskDevice, queue_id: int, flags: BindFlag, other: XskSocket | None
    ) -> BufferPool:
        modes = BindFlag.COPY | BindFlag.ZEROCOPY | BindFlag.USE_NEED_WAKEUP | BindFlag.USE_SG
        if flags & modes:
            raise kernel_error(
                "EINVAL",
                "XDP_SHARED_UMEM cannot be combined with mode flags",
                op="bind",
                hint="the shared socket inherits them (6.20)",
            )
        if self.umem is not None:
            raise kernel_error("EINVAL", "the socket has its own UMEM", op="bind")
        if other is None or other.state is not SockState.BOUND or other.pool is None:
            raise kernel_error("EBADF", "the UMEM owner is not a bound AF_XDP socket", op="bind")
        umem = other.pool.umem
        if other.port is port and other.queue_id == queue_id:
            if self.fq_tmp is not None or self.cq_tmp is not None:
                raise kernel_error(
                    "EINVAL", "same queue: FILL/COMPLETION come from the owner", op="bind"
                )
            self.umem = umem
            return other.pool
        if self.fq_tmp is None or self.cq_tmp is None:
            raise kernel_error("EINVAL", "one FILL and COMPLETION ring per queue id", op="bind")
        inherited = BindFlag.ZEROCOPY if umem.zc else BindFlag.COPY
        if other.pool.uses_need_wakeup:
            inherited |= BindFlag.USE_NEED_WAKEUP
        pool = BufferPool(umem, self.fq_tmp, self.cq_tmp, queue_id)
        self._assign_dev(pool, port, queue_id, inherited)
        self.umem = umem
        return pool

    def _assign_dev(
        self, pool: BufferPool, port: XskDevice, queue_id: int, flags: BindFlag
    ) -> None:
        """``xp_assign_dev``: the bind table of 2.6 and facts 6.19, 6.20 [C]."""
        force_zc = bool(flags & BindFlag.ZEROCOPY)
        force_copy = bool(flags & BindFlag.COPY)
        if force_zc and force_copy:
            raise kernel_error("EINVAL", "XDP_COPY and XDP_ZEROCOPY together", op="bind")
        if port.pool_at(queue_id) is not None:
            raise kernel_error(
                "EBUSY",
                f"{port.name} queue {queue_id} has a socket already",
                op="bind",
                hint="share its UMEM with XDP_SHARED_UMEM",
            )
        port.reg_pool(pool, queue_id)  # EINVAL past the device's queues
        if flags & BindFlag.USE_SG:
            pool.umem.sg = True
        pool.uses_need_wakeup = bool(flags & BindFlag.USE_NEED_WAKEUP)
        pool.cached_need_wakeup = Wakeup.TX
        self.fallback_reason = None
        if force_copy:
            return
        err = port.setup_zc(pool, queue_id, sg=bool(flags & BindFlag.USE_SG))
        if err is None:
            pool.umem.zc = True  # the driver marked the pool (NetdevXdp.setup_zc)
            return
        errno_name, reason = err
        if force_zc:
            port.unreg_pool(queue_id)
            raise kernel_error(
                errno_name,
                reason,
                op="bind",
                hint="without XDP_ZEROCOPY the bind falls back to copy mode",
            )
        self.fallback_reason = f"{errno_name}: {reason}"  # silent fallback to copy (2.6) [C]

    def close(self) -> None:
        """``close()``: out of every XSKMAP, unbound; the last socket frees the queue."""
        for xsk_map in list(self.maps):
            xsk_map.remove_socket(self)
        self.maps.clear()
        if self.tx_partial and self.tx is not None:
            drop_partial(self)
        if self.pool is not None and self.port is not None and self.state is SockState.BOUND:
            pool = self.pool
            pool.sockets.remove(self)
            pool.umem.holders.remove(self)
            if not pool.sockets:
                self.port.unreg_pool(pool.queue_id)  # the pool's device is the socket's
        self.state = SockState.UNBOUND

    # ---- getsockopt ---------------------------------------------------------------------
    def statistics(self) -> XdpStatistics:
        """``XDP_STATISTICS`` (2.7) [C]."""
        fq = self.pool.fq if self.pool is not None else None
        return XdpStatistics(
            rx_dropped=self.rx_dropped,
            rx_invalid_descs=self.rx.invalid_descs if self.rx is not None else 0,
            tx_invalid_descs=self.tx.invalid_descs if self.tx is not None else 0,
            rx_ring_full=self.rx_queue_full,
            rx_fill_ring_empty_descs=fq.queue_empty_descs if fq is not None else 0,
            tx_ring_empty_descs=self.tx.queue_empty_descs if self.tx is not None else 0,
        )

    def statistics_v1(self) -> XdpStatistics:
        """The 24-byte v1 result: ``rx_dropped`` also counts ``rx_ring_full`` (2.7) [C]."""
        full = self.statistics()
        return XdpStatistics(
            full.rx_dropped + full.rx_ring_full, full.rx_invalid_descs, full.tx_invalid_descs
        )

    def options(self) -> int:
        """``XDP_OPTIONS``: ZEROCOPY only when granted, the one way to see a fallback [C]."""
        return XDP_OPTIONS_ZEROCOPY if self.zc else 0

    @staticmethod
    def mmap_offsets(cache_line: int = 64) -> MmapOffsets:
        return mmap_offsets(cache_line)

    # ---- syscalls (2.5) -----------------------------------------------------------------
    def _check_common(self, op: str) -> str | None:
        if self.state is not SockState.BOUND or self.port is None or self.pool is None:
            raise kernel_error("ENXIO", "the socket is not bound", op=op)
        return None if self.port.up else "ENETDOWN"

    def sendto(self, *, dontwait: bool = True) -> str | None:
        """``sendto(fd, NULL, 0, MSG_DONTWAIT)``: the errno name it returns, or None.

        Zero copy: a TX wakeup of the driver. Copy mode: the transmit loop itself.
        """
        down = self._check_common("sendto")
        if down:
            return down
        if not dontwait:
            raise kernel_error(
                "EOPNOTSUPP",
                "AF_XDP sockets are non-blocking only",
                op="sendto",
                hint="pass MSG_DONTWAIT",
            )
        if self.tx is None:
            raise kernel_error("ENOBUFS", "the socket has no TX ring", op="sendto")
        assert self.pool is not None and self.port is not None
        if self.pool.cached_need_wakeup & Wakeup.TX:
            if self.zc:
                return self.port.wakeup(self.queue_id, Wakeup.TX)
            return generic_xmit(self)
        return None

    def recvfrom(self, *, dontwait: bool = True) -> str | None:
        """``recvfrom(MSG_DONTWAIT)``: an RX wakeup in zero copy, nothing in copy mode [C]."""
        down = self._check_common("recvfrom")
        if down:
            return down
        if self.rx is None:
            raise kernel_error("ENOBUFS", "the socket has no RX ring", op="recvfrom")
        if not dontwait:
            raise kernel_error(
                "EOPNOTSUPP",
                "AF_XDP sockets are non-blocking only",
                op="recvfrom",
                hint="pass MSG_DONTWAIT",
            )
        assert self.pool is not None and self.port is not None
        if self.pool.cached_need_wakeup & Wakeup.RX and self.zc:
            return self.port.wakeup(self.queue_id, Wakeup.RX)
        return None

    def poll(self) -> PollMask:
        """``poll()``: kick pending wakeups; POLLIN if RX holds entries, POLLOUT while
        TX holds at most half its size (6.5) [C]."""
        if self.state is not SockState.BOUND or self.port is None or not self.port.up:
            return PollMask.NONE
        assert self.pool is not None
        if self.pool.cached_need_wakeup:
            if self.zc:
                self.port.wakeup(self.queue_id, self.pool.cached_need_wakeup)
            elif self.tx is not None:
                generic_xmit(self)  # poll drives copy-mode TX too
        mask = PollMask.NONE
        if self.rx is not None and not self.rx.is_empty:
            mask |= PollMask.POLLIN | PollMask.POLLRDNORM
        if self.tx is not None and self.tx.occupancy <= self.tx.size // 2:
            mask |= PollMask.POLLOUT | PollMask.POLLWRNORM
        return mask

    # ---- ownership -------------------------------------------------------------------------
    def held_frames(self) -> Iterator[tuple[int, FrameState]]:
        if self.rx is not None:
            for desc in self.rx.in_flight() + self.rx.reserved():
                yield desc.addr, FrameState.RX
        if self.tx is not None:
            for desc in self.tx.in_flight():
                yield desc.addr, FrameState.TX
