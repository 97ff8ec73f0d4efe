"""TFC padding (RFC 4303 2.7) as Linux's software ESP applies it, and the SA MTU that
bounds it (``xfrm_state_mtu``).

net/ipv4/esp4.c and net/ipv6/esp6.c ``esp_output``: with ``x->tfcpad`` set, the payload
(the inner packet: TFC padding is tunnel mode only) is followed by zero bytes up to
``min(x->tfcpad, xfrm_state_mtu(x, dst->child_mtu_cached))``, then the ordinary
padding, pad length and next header. The offload paths never apply it:
``xfrm_dev_state_add`` refuses to offload such an SA, and esp4_offload.c
``esp_xmit`` sets ``tfclen = 0`` ("XXX: Add support for tfc padding here") [C].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from esplab.model.kernel.esp import layout

if TYPE_CHECKING:
    from esplab.model.kernel.esp.sa import EspSA

__all__ = ["state_mtu", "tfc_len"]


def state_mtu(sa: EspSA, mtu: int, family: int = 4) -> int:
    """``xfrm_state_mtu`` (net/xfrm/xfrm_state.c) for ``sa``: the largest payload it can
    protect within ``mtu`` (the device's, or the route's path MTU). Header length: ESP
    header and IV, the outer header in tunnel mode, UDP encapsulation; rounded down to
    the cipher's alignment, less pad length and next header [C]. ``family``: the
    state's (IPv4 or IPv6), whose IP header transport mode keeps out of the rounding
    (``net_adj``; 0 in tunnel mode)."""
    tunnel = sa.mode == "tunnel"
    encap = layout.encap_len(tunnel, sa.outer_version, sa.encap is not None)
    header_len = encap + layout.esp_head_len(sa.iv_size)
    net_adj = 0 if tunnel else (layout.IPV4_HEADER_LEN if family == 4 else layout.IPV6_HEADER_LEN)
    return layout.state_mtu(mtu, header_len, sa.icv_len, sa.align, net_adj)


def tfc_len(sa: EspSA, size: int, mtu: int | None) -> int:
    """TFC padding for ``size`` bytes of payload (the inner packet in tunnel mode), as
    net/ipv4/esp4.c and net/ipv6/esp6.c ``esp_output`` compute ``esp.tfclen`` [C]:
    ``padto = min(x->tfcpad, xfrm_state_mtu(x, dst->child_mtu_cached))``, and the zero
    bytes that bring the payload up to ``padto``. ``mtu``: the route's MTU (None: no
    limit but the SA's own). 0 without ``tfcpad``."""
    if not sa.tfcpad:
        return 0
    padto = sa.tfcpad if mtu is None else min(sa.tfcpad, state_mtu(sa, mtu))
    return padto - size if size < padto else 0
