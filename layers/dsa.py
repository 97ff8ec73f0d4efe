"""MediaTek DSA special tag and Airoha EN7581 QDMA descriptors.

Formats and sources (see ``airoha-dsa-xfrm.md`` in the shared reference):

* The MediaTek ("mtk", ``DSA_TAG_PROTO_MTK``) special tag, section 2 (Linux
  ``net/dsa/tag_mtk.c``): 4 bytes at frame offset 12, where an EtherType would
  sit. It is modelled by its own L2 header class, :class:`MTKEther`.
* The Airoha QDMA descriptor, section 1.6 (Linux
  ``drivers/net/ethernet/airoha/airoha_eth.h``): 8 little-endian u32 words.
  :class:`QDMADescriptor` is the TX layout, :class:`QDMARxDescriptor` the RX one.
  On Airoha the tag moves into the descriptor (section 1.3); see
  :func:`airoha_dsa_xmit`.

The pure helpers :func:`mtk_tag_xmit` and :func:`mtk_tag_rcv` are the Linux tagger
(sections 2.2 and 2.3); :func:`mtk_tag_from_cpu` and :func:`mtk_tag_to_cpu` are the
switch side of the same tag.
"""

from __future__ import annotations

import struct

from scapy.config import conf
from scapy.data import ETHER_TYPES
from scapy.fields import (
    BitField,
    ByteEnumField,
    FlagsField,
    LEShortField,
    MACField,
    XBitField,
    XByteField,
    XLEIntField,
    XLEShortField,
    XShortEnumField,
    XShortField,
)
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Packet, bind_layers
from scapy.utils import checksum

from esplab.layers._fixed import TruncatablePacket
from esplab.layers.linktypes import DLT_MTK_ETHER, DLT_MTK_ETHER_RX, DLT_QDMA_DESC

__all__ = [
    "ETH_P_8021AD",
    "ETH_P_8021Q",
    "MTK_HDR_LEN",
    "MTK_TPID_SEL",
    "QDMA_DESC_LEN",
    "MTKEther",
    "MTKEtherRx",
    "QDMADescriptor",
    "QDMARxDescriptor",
    "airoha_dsa_xmit",
    "airoha_dsa_xmit_bytes",
    "airoha_qdma_rx",
    "airoha_qdma_rx_bytes",
    "airoha_rx_msg1_flags",
    "mtk_tag_from_cpu",
    "mtk_tag_rcv",
    "mtk_tag_to_cpu",
    "mtk_tag_xmit",
    "sport_to_gdm",
]

MTK_HDR_LEN = 4  # section 2.1: the tag is 4 bytes at frame offset 12
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
QDMA_DESC_LEN = 32  # section 1.6: 8 little-endian u32 words

# Section 2.2, byte 12 on TX: which VLAN TPID the tag replaced.
MTK_TPID_SEL = {0: "untagged", 1: "802.1Q", 2: "802.1ad"}
_SEL_OF_TPID = {ETH_P_8021Q: 1, ETH_P_8021AD: 2}
_TPID_OF_SEL = {1: ETH_P_8021Q, 2: ETH_P_8021AD}

_MTK_MAX_TX_PORT = 5  # section 2.2: port mask bits 5:0
_MTK_MAX_RX_PORT = 7  # section 2.3: source port bits 2:0
_ETH_ALEN2 = 12  # DA + SA


# ---------------------------------------------------------------------------
# MediaTek special tag (section 2)


def _check_port(port: int, highest: int) -> None:
    if not 0 <= port <= highest:
        raise ValueError(f"switch port {port} out of range; valid: 0-{highest}")


def _frame_bytes(frame: bytes | Packet, minimum: int, what: str) -> bytes:
    data = bytes(frame)
    if len(data) < minimum:
        raise ValueError(f"{what}: frame of {len(data)} bytes; need at least {minimum}")
    return data


