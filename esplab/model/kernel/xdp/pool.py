"""The kernel's buffer pool (``xsk_buff_pool``): one per (UMEM, netdev, queue).

It owns the FILL and COMPLETION rings, the internal free list and, in zero-copy
mode, the frames posted to the NIC. Allocation and the zero-copy TX batch follow
``af_xdp.md`` 2.6-2.8 and the XSK sources named there (``xp_alloc``,
``xp_alloc_batch``, ``xsk_tx_peek_release_desc_batch``) [C].
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from esplab.model.kernel.xdp.consts import (
    MAX_PER_SOCKET_BUDGET,
    U32_MASK,
    XDP_RING_NEED_WAKEUP,
    DescOption,
    Wakeup,
)
from esplab.model.kernel.xdp.rings import AddrRing, DescRing, XskDesc
from esplab.model.kernel.xdp.umem import FrameState, Umem

__all__ = ["BufferPool", "PoolSocket"]


class PoolSocket(Protocol):
    """A socket bound to the pool (:class:`~esplab.model.kernel.xdp.socket.XskSocket`):
    the pool reads its TX ring; unbinding the pool closes it."""

    @property
    def tx(self) -> DescRing | None: ...

    def close(self) -> None: ...


@dataclass(eq=False)
class BufferPool:
    """``struct xsk_buff_pool`` reduced to what the model needs."""

    umem: Umem
    fq: AddrRing
    cq: AddrRing
    queue_id: int
    uses_need_wakeup: bool = False
    # At bind the pool starts with TX wakeup cached, even without the flag (2.5) [C].
    cached_need_wakeup: Wakeup = Wakeup.TX
    zc: bool = False
    free_list: list[int] = field(default_factory=list)  # LIFO, like list_add + first_entry
    posted: deque[int] = field(default_factory=deque)  # zero copy: empty frames on the NIC
    sockets: list[PoolSocket] = field(default_factory=list)

    @property
    def rx_frame_size(self) -> int:
        return self.umem.rx_frame_size

    @property
    def tx_sockets(self) -> list[PoolSocket]:
        return [s for s in self.sockets if s.tx is not None]

    def held_frames(self) -> Iterator[tuple[int, FrameState]]:
        for addr in self.fq.in_flight():
            yield addr, FrameState.FILL
        for addr in self.cq.in_flight():
            yield addr, FrameState.COMPLETION
        for addr in self.cq.reserved():
            yield addr, FrameState.IN_FLIGHT
        for base in self.free_list:
            yield base, FrameState.FREE_LIST
        for base in self.posted:
            yield base, FrameState.DRIVER

    # ---- RX buffers ----------------------------------------------------------------
    def alloc(self) -> int | None:
        """One frame for a copy-mode RX (``xp_alloc``): free list first, then FILL.

        Invalid FILL entries are skipped and counted privately (2.7) [C]; an empty
        FILL bumps ``rx_fill_ring_empty_descs`` (6.7) [C].
        """
        if self.free_list:
            return self.free_list.pop()
        while True:
            if self.fq.k_avail(1) == 0:
                self.fq.queue_empty_descs += 1
                return None
            addr = self.fq.k_entry()
            self.fq.k_release()
            base = self.umem.fill_base(addr)
            if base is not None:
                return base
            self.fq.invalid_descs += 1

    def alloc_batch(self, n: int) -> list[int]:
        """Up to ``n`` frames for a zero-copy refill (``xp_alloc_batch``) [C]."""
        out: list[int] = []
        while self.free_list and len(out) < n:
            out.append(self.free_list.pop())
        want = n - len(out)
        if want <= 0:
            return out
        avail = self.fq.k_avail(want)
        fresh = 0
        for i in range(avail):
            base = self.umem.fill_base(self.fq.k_entry(i))
            if base is None:
                self.fq.invalid_descs += 1
                continue
            out.append(base)
            fresh += 1
        self.fq.k_release(avail)
        if fresh == 0:
            self.fq.queue_empty_descs += 1
        return out

    def can_alloc(self, count: int) -> bool:
        """``xp_can_alloc``: are ``count`` frames there (free list plus FILL)? [C]"""
        if len(self.free_list) >= count:
            return True
        need = count - len(self.free_list)
        avail = self.fq.k_avail(need)
        if avail == 0:
            self.fq.queue_empty_descs += 1
        return avail >= need

    def free(self, base: int) -> None:
        """Back to the internal free list, not to the user (2.6) [C]."""
        self.free_list.append(base)

    # ---- need_wakeup (2.5) -------------------------------------------------------------
    def set_rx_need_wakeup(self) -> None:
        if not self.cached_need_wakeup & Wakeup.RX:
            self.fq.flags |= XDP_RING_NEED_WAKEUP
            self.cached_need_wakeup |= Wakeup.RX

    def clear_rx_need_wakeup(self) -> None:
        if self.cached_need_wakeup & Wakeup.RX:
            self.fq.flags &= ~XDP_RING_NEED_WAKEUP
            self.cached_need_wakeup &= ~Wakeup.RX

    def set_tx_need_wakeup(self) -> None:
        if not self.cached_need_wakeup & Wakeup.TX:
            for sock in self.tx_sockets:
                assert sock.tx is not None
                sock.tx.flags |= XDP_RING_NEED_WAKEUP
            self.cached_need_wakeup |= Wakeup.TX

    # ---- zero-copy TX (2.6, 2.8) ------------------------------------------------------
    def zc_tx_batch(self, max_pkts: int) -> list[XskDesc]:
        """Descriptors handed to a zero-copy driver; their CQ slots reserved and written.

        Only as many as the COMPLETION ring has room for (6.16) [C]. The batch stops
        at an invalid descriptor and consumes the ring through it (2.8) [C]; a
        PKT_CONTD descriptor ends the batch too and is consumed unsent, since the
        emulated drivers have ``xdp_zc_max_segs`` = 1 [D].
        """
        socks = self.tx_sockets
        if not socks or max_pkts <= 0:
            return []
        if len(socks) > 1:
            return self._zc_tx_round_robin(socks, max_pkts)
        tx = socks[0].tx
        assert tx is not None
        n = self.cq.nb_free(tx.k_avail(max_pkts))
        if n == 0:
            return []
        descs: list[XskDesc] = []
        consumed = 0
        while consumed < n:
            desc = tx.k_entry(consumed)
            consumed += 1
            if self.umem.tx_invalid_reason(desc) is not None:
                tx.invalid_descs += 1
                break
            if desc.options & DescOption.PKT_CONTD:
                break
            descs.append(desc)
        tx.k_release(consumed)
        if not descs:
            tx.queue_empty_descs += 1
            return []
        tx.k_publish()
        self._reserve_completions(descs)
        return descs

    def _zc_tx_round_robin(self, socks: list[PoolSocket], max_pkts: int) -> list[XskDesc]:
        """Several TX sockets on one pool: 32 per socket per round (2.6) [C]."""
        descs: list[XskDesc] = []
        progress = True
        while progress and len(descs) < max_pkts:
            progress = False
            for sock in socks:
                tx = sock.tx
                assert tx is not None
                for _ in range(MAX_PER_SOCKET_BUDGET):
                    if len(descs) >= max_pkts or tx.k_avail(1) == 0:
                        break
                    desc = tx.k_entry()
                    if self.umem.tx_invalid_reason(desc) is not None:
                        tx.invalid_descs += 1
                        tx.k_release()
                        break
                    if self.cq.nb_free(1) == 0:
                        return self._finish_round(socks, descs)
                    tx.k_release()
                    descs.append(desc)
                    self._reserve_completions([desc])
                    progress = True
        return self._finish_round(socks, descs)

    @staticmethod
    def _finish_round(socks: list[PoolSocket], descs: list[XskDesc]) -> list[XskDesc]:
        for sock in socks:
            assert sock.tx is not None
            sock.tx.k_publish()
        return descs

    def _reserve_completions(self, descs: list[XskDesc]) -> None:
        first = self.cq.reserve(len(descs))
        assert first is not None, "COMPLETION room was checked"
        for i, desc in enumerate(descs):
            self.cq.write((first + i) & U32_MASK, desc.addr)

    def tx_completed(self, n: int) -> None:
        """Publish ``n`` reserved COMPLETION entries (``xsk_tx_completed``) [C]."""
        self.cq.submit(n)
