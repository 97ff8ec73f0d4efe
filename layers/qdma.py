"""Airoha EN7581 QDMA descriptors, and the RX descriptor the driver reads.

Format and source (see ``airoha-dsa-xfrm.md`` in the shared reference): the Airoha
QDMA descriptor, section 1.6 (Linux ``drivers/net/ethernet/airoha/airoha_eth.h``),
8 little-endian u32 words. :class:`QDMADescriptor` is the TX layout,
:class:`QDMARxDescriptor` the RX one.

:func:`airoha_qdma_rx` builds the RX descriptor for a received frame as layers and
:func:`airoha_qdma_rx_bytes` the same bytes without dissecting the frame. The TX
side, where the MTK tag moves into the descriptor (section 1.3), is
``esplab.layers.dsa.airoha_dsa_xmit``.
"""

from __future__ import annotations

import struct

from scapy.config import conf
from scapy.fields import BitField, LEShortField, XBitField, XLEIntField, XLEShortField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers
from scapy.utils import checksum

from esplab.layers._fixed import TruncatablePacket
from esplab.layers.linktypes import DLT_QDMA_DESC

__all__ = [
    "ETH_P_8021AD",
    "ETH_P_8021Q",
    "QDMA_DESC_LEN",
    "QDMADescriptor",
    "QDMARxDescriptor",
    "airoha_qdma_rx",
    "airoha_qdma_rx_bytes",
    "airoha_rx_msg1_flags",
    "sport_to_gdm",
]

QDMA_DESC_LEN = 32  # section 1.6: 8 little-endian u32 words
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
_ETHERTYPE_AT = 12  # after DA and SA

# GDM port of an RX msg1.SPORT value (section 1.6).
_SPORT_GDM = {
    **{sport: 1 for sport in range(0x10, 0x15)},
    0x2: 2,
    0x3: 3,
    0x4: 4,
    0x16: 3,  # GDM3 via PCIe0
    0x17: 3,  # GDM3 via PCIe1
    0x18: 4,  # GDM4 via ETH
    0x19: 4,  # GDM4 via USB
}


def sport_to_gdm(sport: int) -> int | None:
    """The GDM port id (1-4) of an RX ``msg1.SPORT`` value, or None (section 1.6)."""
    return _SPORT_GDM.get(sport)


# Words 0-3 are the same on TX and RX. Each little-endian word lists its fields
# from the most significant bit down.
_QDMA_HEAD = [
    XLEIntField("rsv", 0),
    # word 1, ctrl
    BitField("done", 0, 1, tot_size=-4),  # b31
    BitField("drop", 0, 1),  # b30
    BitField("more", 0, 1),  # b29: another fragment follows
    BitField("ctrl_rsv1", 0, 3),  # b28:26
    BitField("dei", 0, 1),  # b25
    BitField("no_drop", 0, 1),  # b24
    BitField("ctrl_rsv2", 0, 8),  # b23:16
    # tot_size=1: a last field that starts on a byte boundary must not reverse again
    BitField("len", None, 16, tot_size=1, end_tot_size=-4),  # b15:0
    # word 2, addr
    XLEIntField("addr", 0),
    # word 3, data: NEXT_ID 15:0 (the low half of a little-endian word comes first)
    LEShortField("next_id", 0),
    XLEShortField("data_rsv", 0),
]


class _QDMABase(TruncatablePacket):
    """Shared behaviour: ``len`` None is the length of the frame that follows."""

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.len is None and len(pkt) >= 8:
            # ctrl is word 1 (bytes 4-7); LEN 15:0 is its first two bytes.
            pkt = pkt[:4] + (len(pay) & 0xFFFF).to_bytes(2, "little") + pkt[6:]
        return pkt + pay