def mtk_tag_xmit(frame: bytes | Packet, port: int) -> bytes:
    """Tag an Ethernet frame for user port ``port`` (CPU to switch), section 2.2.

    An 802.1Q or 802.1ad frame (EtherType at offset 12 is 0x8100 or 0x88a8) keeps
    its length: the TPID becomes ``01|02, 1<<port`` and the TCI stays. Any other
    frame grows by 4 bytes: ``00, 1<<port, 00, 00`` is pushed at offset 12.
    """
    _check_port(port, _MTK_MAX_TX_PORT)
    data = _frame_bytes(frame, _ETH_ALEN2 + 2, "mtk_tag_xmit")
    tpid = int.from_bytes(data[12:14], "big")
    sel = _SEL_OF_TPID.get(tpid)
    if sel is not None:
        return data[:12] + bytes((sel, 1 << port)) + data[14:]
    return data[:12] + bytes((0, 1 << port, 0, 0)) + data[12:]


def mtk_tag_rcv(frame: bytes | Packet) -> tuple[int, bytes]:
    """Untag a frame from the switch (switch to CPU), section 2.3.

    Returns ``(source port, frame without the 4 tag bytes)``. Only bits 2:0 of
    byte 13 count; every other tag bit is ignored, as Linux does.
    """
    data = _frame_bytes(frame, _ETH_ALEN2 + MTK_HDR_LEN, "mtk_tag_rcv")
    return data[13] & 0x07, data[:12] + data[16:]


def mtk_tag_to_cpu(frame: bytes | Packet, port: int) -> bytes:
    """Tag a frame that entered the switch on ``port`` for the CPU, section 2.3.

    The switch pushes ``00 0N 00 00`` at offset 12 (bits other than the port are
    modelled as zero). A VLAN header stays after the tag: the CPU port's egress
    mode is "stack".
    """
    _check_port(port, _MTK_MAX_RX_PORT)
    data = _frame_bytes(frame, _ETH_ALEN2 + 2, "mtk_tag_to_cpu")
    return data[:12] + bytes((0, port, 0, 0)) + data[12:]


def mtk_tag_from_cpu(frame: bytes | Packet) -> tuple[int, bytes]:
    """Undo :func:`mtk_tag_xmit` (the switch's view of a CPU frame), section 2.2.

    Returns ``(port mask, original frame)``: byte 13 bits 5:0, with SA_DIS and
    bit 7 ignored. A merged 802.1Q/802.1ad tag gets its TPID back; any other
    selector value is treated as untagged and the 4 bytes are removed.
    """
    data = _frame_bytes(frame, _ETH_ALEN2 + 2, "mtk_tag_from_cpu")
    mask = data[13] & 0x3F
    tpid = _TPID_OF_SEL.get(data[12])
    if tpid is not None:
        return mask, data[:12] + tpid.to_bytes(2, "big") + data[14:]
    data = _frame_bytes(data, _ETH_ALEN2 + MTK_HDR_LEN, "mtk_tag_from_cpu")
    return mask, data[:12] + data[16:]


