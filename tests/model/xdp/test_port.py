"""Attach modes and the am65-cpsw rules: af_xdp.md 1.1, 4.2 and facts 6.22-6.24."""

from __future__ import annotations

import pytest

from esplab.errors import KernelError
from esplab.model.kernel.stack.netdev import NetDev
from esplab.model.kernel.xdp.consts import (
    MAX_SKB_FRAGS,
    AttachFlag,
    AttachMode,
    BindFlag,
    NetdevXdpAct,
    XdpAction,
    XdpAttached,
)
from esplab.model.kernel.xdp.driver import DriverProfile
from esplab.model.kernel.xdp.port import Am65Cpsw
from esplab.model.kernel.xdp.program import XdpReturn
from esplab.model.kernel.xdp.rings import XskDesc

from .helpers import CHUNK, cpsw_ports, frame, make_socket, redirect_to, xdp_port


def test_a_bare_device_and_its_xdp_side() -> None:
    # The XDP side reads its device's name, ifindex and state; it is no second device.
    dev = NetDev.bare("eth1", 3)
    assert (dev.kind, dev.mac, dev.xdp) == ("ether", "02:00:00:00:00:03", None)
    port = dev.enable_xdp(DriverProfile.am65_cpsw())
    assert dev.xdp is port and port.dev is dev and port.cpsw is not None
    assert (port.name, port.up, len(port.rxq), len(port.txq)) == ("eth1", True, 1, 8)
    port.attach(XdpReturn(XdpAction.PASS), AttachMode.DRV)
    assert port.receive(frame()) and port.poll().rx == 1 and port.stats.xdp_pass == 1
    assert dev == NetDev.bare("eth1", 3) and "xdp" not in repr(dev)  # not part of its value
    dev.up = False
    assert not port.up and not port.receive(frame())
    assert dev.enable_xdp(DriverProfile.generic()) is dev.xdp is not port


def test_default_attach_mode() -> None:
    # 1.1 [DEV]: native when the driver has ndo_bpf, otherwise generic.
    assert xdp_port(DriverProfile.native()).attach(XdpReturn()) is AttachMode.DRV
    generic = xdp_port(DriverProfile.generic())
    assert generic.attach(XdpReturn()) is AttachMode.SKB
    assert generic.attached is XdpAttached.SKB


def test_attach_errors() -> None:
    generic = xdp_port(DriverProfile.generic())
    for mode in (AttachMode.DRV, AttachMode.HW):
        with pytest.raises(KernelError) as err:
            generic.attach(XdpReturn(), mode)
        assert err.value.errno_name == "EOPNOTSUPP"
    port = xdp_port()
    port.attach(XdpReturn(), AttachMode.DRV)
    with pytest.raises(KernelError) as err:
        port.attach(XdpReturn(), AttachMode.DRV, AttachFlag.UPDATE_IF_NOEXIST)
    assert err.value.errno_name == "EBUSY"
    with pytest.raises(KernelError) as err:
        port.attach(XdpReturn(), AttachMode.SKB)
    assert err.value.errno_name == "EEXIST"
    port.detach()
    assert port.attached is XdpAttached.NONE


def test_zero_copy_needs_basic_redirect_and_xsk_bits() -> None:
    # 1.1: a ZC bind needs all of BASIC, REDIRECT and XSK_ZEROCOPY.
    partial = DriverProfile("partial", xdp_features=NetdevXdpAct.BASIC | NetdevXdpAct.XSK_ZEROCOPY)
    sock = make_socket()
    with pytest.raises(KernelError) as err:
        sock.bind(xdp_port(partial), 0, BindFlag.ZEROCOPY)
    assert err.value.errno_name == "EOPNOTSUPP"
    assert NetdevXdpAct.zc_required() == 1 | 2 | 8


def test_am65_profile_numbers() -> None:
    # 4.2 patch 3: 8 TX channels and 1 RX flow of 500 descriptors; frame >= 2024.
    drv = DriverProfile.am65_cpsw()
    assert (drv.tx_queues, drv.rx_queues, drv.hw_ring_size, drv.tx_ring_size) == (8, 1, 500, 500)
    assert drv.zc_min_rx_frame == 2024 and drv.zc_tx_reserve == MAX_SKB_FRAGS == 17
    assert not drv.zc_tx_in_rx_napi


