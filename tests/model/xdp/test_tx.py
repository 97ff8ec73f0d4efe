"""The TX path, copy and zero copy: af_xdp.md 2.5-2.8 and facts 6.5, 6.12-6.18."""

from __future__ import annotations

import pytest

from esplab.errors import KernelError
from esplab.model.kernel.stack.netdev import NetDev
from esplab.model.kernel.xdp.consts import BindFlag, DescOption, UmemFlag
from esplab.model.kernel.xdp.rings import XskDesc
from esplab.model.kernel.xdp.socket import PollMask, XskSocket
from esplab.model.kernel.xdp.umem import FrameState

from .helpers import CHUNK, copy_port, frame, make_socket, xdp_port, zc_port


def queue_tx(sock: XskSocket, descs: list[XskDesc]) -> None:
    assert sock.tx is not None
    assert sock.tx.produce(descs) == len(descs)


def put_frames(sock: XskSocket, count: int, length: int = 60) -> list[XskDesc]:
    assert sock.umem is not None
    descs = []
    for i in range(count):
        sock.umem.write(i * CHUNK, frame(length, i))
        descs.append(XskDesc(i * CHUNK, length))
    return descs


def completions(sock: XskSocket) -> list[int]:
    assert sock.comp is not None
    return sock.comp.consume(1 << 16)


def test_copy_mode_sends_nothing_without_a_syscall() -> None:
    # 6.18 / 2.5: in copy mode TX never moves without sendto or poll.
    port = copy_port()
    sock = make_socket(port)
    queue_tx(sock, put_frames(sock, 4))
    port.poll()
    assert port.stats.tx_packets == 0
    assert sock.sendto() is None
    assert port.stats.tx_packets == 4
    assert list(port.wire) == [frame(60, i) for i in range(4)]


def test_copy_mode_budget_is_32_per_sendto() -> None:
    # 6.17: with 64 descs queued, one sendto sends 32 and returns EAGAIN.
    port = copy_port()
    sock = make_socket(port, frames=64, tx=64, comp=64)
    queue_tx(sock, put_frames(sock, 64))
    assert sock.sendto() == "EAGAIN"
    assert port.stats.tx_packets == 32
    assert sock.sendto() is None
    assert port.stats.tx_packets == 64


def test_raised_budget() -> None:
    port = copy_port()
    sock = make_socket(port, frames=64, tx=64, comp=64)
    sock.set_max_tx_budget(64)
    queue_tx(sock, put_frames(sock, 64))
    assert sock.sendto() is None and port.stats.tx_packets == 64


def test_completion_echoes_the_addr_in_tx_order() -> None:
    # 6.15: one COMPLETION entry per valid desc, same addr (with any in-chunk offset).
    port = copy_port()
    sock = make_socket(port)
    assert sock.umem is not None
    sock.umem.write(2 * CHUNK + 100, frame(60))
    descs = [XskDesc(2 * CHUNK + 100, 60), XskDesc(0, 60), XskDesc(5 * CHUNK, 60)]
    queue_tx(sock, descs)
    sock.sendto()
    assert completions(sock) == []  # published at the TX completion ("wire-no-latency")
    port.poll()
    assert completions(sock) == [2 * CHUNK + 100, 0, 5 * CHUNK]


@pytest.mark.parametrize("zero_copy", [False, True])
def test_invalid_desc_is_consumed_without_completion(zero_copy: bool) -> None:
    # 6.12 / 2.8: addr out of the UMEM -> tx_invalid_descs +1, slot consumed, no
    # completion entry, nothing on the wire; the valid descs ahead of it go out and
    # the pass stops there (copy: sendto; ZC: the driver's batch).
    port = zc_port() if zero_copy else copy_port()
    sock = make_socket(port, frames=8)
    assert sock.zc is zero_copy and sock.tx is not None
    good = put_frames(sock, 2)
    queue_tx(sock, [*good, XskDesc(8 * CHUNK, 60), XskDesc(0, 60)])
    sock.sendto()
    port.poll()
    assert sock.statistics().tx_invalid_descs == 1
    assert port.stats.tx_packets == 2
    assert sock.tx.cons_head == 3  # consumed through the bad one, not past it
    if not zero_copy:
        port.poll()  # copy mode: nothing moves without another syscall
        assert port.stats.tx_packets == 2
        sock.sendto()
    port.poll()  # ZC: the TX-completion pass pulls the rest by itself
    port.poll()
    assert port.stats.tx_packets == 3
    assert completions(sock) == [0, CHUNK, 0]  # two before the bad desc, one after