class QDMADescriptor(_QDMABase):
    """An Airoha QDMA TX descriptor (section 1.6), optionally followed by its frame.

    Eight little-endian u32 words; bit 0 is the least significant bit::

        word 0 rsv
        word 1 ctrl  31 DONE | 30 DROP | 29 MORE | 28:26 rsv | 25 DEI | 24 NO_DROP
                     | 23:16 rsv | 15:0 LEN
        word 2 addr  buffer DMA address
        word 3 data  31:16 rsv | 15:0 NEXT_ID
        word 4 msg0  31 rsv | 30 MIC_IDX | 29:14 SP_TAG | 13 ICO | 12 UCO | 11 TCO
                     | 10 TSO | 9 FAST | 8 OAM | 7:3 CHAN | 2:0 QUEUE
        word 5 msg1  31 NO_DROP | 30:24 METER | 23:20 FPORT | 19:15 NBOQ | 14 HWF
                     | 13 HOP | 12 PTP | 11 rsv | 10:6 ACNT_G1 | 5:0 ACNT_G0
        word 6 msg2  0x0000ffff on TX
        word 7 msg3

    ``len`` None is the length of the payload (the Ethernet frame the descriptor
    points at, dissected as ``Ether``). Field names follow the kernel macros;
    ``msg1_no_drop`` is msg1 bit 31, ``no_drop`` is ctrl bit 24. The RX layout is
    :class:`QDMARxDescriptor`; :meth:`as_rx` reads the same bytes that way.
    """

    name = "Airoha QDMA TX descriptor"
    fields_desc = [
        *_QDMA_HEAD,
        # word 4, msg0 (TX)
        BitField("msg0_rsv", 0, 1, tot_size=-4),  # b31
        BitField("mic_idx", 0, 1),  # b30
        XBitField("sp_tag", 0, 16),  # b29:14: DSA port mask (section 1.3)
        BitField("ico", 0, 1),  # b13
        BitField("uco", 0, 1),  # b12
        BitField("tco", 0, 1),  # b11
        BitField("tso", 0, 1),  # b10
        BitField("fast", 0, 1),  # b9
        BitField("oam", 0, 1),  # b8
        BitField("chan", 0, 5),  # b7:3
        BitField("queue", 0, 3, end_tot_size=-4),  # b2:0
        # word 5, msg1 (TX)
        BitField("msg1_no_drop", 0, 1, tot_size=-4),  # b31
        XBitField("meter", 0x7F, 7),  # b30:24, 0x7f = no meter
        BitField("fport", 0, 4),  # b23:20: destination FE port
        BitField("nboq", 0, 5),  # b19:15
        BitField("hwf", 0, 1),  # b14
        BitField("hop", 0, 1),  # b13
        BitField("ptp", 0, 1),  # b12
        BitField("msg1_rsv", 0, 1),  # b11
        BitField("acnt_g1", 0, 5),  # b10:6
        BitField("acnt_g0", 0, 6, end_tot_size=-4),  # b5:0
        XLEIntField("msg2", 0xFFFF),
        XLEIntField("msg3", 0),
    ]

    def as_rx(self) -> QDMARxDescriptor:
        """The same bytes read with the RX layout."""
        return QDMARxDescriptor(bytes(self))

    def mysummary(self) -> str:
        return self.sprintf(
            "QDMA TX len=%QDMADescriptor.len% sp_tag=%QDMADescriptor.sp_tag% "
            "chan=%QDMADescriptor.chan% queue=%QDMADescriptor.queue% "
            "fport=%QDMADescriptor.fport%"
        )


