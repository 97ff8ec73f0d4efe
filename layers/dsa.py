"""MediaTek DSA special tag, and how Airoha moves it into the QDMA descriptor.

Formats and sources (see ``airoha-dsa-xfrm.md`` in the shared reference):

* The MediaTek ("mtk", ``DSA_TAG_PROTO_MTK``) special tag, section 2 (Linux
  ``net/dsa/tag_mtk.c``): 4 bytes at frame offset 12, where an EtherType would
  sit. It is modelled by its own L2 header class, :class:`MTKEther`.
* On Airoha the tag moves into the QDMA TX descriptor (section 1.3); see
  :func:`airoha_dsa_xmit`. The descriptor layers (section 1.6) are in
  ``esplab.layers.qdma``.

The pure helpers :func:`mtk_tag_xmit` and :func:`mtk_tag_rcv` are the Linux tagger
(sections 2.2 and 2.3); :func:`mtk_tag_from_cpu` and :func:`mtk_tag_to_cpu` are the
switch side of the same tag.
"""

from __future__ import annotations

from functools import lru_cache

from scapy.config import conf
from scapy.data import ETHER_TYPES
from scapy.fields import (
    BitField,
    ByteEnumField,
    FlagsField,
    MACField,
    XByteField,
    XShortEnumField,
    XShortField,
)
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Packet, bind_layers

from esplab.layers._fixed import TruncatablePacket
from esplab.layers.linktypes import DLT_MTK_ETHER, DLT_MTK_ETHER_RX
from esplab.layers.qdma import (
    ETH_P_8021AD,
    ETH_P_8021Q,
    QDMADescriptor,
)

__all__ = [
    "ETH_P_8021AD",
    "ETH_P_8021Q",
    "MTK_HDR_LEN",
    "MTK_TPID_SEL",
    "MTKEther",
    "MTKEtherRx",
    "airoha_dsa_xmit",
    "airoha_dsa_xmit_bytes",
    "mtk_tag_from_cpu",
    "mtk_tag_rcv",
    "mtk_tag_to_cpu",
    "mtk_tag_xmit",
]

MTK_HDR_LEN = 4  # section 2.1: the tag is 4 bytes at frame offset 12

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
# Airoha: the tag moves into the QDMA TX descriptor (section 1.3)


def _untag(data: bytes) -> tuple[int, bytes]:
    """(SP_TAG, frame without the tag) as the Airoha driver moves the tag (section 1.3):
    selector 1 or 2 writes the TPID 0x8100/0x88a8 back and keeps the tag with its
    selector byte cleared; any other selector removes the 4 bytes and keeps the whole
    16-bit tag value."""
    tag = int.from_bytes(data[12:14], "big")
    tpid = _TPID_OF_SEL.get(tag >> 8)
    if tpid is not None:
        return tag & 0x00FF, data[:12] + tpid.to_bytes(2, "big") + data[14:]
    return tag, data[:12] + data[16:]


def _tx_descriptor(
    sp_tag: int, length: int, channel: int | None, queue: int, fport: int, addr: int, next_id: int
) -> QDMADescriptor:
    """The TX descriptor for a frame of ``length`` bytes (section 1.6); ``channel`` None
    is the lowest port in the mask (the tagger's queue_mapping)."""
    if channel is None:
        mask = sp_tag & 0x3F
        channel = (mask & -mask).bit_length() - 1 if mask else 0
    return QDMADescriptor(
        len=length & 0xFFFF,
        addr=addr,
        next_id=next_id,
        sp_tag=sp_tag,
        chan=channel % 4,
        queue=queue % 8,
        fport=fport,
        meter=0x7F,
        msg2=0xFFFF,
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
    descriptor with the untagged frame as its payload; LEN is that frame's length,
    whatever Ether dissects of it as padding included (section 1.3).

    ``channel`` defaults to the tagger's queue_mapping (the lowest port in the
    mask) mod 4; ``queue`` is the QoS queue (the driver derives it from the skb
    priority, which is kernel-version dependent, so it is a parameter here);
    ``fport`` is the FE port of the conduit (GDM1 = 1). METER is 0x7f and msg2
    0xffff, as the driver writes them.
    """
    data = _frame_bytes(frame, _ETH_ALEN2 + 2, "airoha_dsa_xmit")
    sp_tag, untagged = _untag(data)
    # LEN set here: the layer's own would leave out bytes Ether dissects as padding.
    desc = _tx_descriptor(sp_tag, len(untagged), channel, queue, fport, addr, next_id)
    return desc / Ether(untagged)


@lru_cache(maxsize=4096)
def _xmit_head(sp_tag: int, length: int, addr: int, next_id: int) -> bytes:
    """The descriptor words :func:`airoha_dsa_xmit` writes with its defaults: they
    depend on nothing else."""
    return bytes(_tx_descriptor(sp_tag, length, None, 0, 1, addr, next_id))


def airoha_dsa_xmit_bytes(frame: bytes, *, addr: int = 0, next_id: int = 0) -> bytes:
    """``bytes(airoha_dsa_xmit(frame, addr=addr, next_id=next_id))`` with the other
    defaults, without dissecting the frame."""
    sp_tag, untagged = _untag(_frame_bytes(frame, _ETH_ALEN2 + 2, "airoha_dsa_xmit"))
    return _xmit_head(sp_tag, len(untagged), addr, next_id) + untagged


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

conf.l2types.register(DLT_MTK_ETHER, MTKEther)
conf.l2types.register(DLT_MTK_ETHER_RX, MTKEtherRx)