@pytest.mark.parametrize(
    "desc",
    [XskDesc(0, 0), XskDesc(0, 60, 1 << 3), XskDesc(100, CHUNK), XskDesc(0, CHUNK + 1)],
    ids=["len0", "option-bit", "crosses-chunk", "longer-than-chunk"],
)
def test_invalid_descriptors(desc: XskDesc) -> None:
    # 6.13, 6.14: chunk crossing, len 0 and unknown option bits are invalid.
    port = copy_port()
    sock = make_socket(port)
    queue_tx(sock, [desc])
    sock.sendto()
    assert sock.statistics().tx_invalid_descs == 1 and port.stats.tx_packets == 0


def test_full_chunk_is_a_valid_tx() -> None:
    # 6.13: len = chunk_size at the chunk base is valid; the limit is not the RX limit.
    port = copy_port()
    sock = make_socket(port)
    queue_tx(sock, [XskDesc(CHUNK, CHUNK)])
    sock.sendto()
    assert port.stats.tx_packets == 1 and port.stats.tx_bytes == CHUNK


def test_tx_metadata_without_metadata_len() -> None:
    # 6.14: XDP_TX_METADATA with tx_metadata_len = 0 -> sendto EINVAL, desc stays.
    port = copy_port()
    sock = make_socket(port)
    assert sock.tx is not None
    queue_tx(sock, [XskDesc(0, 60, DescOption.TX_METADATA)])
    assert sock.sendto() == "EINVAL"
    assert sock.tx.cons_head == 0 and sock.statistics().tx_invalid_descs == 0
    assert sock.comp is not None and not sock.comp.reserved()  # reservation cancelled
    with_meta = make_socket(copy_port(), umem_flags=UmemFlag.TX_METADATA_LEN, tx_metadata_len=24)
    queue_tx(with_meta, [XskDesc(CHUNK + 24, 60, DescOption.TX_METADATA)])
    assert with_meta.sendto() is None
    assert with_meta.tx is not None and with_meta.tx.cons_head == 1


def test_completion_full_stalls_copy_tx() -> None:
    # 6.16: no COMPLETION room -> sendto returns EAGAIN and sends nothing more.
    port = copy_port()
    sock = make_socket(port, frames=16, tx=16, comp=4)
    queue_tx(sock, put_frames(sock, 8))
    assert sock.sendto() == "EAGAIN"
    assert port.stats.tx_packets == 4
    port.poll()
    assert sock.sendto() == "EAGAIN"  # the CQ is full of unread completions
    assert port.stats.tx_packets == 4
    assert len(completions(sock)) == 4
    assert sock.sendto() is None and port.stats.tx_packets == 8


def test_completion_full_limits_zero_copy_batches() -> None:
    # 6.16: ZC gets only as many descs as there are free CQ slots.
    port = zc_port()
    sock = make_socket(port, frames=16, tx=16, comp=4)
    queue_tx(sock, put_frames(sock, 8))
    assert sock.sendto() is None  # a TX wakeup
    report = port.poll()
    assert report.tx == 4 and port.stats.tx_packets == 4
    assert sock.tx is not None and sock.tx.consumer == 4


def test_copy_mode_multi_buffer_packet() -> None:
    # 2.3: PKT_CONTD chains descriptors into one packet.
    port = copy_port()
    sock = make_socket(port)
    queue_tx(sock, [XskDesc(0, 60, DescOption.PKT_CONTD), XskDesc(CHUNK, 40)])
    sock.sendto()
    assert port.stats.tx_packets == 1 and port.stats.tx_bytes == 100
    port.poll()
    assert completions(sock) == [0, CHUNK]


def test_too_many_frags_drop_the_packet() -> None:
    # 2.8: more frags than MAX_SKB_FRAGS drops the whole packet, its descs invalid.
    port = copy_port()
    sock = make_socket(port, tx=64, comp=64)
    sock.set_max_tx_budget(64)
    chain = [XskDesc(i * CHUNK, 60, DescOption.PKT_CONTD) for i in range(18)]
    queue_tx(sock, chain)
    sock.sendto()
    assert sock.statistics().tx_invalid_descs == 18  # 17 frags + the one that overflows
    assert port.stats.tx_packets == 0 and sock.comp is not None and not sock.comp.reserved()