class QDMARxDescriptor(_QDMABase):
    """An Airoha QDMA RX descriptor (section 1.6), optionally followed by its frame.

    Words 0-3 as in :class:`QDMADescriptor`; the messages differ::

        word 4 msg0  31:22 rsv | 21:14 SPTAG (DSA source port with STAG_EN) | 13:0 rsv
        word 5 msg1  31 DEI | 30 IP6 | 29 IP4 | 28 IP4F | 27 L4_VALID | 26 L4F
                     | 25:21 SPORT | 20:16 CRSN | 15:0 PPE_ENTRY (0xffff = none)
        word 6 msg2
        word 7 msg3

    :attr:`gdm` maps SPORT to the GDM port (0x10-0x14 is GDM1).
    """

    name = "Airoha QDMA RX descriptor"
    fields_desc = [
        *_QDMA_HEAD,
        # word 4, msg0 (RX)
        XBitField("msg0_rsv_hi", 0, 10, tot_size=-4),  # b31:22
        BitField("sptag", 0, 8),  # b21:14
        XBitField("msg0_rsv_lo", 0, 14, end_tot_size=-4),  # b13:0
        # word 5, msg1 (RX)
        BitField("msg1_dei", 0, 1, tot_size=-4),  # b31
        BitField("ip6", 0, 1),  # b30
        BitField("ip4", 0, 1),  # b29
        BitField("ip4f", 0, 1),  # b28: IPv4 fragment
        BitField("l4_valid", 0, 1),  # b27
        BitField("l4f", 0, 1),  # b26
        XBitField("sport", 0, 5),  # b25:21
        XBitField("crsn", 0, 5),  # b20:16: CPU reason
        XBitField("ppe_entry", 0xFFFF, 16, tot_size=1, end_tot_size=-4),  # b15:0
        XLEIntField("msg2", 0),
        XLEIntField("msg3", 0),
    ]

    @property
    def gdm(self) -> int | None:
        """The GDM port id that SPORT names, or None."""
        return sport_to_gdm(int(self.sport))

    def as_tx(self) -> QDMADescriptor:
        """The same bytes read with the TX layout."""
        return QDMADescriptor(bytes(self))

    def mysummary(self) -> str:
        return self.sprintf(
            "QDMA RX len=%QDMARxDescriptor.len% sptag=%QDMARxDescriptor.sptag% "
            "sport=%QDMARxDescriptor.sport%"
        )


_IPPROTO_TCP = 6
_IPPROTO_UDP = 17
# RX msg1 parse bits (section 1.6).
_MSG1_IP6 = 1 << 30
_MSG1_IP4 = 1 << 29
_MSG1_L4_VALID = 1 << 27
_MSG1_L4F = 1 << 26
_MSG1_FLAGS = {
    "ip4": _MSG1_IP4,
    "ip6": _MSG1_IP6,
    "ip4f": 1 << 28,
    "l4_valid": _MSG1_L4_VALID,
    "l4f": _MSG1_L4F,
}


def _rx_msg1_parse(data: bytes) -> int:
    """The msg1 parse bits of :func:`airoha_rx_msg1_flags`, as they sit in the word."""
    at = _ETHERTYPE_AT
    etype = int.from_bytes(data[at : at + 2], "big")
    if etype in (ETH_P_8021Q, ETH_P_8021AD) and len(data) >= at + 6:
        at += 4
        etype = int.from_bytes(data[at : at + 2], "big")
    ip = data[at + 2 :]
    if etype == 0x0800 and len(ip) >= 20 and ip[0] >> 4 == 4:
        bits = _MSG1_IP4
        ihl = (ip[0] & 0x0F) * 4
        proto = ip[9]
        fragment = int.from_bytes(ip[6:8], "big") & 0x3FFF
        if fragment or proto not in (_IPPROTO_TCP, _IPPROTO_UDP) or ihl < 20:
            return bits
        l4 = ip[ihl : int.from_bytes(ip[2:4], "big")]
        # RFC 768/793 pseudo-header: addresses, zero, protocol, L4 length.
        pseudo = ip[12:20] + bytes((0, proto)) + len(l4).to_bytes(2, "big")
    elif etype == 0x86DD and len(ip) >= 40 and ip[0] >> 4 == 6:
        bits = _MSG1_IP6
        proto = ip[6]
        if proto not in (_IPPROTO_TCP, _IPPROTO_UDP):
            return bits
        l4 = ip[40 : 40 + int.from_bytes(ip[4:6], "big")]
        # RFC 8200 8.1 pseudo-header: addresses, u32 length, three zeros, next header.
        pseudo = ip[8:40] + len(l4).to_bytes(4, "big") + bytes((0, 0, 0, proto))
    else:
        return 0
    if len(l4) < (20 if proto == _IPPROTO_TCP else 8):
        return bits
    bits |= _MSG1_L4_VALID
    # A UDP/IPv4 checksum of 0 means "none" (RFC 768); otherwise the one's-complement
    # sum over pseudo-header and segment, checksum included, folds to zero.
    no_checksum = bits & _MSG1_IP4 and proto == _IPPROTO_UDP and l4[6:8] == b"\x00\x00"
    if not no_checksum and checksum(pseudo + l4) != 0:
        bits |= _MSG1_L4F
    return bits


