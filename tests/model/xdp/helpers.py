"""Small builders shared by the XDP model tests."""

from __future__ import annotations

from esplab.model.kernel.stack.netdev import NetDev
from esplab.model.kernel.xdp.consts import AttachMode, BindFlag, UmemFlag
from esplab.model.kernel.xdp.driver import DriverProfile
from esplab.model.kernel.xdp.port import Am65Cpsw, NetdevXdp
from esplab.model.kernel.xdp.program import XskMap, XskRedirect
from esplab.model.kernel.xdp.socket import XskSocket
from esplab.model.kernel.xdp.umem import Umem

CHUNK = 4096


def frame(length: int = 60, tag: int = 0) -> bytes:
    """A frame of ``length`` bytes: two MACs, an EtherType, then ``tag`` repeated."""
    head = bytes.fromhex("0200000000020200000000010800")
    return (head + bytes([tag & 0xFF]) * length)[:length]


def make_socket(
    port: NetdevXdp | None = None,
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


def redirect_to(port: NetdevXdp, sock: XskSocket, mode: AttachMode | None = None) -> XskMap:
    """libxdp's default program on ``port`` with ``sock`` at its queue's key."""
    xsks = XskMap()
    xsks.update(sock.queue_id, sock)
    port.attach(XskRedirect(xsks), mode)
    return xsks


def xdp_port(
    driver: DriverProfile | None = None,
    *,
    name: str = "eth0",
    ifindex: int = 2,
    cpsw: Am65Cpsw | None = None,
) -> NetdevXdp:
    """The XDP side of a bare device (``DriverProfile.zero_copy`` unless ``driver``)."""
    return NetDev.bare(name, ifindex).enable_xdp(driver or DriverProfile.zero_copy(), cpsw)


def cpsw_ports(cpsw: Am65Cpsw, *names: str) -> list[NetdevXdp]:
    """The CPSW's ports (eth0 and eth1 unless ``names``), all with the am65-cpsw driver."""
    return [
        xdp_port(DriverProfile.am65_cpsw(), name=n, ifindex=2 + i, cpsw=cpsw)
        for i, n in enumerate(names or ("eth0", "eth1"))
    ]


def copy_port() -> NetdevXdp:
    """A port whose driver has native XDP but no zero copy."""
    return xdp_port(DriverProfile.native())


def zc_port() -> NetdevXdp:
    return xdp_port(DriverProfile.zero_copy())
