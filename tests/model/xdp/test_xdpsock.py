"""xdpsock's modes over an emulated port: af_xdp.md 3.1, 3.2 and fact 6.25."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from esplab.errors import ToolUsageError
from esplab.model.kernel.xdp.consts import AttachMode, Benchmark, BindFlag, XskMode
from esplab.model.kernel.xdp.driver import DriverProfile
from esplab.model.tools.xdp_costmodel import CostModel
from esplab.model.tools.xdpsock import TrafficSource, XdpSock, XdpSockConfig, xdpsock_frame

from .helpers import xdp_port


def run(
    bench: Benchmark,
    driver: DriverProfile | None = None,
    steps: int = 50,
    **options: Any,
) -> XdpSock:
    port = xdp_port(driver or DriverProfile.zero_copy())
    config = XdpSockConfig(benchmark=bench, **options)
    source = TrafficSource(pkt_size=config.pkt_size)
    xsk = XdpSock(port, config, source)
    for _ in range(steps):
        xsk.step()
    return xsk


def test_defaults() -> None:
    # 3.1: rxdrop, native attach, need_wakeup on, batch 64, 64-byte packets, 4096 frames.
    cfg = XdpSockConfig()
    assert (cfg.benchmark, cfg.attach_mode, cfg.batch_size, cfg.pkt_size, cfg.frame_size) == (
        Benchmark.RXDROP,
        AttachMode.DRV,
        64,
        64,
        4096,
    )
    assert cfg.bind_flags == BindFlag.USE_NEED_WAKEUP
    skb = XdpSockConfig(xdp_skb=True, need_wakeup=False)
    assert skb.attach_mode is AttachMode.SKB and skb.bind_flags == BindFlag.COPY  # -S -m
    with pytest.raises(ToolUsageError):
        XdpSockConfig(pkt_size=63)
    with pytest.raises(ToolUsageError):
        XdpSockConfig(force_copy=True, force_zerocopy=True)


def test_ring_sizes_and_umem() -> None:
    # 3.1: RX 2048, TX 2048, COMPLETION 2048, FILL 4096; 4096 frames of 4096 bytes.
    xsk = XdpSock(xdp_port(), XdpSockConfig(benchmark=Benchmark.L2FWD))
    sock = xsk.sock
    assert sock.rx is not None and sock.tx is not None
    assert sock.fill is not None and sock.comp is not None
    assert (sock.rx.size, sock.tx.size, sock.comp.size, sock.fill.size) == (2048, 2048, 2048, 4096)
    assert xsk.umem.size == 16 << 20
    assert sock.fill.occupancy == 4096  # pre-loaded after bind (3.2)
    tx_only = XdpSock(xdp_port(), XdpSockConfig(benchmark=Benchmark.TXONLY)).sock
    assert tx_only.rx is None and tx_only.tx is not None  # TX and COMPLETION only


def test_xdpsock_frame() -> None:
    # 6.25: -s L gives desc len L - 4; 3.2: the UDP frame and its addresses.
    f = xdpsock_frame(64)
    assert len(f) == 60 and len(xdpsock_frame(1500)) == 1496
    assert f[:6].hex() == "3cfdfe9e7f71" and f[6:12].hex() == "ecb1d7983ac0"
    assert f[12:14] == b"\x08\x00" and f[26:34] == bytes([10, 10, 10, 16, 10, 10, 10, 32])
    assert struct.unpack("!HH", f[34:38]) == (0x1000, 0x1000)
    assert f[42:46] == bytes.fromhex("12345678")
    words = struct.unpack("!10H", f[14:34])
    total = sum(words)
    assert (total & 0xFFFF) + (total >> 16) == 0xFFFF  # a valid IPv4 header checksum


@pytest.mark.parametrize("driver", [DriverProfile.zero_copy(), DriverProfile.native()])
def test_rxdrop_counts_and_recycles(driver: DriverProfile) -> None:
    xsk = run(Benchmark.RXDROP, driver, steps=40)
    offered = 40 * 64
    missed = xsk.port.stats.rx_missed_errors
    assert xsk.rx_npkts + missed + len(xsk.port.rxq[0].fifo) == offered
    assert xsk.rx_npkts >= offered - 2 * 64  # ZC loses what came before the first kick
    assert xsk.tx_npkts == 0 and xsk.sock.statistics().rx_dropped == 0
    fill = xsk.sock.fill
    assert fill is not None
    assert all(addr % 4096 == 256 for addr in fill.in_flight()[-8:])  # +256 kept (3.2)


def test_zero_copy_rxdrop_kicks_on_need_wakeup() -> None:
    xsk = run(Benchmark.RXDROP, steps=5)
    assert xsk.mode is XskMode.ZEROCOPY
    assert xsk.app["rx_empty_polls"] >= 1  # FILL had NEED_WAKEUP before the first refill


@pytest.mark.parametrize("size", [64, 1500])
def test_txonly_sends_xdpsock_frames(size: int) -> None:
    xsk = run(Benchmark.TXONLY, steps=10, pkt_size=size)
    port = xsk.port
    assert xsk.tx_npkts > 0 and port.stats.tx_packets > 0
    assert set(port.wire) == {xdpsock_frame(size)}  # desc len = size - 4 (6.25)
    completed = xsk.tx_npkts - xsk.outstanding_tx
    assert 0 < completed <= port.stats.tx_packets  # a completion only for a sent frame


@pytest.mark.parametrize(
    ("driver", "count", "batch"),
    [
        (DriverProfile.zero_copy(), 100, 64),
        (DriverProfile.native(), 100, 64),
        (DriverProfile.zero_copy(), 1000, 16),
    ],
)
def test_txonly_sends_exactly_the_packet_count(
    driver: DriverProfile, count: int, batch: int
) -> None:
    # xdpsock -C N: get_batch_size makes the last batch what is left of N (xdpsock.c).
    xsk = run(Benchmark.TXONLY, driver, steps=200, pkt_count=count, batch_size=batch)
    assert xsk.tx_npkts == count and xsk.port.stats.tx_packets == count
    with pytest.raises(ToolUsageError):
        XdpSockConfig(pkt_count=-1)


def test_txonly_copy_mode_is_budget_bound() -> None:
    # 2.6: each sendto moves 32 descriptors; txonly kicks once per completion pass.
    xsk = run(Benchmark.TXONLY, DriverProfile.native(), steps=10)
    assert xsk.app["tx_wakeup_sendtos"] > 0
    assert xsk.port.stats.tx_packets == 32 * xsk.app["tx_wakeup_sendtos"]


@pytest.mark.parametrize(
    ("driver", "options"),
    [
        (DriverProfile.zero_copy(), {}),
        (DriverProfile.am65_cpsw(), {}),
        (DriverProfile.native(), {"force_copy": True}),
        (DriverProfile.zero_copy(), {"xdp_skb": True}),
    ],
    ids=["zc", "am65-zc", "native-copy", "skb"],
)
def test_l2fwd_swaps_macs_and_forwards(driver: DriverProfile, options: dict[str, Any]) -> None:
    xsk = run(Benchmark.L2FWD, driver, steps=60, **options)
    assert xsk.rx_npkts >= 50 * 64
    assert xsk.port.stats.tx_packets >= xsk.tx_npkts - 2048
    sent = xsk.port.wire[-1]
    (ip_id,) = struct.unpack("!H", sent[18:20])  # the source's sequence number
    ref = xdpsock_frame(64, ip_id=ip_id)
    assert sent[:6] == ref[6:12] and sent[6:12] == ref[:6]  # MACs swapped (3.2)
    assert sent[12:] == ref[12:]  # the rest untouched
    assert xsk.sock.statistics().tx_invalid_descs == 0


def test_l2fwd_sendto_only_with_xdp_copy() -> None:
    # 3.2: complete_tx_l2fwd calls sendto on every pass only when XDP_COPY is set; a
    # silent fallback to copy mode leaves TX to the reservation-failure kick.
    forced = run(Benchmark.L2FWD, DriverProfile.native(), steps=20, force_copy=True)
    fallback = run(Benchmark.L2FWD, DriverProfile.native(), steps=20)
    assert forced.app["copy_tx_sendtos"] > 0
    assert fallback.app["copy_tx_sendtos"] == 0 and not fallback.sock.zc
    assert fallback.port.stats.tx_packets < forced.port.stats.tx_packets


def test_runs_are_deterministic() -> None:
    one = run(Benchmark.L2FWD, steps=30)
    two = run(Benchmark.L2FWD, steps=30)
    assert one.report() == two.report()
    assert list(one.port.wire) == list(two.port.wire)


def test_report_layout_and_label() -> None:
    xsk = run(Benchmark.RXDROP, steps=20)
    plain = xsk.report()
    lines = plain.lines()
    assert lines[0] == " sock0@eth0:0 rxdrop xdp-drv "
    assert lines[1].split() == ["pps", "pkts", "-"]  # no time without the cost model
    assert lines[2].split() == ["rx", "-", f"{xsk.rx_npkts:,}"]
    assert "model" in lines[-1] and "not from a measurement" in lines[-1]
    timed = xsk.report(CostModel())
    assert timed.source == "model" and timed.interval_s is not None
    pps = timed.pps(timed.rx_npkts)
    assert pps == pytest.approx(845_200, rel=0.01)  # the model's ZC rxdrop rate
    extra = timed.lines(extra_stats=True, app_stats=True)
    assert any(line.startswith("fill ring empty") for line in extra)
    assert any(line.startswith("rx empty polls") for line in extra)


def test_report_for_the_bug_cell_has_no_rate() -> None:
    xsk = run(Benchmark.L2FWD, steps=5)
    assert xsk.mode is XskMode.ZEROCOPY
    assert xsk.report(CostModel()).interval_s is None


def test_two_processes_share_the_default_program() -> None:
    # libxdp reuses the attached program's XSKMAP for a second socket on another queue.
    port = xdp_port(DriverProfile.zero_copy())
    one = XdpSock(port, XdpSockConfig(queue=0))
    two = XdpSock(port, XdpSockConfig(queue=1))
    assert one.xsks_map is two.xsks_map
    assert one.xsks_map.lookup(0) is one.sock and one.xsks_map.lookup(1) is two.sock
