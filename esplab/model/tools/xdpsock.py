"""xdpsock's three benchmarks (rxdrop, txonly, l2fwd) over a device's XDP side.

In a lab the device is the lab's (``esplab.model.journey.xdpsock_run``); on its own a
bare device will do, e.g. the seed's am65-cpsw port:
``XdpSock(NetDev.bare().enable_xdp(DriverProfile.am65_cpsw()), config)``.

Defaults and loop semantics from ``af_xdp.md`` 3.1 and 3.2 (bpf-examples
``AF_XDP-example/xdpsock.c``) [C]. The run is deterministic and stepped: one
:meth:`XdpSock.step` offers the traffic source's burst to the port, runs the port's
NAPI work, then one iteration of the benchmark loop. Where xdpsock spins until a
reservation succeeds, the model keeps what it peeked and retries on the next step,
so kernel progress (the next NAPI pass) can happen in between.

Counts are xdpsock's own (end-of-packet descriptors, 3.1; for txonly descriptors
submitted, 7). Rates need time, which the functional model does not have: a report
takes its interval from the cost model and says so.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from esplab.errors import InvalidValue, ToolUsageError
from esplab.model.kernel.xdp.consts import ETH_FCS_SIZE, AttachMode, Benchmark, BindFlag, XskMode
from esplab.model.kernel.xdp.port import NetdevXdp
from esplab.model.kernel.xdp.program import XskMap, XskRedirect, swap_macs
from esplab.model.kernel.xdp.rings import XskDesc
from esplab.model.kernel.xdp.socket import XdpStatistics, XskSocket
from esplab.model.kernel.xdp.umem import Umem
from esplab.model.tools.xdp_costmodel import MODEL_LABEL, CostModel

__all__ = [
    "MAX_PKT_SIZE",
    "MIN_PKT_SIZE",
    "NUM_FRAMES",
    "TrafficSource",
    "XdpSock",
    "XdpSockConfig",
    "XdpSockReport",
    "xdpsock_frame",
]

NUM_FRAMES = 4096  # UMEM frames (3.1) [C]
MIN_PKT_SIZE = 64  # -s range, FCS included (3.1) [C]
MAX_PKT_SIZE = 9728
RING_CONS_DEFAULT = 2048  # XSK_RING_CONS__DEFAULT_NUM_DESCS: RX and COMPLETION (3.1) [C]
RING_PROD_DEFAULT = 2048  # XSK_RING_PROD__DEFAULT_NUM_DESCS: TX; FILL is twice that [C]
TX_DST_MAC = bytes.fromhex("3cfdfe9e7f71")  # xdpsock's default -G (3.2) [C]
TX_SRC_MAC = bytes.fromhex("ecb1d7983ac0")  # default -H [C]
FILL_PATTERN = 0x12345678  # -P default [C]


def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def xdpsock_frame(
    pkt_size: int = 64, *, dst: bytes = TX_DST_MAC, src: bytes = TX_SRC_MAC, ip_id: int = 0
) -> bytes:
    """xdpsock's txonly frame: Ethernet/IPv4/UDP, 10.10.10.16 -> 10.10.10.32, ports
    0x1000, payload 0x12345678 repeated, valid checksums; ``pkt_size - 4`` bytes (3.2) [C].
    """
    length = pkt_size - ETH_FCS_SIZE
    ip_len, udp_len = length - 14, length - 34
    payload = (struct.pack("!I", FILL_PATTERN) * (udp_len // 4 + 1))[: udp_len - 8]
    saddr, daddr = bytes([10, 10, 10, 16]), bytes([10, 10, 10, 32])
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, ip_id, 0, 64, 17, 0, saddr, daddr))
    ip[10:12] = struct.pack("!H", _csum(bytes(ip)))
    udp = bytearray(struct.pack("!HHHH", 0x1000, 0x1000, udp_len, 0)) + payload
    pseudo = saddr + daddr + struct.pack("!BBH", 0, 17, udp_len)
    udp[6:8] = struct.pack("!H", _csum(pseudo + bytes(udp)) or 0xFFFF)
    return dst + src + b"\x08\x00" + bytes(ip) + bytes(udp)


@dataclass
class TrafficSource:
    """A deterministic peer: ``burst`` frames per step, each xdpsock's frame with a
    running sequence number in the IPv4 identification field."""

    pkt_size: int = 64
    burst: int = 64
    limit: int | None = None  # stop after this many frames
    sent: int = 0

    def __post_init__(self) -> None:
        if not MIN_PKT_SIZE <= self.pkt_size <= MAX_PKT_SIZE:
            raise InvalidValue(
                f"packet size {self.pkt_size}", valid=f"{MIN_PKT_SIZE}..{MAX_PKT_SIZE}"
            )

    def next_burst(self) -> list[bytes]:
        count = self.burst if self.limit is None else min(self.burst, self.limit - self.sent)
        frames = [
            xdpsock_frame(self.pkt_size, ip_id=(self.sent + i) & 0xFFFF)
            for i in range(max(count, 0))
        ]
        self.sent += len(frames)
        return frames


@dataclass(frozen=True)
class XdpSockConfig:
    """xdpsock's options that the model honours, with its defaults (3.1) [C]."""

    benchmark: Benchmark = Benchmark.RXDROP  # -r / -t / -l
    xdp_skb: bool = False  # -S: generic attach and XDP_COPY
    force_copy: bool = False  # -c
    force_zerocopy: bool = False  # -z
    need_wakeup: bool = True  # -m turns it off
    busy_poll: bool = False  # -B
    batch_size: int = 64  # -b
    pkt_count: int = 0  # -C: txonly sends exactly this many, 0 = no limit (get_batch_size) [C]
    pkt_size: int = 64  # -s, FCS included
    frame_size: int = 4096  # -f
    queue: int = 0  # -q

    def __post_init__(self) -> None:
        if not MIN_PKT_SIZE <= self.pkt_size <= MAX_PKT_SIZE:
            raise ToolUsageError(f"-s {self.pkt_size}", valid=f"{MIN_PKT_SIZE}..{MAX_PKT_SIZE}")
        if self.batch_size <= 0:
            raise ToolUsageError(f"-b {self.batch_size}", valid="a positive batch size")
        if self.pkt_count < 0:
            raise ToolUsageError(f"-C {self.pkt_count}", valid="0 (no limit) or a packet count")
        if self.force_copy and self.force_zerocopy:
            raise ToolUsageError("-c and -z together", hint="the bind would fail with EINVAL")

    @property
    def attach_mode(self) -> AttachMode:
        return AttachMode.SKB if self.xdp_skb else AttachMode.DRV

    @property
    def bind_flags(self) -> BindFlag:
        flags = BindFlag.USE_NEED_WAKEUP if self.need_wakeup else BindFlag.NONE
        if self.xdp_skb or self.force_copy:
            flags |= BindFlag.COPY
        if self.force_zerocopy:
            flags |= BindFlag.ZEROCOPY
        return flags