def airoha_rx_msg1_flags(frame: bytes | Packet) -> dict[str, int]:
    """The RX ``msg1`` parse bits for an Ethernet frame: ``ip4``, ``ip6``, ``ip4f``,
    ``l4_valid`` and ``l4f`` (section 1.6 gives their positions [C]).

    What the hardware writes is not in mainline: its ``airoha_qdma_rx_process`` sets
    CHECKSUM_UNNECESSARY without reading these bits. A downstream airoha_eth.c (with
    EN7523 support) trusts a frame only when ``(IP4 or IP6) and L4_VALID and not
    IP4F and not L4F``, so these are derived [D] from that reading: IP4/IP6 from the
    EtherType (after one 802.1Q/802.1ad header), L4_VALID for a TCP or UDP header
    the parser reaches (IPv4 with any IHL; IPv6 only with TCP/UDP as the first next
    header), L4F when its checksum does not verify.
    IP4F stays 0: the reference reads it as "fragment", the downstream driver as a
    fault; neither says when the hardware sets it [U]. A fragment (MF or an offset)
    gets no L4_VALID, as a parser cannot check its L4 checksum [D].
    """
    bits = _rx_msg1_parse(bytes(frame))
    return {name: 1 if bits & bit else 0 for name, bit in _MSG1_FLAGS.items()}


def airoha_qdma_rx(
    frame: bytes | Packet,
    *,
    sptag: int = 0,
    sport: int = 0x10,
    addr: int = 0,
    next_id: int = 0,
) -> QDMARxDescriptor:
    """The RX descriptor the driver reads for ``frame`` (section 1.6), the frame as
    its payload.

    DONE is set: ``airoha_qdma_rx_process`` stops at a descriptor without it [C].
    LEN is the frame length, padding included; ``sptag`` the DSA source port
    (STAG_EN) [C]; ``sport`` the FE source port (0x10 = GDM1) [C]; PPE_ENTRY 0xffff
    (no flow entry) [C] value, [U] that the hardware writes it for an unbound flow;
    the msg1 parse bits come from :func:`airoha_rx_msg1_flags`. ``addr`` and
    ``next_id`` are what the driver's ring refill wrote (buffer DMA address, the next
    ring index).
    :func:`airoha_qdma_rx_bytes` gives the same bytes without building the layers.
    """
    data = bytes(frame)
    # LEN set here: the layer's own would leave out bytes Ether dissects as padding.
    desc = QDMARxDescriptor(
        done=1, len=len(data) & 0xFFFF, addr=addr, next_id=next_id, sptag=sptag, sport=sport
    )
    for field_name, value in airoha_rx_msg1_flags(data).items():
        desc.setfieldval(field_name, value)
    return desc / Ether(data)


# The eight words of an RX descriptor; word 1 carries DONE (b31) and LEN, msg1 the parse
# bits, SPORT and PPE_ENTRY 0xffff (see airoha_qdma_rx).
_RX_WORDS = struct.Struct("<8I")
_RX_DONE = 1 << 31
_RX_NO_PPE_ENTRY = 0xFFFF


def airoha_qdma_rx_bytes(
    frame: bytes, *, sptag: int = 0, sport: int = 0x10, addr: int = 0, next_id: int = 0
) -> bytes:
    """``bytes(airoha_qdma_rx(frame, ...))`` without dissecting the frame or building
    the layers: the words are packed from the arguments, the length and the msg1
    parse bits of the raw header."""
    head = _RX_WORDS.pack(
        0,
        _RX_DONE | (len(frame) & 0xFFFF),
        addr & 0xFFFFFFFF,
        next_id & 0xFFFF,
        (sptag & 0xFF) << 14,
        _rx_msg1_parse(frame) | (sport & 0x1F) << 21 | _RX_NO_PPE_ENTRY,
        0,
        0,
    )
    return head + frame


bind_layers(QDMADescriptor, Ether)
bind_layers(QDMARxDescriptor, Ether)

conf.l2types.register(DLT_QDMA_DESC, QDMADescriptor)
# RX descriptors are written with the same link type and read back with the TX
# layout (the bytes do not say which); QDMADescriptor.as_rx() gives the RX view.
conf.l2types.register_layer2num(DLT_QDMA_DESC, QDMARxDescriptor)
