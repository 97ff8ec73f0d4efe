"""The RX path and the XDP actions: af_xdp.md 1.2, 2.5-2.8 and facts 6.4, 6.6-6.11."""

from __future__ import annotations

import pytest

from esplab.model.kernel.xdp.consts import (
    XDP_PACKET_HEADROOM,
    AttachMode,
    BindFlag,
    DescOption,
    Wakeup,
    XdpAction,
)
from esplab.model.kernel.xdp.port import NetdevXdp
from esplab.model.kernel.xdp.program import SwapMacTx, XdpReturn, XskMap, XskRedirect
from esplab.model.kernel.xdp.rings import XskDesc
from esplab.model.kernel.xdp.socket import XskSocket
from esplab.model.kernel.xdp.umem import FrameState

from .helpers import CHUNK, copy_port, frame, make_socket, redirect_to, xdp_port, zc_port


def fill(sock: XskSocket, chunks: list[int]) -> None:
    assert sock.fill is not None
    assert sock.fill.produce([c * CHUNK for c in chunks]) == len(chunks)


def rx_descs(sock: XskSocket) -> list[XskDesc]:
    assert sock.rx is not None
    return sock.rx.consume(1 << 16)


def deliver(port: NetdevXdp, frames: list[bytes], queue: int = 0) -> None:
    for f in frames:
        port.receive(f, queue)
    port.poll(queue, budget=len(frames) or 1)


@pytest.mark.parametrize("mode", [AttachMode.DRV, AttachMode.SKB])
def test_copy_mode_rx(mode: AttachMode) -> None:
    # 2.6: the kernel takes a FILL frame, copies the packet in, posts an RX desc at
    # chunk_base + headroom + 256 (6.9).
    port = copy_port()
    sock = make_socket(port, headroom=64)
    redirect_to(port, sock, mode)
    fill(sock, [5])
    deliver(port, [frame(60, 7)])
    descs = rx_descs(sock)
    assert descs == [XskDesc(5 * CHUNK + 64 + XDP_PACKET_HEADROOM, 60)]
    assert sock.umem is not None and sock.umem.read(descs[0].addr, 60) == frame(60, 7)
    assert port.stats.xdp_redirect == 1 and port.stats.stack_rx == 0


def test_rx_ring_full() -> None:
    # 6.6: packet dropped, rx_ring_full +1; the FILL entry was consumed and the frame
    # went to the kernel's free list; v1 statistics fold it into rx_dropped.
    port = copy_port()
    sock = make_socket(port, rx=2)
    redirect_to(port, sock)
    fill(sock, [0, 1, 2])
    deliver(port, [frame(60, i) for i in range(3)])
    stats = sock.statistics()
    assert stats.rx_ring_full == 1 and stats.rx_dropped == 0
    assert sock.statistics_v1().rx_dropped == 1
    assert sock.fill is not None and sock.fill.consumer == 3
    assert sock.pool is not None and sock.pool.free_list == [2 * CHUNK]
    assert sock.umem is not None and sock.umem.ownership()[2 * CHUNK] is FrameState.FREE_LIST
    assert len(sock.statistics().pack()) == 48 and len(sock.statistics_v1().pack(v1=True)) == 24


def test_fill_empty_in_copy_mode() -> None:
    # 6.7: packet dropped, rx_dropped +1 and rx_fill_ring_empty_descs +1, no RX desc.
    port = copy_port()
    sock = make_socket(port)
    redirect_to(port, sock)
    deliver(port, [frame()])
    stats = sock.statistics()
    assert (stats.rx_dropped, stats.rx_fill_ring_empty_descs) == (1, 1)
    assert rx_descs(sock) == [] and port.stats.xdp_redirect_err == 1


def test_oversized_rx_is_dropped_not_invalid() -> None:
    # 6.8: len > chunk - headroom - 256 without USE_SG -> rx_dropped +1, not rx_invalid.
    port = copy_port()
    sock = make_socket(port, chunk=2048)
    redirect_to(port, sock)
    fill(sock, [0, 1])
    deliver(port, [frame(1793)])  # 2048 - 256 = 1792
    stats = sock.statistics()
    assert stats.rx_dropped == 1 and stats.rx_invalid_descs == 0
    assert rx_descs(sock) == []
    assert sock.fill is not None and sock.fill.k_avail(2) == 2  # FILL untouched
    deliver(port, [frame(1792)])
    assert [d.len for d in rx_descs(sock)] == [1792]