def test_am65_frame_size_rule() -> None:
    # 6.22: a ZC enable needs an RX frame limit >= 2024: 4096 chunks give 3840, 2048
    # chunks give 1792 -> EOPNOTSUPP when forced, silent copy otherwise.
    (big,) = cpsw_ports(Am65Cpsw(), "eth0")
    assert make_socket(big).zc
    (small,) = cpsw_ports(Am65Cpsw(), "eth0")
    with pytest.raises(KernelError) as err:
        make_socket(small, chunk=2048, flags=BindFlag.ZEROCOPY)
    assert err.value.errno_name == "EOPNOTSUPP"
    assert "1792 < 2024" in str(err.value)
    fallback = make_socket(small, chunk=2048)
    assert not fallback.zc and fallback.fallback_reason is not None


def test_am65_queue_range() -> None:
    # 4.2 patch 3: qid below both the RX-flow count (1) and the TX-channel count (8);
    # bind itself allows up to max(RX, TX) queues (2.6), so queue 3 falls back to copy.
    (eth0,) = cpsw_ports(Am65Cpsw(), "eth0")
    with pytest.raises(KernelError) as err:
        make_socket(eth0, queue=3, flags=BindFlag.ZEROCOPY)
    assert err.value.errno_name == "EINVAL"
    assert not make_socket(eth0, queue=3).zc
    with pytest.raises(KernelError):
        make_socket(eth0, queue=8)


def test_am65_one_port_per_zero_copy_queue() -> None:
    # 6.22: only one port per queue id may be ZC (EINVAL); while it is, the other
    # port's packets on that queue are dropped.
    cpsw = Am65Cpsw()
    eth0, eth1 = cpsw_ports(cpsw)
    sock0 = make_socket(eth0)
    assert sock0.zc and cpsw.xsk_port[0] is eth0
    with pytest.raises(KernelError) as err:
        make_socket(eth1, flags=BindFlag.ZEROCOPY)
    assert err.value.errno_name == "EINVAL"
    assert not eth1.receive(frame())
    assert eth1.stats.rx_dropped == 1
    sock0.close()
    assert 0 not in cpsw.xsk_port and eth1.receive(frame())


def test_am65_prefill_is_500() -> None:
    # 6.24: RX ZC pre-posts up to 500 FILL frames per flow.
    (eth0,) = cpsw_ports(Am65Cpsw(), "eth0")
    sock = make_socket(eth0, frames=1024, fill=1024)
    assert sock.fill is not None and sock.pool is not None
    sock.fill.produce([i * CHUNK for i in range(1024)])
    eth0.wakeup(0, sock.pool.cached_need_wakeup)
    sock.recvfrom()
    eth0.poll()
    assert len(sock.pool.posted) == 500


def test_am65_zero_copy_tx_only_from_the_tx_pass() -> None:
    # 6.23: ZC TX keeps 17 of 500 descriptors for the stack, runs only from the
    # TX-completion pass or a TX wakeup, and sets TX NEED_WAKEUP after every pass.
    (eth0,) = cpsw_ports(Am65Cpsw(), "eth0")
    sock = make_socket(eth0, frames=1024, tx=1024, comp=1024, flags=BindFlag.USE_NEED_WAKEUP)
    redirect_to(eth0, sock)
    assert sock.tx is not None
    sock.tx.produce([XskDesc(i * CHUNK, 60) for i in range(600)])
    eth0.receive(frame())  # RX NAPI only: does not transmit
    eth0.poll()
    assert eth0.stats.tx_packets == 0
    assert sock.sendto() is None  # XDP_WAKEUP_TX schedules the TX NAPI
    report = eth0.poll()
    assert report.tx == 500 - 17 and sock.tx.needs_wakeup
    report = eth0.poll()  # the completion interrupt runs the next pass
    assert report.completed == 483 and report.tx == 600 - 483


def test_combined_napi_transmits_from_rx() -> None:
    # 3.2: xdpsock's ZC l2fwd assumes the RX NAPI also drives TX (combined NAPI).
    port = xdp_port(DriverProfile.zero_copy())
    sock = make_socket(port)
    redirect_to(port, sock)
    assert sock.tx is not None
    sock.tx.produce([XskDesc(0, 60)])
    port.receive(frame())
    port.poll()
    assert port.stats.tx_packets == 1


def test_zero_copy_tx_bounce_with_xdp_tx() -> None:
    port = xdp_port(DriverProfile.zero_copy())
    sock = make_socket(port)
    port.attach(XdpReturn(XdpAction.TX), AttachMode.DRV)
    assert sock.fill is not None and sock.pool is not None
    sock.fill.produce([0])
    sock.recvfrom()
    port.poll()
    port.receive(frame(60, 9))
    port.poll()
    assert port.stats.xdp_tx == 1 and port.wire[-1] == frame(60, 9)
    assert sock.pool.posted[-1] == 0  # the frame went back to the pool
