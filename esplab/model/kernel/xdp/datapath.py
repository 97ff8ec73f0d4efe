"""The kernel side of a socket's data path: RX delivery and the copy-mode transmit loop.

``xsk_rcv_check``, ``__xsk_rcv``, ``xsk_rcv_zc``, ``xsk_flush`` and
``__xsk_generic_xmit`` of ``net/xdp/xsk.c`` as ``af_xdp.md`` 2.6-2.8 describe them
(facts 6.6-6.8, 6.11-6.17) [C]. The device's XDP side calls the RX side; ``sendto``
and ``poll`` call :func:`generic_xmit`. Nothing here raises for a packet: it counts.

The functions see a socket and a device through two protocols, so that this module
imports neither: :class:`XskEnd` is what they read and write of a socket
(:class:`~esplab.model.kernel.xdp.socket.XskSocket` has it), :class:`XskDevice` what
AF_XDP asks of a device's XDP side
(:class:`~esplab.model.kernel.xdp.port.NetdevXdp` has it).
"""

from __future__ import annotations

from typing import Protocol

from esplab.model.kernel.xdp.consts import MAX_SKB_FRAGS, DescOption, Wakeup
from esplab.model.kernel.xdp.driver import DriverProfile
from esplab.model.kernel.xdp.pool import BufferPool
from esplab.model.kernel.xdp.rings import DescRing, XskDesc
from esplab.model.kernel.xdp.umem import Umem

__all__ = [
    "XskDevice",
    "XskEnd",
    "drop_partial",
    "flush",
    "generic_xmit",
    "rcv_check",
    "rcv_copy",
    "rcv_zc",
]


class XskDevice(Protocol):
    """A device's XDP side as AF_XDP sees it: bind registers pools on its queues, the
    syscalls wake its NAPI, copy-mode TX hands it frames (2.5, 2.6) [C]."""

    @property
    def name(self) -> str: ...

    @property
    def up(self) -> bool: ...

    @property
    def driver(self) -> DriverProfile: ...

    def pool_at(self, queue: int) -> BufferPool | None: ...

    def reg_pool(self, pool: BufferPool, queue: int) -> None: ...

    def unreg_pool(self, queue: int) -> None: ...

    def setup_zc(self, pool: BufferPool, queue: int, *, sg: bool) -> tuple[str, str] | None: ...

    def wakeup(self, queue: int, flags: Wakeup) -> str | None: ...

    def xmit_copy(self, pool: BufferPool, queue: int, frame: bytes, descs: int) -> bool: ...


class XskEnd(Protocol):
    """What the data path reads and writes of a socket (``struct xdp_sock`` subset)."""

    pool: BufferPool | None
    umem: Umem | None
    rx: DescRing | None
    tx: DescRing | None
    port: XskDevice | None
    queue_id: int
    sg: bool
    max_tx_budget: int
    rx_dropped: int
    rx_queue_full: int
    needs_flush: bool
    tx_partial: list[XskDesc]
    tx_partial_data: bytearray

    @property
    def is_bound(self) -> bool: ...


# ---- RX delivery (called by the device's XDP side) -----------------------------------
def rcv_check(sock: XskEnd, port: XskDevice, queue: int, length: int) -> str | None:
    """``xsk_rcv_check`` (1.2, 6.8, 6.11) [C]."""
    if not sock.is_bound or sock.pool is None:
        return "ENXIO"
    if sock.port is not port or sock.queue_id != queue:
        return "EINVAL"
    if length > sock.pool.rx_frame_size and not sock.sg:
        sock.rx_dropped += 1
        return "ENOSPC"
    return None


def _post_rx(sock: XskEnd, addr: int, length: int, options: int = 0) -> bool:
    assert sock.rx is not None
    index = sock.rx.reserve(1)
    if index is None:
        sock.rx_queue_full += 1  # 6.6 [C]
        return False
    sock.rx.write(index, XskDesc(addr, length, options))
    sock.needs_flush = True
    return True


def rcv_copy(
    sock: XskEnd, port: XskDevice, queue: int, data: bytes, *, generic: bool
) -> str | None:
    """Copy a frame into UMEM frames from FILL (``__xsk_rcv``, 2.6) [C].

    ``generic`` is the SKB-mode path, which flushes at once (``xsk_generic_rcv``).
    """
    err = rcv_check(sock, port, queue, len(data))
    if err is not None:
        return err
    pool, umem = sock.pool, sock.umem
    assert pool is not None and umem is not None and sock.rx is not None
    frame = pool.rx_frame_size
    if len(data) <= frame:
        base = pool.alloc()
        if base is None:
            sock.rx_dropped += 1  # FILL empty: rx_dropped and fill-empty (6.7) [C]
            return "ENOMEM"
        umem.write(umem.rx_addr(base), data)
        if not _post_rx(sock, umem.rx_addr(base), len(data)):
            pool.free(base)  # the frame goes to the kernel's free list (6.6) [C]
            return "ENOBUFS"
    else:
        count = (len(data) - 1) // frame + 1  # XDP_USE_SG split (6.8) [C]
        if not pool.can_alloc(count):
            sock.rx_dropped += 1
            return "ENOMEM"
        if sock.rx.nb_free(count) < count:
            sock.rx_queue_full += 1
            return "ENOBUFS"
        for i in range(count):
            base = pool.alloc()
            assert base is not None
            piece = data[i * frame : (i + 1) * frame]
            umem.write(umem.rx_addr(base), piece)
            last = i == count - 1
            _post_rx(sock, umem.rx_addr(base), len(piece), 0 if last else DescOption.PKT_CONTD)
    if generic:
        flush(sock)
    return None