class MTKEther(TruncatablePacket):
    """An Ethernet frame carrying the MediaTek DSA special tag (section 2).

    ::

        offset 0      6      12         13                 14 .. 15            16 .. 17
              +------+------+----------+-+-+------------+-----+-+------------+---------+
              | dst  | src  | tpid_sel |u|s| port_mask  | pcp |d|    vid     |  type   |
              +------+------+----------+-+-+------------+-----+-+------------+---------+
                            | 8 bits   |1|1|  6 bits    |  3  |1|  12 bits   | 16 bits |
              u = unused (bit 7), s = sa_dis (bit 6), d = dei

    TX form (CPU to switch, section 2.2): ``tpid_sel`` 0 untagged, 1 an 802.1Q
    header was merged into the tag, 2 an 802.1ad header was; ``port_mask`` is
    ``1 << N``; SA_DIS is accepted and ignored (current Linux never sets it);
    bytes 14-15 hold the merged TCI or zero. ``type`` is the EtherType that
    follows: the inner one for a merged VLAN header.

    RX form (switch to CPU, section 2.3): the source port is byte 13 bits 2:0
    (:attr:`src_port`); the other bits are modelled as zero and ignored.
    """

    name = "MTK DSA Ethernet"
    fields_desc = [
        MACField("dst", "ff:ff:ff:ff:ff:ff"),
        MACField("src", "00:00:00:00:00:00"),
        ByteEnumField("tpid_sel", 0, MTK_TPID_SEL),
        BitField("unused", 0, 1),
        BitField("sa_dis", 0, 1),
        FlagsField("port_mask", 0, 6, [f"port{n}" for n in range(6)]),
        BitField("pcp", 0, 3),
        BitField("dei", 0, 1),
        BitField("vid", 0, 12),
        XShortEnumField("type", 0x9000, ETHER_TYPES),
    ]

    @property
    def tag(self) -> int:
        """The 4 tag bytes (offsets 12-15) as a big-endian integer."""
        return int.from_bytes(bytes(self)[12:16], "big")

    @property
    def src_port(self) -> int:
        """RX form: the source port, byte 13 bits 2:0 (section 2.3)."""
        return int(self.port_mask) & 0x07

    @property
    def ports(self) -> list[int]:
        """TX form: the destination ports set in the mask (bits 5:0)."""
        mask = int(self.port_mask)
        return [n for n in range(6) if mask >> n & 1]

    @classmethod
    def from_ether(cls, frame: bytes | Packet, port: int) -> MTKEther:
        """The TX tagger (:func:`mtk_tag_xmit`) applied to ``frame``."""
        return cls(mtk_tag_xmit(frame, port))

    @classmethod
    def to_cpu(cls, frame: bytes | Packet, port: int) -> MTKEther:
        """The RX tag the switch puts on ``frame`` from ``port`` (:func:`mtk_tag_to_cpu`)."""
        return cls(mtk_tag_to_cpu(frame, port))

    def to_ether(self, rx: bool = False) -> Ether:
        """The frame without the tag.

        TX form (default): the switch's view, a merged VLAN header gets its TPID
        back (:func:`mtk_tag_from_cpu`). ``rx=True``: what Linux delivers on the
        user port, the 4 bytes are dropped whatever they hold (:func:`mtk_tag_rcv`).
        """
        if rx:
            return Ether(mtk_tag_rcv(self)[1])
        return Ether(mtk_tag_from_cpu(self)[1])

    def mysummary(self) -> str:
        return self.sprintf(
            "%MTKEther.src% > %MTKEther.dst% tag %MTKEther.tpid_sel% "
            "mask=%MTKEther.port_mask% (%MTKEther.type%)"
        )


class MTKEtherRx(TruncatablePacket):
    """A frame from the switch to the CPU with the MediaTek special tag (section 2.3).

    ::

        offset 0      6      12           13             14 .. 15    16 .. 17
              +------+------+------------+-----+-------+-----------+---------+
              | dst  | src  | reserved0  | rsv | sport | reserved1 |  type   |
              +------+------+------------+-----+-------+-----------+---------+
                            |  8 bits    |  5  |   3   |  16 bits  | 16 bits |

    Linux reads only ``src_port`` (byte 13 bits 2:0) and strips the 4 bytes [C];
    no public source defines the other bits, which are modelled as zero and
    ignored [U]. A VLAN-tagged frame keeps its 802.1Q header after the tag (the
    CPU port's egress mode is "stack"), so ``type`` is then 0x8100.
    """

    name = "MTK DSA Ethernet (to CPU)"
    fields_desc = [
        MACField("dst", "ff:ff:ff:ff:ff:ff"),
        MACField("src", "00:00:00:00:00:00"),
        XByteField("reserved0", 0),
        BitField("reserved_13", 0, 5),
        BitField("src_port", 0, 3),
        XShortField("reserved1", 0),
        XShortEnumField("type", 0x9000, ETHER_TYPES),
    ]

    def to_ether(self) -> Ether:
        """What Linux delivers on the user port: the 4 tag bytes dropped."""
        return Ether(mtk_tag_rcv(self)[1])

    def mysummary(self) -> str:
        return self.sprintf(
            "%MTKEtherRx.src% > %MTKEtherRx.dst% from port %MTKEtherRx.src_port% "
            "(%MTKEtherRx.type%)"
        )


# ---------------------------------------------------------------------------
# Airoha QDMA descriptor (section 1.6)

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