def test_oversized_rx_split_with_use_sg() -> None:
    # 6.8: with USE_SG copy mode splits into ceil(len / frame_len) descs, all but the
    # last with PKT_CONTD.
    port = copy_port()
    sock = make_socket(port, chunk=2048, flags=BindFlag.USE_SG)
    redirect_to(port, sock)
    fill(sock, [0, 1, 2, 3])
    deliver(port, [frame(4000)])
    descs = rx_descs(sock)
    assert [d.len for d in descs] == [1792, 1792, 416]
    assert [d.options for d in descs] == [DescOption.PKT_CONTD, DescOption.PKT_CONTD, 0]


def test_fill_masking_and_invalid_fill_entries() -> None:
    # 6.10: an in-chunk offset names the chunk; an addr >= UMEM size is skipped and
    # counted nowhere in XDP_STATISTICS.
    port = copy_port()
    sock = make_socket(port, frames=8)
    redirect_to(port, sock)
    assert sock.fill is not None
    sock.fill.produce([8 * CHUNK, 3 * CHUNK + 300])
    deliver(port, [frame()])
    assert [d.addr for d in rx_descs(sock)] == [3 * CHUNK + 256]
    assert sock.fill.invalid_descs == 1
    assert sock.statistics() == type(sock.statistics())()


def test_queue_mismatch_and_empty_slot() -> None:
    # 6.11: redirect to an XSK bound to another queue -> dropped; an empty XSKMAP slot
    # -> the fallback action (PASS with the libxdp default program).
    port = zc_port()
    sock = make_socket(port, queue=1)
    fill(sock, list(range(8)))
    xsks = XskMap()
    xsks.update(0, sock)  # wrong key: the socket is bound to queue 1
    port.attach(XskRedirect(xsks), AttachMode.DRV)
    deliver(port, [frame()], queue=0)
    assert port.stats.xdp_redirect_err == 1 and rx_descs(sock) == []
    deliver(port, [frame()], queue=2)  # slot 2 is empty
    assert port.stats.xdp_pass == 1 and port.stats.stack_rx == 1
    other = xdp_port(name="eth1", ifindex=3)
    other.attach(XskRedirect(xsks), AttachMode.DRV)
    deliver(other, [frame()])
    assert other.stats.xdp_redirect_err == 1  # socket bound to another netdev


def test_action_values() -> None:
    # 1.2: enum xdp_action.
    assert [(a.name, int(a)) for a in XdpAction] == [
        ("ABORTED", 0),
        ("DROP", 1),
        ("PASS", 2),
        ("TX", 3),
        ("REDIRECT", 4),
    ]


@pytest.mark.parametrize(
    ("code", "counter"),
    [
        (XdpAction.ABORTED, "xdp_aborted"),
        (XdpAction.DROP, "xdp_drop"),
        (XdpAction.PASS, "xdp_pass"),
        (XdpAction.TX, "xdp_tx"),
        (7, "xdp_invalid_action"),
    ],
)
def test_actions_and_their_counters(code: int, counter: str) -> None:
    # 1.2: ABORTED drops and fires xdp_exception; DROP drops; PASS goes to the stack;
    # TX bounces out of the same port; an unknown code is a drop plus a warning.
    port = copy_port()
    port.attach(XdpReturn(code))
    deliver(port, [frame(60, 1)])
    stats = port.stats
    assert getattr(stats, counter) == 1
    assert stats.stack_rx == (1 if code == XdpAction.PASS else 0)
    assert stats.tx_packets == (1 if code == XdpAction.TX else 0)
    assert stats.xdp_exception == (1 if code in (XdpAction.ABORTED, 7) else 0)


def test_swap_mac_tx_program() -> None:
    port = copy_port()
    port.attach(SwapMacTx())
    f = frame(60)
    deliver(port, [f])
    assert port.wire[-1] == f[6:12] + f[0:6] + f[12:]


def test_zero_copy_rx_in_place() -> None:
    # 2.6: ZC posts the RX desc for the very frame the NIC filled, no copy; FILL
    # entries are taken ahead of time when the driver refills its ring.
    port = zc_port()
    sock = make_socket(port, flags=BindFlag.USE_NEED_WAKEUP)
    redirect_to(port, sock)
    assert sock.fill is not None and sock.fill.needs_wakeup  # nothing to post at bind
    fill(sock, [9, 4])
    assert sock.recvfrom() is None  # ZC: ndo_xsk_wakeup(RX)
    port.poll()
    assert sock.pool is not None and list(sock.pool.posted) == [9 * CHUNK, 4 * CHUNK]
    assert sock.fill.cons_head == 2 and sock.fill.consumer == 0  # lazy publication (6.4)
    deliver(port, [frame(60, 3)])
    assert rx_descs(sock) == [XskDesc(9 * CHUNK + 256, 60)]
    assert sock.fill.consumer == 2  # published at the RX flush


