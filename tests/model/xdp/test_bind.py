"""Socket setup and bind rules: af_xdp.md 2.1, 2.5, 2.6 and facts 6.2, 6.18-6.20."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from esplab.errors import KernelError
from esplab.model.kernel.xdp.consts import XDP_OPTIONS_ZEROCOPY, BindFlag, RingKind
from esplab.model.kernel.xdp.driver import DriverProfile
from esplab.model.kernel.xdp.socket import SockState, XskSocket
from esplab.model.kernel.xdp.umem import Umem

from .helpers import copy_port, make_socket, xdp_port, zc_port


def errno_of(call: Callable[..., object], *args: object, **kwargs: object) -> str:
    with pytest.raises(KernelError) as err:
        call(*args, **kwargs)
    return err.value.errno_name


def test_socket_creation_checks() -> None:
    # 2.1: CAP_NET_RAW, SOCK_RAW, protocol 0.
    assert errno_of(XskSocket, cap_net_raw=False) == "EPERM"
    assert errno_of(XskSocket, sock_type="SOCK_DGRAM") == "ESOCKTNOSUPPORT"
    assert errno_of(XskSocket, protocol=17) == "EPROTONOSUPPORT"


def test_ring_set_twice_and_after_bind() -> None:
    # 6.2: setting the same ring twice gives EINVAL; rings or UMEM after bind EBUSY.
    sock = make_socket()
    assert errno_of(sock.set_ring, RingKind.RX, 64) == "EINVAL"
    assert errno_of(sock.set_ring, RingKind.FILL, 64) == "EINVAL"
    assert errno_of(sock.reg_umem, Umem(4096)) == "EBUSY"  # second UMEM (2.2)
    sock.bind(copy_port())
    assert errno_of(sock.set_ring, RingKind.TX, 64) == "EBUSY"
    assert errno_of(XskSocket().set_ring, RingKind.TX, 48) == "EINVAL"  # not 2**n


def test_umem_after_bind_is_ebusy() -> None:
    sock = make_socket(copy_port())
    with pytest.raises(KernelError) as err:
        sock.reg_umem(Umem(4096))
    assert err.value.errno_name == "EBUSY"
    assert "XDP_UMEM_REG" in str(err.value)


def test_tx_ring_needs_wakeup_from_creation() -> None:
    # 6.18: right after TX ring creation its NEED_WAKEUP flag is set.
    sock = XskSocket()
    sock.set_ring(RingKind.TX, 64)
    sock.set_ring(RingKind.RX, 64)
    assert sock.tx is not None and sock.tx.needs_wakeup
    assert sock.rx is not None and not sock.rx.needs_wakeup


def test_bind_needs_rings_and_umem() -> None:
    port = copy_port()
    no_rings = XskSocket()
    no_rings.reg_umem(Umem(4096))
    assert errno_of(no_rings.bind, port) == "EINVAL"  # neither RX nor TX (2.3)
    no_fill = XskSocket()
    no_fill.setup(Umem(4096), rx=64, comp=64)
    assert errno_of(no_fill.bind, port) == "EINVAL"
    assert errno_of(make_socket().bind, port, 0, 1 << 7) == "EINVAL"  # unknown flag


def test_bind_twice_is_ebusy() -> None:
    port = copy_port()
    sock = make_socket(port)
    assert errno_of(sock.bind, port) == "EBUSY"


def test_queue_beyond_the_device() -> None:
    # 2.6: queue_id >= max(real RX queues, real TX queues) -> EINVAL.
    port = zc_port()  # 4 queue pairs
    assert errno_of(make_socket().bind, port, 4) == "EINVAL"
    assert make_socket(port, queue=3).queue_id == 3


def test_silent_fallback_to_copy() -> None:
    # 6.19: no flags on a device without ZC -> copy mode, no error; XDP_OPTIONS says so.
    sock = make_socket(copy_port())
    assert not sock.zc and sock.options() == 0
    assert sock.fallback_reason is not None and "EOPNOTSUPP" in sock.fallback_reason


def test_zero_copy_granted_and_reported() -> None:
    sock = make_socket(zc_port())
    assert sock.zc and sock.options() == XDP_OPTIONS_ZEROCOPY


def test_forced_copy_on_a_zero_copy_device() -> None:
    sock = make_socket(zc_port(), flags=BindFlag.COPY)
    assert not sock.zc and sock.options() == 0


def test_forced_zero_copy_without_support() -> None:
    # 6.19: XDP_ZEROCOPY on an unsupported device -> EOPNOTSUPP, and the queue stays free.
    port = copy_port()
    sock = make_socket()
    assert errno_of(sock.bind, port, 0, BindFlag.ZEROCOPY) == "EOPNOTSUPP"
    assert sock.state is SockState.READY and port.pool_at(0) is None
    assert (
        errno_of(make_socket().bind, xdp_port(DriverProfile.generic()), 0, BindFlag.ZEROCOPY)
        == "EOPNOTSUPP"
    )


def test_copy_and_zero_copy_together() -> None:
    assert errno_of(make_socket().bind, zc_port(), 0, BindFlag.COPY | BindFlag.ZEROCOPY) == (
        "EINVAL"
    )


def test_second_socket_on_a_busy_queue() -> None:
    # 6.20: a second socket on the same (dev, queue) with its own UMEM -> EBUSY.
    port = copy_port()
    make_socket(port)
    with pytest.raises(KernelError) as err:
        make_socket(port)
    assert err.value.errno_name == "EBUSY"
    assert str(err.value).startswith("bind: Device or resource busy")


def test_shared_umem_on_the_same_queue() -> None:
    port = zc_port()
    owner = make_socket(port, flags=BindFlag.USE_NEED_WAKEUP)
    other = XskSocket()
    other.set_ring(RingKind.RX, 64)
    other.bind(port, 0, BindFlag.SHARED_UMEM, shared_umem=owner)
    assert other.pool is owner.pool and other.umem is owner.umem
    assert other.zc  # inherited
    assert other.fill is owner.fill


def test_shared_umem_with_mode_flags() -> None:
    # 6.20: XDP_SHARED_UMEM with mode flags -> EINVAL.
    port = zc_port()
    owner = make_socket(port)
    for extra in (BindFlag.COPY, BindFlag.ZEROCOPY, BindFlag.USE_NEED_WAKEUP):
        other = XskSocket()
        other.set_ring(RingKind.RX, 64)
        assert (
            errno_of(other.bind, port, 0, BindFlag.SHARED_UMEM | extra, shared_umem=owner)
            == "EINVAL"
        )


def test_shared_umem_on_another_queue_needs_its_own_fill_and_completion() -> None:
    port = zc_port()
    owner = make_socket(port)
    bare = XskSocket()
    bare.set_ring(RingKind.RX, 64)
    assert errno_of(bare.bind, port, 1, BindFlag.SHARED_UMEM, shared_umem=owner) == "EINVAL"
    other = XskSocket()
    for kind in (RingKind.RX, RingKind.FILL, RingKind.COMPLETION):
        other.set_ring(kind, 64)
    other.bind(port, 1, BindFlag.SHARED_UMEM, shared_umem=owner)
    assert other.pool is not owner.pool and other.umem is owner.umem
    assert other.pool is not None and other.pool.zc  # umem->zc gives ZEROCOPY


def test_shared_umem_owner_must_be_bound() -> None:
    unbound = make_socket()
    other = XskSocket()
    other.set_ring(RingKind.RX, 64)
    assert errno_of(other.bind, zc_port(), 0, BindFlag.SHARED_UMEM, shared_umem=unbound) == (
        "EBADF"
    )


def test_close_frees_the_queue() -> None:
    port = copy_port()
    sock = make_socket(port)
    sock.close()
    assert port.pool_at(0) is None and sock.state is SockState.UNBOUND
    assert make_socket(port).is_bound


def test_max_tx_budget_range() -> None:
    # 6.17: XDP_MAX_TX_SKB_BUDGET outside [32, TX size] -> EACCES.
    sock = make_socket(tx=64)
    assert errno_of(sock.set_max_tx_budget, 31) == "EACCES"
    assert errno_of(sock.set_max_tx_budget, 65) == "EACCES"
    sock.set_max_tx_budget(64)
    assert sock.max_tx_budget == 64
    assert errno_of(make_socket(tx=0).set_max_tx_budget, 32) == "EACCES"