@dataclass
class XdpSockReport:
    """What xdpsock prints every interval (``dump_stats``), for the whole run (3.1) [C]."""

    interface: str
    queue: int
    benchmark: Benchmark
    attach: AttachMode
    mode: XskMode
    rx_npkts: int
    tx_npkts: int
    stats: XdpStatistics
    app: dict[str, int]
    interval_s: float | None  # modelled time; None without a cost model, for a bug cell, or
    # for a run that counted less than one batch (XdpSock.steady)
    source: str = MODEL_LABEL

    def pps(self, count: int) -> float | None:
        return None if not self.interval_s else count / self.interval_s

    def lines(self, *, extra_stats: bool = False, app_stats: bool = False) -> list[str]:
        """xdpsock's layout (``%-18s %-14s %-14s``), thousands grouped with commas."""

        def row(name: str, count: int) -> str:
            pps = self.pps(count)
            shown = "-" if pps is None else f"{pps:,.0f}"
            return f"{name:<18} {shown:<14} {count:<14,}".rstrip()

        attach = "xdp-skb" if self.attach is AttachMode.SKB else "xdp-drv"
        dt = "-" if self.interval_s is None else f"{self.interval_s:.2f}"
        out = [
            f" sock0@{self.interface}:{self.queue} {self.benchmark.value} {attach} ",
            f"{'':<18} {'pps':<14} {'pkts':<14} {dt}".rstrip(),
            row("rx", self.rx_npkts),
            row("tx", self.tx_npkts),
        ]
        if extra_stats:
            s = self.stats
            out += [
                row("rx dropped", s.rx_dropped),
                row("rx invalid", s.rx_invalid_descs),
                row("tx invalid", s.tx_invalid_descs),
                row("rx queue full", s.rx_ring_full),
                row("fill ring empty", s.rx_fill_ring_empty_descs),
                row("tx ring empty", s.tx_ring_empty_descs),
            ]
        if app_stats:
            out += [row(name.replace("_", " "), count) for name, count in self.app.items()]
        out.append(
            f"({self.source}: {self.mode.value}; rates come from the cost model, "
            "not from a measurement)"
        )
        return out


