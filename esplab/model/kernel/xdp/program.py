"""Built-in XDP programs (instead of eBPF) and the XSKMAP.

A program sees an :class:`XdpContext` (the frame bytes, ingress ifindex and RX queue,
as ``struct xdp_md`` exposes them, 1.2 [C]) and returns an :class:`XdpVerdict`. What
each action does to the frame and which counters it bumps is the device's business
(``port.py``). The redirect program is libxdp's default one: the XSKMAP is indexed
by ``rx_queue_index``, an empty slot gives the fallback action ``XDP_PASS``, and the
map has 64 slots (1.2, LIBXDP) [C].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from esplab.errors import InvalidValue
from esplab.model.kernel.xdp.consts import XdpAction, kernel_error

if TYPE_CHECKING:
    from esplab.model.kernel.xdp.socket import XskSocket

__all__ = [
    "SwapMacTx",
    "XdpContext",
    "XdpProgram",
    "XdpReturn",
    "XdpVerdict",
    "XskMap",
    "XskRedirect",
    "swap_macs",
]


@dataclass
class XdpContext:
    """What the program may read and change (``struct xdp_md`` subset)."""

    data: bytearray
    ingress_ifindex: int
    rx_queue_index: int


@dataclass(frozen=True)
class XdpVerdict:
    """A program's return code and, for ``XDP_REDIRECT``, the socket it chose."""

    action: int  # an XdpAction value, or any other u32 (treated as ABORTED plus a warning)
    target: XskSocket | None = None


class XdpProgram:
    """Base of the built-in programs."""

    label: ClassVar[str] = "xdp"

    @property
    def name(self) -> str:
        return self.label

    def run(self, ctx: XdpContext) -> XdpVerdict:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name


@dataclass
class XdpReturn(XdpProgram):
    """``return <code>;``: pass, drop, aborted, tx (bounce), or any raw code."""

    code: int = XdpAction.PASS

    @property
    def name(self) -> str:
        try:
            return f"xdp_{XdpAction(self.code).name.lower()}"
        except ValueError:
            return f"xdp_return_{self.code}"

    def run(self, ctx: XdpContext) -> XdpVerdict:
        return XdpVerdict(self.code)


def swap_macs(data: bytearray) -> None:
    """Exchange the destination and source MAC addresses (xdpsock l2fwd, 3.2) [C]."""
    if len(data) < 12:
        return
    data[0:6], data[6:12] = data[6:12], data[0:6]


@dataclass
class SwapMacTx(XdpProgram):
    """l2fwd inside XDP: swap the MACs and bounce the frame with ``XDP_TX``."""

    label = "xdp_swap_macs_tx"

    def run(self, ctx: XdpContext) -> XdpVerdict:
        swap_macs(ctx.data)
        return XdpVerdict(XdpAction.TX)


@dataclass(eq=False)
class XskMap:
    """``BPF_MAP_TYPE_XSKMAP``: key (u32) -> AF_XDP socket."""

    max_entries: int = 64  # the libxdp default program's map size (1.2) [C]
    slots: dict[int, XskSocket] = field(default_factory=dict)

    def _check_key(self, key: int) -> None:
        if not 0 <= key < self.max_entries:
            # Design choice "xskmap-key" [U].
            raise kernel_error(
                "E2BIG",
                f"key {key} outside the map",
                op="bpf_map_update_elem",
                hint=f"valid: 0..{self.max_entries - 1}",
            )

    def update(self, key: int, sock: XskSocket) -> None:
        self._check_key(key)
        self.slots[key] = sock
        if self not in sock.maps:
            sock.maps.append(self)

    def delete(self, key: int) -> None:
        self._check_key(key)
        if key not in self.slots:
            raise kernel_error("ENOENT", f"key {key} is empty", op="bpf_map_delete_elem")
        sock = self.slots.pop(key)
        if self in sock.maps and sock not in self.slots.values():
            sock.maps.remove(self)

    def remove_socket(self, sock: XskSocket) -> None:
        """What closing a socket does (``xsk_delete_from_maps``) [C]."""
        for key in [k for k, s in self.slots.items() if s is sock]:
            del self.slots[key]

    def lookup(self, key: int) -> XskSocket | None:
        return self.slots.get(key)


@dataclass
class XskRedirect(XdpProgram):
    """``bpf_redirect_map(&xsks_map, ctx->rx_queue_index, fallback)`` (1.2) [C]."""

    xsks_map: XskMap = field(default_factory=XskMap)
    fallback: int = XdpAction.PASS  # libxdp's default program [C]; xdpsock's own uses DROP

    label = "xsk_def_prog"

    def __post_init__(self) -> None:
        if self.fallback not in (XdpAction.PASS, XdpAction.DROP, XdpAction.ABORTED):
            raise InvalidValue(
                f"fallback {self.fallback} for bpf_redirect_map",
                valid=["XDP_ABORTED", "XDP_DROP", "XDP_PASS"],
            )

    def run(self, ctx: XdpContext) -> XdpVerdict:
        sock = self.xsks_map.lookup(ctx.rx_queue_index)
        if sock is None:
            return XdpVerdict(self.fallback)
        return XdpVerdict(XdpAction.REDIRECT, sock)
