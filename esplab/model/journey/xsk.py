"""AF_XDP sockets of the lab: create, bind, fill, send, recv, complete, close; xdpsock.

The socket side of :mod:`esplab.model.journey.xdp`. Each operation is what an
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

from esplab.errors import InvalidValue, KernelError, StateConflict
from esplab.model.journey.l2 import count_conduit
from esplab.model.journey.xdp import LabSocket, XdpLab, XdpPort, kernel_errors, record, with_errno
from esplab.model.journey.xdp_rx import settle
from esplab.model.kernel.xdp.consts import ETH_FCS_SIZE, U32_MASK, AttachMode, BindFlag, RingKind
from esplab.model.kernel.xdp.program import XskRedirect
from esplab.model.kernel.xdp.rings import XskDesc
from esplab.model.kernel.xdp.socket import SockState, XskSocket
from esplab.model.kernel.xdp.umem import Umem
from esplab.model.stage import Journey, Stage
from esplab.model.tools.xdpsock import MAX_PKT_SIZE, MIN_PKT_SIZE

if TYPE_CHECKING:
    from esplab.model.journey.board import Board

__all__ = [
    "SendReport",
    "bind",
    "close",
    "complete",
    "create",
    "fill",
    "recv",
    "send",
    "tx_frame",
]


def create(
    xl: XdpLab, name: str, node: str, frames: int, frame_size: int, headroom: int, ring: int
) -> LabSocket:
    """``socket()``, ``XDP_UMEM_REG`` and the four ring sizes (af_xdp.md 2.1, 2.2)."""
    if not name[:1].isalpha() or not name.replace("-", "_").isidentifier() or len(name) > 16:
        raise InvalidValue(
            f"'{name}' cannot name a socket",
            valid="a letter, then letters, digits, _ or - (16 at most)",
        )
    if name in xl.sockets:
        raise StateConflict(f"socket '{name}' exists already", hint=f"xsk close {name}")
    if not 1 <= frames <= 65536:
        raise InvalidValue(f"frames {frames}", valid="1..65536")
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

    ``flags`` None binds with no mode flag: the kernel tries zero copy where the driver
    supports it and falls back to copy if the driver refuses; the attach mode of the
    device's program plays no part (af_xdp.md 2.6) [C].
    """
    ls = xl.socket(name)
    if node != ls.node:
        raise StateConflict(
            f"socket {name} lives on {ls.node}, not {node}", hint=f"{ls.node} xsk bind {name} ..."
        )
    if ls.sock.state is not SockState.READY:
        # xsk_bind: a socket that is not in the ready state gives EBUSY; it binds once (2.1) [C]
        where = f"is already bound to {ls.where}" if ls.sock.is_bound else "was bound before"
        raise with_errno(
            KernelError(
                "EBUSY",
                f"{name} {where}",
                prefix="bind",
                hint=f"a socket binds once: xsk close {name}, then xsk create and bind a new one",
            )
        )
    xp = xl.port(node, dev)
    bind_flags = BindFlag.NONE if flags is None else flags
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
        xp.counts_from()
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
        raise StateConflict(
            f"cannot fill {count} frame(s): user space owns {len(free)} free",
            valid=f"1..{len(free)}" if free else None,
            hint="xsk recv and xsk complete give frames back",
        )
    room = ring.nb_free(count)
    if room < count:
        raise StateConflict(
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
        settle(xp.port, ls.sock.queue_id)
    return addrs, kicked


def recv(xl: XdpLab, name: str, count: int | None) -> list[tuple[int, XskDesc, bytes, int | None]]:
    """Peek, read and release RX descriptors: (index, descriptor, frame, journey id)."""
    ls, xp = bound(xl, name, "recvfrom")
    rx, umem = ls.sock.rx, ls.umem
    assert rx is not None
    settle(xp.port, ls.sock.queue_id)
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
def tx_frame(lab: Board, node: str, dev: str, index: int, size: int) -> bytes:
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
        raise InvalidValue(f"xsk send count {count}", valid=f"1..{tx.size} (the TX ring)")
    if not MIN_PKT_SIZE <= size <= MAX_PKT_SIZE:
        raise InvalidValue(
            f"size {size}",
            valid=f"{MIN_PKT_SIZE}..{MAX_PKT_SIZE} (xdpsock -s: the frame with its 4-byte FCS)",
        )
    if addr is not None and not 0 <= addr <= U32_MASK << 32:
        raise InvalidValue(
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
            raise StateConflict(
                f"user space owns {len(free)} free frame(s), {count} asked",
                hint="xsk recv and xsk complete give frames back",
            )
        addrs = free[:count]
    else:
        addrs = [addr + i * umem.chunk_size for i in range(count)]
    if tx.nb_free(count) < count:
        raise StateConflict(
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
        settle(xp.port, sock.queue_id)
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
    the_node = lab.node(ls.node)
    netdev = the_node.dev(dev)
    netdev.counters.tx_packets += 1
    netdev.counters.tx_bytes += len(frame)
    count_conduit(the_node, netdev, frame, tx=True)  # a user port's: through the switch
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


def _walk_to_peer(lab: Board, journey: Journey, node: str, dev: str, frame: bytes) -> None:
    """The frame arrives at the other end of the wire: the datapath walks it on."""
    lab.datapath.deliver_frame(journey, node, dev, frame)
