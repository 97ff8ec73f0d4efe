"""AF_XDP sockets of the lab: create, bind, fill, send, recv, complete, close; xdpsock.

The socket side of :mod:`esplab.model.xdp_lab`. Each operation is what an
application does with libxdp, and each refusal is the emulated kernel's
``KernelError`` with its errno name and why (``with_errno``); anything the command
would change is checked first, so a refused command changes nothing.

Journeys: ``send`` gives one journey per TX descriptor (``<sock>.tx`` with the
descriptor and its frame, ``<sock>.xmit``, ``<dev>.wire``, the peer's receive
walked by the datapath, ``<sock>.comp``); ``recv`` appends ``<sock>.recv`` to the
journey that brought the frame; ``run_xdpsock`` gives one journey per run with
the first descriptors it saw (``xdpsock.rx``/``xdpsock.tx``) and its counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from esplab.errors import BadArgument, KernelError
from esplab.model.journey import Journey, Stage
from esplab.model.xdp.consts import (
    ETH_FCS_SIZE,
    U32_MASK,
    AttachMode,
    Benchmark,
    BindFlag,
    RingKind,
)
from esplab.model.xdp.costmodel import SEED_KPPS, CostModel, Prediction
from esplab.model.xdp.program import XskRedirect
from esplab.model.xdp.rings import XskDesc
from esplab.model.xdp.socket import XskSocket
from esplab.model.xdp.umem import Umem
from esplab.model.xdp.xdpsock import (
    MAX_PKT_SIZE,
    MIN_PKT_SIZE,
    TrafficSource,
    XdpSock,
    XdpSockConfig,
    XdpSockReport,
)
from esplab.model.xdp_lab import (
    LabSocket,
    XdpLab,
    XdpPort,
    counters,
    delta,
    kernel_errors,
    record,
    with_errno,
)

if TYPE_CHECKING:
    from esplab.model.lab import Lab

__all__ = [
    "SendReport",
    "XdpSockRun",
    "bind",
    "close",
    "complete",
    "create",
    "fill",
    "recv",
    "run_xdpsock",
    "send",
    "tx_frame",
]

_MODES = ("XDP-SKB", "XDP-Native", "XDP-Native (ZeroCopy)")


def create(
    xl: XdpLab, name: str, node: str, frames: int, frame_size: int, headroom: int, ring: int
) -> LabSocket:
    """``socket()``, ``XDP_UMEM_REG`` and the four ring sizes (af_xdp.md 2.1, 2.2)."""
    if not name[:1].isalpha() or not name.replace("-", "_").isidentifier() or len(name) > 16:
        raise BadArgument(
            f"'{name}' cannot name a socket",
            valid="a letter, then letters, digits, _ or - (16 at most)",
        )
    if name in xl.sockets:
        raise BadArgument(f"socket '{name}' exists already", hint=f"xsk close {name}")
    if not 1 <= frames <= 65536:
        raise BadArgument(f"frames {frames}", valid="1..65536")
    xl.lab.node(node)
    sock = XskSocket()
    with kernel_errors(
        {
            "EINVAL": "UMEM chunks are a power of two from 2048 to the 4096-byte page, headroom "
            "stays below chunk - 256, ring sizes are non-zero powers of two (af_xdp.md 2.1, 2.2)",
            "ENOBUFS": "the UMEM is pinned memory, bounded by RLIMIT_MEMLOCK",
        }
    ):
        umem = Umem(frames * frame_size, chunk_size=frame_size, headroom=headroom)
        sock.reg_umem(umem)
        for kind in (RingKind.FILL, RingKind.COMPLETION, RingKind.RX, RingKind.TX):
            sock.set_ring(kind, ring)  # a size of 0 is the kernel's EINVAL too (6.2)
    ls = LabSocket(name, node, sock, umem, ring)
    xl.sockets[name] = ls
    return ls


def bind(
    xl: XdpLab,
    name: str,
    node: str,
    dev: str,
    queue: int,
    flags: BindFlag | None,
    need_wakeup: bool,
) -> tuple[LabSocket, str]:
    """``bind()``, then libxdp's part: load the default program or fill the XSKMAP.

    ``flags`` None takes the default of the device's attach mode (skb and native:
    XDP_COPY, zc: XDP_ZEROCOPY; nothing attached: the kernel chooses).
    """
    ls = xl.socket(name)
    if node != ls.node:
        raise BadArgument(
            f"socket {name} lives on {ls.node}, not {node}", hint=f"{ls.node} xsk bind {name} ..."
        )
    xp = xl.port(node, dev)
    bind_flags = xp.bind_default if flags is None else flags
    if need_wakeup:
        bind_flags |= BindFlag.USE_NEED_WAKEUP
    with kernel_errors(
        {
            "EBUSY": "one UMEM owner per device and queue (af_xdp.md 6.20): xsk close the other "
            "socket first",
            "EOPNOTSUPP": "zero copy needs a driver with XSK pools that accepts this UMEM's RX "
            "frame (af_xdp.md 1.1, 2.6, 4.2)",
            "EINVAL": "the queue must exist, and a zero-copy queue belongs to one port "
            "(af_xdp.md 2.6, 4.2)",
        }
    ):
        ls.sock.bind(xp.port, queue, bind_flags)
    ls.dev = dev
    xp.xsks_map.update(queue, ls.sock)
    if xp.port.program is None:
        mode = xp.port.attach(XskRedirect(xp.xsks_map))
        xp.mode = "native" if mode is AttachMode.DRV else "skb"
        xp.program, xp.loaded_by_bind = "redirect", True
        if queue < xp.port.driver.rx_queues:  # lab frames to the socket's queue, if it has RX
            xp.rx_queue = queue
        note = f"libxdp loaded its default program xsk_def_prog ({xp.mode})"
    elif isinstance(xp.port.program, XskRedirect):
        note = f"XSKMAP[{queue}] of {dev}'s redirect program -> {name}"
    else:
        note = (
            f"{dev}'s program {xp.port.program.name} does not redirect: nothing reaches "
            f"{name} until xdp attach {dev} MODE redirect"
        )
    return ls, note


def bound(xl: XdpLab, name: str, op: str) -> tuple[LabSocket, XdpPort]:
    ls = xl.socket(name)
    if not ls.sock.is_bound or ls.dev is None:
        raise with_errno(
            KernelError(
                "ENXIO", f"{name} is not bound", prefix=op, hint=f"xsk bind {name} DEV QUEUE"
            )
        )
    return ls, xl.port(ls.node, ls.dev)


def fill(xl: XdpLab, name: str, count: int) -> tuple[list[int], bool]:
    """Post ``count`` free frames to FILL; kick with recvfrom if the driver asks (2.5)."""
    ls = xl.socket(name)
    ring = ls.sock.fill
    assert ring is not None
    free = ls.free_frames()
    if not 1 <= count <= len(free):
        raise BadArgument(
            f"cannot fill {count} frame(s): user space owns {len(free)} free",
            valid=f"1..{len(free)}" if free else None,
            hint="xsk recv and xsk complete give frames back",
        )
    room = ring.nb_free(count)
    if room < count:
        raise BadArgument(
            f"FILL has room for {room} of {count}",
            hint="xsk_ring_prod__reserve is all or nothing (af_xdp.md 6.3)",
        )
    addrs = free[:count]
    ring.produce(addrs)
    kicked = False
    if ls.sock.is_bound and ls.dev is not None:
        xp = xl.port(ls.node, ls.dev)
        if ring.needs_wakeup and xp.port.up:
            ls.sock.recvfrom()
            kicked = True
        xl.settle(xp.port, ls.sock.queue_id)
    return addrs, kicked


def recv(xl: XdpLab, name: str, count: int | None) -> list[tuple[int, XskDesc, bytes, int | None]]:
    """Peek, read and release RX descriptors: (index, descriptor, frame, journey id)."""
    ls, xp = bound(xl, name, "recvfrom")
    rx, umem = ls.sock.rx, ls.umem
    assert rx is not None
    xl.settle(xp.port, ls.sock.queue_id)
    n, first = rx.peek(rx.size if count is None else count)
    out: list[tuple[int, XskDesc, bytes, int | None]] = []
    for i in range(n):
        index = (first + i) & U32_MASK
        desc = rx.read(index)
        frame = umem.read(desc.addr, desc.len) if desc.addr + desc.len <= umem.size else b""
        jid = ls.rx_journeys.pop(index, None)
        out.append((index, desc, frame, jid))
        journey = None if jid is None else xl.lab.journeys.get(jid)
        if journey is not None:
            record(
                xl.lab,
                journey,
                Stage(
                    f"{name}.recv",
                    xp.dev,
                    f"the application read RX #{index} and released it; frame "
                    f"{umem.frame_base(desc.addr):#x} is the user's again",
                    why="an RX descriptor hands its frame to user space (af_xdp.md 2.6)",
                    data=desc.pack() + frame,
                    kind="xdp",
                    meta={"socket": name},
                ),
            )
    rx.release(n)
    return out


def complete(xl: XdpLab, name: str, count: int | None = None) -> list[int]:
    """Drain COMPLETION: the frames of finished TX descriptors are the user's again."""
    comp = xl.socket(name).sock.comp
    assert comp is not None
    return comp.consume(comp.size if count is None else count)