def test_poll_thresholds() -> None:
    # 6.5: POLLOUT while TX holds at most half its entries; POLLIN when RX is non-empty.
    port = zc_port()
    sock = make_socket(port, tx=8)
    assert sock.poll() & PollMask.POLLOUT and not sock.poll() & PollMask.POLLIN
    queue_tx(sock, put_frames(sock, 4))
    assert sock.poll() & PollMask.POLLOUT  # 4 of 8
    queue_tx(sock, [XskDesc(5 * CHUNK, 60)])
    assert not sock.poll() & PollMask.POLLOUT  # 5 of 8
    assert sock.rx is not None
    sock.rx.produce([XskDesc(256, 60)])
    assert sock.poll() & PollMask.POLLIN


def test_syscall_errors() -> None:
    # 2.5: non-blocking only (EOPNOTSUPP), no ring (ENOBUFS), unbound (ENXIO),
    # device down (ENETDOWN).
    port = copy_port()
    sock = make_socket(port)
    for call in (sock.sendto, sock.recvfrom):
        with pytest.raises(KernelError) as err:
            call(dontwait=False)
        assert err.value.errno_name == "EOPNOTSUPP"
    with pytest.raises(KernelError) as err:
        make_socket(copy_port(), tx=0).sendto()
    assert err.value.errno_name == "ENOBUFS"
    with pytest.raises(KernelError) as err:
        make_socket().recvfrom()
    assert err.value.errno_name == "ENXIO"
    assert isinstance(port.dev, NetDev)
    port.dev.up = False  # the device's own state: its XDP side reads it
    assert sock.sendto() == "ENETDOWN" and sock.poll() == PollMask.NONE


def test_tx_ownership_copy_mode() -> None:
    # 2.6: posted to TX -> kernel until the COMPLETION entry returns it.
    port = copy_port()
    sock = make_socket(port, frames=8)
    assert sock.umem is not None
    queue_tx(sock, put_frames(sock, 2))
    assert sock.umem.ownership()[0] is FrameState.TX
    sock.sendto()
    assert sock.umem.ownership()[0] is FrameState.IN_FLIGHT
    assert FrameState.IN_FLIGHT.owner == "kernel"
    port.poll()
    assert sock.umem.ownership()[0] is FrameState.COMPLETION
    completions(sock)
    assert sock.umem.ownership()[0] is FrameState.USER


def test_invalid_tx_frame_goes_back_to_user_without_completion() -> None:
    # 2.6 consequence: an invalid TX desc never produces a COMPLETION entry.
    port = copy_port()
    sock = make_socket(port, frames=8)
    assert sock.umem is not None
    queue_tx(sock, [XskDesc(3 * CHUNK, 0)])
    assert sock.umem.ownership()[3 * CHUNK] is FrameState.TX
    sock.sendto()
    port.poll()
    assert completions(sock) == []
    assert sock.umem.ownership()[3 * CHUNK] is FrameState.USER


def test_copy_tx_on_a_queue_without_tx() -> None:
    # __xsk_generic_xmit: a queue id past the TX queues sends nothing, no error [C].
    from esplab.model.kernel.xdp.driver import DriverProfile

    port = xdp_port(DriverProfile("rx4", rx_queues=4, tx_queues=1))
    sock = make_socket(port, queue=2, flags=BindFlag.COPY)
    queue_tx(sock, put_frames(sock, 1))
    assert sock.sendto() is None and port.stats.tx_packets == 0


def test_shared_pool_transmits_32_per_socket_per_round() -> None:
    # 2.6: the generic multi-socket ZC path takes MAX_PER_SOCKET_BUDGET = 32 per socket
    # per round.
    from esplab.model.kernel.xdp.consts import RingKind

    port = zc_port()
    first = make_socket(port, frames=128, tx=64, comp=128)
    second = XskSocket()
    second.set_ring(RingKind.TX, 64)
    second.bind(port, 0, BindFlag.SHARED_UMEM, shared_umem=first)
    assert first.umem is not None
    for i in range(80):
        first.umem.write(i * CHUNK, frame(60, i))
    queue_tx(first, [XskDesc(i * CHUNK, 60) for i in range(40)])
    queue_tx(second, [XskDesc(i * CHUNK, 60) for i in range(40, 80)])
    first.sendto()
    assert port.poll().tx == 80
    tags = [f[-1] for f in port.wire]  # the last 64 frames on the wire, by tag
    assert tags == [*range(16, 32), *range(40, 72), *range(32, 40), *range(72, 80)]


def test_unwritten_slot_reads_as_zero() -> None:
    # A slot submitted without a write holds what the zeroed ring memory held: a
    # zero-length descriptor, which the kernel rejects (6.14).
    port = copy_port()
    sock = make_socket(port)
    assert sock.tx is not None
    assert sock.tx.reserve(1) == 0
    sock.tx.submit()
    sock.sendto()
    assert sock.statistics().tx_invalid_descs == 1
