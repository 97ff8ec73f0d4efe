"""A device's XDP side: XDP attach, the driver's RX/TX paths in copy and zero-copy mode.

A network device (:class:`~esplab.model.kernel.stack.netdev.NetDev`) gets its XDP side,
a :class:`NetdevXdp`, from ``NetDev.enable_xdp``: the driver profile, the attached
program, the RX and TX queues, the buffer pools bound to them, the zero-copy state
and the counters. The XDP side knows its device through :class:`XdpIface` (name,
ifindex, whether it is up), so nothing in this package imports the stack.

Facts: attach modes and the default-mode rule (``af_xdp.md`` 1.1), the five actions
(1.2), the copy/zero-copy data paths (2.6) and the am65-cpsw driver rules (4.2,
facts 6.22-6.24) [C]. The device is stepped explicitly: :meth:`NetdevXdp.receive` puts
a frame on the RX hardware queue, :meth:`NetdevXdp.poll` runs whatever NAPI work is
scheduled (an interrupt or a wakeup). Nothing happens between calls.

What each action does here, and the counters it bumps (``PortStats``):

============  ================================================  ==========================
action        frame                                             counters
============  ================================================  ==========================
ABORTED (0)   dropped                                           xdp_aborted, xdp_exception
DROP (1)      dropped                                           xdp_drop
PASS (2)      to the stack (zero copy: copied into an skb)      xdp_pass, stack_rx
TX (3)        out of the same port, as the program left it      xdp_tx, tx_packets
REDIRECT (4)  into the XSKMAP socket; on failure dropped        xdp_redirect (+ _err)
other         dropped like ABORTED                              xdp_invalid_action, ...
============  ================================================  ==========================
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from esplab.errors import InvalidValue
from esplab.model.kernel.xdp.consts import (
    AttachFlag,
    AttachMode,
    NetdevXdpAct,
    Wakeup,
    XdpAction,
    XdpAttached,
    kernel_error,
)
from esplab.model.kernel.xdp.datapath import flush, rcv_copy, rcv_zc
from esplab.model.kernel.xdp.driver import DriverProfile
from esplab.model.kernel.xdp.pool import BufferPool
from esplab.model.kernel.xdp.program import XdpContext, XdpProgram, XdpVerdict
from esplab.model.kernel.xdp.socket import XskSocket
from esplab.model.kernel.xdp.umem import FrameState

__all__ = [
    "Am65Cpsw",
    "NapiReport",
    "NetdevXdp",
    "PortStats",
    "RxQueue",
    "TxQueue",
    "XdpIface",
]


class XdpIface(Protocol):
    """The device an XDP side belongs to (a ``NetDev`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def ifindex(self) -> int: ...

    @property
    def up(self) -> bool: ...


@dataclass(eq=False)
class Am65Cpsw:
    """The CPSW: its RX flows and TX channels serve all its ports (4.2 patch 3) [C]."""

    xsk_port: dict[int, NetdevXdp] = field(default_factory=dict)  # xdp_zc_queues + xsk_port_id


@dataclass
class PortStats:
    """Device counters plus per-action XDP counters (names are the model's)."""

    rx_packets: int = 0
    rx_bytes: int = 0
    rx_dropped: int = 0  # am65: a frame from the other port on a zero-copy queue
    rx_missed_errors: int = 0  # no RX descriptor free (design choice "rx-fifo")
    rx_length_errors: int = 0  # design choice "zc-oversize"
    tx_packets: int = 0
    tx_bytes: int = 0
    xdp_aborted: int = 0
    xdp_drop: int = 0
    xdp_pass: int = 0
    xdp_tx: int = 0
    xdp_redirect: int = 0
    xdp_redirect_err: int = 0  # the redirect failed: frame dropped (1.2) [C]
    xdp_invalid_action: int = 0  # a return code outside the enum: drop plus warning (1.2) [C]
    xdp_exception: int = 0  # the xdp_exception tracepoint (ABORTED) (1.2) [C]
    stack_rx: int = 0  # frames that entered the normal stack
    zc_pass_copies: int = 0  # PASS of a zero-copy frame copies it into an skb (4.2) [C]


@dataclass
class NapiReport:
    rx: int = 0  # frames processed
    tx: int = 0  # zero-copy descriptors sent
    completed: int = 0  # COMPLETION entries published
    refilled: int = 0  # UMEM frames posted to the NIC
    ran_rx: bool = False
    ran_tx: bool = False


@dataclass(eq=False)
class RxQueue:
    """One RX queue: received frames not yet processed (with their UMEM frame in ZC)."""

    index: int
    fifo: deque[tuple[bytes, int | None]] = field(default_factory=deque)
    scheduled: bool = False  # RX NAPI pending (interrupt or wakeup)

    def held_frames(self) -> Iterator[tuple[int, FrameState]]:
        for _, base in self.fifo:
            if base is not None:
                yield base, FrameState.DRIVER


@dataclass(eq=False)
class TxQueue:
    index: int
    inflight: deque[tuple[BufferPool, int]] = field(default_factory=deque)  # (pool, descs)
    scheduled: bool = False  # TX NAPI pending (completion interrupt or wakeup)


@dataclass(eq=False)
class NetdevXdp:
    """A device's XDP and AF_XDP support, as its driver profile allows."""

    dev: XdpIface = field(repr=False)
    driver: DriverProfile = field(default_factory=DriverProfile.zero_copy)
    cpsw: Am65Cpsw | None = None
    program: XdpProgram | None = None
    attach_mode: AttachMode | None = None
    pools: dict[int, BufferPool] = field(default_factory=dict)
    stats: PortStats = field(default_factory=PortStats)
    wire: deque[bytes] = field(default_factory=lambda: deque(maxlen=64))  # last frames sent
    stack: deque[bytes] = field(default_factory=lambda: deque(maxlen=64))  # last frames passed
    rxq: list[RxQueue] = field(init=False)
    txq: list[TxQueue] = field(init=False)
    # Sockets given RX descriptors in this NAPI pass, published at its end (xdp_do_flush).
    flush_list: list[XskSocket] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self.rxq = [RxQueue(i) for i in range(self.driver.rx_queues)]
        self.txq = [TxQueue(i) for i in range(self.driver.tx_queues)]
        if self.driver.shared_zc_queues and self.cpsw is None:
            self.cpsw = Am65Cpsw()

    @property
    def name(self) -> str:
        return self.dev.name

    @property
    def up(self) -> bool:
        return self.dev.up

    # ---- XDP attach (1.1) ------------------------------------------------------------
    def attach(
        self,
        program: XdpProgram,
        mode: AttachMode | None = None,
        flags: AttachFlag = AttachFlag.NONE,
    ) -> AttachMode:
        """Attach ``program``; with no mode, native if the driver has ndo_bpf (DEV) [C]."""
        if mode is None:
            mode = AttachMode.DRV if self.driver.native_xdp else AttachMode.SKB
        if mode is AttachMode.HW and not self.driver.xdp_features & NetdevXdpAct.HW_OFFLOAD:
            raise kernel_error(
                "EOPNOTSUPP",
                f"{self.name} cannot offload XDP",
                op="RTNETLINK answers",
                hint="use xdpdrv or xdpgeneric",
            )
        if mode is AttachMode.DRV and not self.driver.native_xdp:
            raise kernel_error(
                "EOPNOTSUPP",
                f"{self.driver.name} has no native XDP",
                op="RTNETLINK answers",
                hint="use xdpgeneric",
            )
        if self.program is not None and self.attach_mode is not mode:
            raise kernel_error(
                "EEXIST", "native and generic XDP can't be active at once", op="RTNETLINK answers"
            )  # design choice "attach-conflicts"
        if self.program is not None and flags & AttachFlag.UPDATE_IF_NOEXIST:
            raise kernel_error("EBUSY", "XDP program already attached", op="RTNETLINK answers")
        self.program, self.attach_mode = program, mode
        return mode

    def detach(self) -> None:
        self.program = self.attach_mode = None

    @property
    def attached(self) -> XdpAttached:
        """``IFLA_XDP_ATTACHED`` (1.1) [C]."""
        if self.program is None or self.attach_mode is None:
            return XdpAttached.NONE
        return {
            AttachMode.DRV: XdpAttached.DRV,
            AttachMode.SKB: XdpAttached.SKB,
            AttachMode.HW: XdpAttached.HW,
        }[self.attach_mode]

    # ---- AF_XDP pools (called by bind and close) ------------------------------------
    def pool_at(self, queue: int) -> BufferPool | None:
        return self.pools.get(queue)

    def reg_pool(self, pool: BufferPool, queue: int) -> None:
        """``xsk_reg_pool_at_qid``: EINVAL past max(RX, TX queues) (2.6) [C]."""
        top = max(self.driver.rx_queues, self.driver.tx_queues)
        if not 0 <= queue < top:
            raise kernel_error(
                "EINVAL",
                f"{self.name} has no queue {queue}",
                op="bind",
                hint=f"valid: 0..{top - 1}",
            )
        self.pools[queue] = pool
        pool.umem.holders.append(pool)

    def unreg_pool(self, queue: int) -> None:
        pool = self.pools.pop(queue)
        pool.umem.holders.remove(pool)
        if pool.zc:
            rq = self.rxq[queue]
            pool.umem.holders.remove(rq)
            rq.fifo.clear()
            pool.posted.clear()
            if self.cpsw is not None and self.cpsw.xsk_port.get(queue) is self:
                del self.cpsw.xsk_port[queue]

    def setup_zc(self, pool: BufferPool, queue: int, *, sg: bool) -> tuple[str, str] | None:
        """Can ``pool`` run zero copy here? (errno, reason) if not (2.6, 6.19, 6.22) [C].

        On success the driver pre-posts up to ``hw_ring_size`` FILL frames (6.24).
        """
        want = NetdevXdpAct.zc_required()
        if self.driver.xdp_features & want != want:
            return "EOPNOTSUPP", f"{self.driver.name} has no XSK zero-copy support"
        if self.driver.zc_max_segs == 1 and sg:
            return "EOPNOTSUPP", f"{self.driver.name} has no multi-buffer zero copy"
        pairs = min(self.driver.rx_queues, self.driver.tx_queues)
        if queue >= pairs:
            return "EINVAL", f"queue {queue} has no RX/TX queue pair (driver has {pairs})"
        if self.cpsw is not None:
            owner = self.cpsw.xsk_port.get(queue)
            if owner is not None and owner is not self:
                return "EINVAL", f"queue {queue} is zero copy on {owner.name} already"
        if pool.rx_frame_size < self.driver.zc_min_rx_frame:
            return "EOPNOTSUPP", (
                f"XSK RX frame {pool.rx_frame_size} < {self.driver.zc_min_rx_frame}"
            )
        if self.cpsw is not None:
            self.cpsw.xsk_port[queue] = self
        pool.zc = True
        pool.umem.holders.append(self.rxq[queue])
        self._refill(queue, pool)
        return None

    def wakeup(self, queue: int, flags: Wakeup) -> str | None:
        """``ndo_xsk_wakeup``: schedule the RX and/or TX NAPI (2.5, 4.2 patch 5) [C]."""
        if not self.up:
            return "ENETDOWN"
        pool = self.pools.get(queue)
        if pool is None or not pool.zc:
            return "ENXIO"
        if flags & Wakeup.RX:
            self.rxq[queue].scheduled = True
        if flags & Wakeup.TX:
            self.txq[queue].scheduled = True
        return None

    # ---- wire --------------------------------------------------------------------------
    def receive(self, frame: bytes, queue: int = 0) -> bool:
        """A frame arrives on ``queue``; False if the NIC had to drop it."""
        if not 0 <= queue < len(self.rxq):
            raise InvalidValue(
                f"{self.name} has no RX queue {queue}", valid=f"0..{len(self.rxq) - 1}"
            )
        if not self.up:
            return False
        if self.cpsw is not None and self.cpsw.xsk_port.get(queue) not in (None, self):
            self.stats.rx_dropped += 1  # the other port owns this zero-copy queue (4.2) [C]
            return False
        rq, pool = self.rxq[queue], self.pools.get(queue)
        if pool is not None and pool.zc:
            if not pool.posted:
                self.stats.rx_missed_errors += 1
                return False
            if len(frame) > pool.rx_frame_size:
                self.stats.rx_length_errors += 1  # design choice "zc-oversize"
                return False
            base = pool.posted.popleft()
            pool.umem.write(pool.umem.rx_addr(base), frame)  # the NIC DMAs into the UMEM
            rq.fifo.append((frame, base))
        else:
            if len(rq.fifo) >= self.driver.hw_ring_size:
                self.stats.rx_missed_errors += 1
                return False
            rq.fifo.append((frame, None))
        rq.scheduled = True
        return True

    def _wire_out(self, frame: bytes) -> None:
        self.stats.tx_packets += 1
        self.stats.tx_bytes += len(frame)
        self.wire.append(frame)

    def xmit_copy(self, pool: BufferPool, queue: int, frame: bytes, descs: int) -> bool:
        """Copy-mode direct xmit on a socket's ``queue``; False is NETDEV_TX_BUSY [C]."""
        tq = self.txq[queue]
        if len(tq.inflight) >= self.driver.tx_ring_size:
            return False
        self._wire_out(frame)
        tq.inflight.append((pool, descs))  # completed at the next TX pass
        tq.scheduled = True
        return True

    # ---- NAPI ---------------------------------------------------------------------------
    def poll(self, queue: int = 0, budget: int = 64) -> NapiReport:
        """Run the NAPI work scheduled on ``queue``: TX completions and zero-copy TX,
        then up to ``budget`` RX frames, the flush and the zero-copy refill."""
        report = NapiReport()
        rq = self.rxq[queue] if queue < len(self.rxq) else None
        tq = self.txq[queue] if queue < len(self.txq) else None
        run_rx = rq is not None and rq.scheduled
        run_tx = tq is not None and tq.scheduled
        if self.driver.zc_tx_in_rx_napi and rq is not None and tq is not None:
            run_rx = run_tx = run_rx or run_tx  # one queue-pair NAPI
        if run_tx:
            self._tx_pass(queue, report)
        if run_rx:
            self._rx_pass(queue, budget, report)
        return report

    def _tx_pass(self, queue: int, report: NapiReport) -> None:
        tq = self.txq[queue]
        tq.scheduled = False
        report.ran_tx = True
        while tq.inflight:
            pool, count = tq.inflight.popleft()
            pool.tx_completed(count)
            report.completed += count
        pool_q = self.pools.get(queue)
        if pool_q is not None and pool_q.zc:
            room = self.driver.tx_ring_size - self.driver.zc_tx_reserve
            descs = pool_q.zc_tx_batch(room)
            for desc in descs:
                self._wire_out(pool_q.umem.read(desc.addr, desc.len))  # DMA from the UMEM
            if descs:
                tq.inflight.append((pool_q, len(descs)))
                report.tx += len(descs)
            if pool_q.uses_need_wakeup:
                pool_q.set_tx_need_wakeup()  # am65 sets it after every pass (4.2 patch 5)
        if tq.inflight:
            tq.scheduled = True  # the completion interrupt will come

    def _rx_pass(self, queue: int, budget: int, report: NapiReport) -> None:
        rq, pool = self.rxq[queue], self.pools.get(queue)
        rq.scheduled = False
        report.ran_rx = True
        while rq.fifo and report.rx < budget:
            data, base = rq.fifo.popleft()
            report.rx += 1
            self._rx_one(queue, data, base, pool)
        for sock in self.flush_list:
            flush(sock)  # xdp_do_flush
        self.flush_list.clear()
        if pool is not None and pool.zc:
            report.refilled = self._refill(queue, pool)
        if rq.fifo:
            rq.scheduled = True

    def _refill(self, queue: int, pool: BufferPool) -> int:
        """Top the NIC's RX ring up from the pool; need_wakeup if short (6.24) [C]."""
        rq = self.rxq[queue]
        waiting = sum(1 for _, base in rq.fifo if base is not None)
        want = self.driver.hw_ring_size - len(pool.posted) - waiting
        got = pool.alloc_batch(want) if want > 0 else []
        pool.posted.extend(got)
        short = len(got) < want
        if pool.uses_need_wakeup:  # design choice "need-wakeup-gate"
            if short:
                pool.set_rx_need_wakeup()
            else:
                pool.clear_rx_need_wakeup()
        elif short:
            rq.scheduled = True  # without need_wakeup the driver keeps polling
        return len(got)

    def _rx_one(self, queue: int, data: bytes, base: int | None, pool: BufferPool | None) -> None:
        self.stats.rx_packets += 1
        self.stats.rx_bytes += len(data)
        ctx = XdpContext(bytearray(data), self.dev.ifindex, queue)
        if base is None:
            if self.attach_mode is AttachMode.DRV and self.program is not None:
                self._apply(self._run(ctx), ctx, queue, generic=False)
            else:
                self._to_stack(ctx, queue)
            return
        assert pool is not None
        verdict, action = XdpVerdict(XdpAction.PASS), XdpAction.PASS  # no native program
        if self.attach_mode is AttachMode.DRV and self.program is not None:
            verdict = self._run(ctx)
            action = self._account(verdict)
            pool.umem.write(pool.umem.rx_addr(base), bytes(ctx.data))  # edits land in place
        if action is XdpAction.REDIRECT:
            err = (
                rcv_zc(verdict.target, self, queue, base, len(ctx.data))
                if verdict.target is not None
                else "EINVAL"
            )
            self._to_flush(verdict.target)
            if err is not None:
                self.stats.xdp_redirect_err += 1
                pool.free(base)
            return
        pool.free(base)  # design choice "zc-tx-frame"
        if action is XdpAction.TX:
            self._wire_out(bytes(ctx.data))
        elif action is XdpAction.PASS:
            self.stats.zc_pass_copies += 1
            self._to_stack(ctx, queue)

    def _to_flush(self, sock: XskSocket | None) -> None:
        """Remember a socket with RX descriptors to publish (``xsk_map``'s flush list)."""
        if sock is not None and sock.needs_flush and sock not in self.flush_list:
            self.flush_list.append(sock)

    def _run(self, ctx: XdpContext) -> XdpVerdict:
        assert self.program is not None
        return self.program.run(ctx)

    def _account(self, verdict: XdpVerdict) -> XdpAction:
        """Bump the action's counter; an unknown code is ABORTED plus a warning (1.2) [C]."""
        try:
            action = XdpAction(verdict.action)
        except ValueError:
            self.stats.xdp_invalid_action += 1
            action = XdpAction.ABORTED
        if action is XdpAction.ABORTED:
            self.stats.xdp_aborted += 1
            self.stats.xdp_exception += 1
        else:
            name = f"xdp_{action.name.lower()}"
            setattr(self.stats, name, getattr(self.stats, name) + 1)
        return action

    def _apply(self, verdict: XdpVerdict, ctx: XdpContext, queue: int, *, generic: bool) -> None:
        """A copy-mode verdict (the frame sits in a driver page or an skb)."""
        action = self._account(verdict)
        if action is XdpAction.REDIRECT:
            target = verdict.target
            err = (
                rcv_copy(target, self, queue, bytes(ctx.data), generic=generic)
                if target is not None
                else "EINVAL"
            )
            self._to_flush(target)
            if err is not None:
                self.stats.xdp_redirect_err += 1
        elif action is XdpAction.TX:
            self._wire_out(bytes(ctx.data))
        elif action is XdpAction.PASS:
            self._deliver(bytes(ctx.data))

    def _to_stack(self, ctx: XdpContext, queue: int) -> None:
        """Into the stack; with a generic program it runs on the skb first (1.1) [C]."""
        if self.attach_mode is AttachMode.SKB and self.program is not None:
            self._apply(self._run(ctx), ctx, queue, generic=True)
        else:
            self._deliver(bytes(ctx.data))

    def _deliver(self, frame: bytes) -> None:
        self.stats.stack_rx += 1
        self.stack.append(frame)