def close(xl: XdpLab, name: str) -> tuple[LabSocket, str | None]:
    """``close()``; libxdp then releases the default program it loaded if no socket is
    left on the device [U: libxdp behaviour, not in the reference]. Returns a note."""
    ls = xl.socket(name)
    port = ls.sock.port
    ls.sock.close()
    del xl.sockets[name]
    note = None
    for xp in xl.ports.values():
        xp.xsks_map.remove_socket(ls.sock)
        if xp.port is port and xp.loaded_by_bind and not xl.sockets_on(xp):
            xp.port.detach()
            xp.mode = xp.program = None
            xp.loaded_by_bind = False
            note = f"libxdp unloaded its default program from {xp.dev}"
    return ls, note


# ---- TX -----------------------------------------------------------------------------
def tx_frame(lab: Lab, node: str, dev: str, index: int, size: int) -> bytes:
    """xdpsock's UDP frame (ports 0x1000, payload 0x12345678, ``size - 4`` bytes, 3.2),
    addressed from the device to the node at the other end of its wire."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    netdev = lab.node(node).dev(dev)
    dst_mac, dst_ip = "ff:ff:ff:ff:ff:ff", "10.10.10.32"
    src_ip = next((str(a.ip) for a in netdev.addrs if a.version == 4), "10.10.10.16")
    peer = lab.peer_of(node, dev)
    if peer is not None:
        pdev = lab.node(peer[0]).dev(peer[1])
        dst_mac = pdev.mac
        dst_ip = next((str(a.ip) for a in pdev.addrs if a.version == 4), dst_ip)
    head = Ether(dst=dst_mac, src=netdev.mac) / IP(src=src_ip, dst=dst_ip, id=index & 0xFFFF)
    head = head / UDP(sport=0x1000, dport=0x1000)
    pad = max(0, size - ETH_FCS_SIZE - len(head))
    return bytes(head / Raw((b"\x12\x34\x56\x78" * (pad // 4 + 1))[:pad]))


@dataclass
class SendReport:
    journeys: list[Journey]
    sent: int
    invalid: int
    pending: int
    reclaimed: int  # COMPLETION entries drained before sending
    completed: int  # COMPLETION entries published for this send
    zerocopy: bool


def send(xl: XdpLab, name: str, count: int, size: int, addr: int | None = None) -> SendReport:
    """Write ``count`` TX descriptors, kick (sendto), run the driver, walk each frame.

    With ``addr`` the descriptors point at ``addr``, ``addr + chunk``, ... whether
    or not that is inside the UMEM: the kernel validates them (af_xdp.md 2.8).
    """
    ls, xp = bound(xl, name, "sendto")
    sock, umem, tx, comp = ls.sock, ls.umem, ls.sock.tx, ls.sock.comp
    assert tx is not None and comp is not None
    if not 1 <= count <= tx.size:
        raise BadArgument(f"xsk send count {count}", valid=f"1..{tx.size} (the TX ring)")
    if not MIN_PKT_SIZE <= size <= MAX_PKT_SIZE:
        raise BadArgument(
            f"size {size}",
            valid=f"{MIN_PKT_SIZE}..{MAX_PKT_SIZE} (xdpsock -s: the frame with its 4-byte FCS)",
        )
    if addr is not None and not 0 <= addr <= U32_MASK << 32:
        raise BadArgument(
            f"addr {addr:#x}",
            valid=f"0..{U32_MASK << 32:#x} (a UMEM offset the lab can add frame sizes to)",
        )
    if not xp.port.up:
        raise with_errno(
            KernelError(
                "ENETDOWN", f"{ls.dev} is down", prefix="sendto", hint=f"ip link set {ls.dev} up"
            )
        )
    reclaimed = len(comp.consume(comp.size))
    if addr is None:
        free = ls.free_frames()
        if len(free) < count:
            raise BadArgument(
                f"user space owns {len(free)} free frame(s), {count} asked",
                hint="xsk recv and xsk complete give frames back",
            )
        addrs = free[:count]
    else:
        addrs = [addr + i * umem.chunk_size for i in range(count)]
    if tx.nb_free(count) < count:
        raise BadArgument(
            f"the TX ring has room for {tx.nb_free(count)} of {count}",
            hint="the kernel has not consumed the earlier descriptors",
        )
    frames = [tx_frame(xl.lab, ls.node, xp.dev, i, size) for i in range(count)]
    descs = []
    for a, frame in zip(addrs, frames, strict=True):
        if a < umem.size:  # the application writes its frame; only its own chunk fits
            end = min(umem.size, umem.frame_base(a) + umem.chunk_size)
            umem.write(a, frame[: max(0, end - a)])
        descs.append(XskDesc(a, len(frame)))
    first_tx = tx.prod_head
    tx.produce(descs)
    start, comp_start = tx.cons_head, comp.producer
    for _ in range(4 * count + 8):  # sendto, then the driver's NAPI, until nothing moves
        mark = (tx.cons_head, comp.producer)
        sock.sendto()
        xl.settle(xp.port, sock.queue_id)
        if (tx.cons_head, comp.producer) == mark:
            break
    consumed = (tx.cons_head - start) & U32_MASK
    done = comp.entries(comp_start, comp.producer)
    report = SendReport([], 0, 0, 0, reclaimed, len(done), sock.zc)
    for i, (desc, frame) in enumerate(zip(descs, frames, strict=True)):
        report.journeys.append(
            _send_journey(
                xl, ls, xp, (first_tx + i) & U32_MASK, desc, frame, i < consumed, done, report
            )
        )
    return report


def _send_journey(
    xl: XdpLab,
    ls: LabSocket,
    xp: XdpPort,
    index: int,
    desc: XskDesc,
    frame: bytes,
    consumed: bool,
    done: list[int],
    report: SendReport,
) -> Journey:
    lab, name, dev = xl.lab, ls.name, xp.dev
    journey = lab.journeys.new(f"xsk {name} send")
    inside = desc.addr + desc.len <= ls.umem.size
    data = desc.pack() + (ls.umem.read(desc.addr, desc.len) if inside else b"")
    record(
        lab,
        journey,
        Stage(
            f"{name}.tx",
            dev,
            f"TX descriptor #{index}: addr {desc.addr:#x} len {desc.len}",
            why="the application reserves, writes and submits (af_xdp.md 2.4)",
            data=data,
            kind="xdp",
            meta={"socket": name, "tx_index": index},
        ),
    )
    reason = ls.umem.tx_invalid_reason(desc)
    if not consumed:
        report.pending += 1
        record(
            lab,
            journey,
            Stage(
                f"{name}.xmit",
                dev,
                "still on the TX ring",
                why="the kernel stopped before it (EAGAIN or no COMPLETION "
                "room, af_xdp.md 6.16); the next kick takes it",
            ),
        )
        journey.verdict = f"waiting on {name}'s TX ring"
        return journey
    if reason is not None:
        report.invalid += 1
        record(
            lab,
            journey,
            Stage(
                f"{name}.xmit",
                dev,
                f"drop: invalid TX descriptor: {reason}",
                why="the kernel consumes it without sending and without a COMPLETION entry; "
                "sendto still returns 0, only tx_invalid_descs tells (af_xdp.md 2.8, 6.12)",
                counters={"tx_invalid_descs": 1},
                drop=f"invalid descriptor: {reason}",
            ),
        )
        journey.verdict = f"dropped at {name}.xmit: invalid descriptor ({reason})"
        return journey
    report.sent += 1
    how = (
        "zero copy: the driver's TX pass took it and DMAs the frame from the UMEM"
        if ls.sock.zc
        else "copy mode: sendto copied it into an skb and called the "
        "driver's xmit (dev_direct_xmit)"
    )
    record(
        lab, journey, Stage(f"{name}.xmit", dev, how, why="af_xdp.md 2.6", meta={"socket": name})
    )
    netdev = lab.node(ls.node).dev(dev)
    netdev.counters.tx_packets += 1
    netdev.counters.tx_bytes += len(frame)
    record(
        lab,
        journey,
        Stage(
            f"{xp.tap}.wire",
            dev,
            f"on the wire: {len(frame)} bytes",
            counters={"tx_packets": 1},
            data=frame,
            kind="ether",
        ),
    )
    _walk_to_peer(lab, journey, ls.node, dev, frame)
    if desc.addr in done:
        done.remove(desc.addr)
        record(
            lab,
            journey,
            Stage(
                f"{name}.comp",
                dev,
                f"COMPLETION: addr {desc.addr:#x}; the frame is the user's "
                "again once drained (xsk complete, or the next send)",
                why="the CQ entry echoes the TX addr (af_xdp.md 6.15)",
            ),
        )
    return journey


def _walk_to_peer(lab: Lab, journey: Journey, node: str, dev: str, frame: bytes) -> None:
    """The frame arrives at the other end of the wire: the datapath walks it on."""
    lab.datapath.deliver_frame(journey, node, dev, frame)


# ---- xdpsock ----------------------------------------------------------------------------
@dataclass
class XdpSockRun:
    report: XdpSockReport
    journey: Journey
    offered: int
    port_delta: dict[str, int]
    prediction: Prediction
    seed_kpps: int | None
    steps: int


def run_xdpsock(
    xl: XdpLab,
    node: str,
    dev: str,
    bench: Benchmark,
    *,
    mode: str | None,
    batch: int = 64,
    size: int = 64,
    packets: int = 1024,
    queue: int = 0,
    need_wakeup: bool = True,
) -> XdpSockRun:
    """xdpsock on the device's port: setup, ``packets`` frames, its counts, exit.

    ``mode`` skb = ``-S``, native = ``-c``, zc = ``-z``, None = the kernel chooses.
    On exit the socket is closed and the device's own program is put back.
    """
    if not 1 <= packets <= 100_000:
        raise BadArgument(f"packets {packets}", valid="1..100000")
    xp = xl.port(node, dev)
    port = xp.port
    if not port.up:
        raise with_errno(KernelError("ENETDOWN", f"{dev} is down", prefix="xdpsock"))
    cfg = XdpSockConfig(
        benchmark=bench,
        xdp_skb=mode == "skb",
        force_copy=mode == "native",
        force_zerocopy=mode == "zc",
        need_wakeup=need_wakeup,
        batch_size=batch,
        pkt_size=size,
        queue=queue,
    )
    source = TrafficSource(size, batch, packets) if bench is not Benchmark.TXONLY else None
    prior, prior_mode, had_pool = port.program, port.attach_mode, queue in port.pools
    try:
        with kernel_errors(
            {
                "EBUSY": f"{dev} queue {queue} has a socket (xsk close it first)",
                "EOPNOTSUPP": "xdpsock attaches natively unless mode skb (-S), and mode zc (-z) "
                "needs XSK zero-copy support (af_xdp.md 1.1, 2.6)",
                "EEXIST": "xdpsock attaches in its own mode; xdp detach the device's program",
            }
        ):
            xsk = XdpSock(port, cfg, source)
    except KernelError:
        if not had_pool and queue in port.pools:  # bound, then the attach failed
            for sock in list(port.pools[queue].sockets):
                sock.close()
        raise
    journey = xl.lab.journeys.new(f"xdpsock {dev} {bench.value}")
    try:
        return _drive(xl, xp, xsk, journey, packets)
    finally:
        xsk.sock.close()
        port.detach()
        if prior is not None and prior_mode is not None:
            port.attach(prior, prior_mode)


def _drive(xl: XdpLab, xp: XdpPort, xsk: XdpSock, journey: Journey, packets: int) -> XdpSockRun:
    cfg, port, sock, umem = xsk.config, xp.port, xsk.sock, xsk.umem
    bench, source, lab = cfg.benchmark, xsk.source, xl.lab
    attach = "xdp-skb" if cfg.attach_mode is AttachMode.SKB else "xdp-drv"
    record(
        lab,
        journey,
        Stage(
            "xdpsock.setup",
            xp.dev,
            f"sock0@{xp.dev}:{cfg.queue} {bench.value} {attach}: UMEM 4096 x {cfg.frame_size}, "
            f"{'zero copy' if sock.zc else 'copy mode'}, batch {cfg.batch_size}",
            why=f"zero copy refused ({sock.fallback_reason}): copy mode"
            if sock.fallback_reason
            else "xdpsock's defaults: RX/TX/COMPLETION 2048, FILL 4096 (af_xdp.md 3.1)",
        ),
    )
    before = counters(port)
    tx_start, sent0 = (sock.tx.prod_head if sock.tx else 0), port.stats.tx_packets
    rx_cap: Stage | None = None
    tx_cap: Stage | None = None
    wire_out: bytes | None = None
    first = source.next_burst() if source is not None else []
    for frame in first:
        port.receive(frame, cfg.queue)
    if first:
        port.poll(cfg.queue, budget=cfg.batch_size)
        rx = sock.rx
        assert rx is not None
        pending = rx.entries(rx.cons_head, rx.producer)
        if pending:
            d = pending[0]
            rx_cap = Stage(
                "xdpsock.rx",
                xp.dev,
                f"first RX descriptor #{rx.cons_head}: addr {d.addr:#x} len {d.len}",
                data=d.pack() + umem.read(d.addr, d.len),
                kind="xdp",
            )
    xsk.source = None
    steps, idle, limit = 0, 0, (packets // cfg.batch_size + 2) * 16
    while steps < limit:
        count = xsk.rx_npkts if bench is Benchmark.RXDROP else xsk.tx_npkts
        if count >= packets:
            break
        if bench is Benchmark.TXONLY:  # whole batches, no more than asked for
            xsk.loops_per_step = max(1, min(8, -(-(packets - count) // cfg.batch_size)))
        mark = (xsk.rx_npkts, xsk.tx_npkts, xsk.outstanding_tx, source and source.sent)
        xsk.step()
        xsk.source = source
        steps += 1
        if tx_cap is None and sock.tx is not None and sock.tx.producer != tx_start:
            d = sock.tx.entries(tx_start, tx_start + 1)[0]
            tx_cap = Stage(
                "xdpsock.tx",
                xp.dev,
                f"first TX descriptor #{tx_start}: addr {d.addr:#x} len {d.len}",
                data=d.pack() + umem.read(d.addr, d.len),
                kind="xdp",
            )
        new = port.stats.tx_packets - sent0
        if wire_out is None and new:
            wire_out = port.wire[-min(new, len(port.wire))]
        changed = mark != (xsk.rx_npkts, xsk.tx_npkts, xsk.outstanding_tx, source and source.sent)
        idle = 0 if changed else idle + 1
        if idle >= 4:
            break
    model = CostModel()
    report = xsk.report(model)
    pred = model.predict(bench, report.mode, cfg.pkt_size)
    seed = SEED_KPPS.get((bench, cfg.pkt_size))
    seed_kpps = None if seed is None else seed[_MODES.index(report.mode.value)]
    offered = source.sent if source is not None else 0
    moved = delta(before, counters(port))
    if first:
        record(
            lab,
            journey,
            Stage(
                f"{xp.tap}.wire",
                xp.dev,
                f"traffic source: {offered} frames of {cfg.pkt_size} "
                "bytes (xdpsock's UDP frame); first one",
                why="a deterministic peer on the wire (modelled design)",
                fidelity="M",
                data=first[0],
                kind="ether",
            ),
        )
        record(
            lab,
            journey,
            Stage(
                f"{xp.tap}.xdp",
                xp.dev,
                f"xsk_def_prog: XDP_REDIRECT x {moved.get('xdp_redirect', 0)}",
                why="libxdp's default program (af_xdp.md 1.2)",
                counters={k: v for k, v in moved.items() if k.startswith(("xdp_", "rx_missed"))},
            ),
        )
    for stage in (rx_cap, tx_cap):
        if stage is not None:
            stage.meta = {"socket": "xdpsock"}
            record(lab, journey, stage)
    if wire_out is not None:
        sent = moved.get("tx_packets", 0)
        record(
            lab,
            journey,
            Stage(
                f"{xp.tap}.wire",
                xp.dev,
                f"{sent} frames out of {xp.dev}; first one",
                why="the benchmark's frames stay in the port model",
                data=wire_out,
                kind="ether",
            ),
        )
    rate = "not reproduced / bug" if pred.kpps is None else f"{pred.kpps:.0f} Kpps"
    stats = {k: v for k, v in vars(report.stats).items() if v}
    record(
        lab,
        journey,
        Stage(
            "xdpsock.report",
            xp.dev,
            f"rx {report.rx_npkts} tx {report.tx_npkts}; {report.mode.value}: {rate} (model, "
            f"limited by {pred.limited_by})",
            fidelity="M",
            counters=stats,
            why="counts come from the functional model; rates from the cost model, not a "
            "measurement",
        ),
    )
    journey.verdict = f"xdpsock {bench.value}: rx {report.rx_npkts} tx {report.tx_npkts}"
    return XdpSockRun(report, journey, offered, moved, pred, seed_kpps, steps)