def test_eager_consumer_publishes_at_once() -> None:
    port = zc_port()
    sock = make_socket(port, lazy=False)
    fill(sock, [1, 2])
    port.wakeup(0, Wakeup.RX)  # as a recvfrom would
    port.poll()
    assert sock.fill is not None and sock.fill.consumer == 2


def test_rx_need_wakeup_in_zero_copy() -> None:
    # 2.5, 6.24: the driver sets FILL NEED_WAKEUP when its refill comes up short and
    # clears it when the refill succeeds.
    port = zc_port()
    sock = make_socket(port, frames=1024, fill=1024, rx=1024, flags=BindFlag.USE_NEED_WAKEUP)
    redirect_to(port, sock)
    assert sock.fill is not None and sock.fill.needs_wakeup  # nothing to post at bind
    fill(sock, list(range(600)))
    sock.recvfrom()
    port.poll()
    assert not sock.fill.needs_wakeup  # 512 posted (hw_ring_size): the refill was complete
    deliver(port, [frame()] * 80)
    assert not sock.fill.needs_wakeup  # 80 of the 88 spare FILL frames
    deliver(port, [frame()] * 80)
    assert sock.fill.needs_wakeup  # wanted 80, got 8
    fill(sock, list(range(600, 700)))
    assert sock.recvfrom() is None
    port.poll()
    assert not sock.fill.needs_wakeup  # topped up again: cleared


def test_zero_copy_starves_without_wakeup() -> None:
    # 2.5: with an empty HW ring no interrupt comes; only a wakeup restarts RX.
    port = zc_port()
    sock = make_socket(port, flags=BindFlag.USE_NEED_WAKEUP)
    redirect_to(port, sock)
    assert not port.receive(frame())
    assert port.stats.rx_missed_errors == 1
    fill(sock, [0])
    port.poll()
    assert not port.receive(frame())  # nobody kicked: still nothing posted
    sock.recvfrom()
    port.poll()
    assert port.receive(frame())


def test_zero_copy_pass_copies_and_recycles() -> None:
    # 2.6: PASS/DROP in ZC return the frame to the pool's free list, not to the user;
    # PASS also costs a copy into an skb (4.2 patch 4).
    port = zc_port()
    sock = make_socket(port)
    port.attach(XdpReturn(XdpAction.PASS), AttachMode.DRV)
    fill(sock, [1])
    port.wakeup(0, Wakeup.RX)  # as a recvfrom would
    port.poll()
    deliver(port, [frame()])
    assert port.stats.zc_pass_copies == 1 and port.stats.stack_rx == 1
    assert sock.umem is not None and sock.umem.ownership()[CHUNK] is FrameState.DRIVER
    assert sock.pool is not None and sock.pool.posted[-1] == CHUNK  # reused for RX


def test_ownership_copy_versus_zero_copy() -> None:
    # 2.6: copy mode leaves FILL frames in FILL until a packet needs one; zero copy
    # moves them to the driver at once. Both give a received frame back on RX.
    copy, zc = copy_port(), zc_port()
    sockets = {}
    for port in (copy, zc):
        sock = make_socket(port, frames=8)
        redirect_to(port, sock)
        fill(sock, [0, 1, 2])
        port.wakeup(0, Wakeup.RX)  # as a recvfrom would
        port.poll()
        sockets[port.name + str(port.driver.name)] = sock
    copy_sock, zc_sock = sockets["eth0native"], sockets["eth0zc"]
    assert copy_sock.umem is not None and zc_sock.umem is not None
    assert copy_sock.umem.owners()[FrameState.FILL] == 3
    assert zc_sock.umem.owners()[FrameState.DRIVER] == 3
    for port in (copy, zc):
        deliver(port, [frame()])
    assert copy_sock.umem.ownership()[0] is FrameState.RX
    assert zc_sock.umem.ownership()[0] is FrameState.RX
    assert copy_sock.umem.owners()[FrameState.FILL] == 2
    assert zc_sock.umem.owners()[FrameState.DRIVER] == 2
    rx_descs(copy_sock)
    assert copy_sock.umem.ownership()[0] is FrameState.USER


def test_double_posted_frame_is_a_conflict() -> None:
    port = copy_port()
    sock = make_socket(port)
    fill(sock, [3, 3])
    assert sock.umem is not None and sock.umem.ownership()[3 * CHUNK] is FrameState.CONFLICT