@dataclass(eq=False)
class XdpSock:
    """One xdpsock process on ``port``: UMEM, socket, libxdp's default program."""

    port: NetdevXdp
    config: XdpSockConfig = field(default_factory=XdpSockConfig)
    source: TrafficSource | None = None
    loops_per_step: int = 8  # benchmark loops per NAPI pass at most (design choice "app-loops")
    sock: XskSocket = field(init=False)
    umem: Umem = field(init=False)
    xsks_map: XskMap = field(init=False)
    rx_npkts: int = 0
    tx_npkts: int = 0
    outstanding_tx: int = 0
    app: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("rx_empty_polls", "fill_fail_polls", "copy_tx_sendtos", "tx_wakeup_sendtos"), 0
        )
    )
    steps: int = 0
    _frame_nb: int = field(default=0, init=False)
    _pending_rx: list[XskDesc] = field(default_factory=list, init=False)
    _pending_cq: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        cfg = self.config
        bench = cfg.benchmark
        rx, tx = bench is not Benchmark.TXONLY, bench is not Benchmark.RXDROP
        self.umem = Umem(NUM_FRAMES * cfg.frame_size, chunk_size=cfg.frame_size)
        self.sock = XskSocket()
        self.sock.setup(
            self.umem,
            fill=2 * RING_PROD_DEFAULT,
            comp=RING_CONS_DEFAULT,
            rx=RING_CONS_DEFAULT if rx else 0,
            tx=RING_PROD_DEFAULT if tx else 0,
        )
        self.sock.bind(self.port, cfg.queue, cfg.bind_flags)
        if rx:  # libxdp loads its default program for a socket with an RX ring [U]
            current = self.port.program
            if isinstance(current, XskRedirect) and self.port.attach_mode is cfg.attach_mode:
                self.xsks_map = current.xsks_map  # libxdp reuses the attached program's map
            else:
                self.xsks_map = XskMap()
                self.port.attach(XskRedirect(self.xsks_map), cfg.attach_mode)
            self.xsks_map.update(cfg.queue, self.sock)
        else:
            self.xsks_map = XskMap()
        if rx:  # FILL pre-loaded with 4096 frame addresses, after bind (3.2) [C]
            fill = self.sock.fill
            assert fill is not None
            fill.produce([i * cfg.frame_size for i in range(2 * RING_PROD_DEFAULT)])
        if bench is Benchmark.TXONLY:  # every frame pre-filled once (3.2) [C]
            frame = xdpsock_frame(cfg.pkt_size)[: cfg.frame_size]
            for i in range(NUM_FRAMES):
                self.umem.write(i * cfg.frame_size, frame)

    @property
    def mode(self) -> XskMode:
        """The seed column this run belongs to (3.2 [D])."""
        if self.sock.zc:
            return XskMode.ZEROCOPY
        return XskMode.SKB if self.config.attach_mode is AttachMode.SKB else XskMode.NATIVE

    # ---- one step ------------------------------------------------------------------
    def step(self) -> None:
        """Traffic in, one NAPI pass, then the benchmark loop until it stalls (at most
        ``loops_per_step`` times; design choice "app-loops")."""
        cfg = self.config
        if self.source is not None and cfg.benchmark is not Benchmark.TXONLY:
            for frame in self.source.next_burst():
                self.port.receive(frame, cfg.queue)
        self.port.poll(cfg.queue, budget=cfg.batch_size)
        loop = {
            Benchmark.RXDROP: self._rx_drop,
            Benchmark.TXONLY: self._tx_only,
            Benchmark.L2FWD: self._l2fwd,
        }[cfg.benchmark]
        for _ in range(self.loops_per_step):
            mark = (self.rx_npkts, self.tx_npkts, self.outstanding_tx)
            loop()
            if (self.rx_npkts, self.tx_npkts, self.outstanding_tx) == mark:
                break
        self.steps += 1

    def run(self, steps: int) -> XdpSockReport:
        for _ in range(steps):
            self.step()
        return self.report()

    # ---- the loops of 3.2 -----------------------------------------------------------------
    def _wants_kick(self, needs_wakeup: bool) -> bool:
        return self.config.busy_poll or needs_wakeup

    def _kick_rx(self, counter: str) -> None:
        self.app[counter] += 1
        self.sock.recvfrom()

    def _kick_tx(self) -> None:
        # xdpsock tolerates ENOBUFS, EAGAIN, EBUSY and ENETDOWN here (3.2) [C].
        self.sock.sendto()

    def _peek_rx(self) -> bool:
        """Peek up to a batch of RX descriptors unless some are pending already."""
        if self._pending_rx:
            return True
        rx, fill = self.sock.rx, self.sock.fill
        assert rx is not None and fill is not None
        count, first = rx.peek(self.config.batch_size)
        if count == 0:
            if self._wants_kick(fill.needs_wakeup):
                self._kick_rx("rx_empty_polls")
            return False
        self._pending_rx = [rx.read((first + i) & 0xFFFF_FFFF) for i in range(count)]
        if self.config.benchmark is Benchmark.L2FWD:
            self.rx_npkts += count  # l2fwd counts before it forwards (3.2) [C]
        return True

    def _rx_drop(self) -> None:
        rx, fill = self.sock.rx, self.sock.fill
        assert rx is not None and fill is not None
        if not self._peek_rx():
            return
        descs = self._pending_rx
        first = fill.reserve(len(descs))
        if first is None:
            if self._wants_kick(fill.needs_wakeup):
                self._kick_rx("fill_fail_polls")
            return  # retried next step
        for i, desc in enumerate(descs):
            # aligned mode keeps the +256 offset; the kernel masks it (3.2, 6.10) [C]
            fill.write((first + i) & 0xFFFF_FFFF, desc.addr)
        fill.submit(len(descs))
        rx.release(len(descs))
        self.rx_npkts += len(descs)
        self._pending_rx = []

    def _complete_tx_only(self) -> None:
        comp, tx = self.sock.comp, self.sock.tx
        assert comp is not None and tx is not None
        if not self.outstanding_tx:
            return
        if not self.config.need_wakeup or tx.needs_wakeup:
            self.app["tx_wakeup_sendtos"] += 1
            self._kick_tx()
        done = len(comp.consume(self.config.batch_size))
        self.outstanding_tx -= done

    def _batch_size(self) -> int:
        """xdpsock's ``get_batch_size``: with ``-C N`` the last batch is what is left of N,
        so txonly sends exactly N (bpf-examples xdpsock.c) [C]."""
        cfg = self.config
        if not cfg.pkt_count or self.tx_npkts + cfg.batch_size <= cfg.pkt_count:
            return cfg.batch_size
        return max(0, cfg.pkt_count - self.tx_npkts)

    def _tx_only(self) -> None:
        tx = self.sock.tx
        assert tx is not None
        batch, cfg = self._batch_size(), self.config
        if not batch:  # -C reached: only completions are left (complete_tx_only_all) [C]
            self._complete_tx_only()
            return
        first = tx.reserve(batch)
        if first is None:
            self._complete_tx_only()
            return
        for i in range(batch):
            addr = (self._frame_nb + i) * cfg.frame_size
            tx.write((first + i) & 0xFFFF_FFFF, XskDesc(addr, cfg.pkt_size - ETH_FCS_SIZE))
        tx.submit(batch)
        self.tx_npkts += batch
        self.outstanding_tx += batch
        self._frame_nb = (self._frame_nb + batch) % NUM_FRAMES
        self._complete_tx_only()

    def _complete_l2fwd(self) -> bool:
        """Recycle completed frames into FILL; False while FILL has no room."""
        comp, fill = self.sock.comp, self.sock.fill
        assert comp is not None and fill is not None
        if not self.outstanding_tx and not self._pending_cq:
            return True
        if not self._pending_cq:
            if self.config.bind_flags & BindFlag.COPY:  # copy mode: TX needs the syscall
                self.app["copy_tx_sendtos"] += 1
                self._kick_tx()
            count, first = comp.peek(min(self.outstanding_tx, self.config.batch_size))
            self._pending_cq = [comp.read((first + i) & 0xFFFF_FFFF) for i in range(count)]
            if not count:
                return True
        if fill.produce(self._pending_cq) == 0:
            if self._wants_kick(fill.needs_wakeup):
                self._kick_rx("fill_fail_polls")
            return False
        comp.release(len(self._pending_cq))
        self.outstanding_tx -= len(self._pending_cq)
        self._pending_cq = []
        return True

    def _l2fwd(self) -> None:
        rx, tx = self.sock.rx, self.sock.tx
        assert rx is not None and tx is not None
        if not self._complete_l2fwd() or not self._peek_rx():
            return
        descs = self._pending_rx
        first = tx.reserve(len(descs))
        if first is None:
            self._complete_l2fwd()
            if self._wants_kick(tx.needs_wakeup):
                self.app["tx_wakeup_sendtos"] += 1
                self._kick_tx()
            return  # retried next step
        for i, desc in enumerate(descs):
            frame = bytearray(self.umem.read(desc.addr, min(desc.len, 12)))
            swap_macs(frame)
            self.umem.write(desc.addr, bytes(frame))
            tx.write((first + i) & 0xFFFF_FFFF, XskDesc(desc.addr, desc.len))
        tx.submit(len(descs))
        rx.release(len(descs))
        self.tx_npkts += len(descs)
        self.outstanding_tx += len(descs)
        self._pending_rx = []

    # ---- report -----------------------------------------------------------------------------
    @property
    def counted(self) -> int:
        """What xdpsock rates: RX for rxdrop, TX for txonly and l2fwd (3.1) [C]."""
        return self.rx_npkts if self.config.benchmark is Benchmark.RXDROP else self.tx_npkts

    @property
    def steady(self) -> bool:
        """Did the run count at least one whole batch? xdpsock rates a steady stream, one
        loop of ``batch_size`` at a time (3.1, 3.2); less is not one (design choice
        "rate-needs-a-batch", [M])."""
        return self.counted >= self.config.batch_size

    def report(self, cost: CostModel | None = None) -> XdpSockReport:
        """The run's counts; the interval comes from ``cost`` (a model) if given and the
        run was steady (:attr:`steady`), else there is no rate."""
        cfg = self.config
        counted = self.counted
        interval: float | None = None
        if cost is not None and self.steady:
            pred = cost.predict(cfg.benchmark, self.mode, cfg.pkt_size)
            if pred.ns_per_packet is not None:
                interval = counted * pred.ns_per_packet / 1e9
        return XdpSockReport(
            self.port.name,
            cfg.queue,
            cfg.benchmark,
            cfg.attach_mode,
            self.mode,
            self.rx_npkts,
            self.tx_npkts,
            self.sock.statistics(),
            dict(self.app),
            interval,
        )