def rcv_zc(sock: XskEnd, port: XskDevice, queue: int, base: int, length: int) -> str | None:
    """Post an RX descriptor for a frame already in the UMEM (``xsk_rcv_zc``) [C].

    On an error the caller gives the frame back to the pool.
    """
    err = rcv_check(sock, port, queue, length)
    if err is not None:
        return err
    assert sock.umem is not None
    return None if _post_rx(sock, sock.umem.rx_addr(base), length) else "ENOBUFS"


def flush(sock: XskEnd) -> None:
    """``xsk_flush``: publish RX, publish the FILL consumer (2.4) [C]."""
    if sock.rx is not None:
        sock.rx.submit()
    if sock.pool is not None:
        sock.pool.fq.k_publish()
    sock.needs_flush = False


# ---- copy-mode TX (2.6, 2.8, 6.12-6.17) ----------------------------------------------
def _peek_tx(sock: XskEnd) -> tuple[XskDesc | None, bool]:
    """``xskq_cons_peek_desc``: (next valid descriptor, stopped on an invalid one)."""
    assert sock.tx is not None and sock.umem is not None
    if sock.tx.k_avail(1) == 0:
        sock.tx.queue_empty_descs += 1  # tx_ring_empty_descs (2.7) [C]
        return None, False
    desc = sock.tx.k_entry()
    if sock.umem.tx_invalid_reason(desc) is not None:
        sock.tx.invalid_descs += 1  # tx_invalid_descs (2.7, 6.12-6.14) [C]
        return None, True
    return desc, False


def drop_partial(sock: XskEnd) -> None:
    """``xsk_drop_skb``: a partly built multi-buffer packet is dropped as invalid."""
    assert sock.tx is not None and sock.pool is not None
    sock.tx.invalid_descs += len(sock.tx_partial)
    sock.pool.cq.cancel(len(sock.tx_partial))
    sock.tx_partial.clear()
    sock.tx_partial_data.clear()


def generic_xmit(sock: XskEnd) -> str | None:
    """``__xsk_generic_xmit``: up to ``max_tx_budget`` descriptors per call [C]."""
    tx, pool, umem, port = sock.tx, sock.pool, sock.umem, sock.port
    assert tx is not None and pool is not None and umem is not None and port is not None
    if sock.queue_id >= port.driver.tx_queues:
        return None  # no such TX queue: nothing is sent, no error [C]
    budget = sock.max_tx_budget
    sent = False
    err: str | None = None
    while True:
        desc, invalid = _peek_tx(sock)
        if desc is None:
            if invalid:  # consumed without a completion (2.8, 6.12) [C]
                if sock.tx_partial:
                    drop_partial(sock)
                tx.k_release()
            break
        if budget == 0:
            err = "EAGAIN"
            break
        budget -= 1
        slot = pool.cq.reserve(1)  # back-pressure: no COMPLETION room, no TX (6.16) [C]
        if slot is None:
            err = "EAGAIN"
            break
        pool.cq.write(slot, desc.addr)
        if (
            not sock.tx_partial
            and desc.options & DescOption.TX_METADATA
            and umem.tx_metadata_len == 0
        ):
            pool.cq.cancel(1)  # not consumed: the application must repair it (6.14) [C]
            err = "EINVAL"
            break
        if len(sock.tx_partial) == MAX_SKB_FRAGS and desc.options & DescOption.PKT_CONTD:
            sock.tx_partial.append(desc)  # too many frags: the whole packet is invalid
            drop_partial(sock)
            tx.k_release()
            continue
        sock.tx_partial.append(desc)
        sock.tx_partial_data += umem.read(desc.addr, desc.len)  # the copy into the skb
        tx.k_release()
        if desc.options & DescOption.PKT_CONTD:
            continue
        count = len(sock.tx_partial)
        if not port.xmit_copy(pool, sock.queue_id, bytes(sock.tx_partial_data), count):
            tx.k_unrelease(count)  # NETDEV_TX_BUSY: give the descriptors back
            pool.cq.cancel(count)
            err = "EAGAIN"
            sock.tx_partial.clear()
            sock.tx_partial_data.clear()
            break
        sock.tx_partial.clear()
        sock.tx_partial_data.clear()
        sent = True
    if sent:
        tx.k_publish()  # __xsk_tx_release
    return err
