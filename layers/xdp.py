"""The AF_XDP RX/TX ring descriptor, ``struct xdp_desc``.

Source: ``af_xdp.md`` section 2.3 (Linux ``include/uapi/linux/if_xdp.h``): addr u64
(UMEM offset), len u32, options u32, 16 bytes. The struct lives in memory shared
with the kernel, so it is in host byte order; the reference machine is
little-endian, and so is this layer.
"""

from __future__ import annotations

from scapy.config import conf
from scapy.fields import FlagsField, LEIntField, XLELongField
from scapy.layers.l2 import Ether
from scapy.packet import bind_layers

from esplab.layers._fixed import TruncatablePacket
from esplab.layers.linktypes import DLT_XDP_DESC

__all__ = [
    "XDP_DESC_LEN",
    "XDP_PKT_CONTD",
    "XDP_TX_METADATA",
    "XSK_UNALIGNED_BUF_ADDR_MASK",
    "XSK_UNALIGNED_BUF_OFFSET_SHIFT",
    "XDPDesc",
]

XDP_DESC_LEN = 16
XDP_PKT_CONTD = 1 << 0  # the packet continues in the next descriptor (multi-buffer)
XDP_TX_METADATA = 1 << 1  # an xsk_tx_metadata sits in the tx_metadata_len bytes before addr
# Unaligned UMEM mode: base in the low 48 bits, offset in the high 16 (af_xdp.md 2.2).
XSK_UNALIGNED_BUF_OFFSET_SHIFT = 48
XSK_UNALIGNED_BUF_ADDR_MASK = (1 << XSK_UNALIGNED_BUF_OFFSET_SHIFT) - 1

# Option bit names, bit 0 first; the undefined bits (invalid on TX) are named bitN.
_OPTION_NAMES = ["PKT_CONTD", "TX_METADATA", *(f"bit{n}" for n in range(2, 32))]


class XDPDesc(TruncatablePacket):
    """``struct xdp_desc`` (af_xdp.md 2.3 and 2.9), little-endian, 16 bytes.

    ::

        offset 0                       8              12             16
              +------------------------+--------------+--------------+
              | addr (u64, UMEM offset)| len (u32)    | options (u32)|
              +------------------------+--------------+--------------+

        options: bit 0 PKT_CONTD, bit 1 TX_METADATA; 0 for a single-buffer packet

    A descriptor may be followed by the frame it points at (dissected as
    ``Ether``); ``len`` None is that frame's length. In unaligned mode ``addr``
    splits into :attr:`addr_base` (low 48 bits) and :attr:`addr_offset`.
    """

    name = "AF_XDP descriptor"
    fields_desc = [
        XLELongField("addr", 0),
        LEIntField("len", None),
        FlagsField("options", 0, -32, _OPTION_NAMES),
    ]

    @property
    def addr_base(self) -> int:
        """Unaligned mode: the frame base, bits 47:0 of ``addr``."""
        return int(self.addr) & XSK_UNALIGNED_BUF_ADDR_MASK

    @property
    def addr_offset(self) -> int:
        """Unaligned mode: the offset into the frame, bits 63:48 of ``addr``."""
        return int(self.addr) >> XSK_UNALIGNED_BUF_OFFSET_SHIFT

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.len is None and len(pkt) >= 12:
            pkt = pkt[:8] + (len(pay) & 0xFFFFFFFF).to_bytes(4, "little") + pkt[12:]
        return pkt + pay

    def mysummary(self) -> str:
        return self.sprintf(
            "XDPDesc addr=%XDPDesc.addr% len=%XDPDesc.len% options=%XDPDesc.options%"
        )


bind_layers(XDPDesc, Ether)

conf.l2types.register(DLT_XDP_DESC, XDPDesc)