def airoha_dsa_xmit(
    frame: bytes | Packet,
    *,
    channel: int | None = None,
    queue: int = 0,
    fport: int = 1,
    addr: int = 0,
    next_id: int = 0,
) -> QDMADescriptor:
    """Move the MTK tag of a tagged frame into a TX descriptor (section 1.3).

    ``frame`` is the tagger's output (:func:`mtk_tag_xmit`). As the Airoha driver
    does: selector 1 or 2 writes the TPID 0x8100/0x88a8 back and SP_TAG gets the
    tag with its selector byte cleared; any other selector removes the 4 bytes
    from the frame and SP_TAG gets the whole 16-bit tag value. The result is the
    descriptor with the untagged frame as its payload.

    ``channel`` defaults to the tagger's queue_mapping (the lowest port in the
    mask) mod 4; ``queue`` is the QoS queue (the driver derives it from the skb
    priority, which is kernel-version dependent, so it is a parameter here);
    ``fport`` is the FE port of the conduit (GDM1 = 1). METER is 0x7f and msg2
    0xffff, as the driver writes them.
    """
    data = _frame_bytes(frame, _ETH_ALEN2 + 2, "airoha_dsa_xmit")
    tag = int.from_bytes(data[12:14], "big")
    tpid = _TPID_OF_SEL.get(tag >> 8)
    if tpid is not None:
        tag &= 0x00FF
        untagged = data[:12] + tpid.to_bytes(2, "big") + data[14:]
    else:
        untagged = data[:12] + data[16:]
    if channel is None:
        mask = tag & 0x3F
        channel = (mask & -mask).bit_length() - 1 if mask else 0
    desc = QDMADescriptor(
        addr=addr,
        next_id=next_id,
        sp_tag=tag,
        chan=channel % 4,
        queue=queue % 8,
        fport=fport,
        meter=0x7F,
        msg2=0xFFFF,
    )
    return desc / Ether(untagged)


_XMIT_HEADS: dict[tuple[int, int, int, int], bytes] = {}


def airoha_dsa_xmit_bytes(frame: bytes, *, addr: int = 0, next_id: int = 0) -> bytes:
    """``bytes(airoha_dsa_xmit(frame, addr=addr, next_id=next_id))`` with the other
    defaults, without dissecting the frame: the descriptor words depend only on the
    tag, the length, ``addr`` and ``next_id``, so they are kept."""
    data = _frame_bytes(frame, _ETH_ALEN2 + 2, "airoha_dsa_xmit")
    tpid = _TPID_OF_SEL.get(data[12])
    untagged = (
        data[:12] + tpid.to_bytes(2, "big") + data[14:]
        if tpid is not None
        else data[:12] + data[16:]
    )
    key = (int.from_bytes(data[12:14], "big"), len(untagged), addr, next_id)
    head = _XMIT_HEADS.get(key)
    if head is None:
        if len(_XMIT_HEADS) >= 4096:
            _XMIT_HEADS.clear()
        desc = airoha_dsa_xmit(data, addr=addr, next_id=next_id)
        head = _XMIT_HEADS[key] = bytes(desc)[:QDMA_DESC_LEN]
    return head + untagged


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
    at = _ETH_ALEN2
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


bind_layers(MTKEther, IP, type=0x0800)
bind_layers(MTKEther, ARP, type=0x0806)
bind_layers(MTKEther, Dot1Q, type=0x8100)
bind_layers(MTKEther, IPv6, type=0x86DD)
bind_layers(MTKEther, Dot1AD, type=0x88A8)
bind_layers(MTKEtherRx, IP, type=0x0800)
bind_layers(MTKEtherRx, ARP, type=0x0806)
bind_layers(MTKEtherRx, Dot1Q, type=0x8100)
bind_layers(MTKEtherRx, IPv6, type=0x86DD)
bind_layers(MTKEtherRx, Dot1AD, type=0x88A8)
bind_layers(QDMADescriptor, Ether)
bind_layers(QDMARxDescriptor, Ether)

conf.l2types.register(DLT_MTK_ETHER, MTKEther)
conf.l2types.register(DLT_MTK_ETHER_RX, MTKEtherRx)
conf.l2types.register(DLT_QDMA_DESC, QDMADescriptor)
# RX descriptors are written with the same link type and read back with the TX
# layout (the bytes do not say which); QDMADescriptor.as_rx() gives the RX view.
conf.l2types.register_layer2num(DLT_QDMA_DESC, QDMARxDescriptor)
