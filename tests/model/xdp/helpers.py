"""Small builders shared by the XDP model tests."""

from __future__ import annotations

from esplab.model.kernel.xdp.consts import AttachMode, BindFlag, UmemFlag
from esplab.model.kernel.xdp.driver import DriverProfile
from esplab.model.kernel.xdp.port import Port
from esplab.model.kernel.xdp.program import XskMap, XskRedirect
from esplab.model.kernel.xdp.socket import XskSocket
from esplab.model.kernel.xdp.umem import Umem

CHUNK = 4096


def frame(length: int = 60, tag: int = 0) -> bytes:
    """A frame of ``length`` bytes: two MACs, an EtherType, then ``tag`` repeated."""
    head = bytes.fromhex("0200000000020200000000010800")
    return (head + bytes([tag & 0xFF]) * length)[:length]


def make_socket(
    port: Port | None = None,
    *,
    frames: int = 64,
    chunk: int = CHUNK,
    headroom: int = 0,
    rx: int = 64,
    tx: int = 64,
    fill: int = 64,
    comp: int = 64,
    flags: BindFlag = BindFlag.NONE,
    queue: int = 0,
    lazy: bool = True,
    umem_flags: UmemFlag = UmemFlag.NONE,
    tx_metadata_len: int = 0,
) -> XskSocket:
    """A socket with its UMEM and rings; bound to ``port`` when one is given."""
    sock = XskSocket(lazy_consumer=lazy)
    umem = Umem(
        frames * chunk,
        chunk_size=chunk,
        headroom=headroom,
        flags=umem_flags,
        tx_metadata_len=tx_metadata_len,
    )
    sock.setup(umem, rx=rx, tx=tx, fill=fill, comp=comp)
    if port is not None:
        sock.bind(port, queue, flags)
    return sock


def redirect_to(port: Port, sock: XskSocket, mode: AttachMode | None = None) -> XskMap:
    """libxdp's default program on ``port`` with ``sock`` at its queue's key."""
    xsks = XskMap()
    xsks.update(sock.queue_id, sock)
    port.attach(XskRedirect(xsks), mode)
    return xsks


def copy_port() -> Port:
    """A port whose driver has native XDP but no zero copy."""
    return Port(driver=DriverProfile.native())


def zc_port() -> Port:
    return Port(driver=DriverProfile.zero_copy())
